//! Results: one row per measurement, printed as a table, written as CSV, drawn as an SVG chart.

use plotters::prelude::*;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// The CSV header; the column meanings are documented at the top of `benches/contention.rs`.
pub const CSV_HEADER: &str =
    "scenario,limiter,algorithm,threads,keys,ops,ns_per_op,agg_ns_per_op,mops_per_s,allowed_fraction";

/// Admissions compared with what the quota allows.
#[derive(Debug, Clone)]
pub struct Accuracy {
    /// What was counted: "all" requests, the "legit" hot keys of keyed-flood, or the "hot" key
    /// of keyed-hot-under-flood.
    pub subject: &'static str,
    /// Requests admitted over the limiter's life (warm-up included: the state carries over).
    pub admitted: u64,
    /// Requests offered over the same span.
    pub offered: u64,
    /// Units the limiter may admit beyond its quota by its own contract (a striped limiter's
    /// `over_admission_bound()`; 0 for exact limiters), included in `bound`.
    pub over_admission_bound: u64,
    /// The most the limiter may admit: the sum over keys of min(requests, per-key bound), the
    /// per-key bound being the quota's plus `over_admission_bound`.
    pub bound: f64,
}

impl Accuracy {
    /// `admitted / bound - 1`: above zero the limiter let through more than its quota.
    pub fn deviation(&self) -> f64 {
        if self.bound > 0.0 {
            self.admitted as f64 / self.bound - 1.0
        } else {
            0.0
        }
    }

    /// Whether the quota never had to deny anything (the offered load stayed under it).
    pub fn under_quota(&self) -> bool {
        self.bound >= self.offered as f64
    }
}

/// The `scenario` of the hardware floor rows (repeated under every scenario in the CSV). A
/// scenario's own floor rows (http-layer's `no-layer`, inflight's `fetch-add-pair`) carry the scenario's name instead.
pub const HARDWARE_FLOORS: &str = "floor";

/// One measurement.
#[derive(Debug, Clone)]
pub struct Row {
    /// Scenario name ([`HARDWARE_FLOORS`] for the hardware floor rows).
    pub scenario: &'static str,
    /// `nanolimit`, `governor`, `ratelimit`, `mutex-hashmap`, `tower_governor`,
    /// `tokio-semaphore` or `floor`.
    pub limiter: &'static str,
    /// Algorithm name.
    pub algorithm: &'static str,
    /// Threads running the loop.
    pub threads: usize,
    /// Threads whose calls `operations` and `allowed` count: all of them, except in
    /// keyed-hot-under-flood (1: the hot thread; the flood is not counted).
    pub counted_threads: usize,
    /// Distinct keys offered (0 for floors).
    pub keys: u64,
    /// Operations of the counted threads in the measured phase.
    pub operations: u64,
    /// Allowed operations of the counted threads in the measured phase.
    pub allowed: u64,
    /// Calls per second of the threads not counted (keyed-hot-under-flood's flood), where there
    /// are such threads.
    pub flood_calls_per_second: Option<f64>,
    /// Measured wall time, seconds.
    pub wall_seconds: f64,
    /// Accuracy, where a quota applies.
    pub accuracy: Option<Accuracy>,
    /// The limiter's state after the run (keys held, table counters).
    pub state_report: Option<String>,
}

impl Row {
    /// Wall time / the counted threads' operations.
    pub fn aggregate_ns_per_op(&self) -> f64 {
        self.wall_seconds * 1e9 / self.operations.max(1) as f64
    }

    /// Wall time / one counted thread's operations (averaged over them): the latency of one
    /// call as its caller sees it.
    pub fn ns_per_op(&self) -> f64 {
        self.aggregate_ns_per_op() * self.counted_threads as f64
    }

    /// Millions of operations per second, the counted threads together.
    pub fn mops_per_second(&self) -> f64 {
        self.operations as f64 / self.wall_seconds / 1e6
    }

    /// Allowed / operations in the measured phase.
    pub fn allowed_fraction(&self) -> f64 {
        self.allowed as f64 / self.operations.max(1) as f64
    }

    /// Whether this is a hardware floor row (not a scenario's own floor).
    pub fn is_hardware_floor(&self) -> bool {
        self.limiter == "floor" && self.scenario == HARDWARE_FLOORS
    }

    /// The line label in the chart and the series key.
    pub fn series(&self) -> String {
        match self.limiter {
            "nanolimit" | "floor" => format!("{} {}", self.limiter, self.algorithm),
            _ => self.limiter.to_string(),
        }
    }
}

/// Which floor rows bound a scenario's work: (floor algorithm, weight) pairs whose weighted sum
/// of per-thread ns is the floor the "vs floor" column divides by.
pub fn floor_components(scenario: &str) -> &'static [(&'static str, f64)] {
    match scenario {
        "direct-allow" | "direct-reserve" | "direct-deny" => &[("clock-read", 1.0), ("cas", 1.0)],
        "packet-loop" => &[("clock-read", 1.0 / 32.0), ("ahash-cas", 1.0)],
        "http-layer" => &[("no-layer", 1.0)],
        "inflight" => &[("fetch-add-pair", 1.0)],
        // A table larger than the caches: a clock read and its own floor, a compare-and-swap
        // on a random line of an array as large as the table.
        "keyed-rotate-100k" | "keyed-zipf-1m" | "keyed-flood" => {
            &[("clock-read", 1.0), ("random-line-cas", 1.0)]
        }
        "composite-2" => &[("two-cas", 1.0)],
        // A round trip to a server: no hardware floor says anything about it.
        "redis-script" | "redis-naive" | "redis-leased" => &[],
        _ => &[("clock-read", 1.0), ("ahash-cas", 1.0)],
    }
}

fn floor_label(scenario: &str) -> String {
    floor_components(scenario)
        .iter()
        .map(|(name, weight)| {
            if *weight == 1.0 {
                name.to_string()
            } else {
                format!("{name}/{}", (1.0 / weight).round())
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The scenario's floor at `threads`, in (per-thread ns, aggregate ns), from its floor rows
/// (the hardware floors, or the scenario's own).
pub fn floor_at(rows: &[Row], scenario: &str, threads: usize) -> Option<(f64, f64)> {
    if floor_components(scenario).is_empty() {
        return None;
    }
    let mut per_thread = 0.0;
    let mut aggregate = 0.0;
    for (algorithm, weight) in floor_components(scenario) {
        let row = rows.iter().find(|row| {
            row.limiter == "floor"
                && (row.scenario == HARDWARE_FLOORS || row.scenario == scenario)
                && row.algorithm == *algorithm
                && row.threads == threads
        })?;
        per_thread += weight * row.ns_per_op();
        aggregate += weight * row.aggregate_ns_per_op();
    }
    Some((per_thread, aggregate))
}

fn format_count(value: f64) -> String {
    if value >= 1e9 {
        format!("{:.2}G", value / 1e9)
    } else if value >= 1e6 {
        format!("{:.2}M", value / 1e6)
    } else if value >= 1e4 {
        format!("{:.1}k", value / 1e3)
    } else {
        format!("{value:.0}")
    }
}

fn accuracy_cell(accuracy: &Option<Accuracy>) -> String {
    let Some(accuracy) = accuracy else {
        return "-".to_string();
    };
    let prefix = if accuracy.subject == "all" {
        String::new()
    } else {
        format!("{} ", accuracy.subject)
    };
    if accuracy.under_quota() && accuracy.admitted == accuracy.offered {
        return format!("{prefix}under quota");
    }
    let marker = if accuracy.deviation() > OVER_QUOTA_TOLERANCE {
        "  OVER QUOTA"
    } else {
        ""
    };
    let allowance = if accuracy.over_admission_bound > 0 {
        format!(" (incl. +{} by contract)", accuracy.over_admission_bound)
    } else {
        String::new()
    };
    format!(
        "{prefix}{:+.2}% of {}{allowance}{marker}",
        accuracy.deviation() * 100.0,
        format_count(accuracy.bound)
    )
}

/// Relative excess over the quota's value above which a row is flagged: timing slack (the
/// span is measured around the checks, not at them) stays far below it.
const OVER_QUOTA_TOLERANCE: f64 = 0.005;

/// Prints the readable table: one block per scenario, floors first.
pub fn print_table(
    out: &mut impl std::io::Write,
    scenarios: &[(&'static str, String)],
    rows: &[Row],
) -> std::io::Result<()> {
    let floors: Vec<&Row> = rows.iter().filter(|row| row.is_hardware_floor()).collect();
    if !floors.is_empty() {
        writeln!(
            out,
            "\n== floor: what the hardware costs per call, per thread, uncontended =="
        )?;
        writeln!(
            out,
            "{:>7}  {:<24} {:>13} {:>13} {:>9}",
            "threads", "floor", "ns/call/thr", "agg ns/call", "Mops/s"
        )?;
        for row in &floors {
            writeln!(
                out,
                "{:>7}  {:<24} {:>13.2} {:>13.2} {:>9.1}",
                row.threads,
                row.algorithm,
                row.ns_per_op(),
                row.aggregate_ns_per_op(),
                row.mops_per_second()
            )?;
        }
    }
    for (scenario, description) in scenarios {
        // The scenario's rows, its own floor's (http-layer's, inflight's) included.
        let scenario_rows: Vec<&Row> = rows
            .iter()
            .filter(|row| row.scenario == *scenario)
            .collect();
        if scenario_rows.is_empty() {
            continue;
        }
        writeln!(out, "\n== {scenario}: {description} ==")?;
        writeln!(
            out,
            "{:>7}  {:<15} {:<15} {:>9} {:>11} {:>11} {:>8} {:>8} {:>9} {:>9}  accuracy (admitted vs quota)",
            "threads",
            "limiter",
            "algorithm",
            "keys",
            "ns/call/thr",
            "agg ns/call",
            "Mops/s",
            "vs gov",
            "vs floor",
            "allowed",
        )?;
        for row in &scenario_rows {
            let governor = scenario_rows.iter().find(|other| {
                matches!(
                    other.limiter,
                    "governor" | "tower_governor" | "tokio-semaphore"
                ) && other.threads == row.threads
            });
            let versus_governor = governor.map_or("-".to_string(), |governor| {
                format!(
                    "{:.2}x",
                    governor.aggregate_ns_per_op() / row.aggregate_ns_per_op()
                )
            });
            let versus_floor = floor_at(rows, scenario, row.threads)
                .map_or("-".to_string(), |(floor, _)| {
                    format!("{:.1}x", row.ns_per_op() / floor)
                });
            let flood = match row.flood_calls_per_second {
                Some(calls_per_second) if row.threads > row.counted_threads => {
                    let flood_threads = row.threads - row.counted_threads;
                    format!(
                        "; flood {:.2} M calls/s by {flood_threads} thread{} (not counted)",
                        calls_per_second / 1e6,
                        if flood_threads == 1 { "" } else { "s" },
                    )
                }
                Some(_) => "; no flood (baseline)".to_string(),
                None => String::new(),
            };
            writeln!(
                out,
                "{:>7}  {:<15} {:<15} {:>9} {:>11.2} {:>11.2} {:>8.1} {:>8} {:>9} {:>8.3}%  {}{}",
                row.threads,
                row.limiter,
                row.algorithm,
                format_count(row.keys as f64),
                row.ns_per_op(),
                row.aggregate_ns_per_op(),
                row.mops_per_second(),
                versus_governor,
                versus_floor,
                row.allowed_fraction() * 100.0,
                accuracy_cell(&row.accuracy),
                flood,
            )?;
        }
        if let Some((floor_per_thread, _)) = floor_at(rows, scenario, 1) {
            writeln!(
                out,
                "   floor = {} ({floor_per_thread:.2} ns/call at 1 thread)",
                floor_label(scenario)
            )?;
        }
        if *scenario == "direct-reserve" {
            print_versus_allowed_check(out, rows, &scenario_rows)?;
        }
        if *scenario == "http-layer" {
            print_layer_overheads(out, &scenario_rows)?;
        }
        if *scenario == "inflight" {
            print_versus_semaphore(out, &scenario_rows)?;
        }
        if *scenario == "composite-2" {
            print_composite_versus_one_check(out, &scenario_rows)?;
        }
        if *scenario == "redis-script" || *scenario == "redis-leased" {
            print_redis_ratios(out, rows, scenario)?;
        }
        let reports: Vec<&&Row> = scenario_rows
            .iter()
            .filter(|row| row.state_report.is_some())
            .collect();
        if let Some(max_threads) = reports.iter().map(|row| row.threads).max() {
            writeln!(out, "   state after the run at {max_threads} threads:")?;
            for row in reports.iter().filter(|row| row.threads == max_threads) {
                writeln!(
                    out,
                    "     {:<30} {}",
                    row.series(),
                    row.state_report.as_deref().unwrap_or_default()
                )?;
            }
        }
    }
    Ok(())
}

/// Under direct-reserve: each row's time per call over that of the allowed check of the same
/// limiter and threads in direct-allow (same quota), where this run measured it.
fn print_versus_allowed_check(
    out: &mut impl std::io::Write,
    rows: &[Row],
    reserve_rows: &[&Row],
) -> std::io::Result<()> {
    let ratios: Vec<String> = reserve_rows
        .iter()
        .filter_map(|reserve| {
            let allow = rows.iter().find(|row| {
                row.scenario == "direct-allow"
                    && row.limiter == reserve.limiter
                    && row.algorithm == reserve.algorithm
                    && row.threads == reserve.threads
            })?;
            Some(format!(
                "{:.2}x at {} thread{}",
                reserve.aggregate_ns_per_op() / allow.aggregate_ns_per_op(),
                reserve.threads,
                if reserve.threads == 1 { "" } else { "s" },
            ))
        })
        .collect();
    if ratios.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "   reserve / allowed check (direct-allow's row, this run): {}",
        ratios.join(", ")
    )
}

/// The thread counts of `rows`, ascending, each once.
fn distinct_thread_counts(rows: &[&Row]) -> Vec<usize> {
    let mut thread_counts: Vec<usize> = rows.iter().map(|row| row.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    thread_counts
}

/// One row's runs, by aggregate ns per call: the least, the median's and the greatest.
pub struct Spread {
    /// The row's name: scenario, limiter, algorithm and threads.
    pub label: String,
    /// The fastest run.
    pub least: f64,
    /// The median run, the one reported.
    pub median: f64,
    /// The slowest run.
    pub greatest: f64,
}

/// Each job's median run (by aggregate ns per call; the upper one of an even count), and the
/// spread of its runs.
pub fn medians(runs_per_job: Vec<Vec<Row>>) -> (Vec<Row>, Vec<Spread>) {
    let mut rows = Vec::with_capacity(runs_per_job.len());
    let mut spreads = Vec::with_capacity(runs_per_job.len());
    for mut runs in runs_per_job {
        runs.sort_by(|a, b| a.aggregate_ns_per_op().total_cmp(&b.aggregate_ns_per_op()));
        let (Some(least), Some(greatest)) = (runs.first(), runs.last()) else {
            continue;
        };
        let (least, greatest) = (least.aggregate_ns_per_op(), greatest.aggregate_ns_per_op());
        let median = runs.swap_remove(runs.len() / 2);
        spreads.push(Spread {
            label: format!(
                "{} {} {} {}",
                median.scenario, median.limiter, median.algorithm, median.threads
            ),
            least,
            median: median.aggregate_ns_per_op(),
            greatest,
        });
        rows.push(median);
    }
    (rows, spreads)
}

/// Under the table, with `--runs N`: every row's median and range of aggregate ns per call.
pub fn print_spreads(
    out: &mut impl std::io::Write,
    runs: usize,
    spreads: &[Spread],
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nmedians of {runs} runs (rounds over all rows); aggregate ns per call, median (least - greatest):"
    )?;
    for spread in spreads {
        writeln!(
            out,
            "   {:<52} {:>9.2} ({:.2} - {:.2})",
            spread.label, spread.median, spread.least, spread.greatest
        )?;
    }
    Ok(())
}

/// The aggregate ns per call of `limiter`'s row at `threads`, if `rows` has one.
fn aggregate_ns_per_op(rows: &[&Row], limiter: &str, threads: usize) -> Option<f64> {
    rows.iter()
        .find(|row| row.limiter == limiter && row.threads == threads)
        .map(|row| row.aggregate_ns_per_op())
}

/// The aggregate ns per call of `limiter`'s `algorithm` row at `threads`, if `rows` has one.
fn algorithm_aggregate_ns_per_op(
    rows: &[&Row],
    limiter: &str,
    algorithm: &str,
    threads: usize,
) -> Option<f64> {
    rows.iter()
        .find(|row| row.limiter == limiter && row.algorithm == algorithm && row.threads == threads)
        .map(|row| row.aggregate_ns_per_op())
}

/// The layers' overheads over the floor (the service with no layer) in http-layer, aggregate ns
/// per call, and nanolimit's over tower_governor's (the target: at most 0.5); then the
/// overhead of the least a keyed layer must do (`floor peer-ip-check`) as a share of
/// tower_governor's: the lowest ratio a layer reading the same clock could reach.
fn print_layer_overheads(out: &mut impl std::io::Write, rows: &[&Row]) -> std::io::Result<()> {
    let find = |limiter: &str, algorithm: &str, threads: usize| {
        algorithm_aggregate_ns_per_op(rows, limiter, algorithm, threads)
    };
    for threads in distinct_thread_counts(rows) {
        let (Some(nanolimit), Some(tower_governor), Some(floor)) = (
            find("nanolimit", "gcra", threads),
            find("tower_governor", "gcra", threads),
            find("floor", "no-layer", threads),
        ) else {
            continue;
        };
        let (ours, theirs) = (nanolimit - floor, tower_governor - floor);
        // Too short a run (the smoke test) can put a layer below the floor: no ratio then.
        let share_of_theirs = |overhead: f64| {
            if overhead > 0.0 && theirs > 0.0 {
                format!("{:.2}", overhead / theirs)
            } else {
                "n/a (a row measured at or below the floor)".to_string()
            }
        };
        let plural = if threads == 1 { "" } else { "s" };
        writeln!(
            out,
            "   overhead over no layer at {threads} thread{plural}: nanolimit {ours:.2} ns, tower_governor {theirs:.2} ns per call (aggregate); nanolimit / tower_governor = {} (target <= 0.5)",
            share_of_theirs(ours),
        )?;
        if let Some(check) = find("floor", "peer-ip-check", threads) {
            let least = check - floor;
            writeln!(
                out,
                "   the least a keyed layer adds (floor peer-ip-check) at {threads} thread{plural}: {least:.2} ns; / tower_governor = {}",
                share_of_theirs(least),
            )?;
        }
    }
    Ok(())
}

/// Under inflight: nanolimit's aggregate ns per call (a permit taken and dropped) over tokio's
/// semaphore's at each thread count (the target: at most 1 at every thread count).
fn print_versus_semaphore(out: &mut impl std::io::Write, rows: &[&Row]) -> std::io::Result<()> {
    let find = |limiter: &str, threads: usize| aggregate_ns_per_op(rows, limiter, threads);
    for threads in distinct_thread_counts(rows) {
        let (Some(nanolimit), Some(semaphore)) =
            (find("nanolimit", threads), find("tokio-semaphore", threads))
        else {
            continue;
        };
        writeln!(
            out,
            "   acquire + release at {threads} thread{}: nanolimit {nanolimit:.2} ns, tokio-semaphore {semaphore:.2} ns per call (aggregate); nanolimit / tokio-semaphore = {:.2} (target <= 1)",
            if threads == 1 { "" } else { "s" },
            nanolimit / semaphore,
        )?;
    }
    Ok(())
}

/// Under composite-2: the composite's aggregate ns per call over one check's (the per-key
/// limiter alone) at each thread count (the target: at most 2.2).
fn print_composite_versus_one_check(
    out: &mut impl std::io::Write,
    rows: &[&Row],
) -> std::io::Result<()> {
    let find = |algorithm: &str, threads: usize| {
        algorithm_aggregate_ns_per_op(rows, "nanolimit", algorithm, threads)
    };
    for threads in distinct_thread_counts(rows) {
        let Some(one) = find("gcra", threads) else {
            continue;
        };
        for (algorithm, global) in [
            ("gcra+gcra", "plain global"),
            ("gcra+gcra-striped", "striped global"),
        ] {
            let Some(composite) = find(algorithm, threads) else {
                continue;
            };
            writeln!(
                out,
                "   composite of two ({global}) at {threads} thread{}: {composite:.2} ns, one check {one:.2} ns per call (aggregate); composite / one check = {:.2} (target <= 2.2)",
                if threads == 1 { "" } else { "s" },
                composite / one,
            )?;
        }
    }
    Ok(())
}

/// Under redis-script: its aggregate ns per call over redis-naive's (the target: at
/// most 1.2); under redis-leased: its throughput over redis-script's (target: at least 100);
/// at each thread count both rows of this run have.
fn print_redis_ratios(
    out: &mut impl std::io::Write,
    rows: &[Row],
    scenario: &str,
) -> std::io::Result<()> {
    let find = |scenario: &str, threads: usize| {
        rows.iter()
            .find(|row| row.scenario == scenario && row.threads == threads)
            .map(Row::aggregate_ns_per_op)
    };
    let mut thread_counts: Vec<usize> = rows
        .iter()
        .filter(|row| row.scenario == scenario)
        .map(|row| row.threads)
        .collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    for threads in thread_counts {
        let plural = if threads == 1 { "" } else { "s" };
        match scenario {
            "redis-script" => {
                let (Some(script), Some(naive)) =
                    (find("redis-script", threads), find("redis-naive", threads))
                else {
                    continue;
                };
                writeln!(
                    out,
                    "   at {threads} thread{plural}: script {script:.0} ns, INCR+EXPIRE {naive:.0} ns per call (aggregate); script / naive = {:.2} (target <= 1.2)",
                    script / naive,
                )?;
            }
            _ => {
                let (Some(leased), Some(script)) =
                    (find("redis-leased", threads), find("redis-script", threads))
                else {
                    continue;
                };
                writeln!(
                    out,
                    "   at {threads} thread{plural}: leased {leased:.1} ns, script {script:.0} ns per call (aggregate); leased throughput / script throughput = {:.0}x (target >= 100)",
                    script / leased,
                )?;
            }
        }
    }
    Ok(())
}

/// Writes every row, hardware floors repeated under each scenario, in the documented columns.
pub fn write_csv(path: &Path, scenarios: &[&'static str], rows: &[Row]) -> std::io::Result<()> {
    let mut text = String::new();
    writeln!(text, "{CSV_HEADER}").expect("writing to a String cannot fail");
    for scenario in scenarios {
        let floors = rows.iter().filter(|row| row.is_hardware_floor());
        // The scenario's rows, its own floor's (http-layer's, inflight's) included.
        let own = rows.iter().filter(|row| row.scenario == *scenario);
        for row in own.chain(floors) {
            writeln!(
                text,
                "{},{},{},{},{},{},{:.3},{:.3},{:.3},{:.6}",
                scenario,
                row.limiter,
                row.algorithm,
                row.threads,
                row.keys,
                row.operations,
                row.ns_per_op(),
                row.aggregate_ns_per_op(),
                row.mops_per_second(),
                row.allowed_fraction(),
            )
            .expect("writing to a String cannot fail");
        }
    }
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::File::create(path)?.write_all(text.as_bytes())
}

const SERIES_COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Draws aggregate ns per call against threads, one panel per scenario, one line per limiter
/// and algorithm, plus the scenario's floor as a dashed grey line.
pub fn write_svg(
    path: &Path,
    scenarios: &[&'static str],
    rows: &[Row],
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let columns = if scenarios.len() > 1 { 2 } else { 1 };
    let panel_rows = scenarios.len().div_ceil(columns);
    let (panel_width, panel_height) = (620u32, 420u32);
    let root = SVGBackend::new(
        path,
        (
            panel_width * columns as u32,
            panel_height * panel_rows as u32 + 40,
        ),
    )
    .into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        "nanolimit contention benchmark: aggregate ns per call (lower is better)",
        ("sans-serif", 20),
    )?;
    let panels = body.split_evenly((panel_rows, columns));
    let mut series_order: Vec<String> = Vec::new();
    for row in rows.iter().filter(|row| row.limiter != "floor") {
        let series = row.series();
        if !series_order.contains(&series) {
            series_order.push(series);
        }
    }
    let max_threads = rows.iter().map(|row| row.threads).max().unwrap_or(1);
    for (panel, scenario) in panels.iter().zip(scenarios) {
        let scenario_rows: Vec<&Row> = rows
            .iter()
            .filter(|row| row.scenario == *scenario && row.limiter != "floor")
            .collect();
        let mut thread_counts: Vec<usize> = rows.iter().map(|row| row.threads).collect();
        thread_counts.sort_unstable();
        thread_counts.dedup();
        let floor_points: Vec<(f64, f64)> = thread_counts
            .iter()
            .filter_map(|&threads| {
                floor_at(rows, scenario, threads).map(|(_, aggregate)| (threads as f64, aggregate))
            })
            .collect();
        let values = scenario_rows
            .iter()
            .map(|row| row.aggregate_ns_per_op())
            .chain(floor_points.iter().map(|point| point.1));
        let (low, high) = values.fold((f64::MAX, f64::MIN), |(low, high), value| {
            (low.min(value), high.max(value))
        });
        if low > high {
            continue;
        }
        // Headroom above the highest line (log scale) keeps the legend clear of the data.
        let y_range = (low * 0.7).max(0.01)..(high * 6.0);
        // Ticks at 1, 2, 5 × 10^k.
        let y_ticks: Vec<f64> = (-2..=6)
            .flat_map(|exponent| [1.0, 2.0, 5.0].map(|mantissa| mantissa * 10f64.powi(exponent)))
            .filter(|tick| y_range.contains(tick))
            .collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(*scenario, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(
                0.5f64..(max_threads as f64 + 0.5),
                y_range.log_scale().with_key_points(y_ticks),
            )?;
        chart
            .configure_mesh()
            .x_desc("threads")
            .y_desc("aggregate ns per call")
            .x_labels(max_threads.min(16))
            .x_label_formatter(&|value| format!("{value:.0}"))
            .y_label_formatter(&|value| {
                if *value >= 10.0 {
                    format!("{value:.0}")
                } else {
                    format!("{value:.1}")
                }
            })
            .draw()?;
        for (index, series) in series_order.iter().enumerate() {
            let mut points: Vec<(f64, f64)> = scenario_rows
                .iter()
                .filter(|row| &row.series() == series)
                .map(|row| (row.threads as f64, row.aggregate_ns_per_op()))
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = SERIES_COLORS[index % SERIES_COLORS.len()];
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(series.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart.draw_series(
                points
                    .into_iter()
                    .map(move |point| Circle::new(point, 3, color.filled())),
            )?;
        }
        if !floor_points.is_empty() {
            let grey = RGBColor(120, 120, 120);
            chart
                .draw_series(DashedLineSeries::new(
                    floor_points,
                    6,
                    4,
                    grey.stroke_width(1),
                ))?
                .label(format!("floor ({})", floor_label(scenario)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], grey));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 12))
            .draw()?;
    }
    root.present()?;
    Ok(())
}
