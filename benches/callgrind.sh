#!/usr/bin/env bash
# Instructions per call of nanolimit's checks, counted by valgrind's callgrind: stable on noisy
# machines, where the criterion timings of benches/direct.rs and benches/keyed.rs are not.
#
#   bash benches/callgrind.sh [direct|keyed|http|all] [REGEX]     (default: all, every case)
#
# REGEX (extended, as `grep -E`) keeps only the cases whose names match it, e.g.
# `bash benches/callgrind.sh direct 'loop_only|gcra_(allowed|reserve)'`.
#
# Builds the runners (benches/callgrind_direct.rs, benches/callgrind_keyed.rs, and for `http`
# benches/callgrind_http_{floor,check_floor,nanolimit,tower_governor}.rs, one binary per case, with
# `--all-features`, as the contention benchmark) with
# `cargo bench --no-run`, honouring CARGO_TARGET_DIR, then runs every case twice under
# `valgrind --tool=callgrind --toggle-collect='*measured_loop*'`: with ITERATIONS=0 and with
# ITERATIONS=200000. Instructions per call = (Ir at 200000 - Ir at 0) / 200000: the set-up
# outside the loop cancels out; the loop's own instructions (and the key generator's, for
# keyed cases) do not, and the `loop_only` cases measure them. The http cases are requests
# through a tower service (the contention benchmark's http-layer, one thread): `http/floor` is
# the service alone, `http/check_floor` the least a keyed layer must add to it (the client's
# address, a clock read, a hash, one compare-and-swap on a line of a table-sized array), and
# the script prints the layers' overhead ratio, (nanolimit - floor) / (tower_governor - floor),
# and check_floor's share of tower_governor's overhead, after the table.
#
# Prints a table `case  instructions_per_call`. A run that fails (valgrind or the runner, which
# verifies that every call had the outcome its case is named after) is reported with its last
# lines of stderr; the script then goes on with the other cases and exits non-zero at the end.
set -u -o pipefail

usage() {
    echo "usage: bash benches/callgrind.sh [direct|keyed|http|all] [REGEX]" >&2
    exit 2
}

selection=${1:-all}
case "$selection" in
direct | keyed | http | all) ;;
*) usage ;;
esac
filter=${2:-}
[ $# -le 2 ] || usage

ITERATIONS=200000

command -v valgrind >/dev/null || {
    echo "callgrind.sh: valgrind is not installed" >&2
    exit 1
}

cd "$(dirname "$0")/.." || exit 1

# The executable of bench target $1, from cargo's JSON messages in $2.
executable_of() {
    grep "\"name\":\"$1\"" "$2" | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d '"' -f 4
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building the runners..." >&2
direct_runner=
keyed_runner=
if [ "$selection" != http ]; then
    if ! cargo bench --no-run --bench callgrind_direct --bench callgrind_keyed \
        --message-format=json >"$work/cargo.json"; then
        echo "callgrind.sh: cargo bench --no-run failed" >&2
        exit 1
    fi
    direct_runner=$(executable_of callgrind_direct "$work/cargo.json")
    keyed_runner=$(executable_of callgrind_keyed "$work/cargo.json")
    if [ -z "$direct_runner" ] || [ -z "$keyed_runner" ]; then
        echo "callgrind.sh: cargo reported no executable for the runners" >&2
        exit 1
    fi
fi
http_cases=(floor check_floor nanolimit tower_governor)
declare -A http_runners=()
if [ "$selection" = http ] || [ "$selection" = all ]; then
    if ! cargo bench --no-run --all-features --bench callgrind_http_floor \
        --bench callgrind_http_check_floor --bench callgrind_http_nanolimit \
        --bench callgrind_http_tower_governor \
        --message-format=json >"$work/cargo_http.json"; then
        echo "callgrind.sh: cargo bench --no-run --all-features failed" >&2
        exit 1
    fi
    for case in "${http_cases[@]}"; do
        http_runners[$case]=$(executable_of "callgrind_http_$case" "$work/cargo_http.json")
        if [ -z "${http_runners[$case]}" ]; then
            echo "callgrind.sh: cargo reported no executable for callgrind_http_$case" >&2
            exit 1
        fi
    done
fi

failures=0

# Instructions counted in measured_loop for `$runner $case $iterations`, on stdout.
instructions() {
    local runner=$1 case=$2 iterations=$3
    local out="$work/callgrind.out"
    if ! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
        --callgrind-out-file="$out" "$runner" "$case" "$iterations" \
        >"$work/stdout" 2>"$work/stderr"; then
        echo "$case (ITERATIONS=$iterations) FAILED:" >&2
        # The runner's own messages, without valgrind's (prefixed `==PID==`).
        grep -v '^==[0-9]*==' "$work/stderr" | tail -n 5 >&2
        return 1
    fi
    local count
    count=$(grep -E '^(summary|totals):' "$out" | head -n 1 | awk '{print $2}')
    if [ -z "$count" ]; then
        echo "$case (ITERATIONS=$iterations) FAILED: no instruction count in callgrind's output" >&2
        return 1
    fi
    echo "$count"
}

# Prints one table row per case of runner $1, each case's name prefixed with $2 (the runner
# is given the case without it), and keeps the counts in $work/counts.
measure() {
    local runner=$1 prefix=$2
    shift 2
    local case at_zero at_n
    for case in "$@"; do
        if [ -n "$filter" ] && ! grep -Eq -- "$filter" <<<"$prefix$case"; then
            continue
        fi
        if at_zero=$(instructions "$runner" "$case" 0) &&
            at_n=$(instructions "$runner" "$case" "$ITERATIONS"); then
            awk -v a="$at_zero" -v b="$at_n" -v n="$ITERATIONS" -v c="$prefix$case" \
                'BEGIN { printf "%-50s %12.2f\n", c, (b - a) / n }' | tee -a "$work/counts"
        else
            printf "%-50s %12s\n" "$prefix$case" "FAILED"
            failures=$((failures + 1))
        fi
    done
}

direct_cases=(loop_only floor_quanta_clock_now floor_governor_quanta_clock_now
    floor_upkeep_clock_now floor_governor_upkeep_clock_now floor_compare_and_swap)
for algorithm in gcra sliding_window fixed_window; do
    for variant in allowed_default_clock allowed_caller_time allowed_upkeep_clock \
        denied denied_caller_time denied_upkeep_clock; do
        direct_cases+=("${algorithm}_${variant}")
    done
done
# Reservations granted at once (GCRA: the reservable quota), beside gcra_allowed_*.
for variant in default_clock caller_time upkeep_clock; do
    direct_cases+=("gcra_reserve_${variant}")
done
# The striped limiter's check (default stripes and leases, default clock), beside
# gcra_allowed_default_clock and gcra_denied.
direct_cases+=(gcra_striped_allow gcra_striped_deny sliding_log_allow sliding_log_deny)
direct_cases+=(gcra_live_allowed_default_clock gcra_live_allowed_caller_time gcra_live_denied)
# Limiters built with counters, beside gcra_allowed_default_clock, gcra_allowed_caller_time and
# gcra_denied_caller_time.
direct_cases+=(gcra_counted_allowed_default_clock gcra_counted_allowed_caller_time
    gcra_counted_denied_caller_time)

keyed_cases=()
for pattern in hot_key denied_key rotate_100k new_key new_key_full; do
    for implementation in loop_only nanolimit_hashed nanolimit_hashed_caller_time \
        nanolimit_hashed_counted_caller_time nanolimit_exact nanolimit_exact_caller_time; do
        keyed_cases+=("$pattern/$implementation")
    done
done

printf "%-50s %12s\n" "case" "instructions_per_call"
touch "$work/counts"
if [ "$selection" = direct ] || [ "$selection" = all ]; then
    measure "$direct_runner" "" "${direct_cases[@]}"
fi
if [ "$selection" = keyed ] || [ "$selection" = all ]; then
    measure "$keyed_runner" "" "${keyed_cases[@]}"
fi
if [ ${#http_runners[@]} -ne 0 ]; then
    for case in "${http_cases[@]}"; do
        measure "${http_runners[$case]}" "http/" "$case"
    done
    # The layers' overhead over the service alone, and nanolimit's as a share of tower_governor's.
    # check_floor's is the least a keyed layer must add (its share of tower_governor's bounds
    # what a layer reading the same clock can reach).
    awk '$1 == "http/floor" { floor = $2 } $1 == "http/nanolimit" { nanolimit = $2 }
        $1 == "http/tower_governor" { governor = $2 } $1 == "http/check_floor" { check = $2 }
        END {
            if (floor != "" && nanolimit != "" && governor != "" && governor != floor)
                printf "http overhead over floor: nanolimit %.2f, tower_governor %.2f, ratio %.3f\n",
                    nanolimit - floor, governor - floor, (nanolimit - floor) / (governor - floor)
            if (floor != "" && check != "" && governor != "" && governor != floor)
                printf "http overhead over floor: check_floor %.2f, its share of tower_governor'"'"'s %.3f\n",
                    check - floor, (check - floor) / (governor - floor)
        }' "$work/counts"
fi

if [ "$failures" -ne 0 ]; then
    echo "callgrind.sh: $failures case(s) failed" >&2
    exit 1
fi
