//! The http-layer callgrind case `tower_governor`: tower_governor's `GovernorLayer` as the
//! contention benchmark's http-layer scenario configures it, over the inner service.
//!
//! ```text
//! bash benches/callgrind.sh http
//! ```
//!
//! By hand:
//!
//! ```text
//! cargo bench --no-run --all-features --bench callgrind_http_tower_governor   # prints the executable's path
//! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
//!     --callgrind-out-file=/tmp/cg.out target/release/deps/callgrind_http_tower_governor-HASH tower_governor [ITERATIONS]
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

use axum::body::Body;
use http_clients::HTTP_LAYER_QUOTA;
use http_requests::{governor_config, respond};
use std::process::ExitCode;
use std::sync::Arc;
use tower::{service_fn, Layer};
use tower_governor::GovernorLayer;

fn main() -> ExitCode {
    http_runner::main("tower_governor", |iterations| {
        let config = governor_config(&HTTP_LAYER_QUOTA);
        let limiter = Arc::clone(config.limiter());
        let service = GovernorLayer::<_, _, Body>::new(config).layer(service_fn(respond));
        http_runner::run(service, iterations, || limiter.len() as u64)
    })
}
