//! The http-layer callgrind case `floor`: the inner service alone, what every row of the
//! contention benchmark's http-layer scenario pays without a limit.
//!
//! ```text
//! bash benches/callgrind.sh http
//! ```
//!
//! By hand:
//!
//! ```text
//! cargo bench --no-run --all-features --bench callgrind_http_floor   # prints the executable's path
//! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
//!     --callgrind-out-file=/tmp/cg.out target/release/deps/callgrind_http_floor-HASH floor [ITERATIONS]
//! ```
//!
//! Instructions per request = (Ir at ITERATIONS − Ir at 0) / ITERATIONS (the script uses
//! 200,000; it prints the layers' overhead over `floor` and their ratio). What a request is:
//! `benches/shared/http_runner.rs`.

#[path = "shared/http_clients.rs"]
#[allow(dead_code)]
mod http_clients;
#[path = "shared/http_requests.rs"]
#[allow(dead_code)]
mod http_requests;
#[path = "shared/http_runner.rs"]
mod http_runner;
#[path = "shared/quota_spec.rs"]
#[allow(dead_code)]
mod quota_spec;

use http_requests::respond;
use std::process::ExitCode;
use tower::service_fn;

fn main() -> ExitCode {
    http_runner::main("floor", |iterations| {
        http_runner::run(service_fn(respond), iterations, || 0)
    })
}
