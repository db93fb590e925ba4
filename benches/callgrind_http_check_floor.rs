//! The http-layer callgrind case `check_floor`: the least a keyed layer must do per request
//! (`PeerIpCheckFloor`: the client's address from the extensions, a clock read, an ahash, one
//! compare-and-swap on a line of an array as large as nanolimit's table), over the inner
//! service. `benches/callgrind.sh http` prints its overhead over `floor` beside the layers'.
//! What a request is: `benches/shared/http_runner.rs`.

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
use http_requests::{respond, PeerIpCheckFloor};
use std::process::ExitCode;
use tower::service_fn;

fn main() -> ExitCode {
    http_runner::main("check_floor", |iterations| {
        let service = PeerIpCheckFloor::new(
            service_fn(respond),
            &HTTP_LAYER_QUOTA,
            HTTP_CLIENTS as usize,
        );
        http_runner::run(service, iterations, || 0)
    })
}
