//! Every table size the builder accepts is either allocated or a [`BuildError`], never an abort
//! of the process: checked in a child process whose address space is limited (`ulimit -v`), so
//! that the allocator really refuses the large tables instead of the machine's memory deciding.
//!
//! The test re-runs its test binary (`tests/keyed/`) as the child, running only the child test
//! (named by its path in that binary), with the limit set by `sh` and an environment variable
//! telling the child test to run; run alone, the child test does nothing. Linux only
//! (the limit is `RLIMIT_AS`).

use nanolimit::keyed::{Exact, Hashed, KeyMode};
use nanolimit::{BuildError, Gcra, KeyedLimiter, ManualClock};

/// Set in the child's environment: the child test runs only under the limit.
const CHILD_VARIABLE: &str = "NANOLIMIT_TABLE_ALLOCATION_CHILD";
/// The child's address-space limit: 2 GiB, room for the test harness and a 100,000-key table,
/// far below every table the child asks for.
const ADDRESS_SPACE_LIMIT_KIB: u64 = 2 * 1024 * 1024;

/// Builds a table of `capacity` keys in `shards` shards (default shards if `None`).
fn build<M: KeyMode<u64>>(capacity: usize, shards: Option<usize>) -> Result<usize, BuildError> {
    let builder = KeyedLimiter::<u64, _>::builder(Gcra::per_second(10).unwrap())
        .capacity(capacity)
        .clock(ManualClock::new())
        .key_mode::<M>();
    let builder = match shards {
        Some(shards) => builder.shards(shards),
        None => builder,
    };
    builder.build().map(|limiter| {
        assert!(limiter.check(&7).is_allowed());
        limiter.memory_bytes()
    })
}

/// What the child asserts, for one key mode: each size is an error of the expected kind, and a
/// table that fits is still built and works under the same limit.
fn assert_sizes<M: KeyMode<u64>>(mode: &str) {
    let cases: [(&str, usize, Option<usize>); 4] = [
        ("2^34 keys", 1 << 34, None),
        ("2^32 keys, default shards", 1 << 32, None),
        ("2^31 keys in 2^24 shards", 1 << 31, Some(1 << 24)),
        ("2^30 keys in one shard", 1 << 30, Some(1)),
    ];
    for (name, capacity, shards) in cases {
        match build::<M>(capacity, shards) {
            Err(BuildError::AllocationFailed { bytes }) => {
                assert!(
                    bytes as u64 > ADDRESS_SPACE_LIMIT_KIB * 1024,
                    "{mode} {name}: {bytes}"
                );
                println!("{mode} {name}: allocation of {bytes} bytes refused");
            }
            other => panic!("{mode} {name}: expected AllocationFailed, got {other:?}"),
        }
    }
    // More than 2^32 buckets: refused before any allocation.
    for capacity in [usize::MAX, 1 << 36] {
        assert!(
            matches!(
                build::<M>(capacity, None),
                Err(BuildError::CapacityTooLarge { capacity: asked, max })
                    if asked == capacity && max < capacity
            ),
            "{mode}"
        );
    }
    let fits = build::<M>(100_000, None).expect("a 100,000-key table fits in 2 GiB");
    println!("{mode} 100,000 keys: {fits} bytes allocated");
}

/// The child: runs only when the parent started it under the limit.
#[test]
fn child_under_an_address_space_limit() {
    if std::env::var_os(CHILD_VARIABLE).is_none() {
        return;
    }
    assert_sizes::<Hashed>("hashed");
    assert_sizes::<Exact>("exact");
}

#[cfg(target_os = "linux")]
#[test]
fn tables_too_large_to_allocate_are_errors_not_aborts() {
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_LIMIT_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(test_binary)
        .args([
            "table_allocation::child_under_an_address_space_limit",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VARIABLE, "1")
        .output()
        .expect("sh runs the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child failed ({:?}):\n{stdout}\n{stderr}",
        output.status
    );
    // The child really ran its assertions (not the empty pass of a child without the variable).
    for mode in ["hashed", "exact"] {
        assert!(
            stdout.contains(&format!("{mode} 100,000 keys:"))
                && stdout.contains(&format!("{mode} 2^31 keys in 2^24 shards: allocation")),
            "child output lacks its {mode} results:\n{stdout}"
        );
    }
}
