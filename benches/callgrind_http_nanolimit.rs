//! The http-layer callgrind case `nanolimit`: nanolimit's `RateLimitLayer` as the contention
//! benchmark's http-layer scenario configures it, over the inner service.
//!
//! ```text
//! bash benches/callgrind.sh http
//! ```
//!
//! By hand:
//!
//! ```text
//! cargo bench --no-run --all-features --bench callgrind_http_nanolimit   # prints the executable's path
//! valgrind --tool=callgrind --toggle-collect='*measured_loop*' \
//!     --callgrind-out-file=/tmp/cg.out target/release/deps/callgrind_http_nanolimit-HASH nanolimit [ITERATIONS]
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

use http_clients::{HTTP_CLIENTS, HTTP_LAYER_QUOTA};
use http_requests::{nanolimit_layer, respond};
use std::process::ExitCode;
use std::sync::Arc;
use tower::{service_fn, Layer};

fn main() -> ExitCode {
    http_runner::main("nanolimit", |iterations| {
        // The scenario's table capacity: the pool (at least 1,024).
        let layer = nanolimit_layer(&HTTP_LAYER_QUOTA, HTTP_CLIENTS as usize);
        let limiter = Arc::clone(layer.limiter());
        let service = layer.layer(service_fn(respond));
        http_runner::run(service, iterations, || limiter.stats().inserts)
    })
}
