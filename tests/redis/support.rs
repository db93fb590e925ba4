//! What the Redis tests share: the server `.ci/test-all` starts (found through
//! `NANOLIMIT_REDIS_URL`), a private server a fault test may stop and restart, and key prefixes
//! that keep parallel tests apart.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The URL of the shared test server, or `None` (the test then returns early) when
/// `NANOLIMIT_REDIS_URL` is unset outside CI. Under `CI=true` an unset URL is a failure: the
/// test command starts the server and sets it, so a missing one is never a silent skip.
pub fn redis_url() -> Option<String> {
    match std::env::var("NANOLIMIT_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "CI=true but NANOLIMIT_REDIS_URL is unset: run the tests through .ci/test-all, \
             which starts redis-server and sets it"
        ),
        _ => {
            eprintln!(
                "NANOLIMIT_REDIS_URL is unset: skipping a Redis test (bash .ci/test-all runs them)"
            );
            None
        }
    }
}

/// A key prefix no other test (nor an earlier run) uses.
pub fn unique_prefix(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("test:{test}:{run}:{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A plain connection to the test server, for what the tests read and write around the
/// limiter (state words, `EXISTS`, `PTTL`).
pub async fn raw_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("the test server answers")
}

/// A redis-server of the test's own, on a free loopback port, persistence off: one a test may
/// stop and restart. `None` (outside CI only) when no redis-server binary is found.
pub struct PrivateServer {
    pub port: u16,
    child: Option<Child>,
}

impl PrivateServer {
    /// Starts one; the binary is `NANOLIMIT_REDIS_SERVER`, else `redis-server` on the PATH.
    pub fn start() -> Option<PrivateServer> {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = PrivateServer { port, child: None };
        if !server.restart() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but redis-server could not be started"
            );
            eprintln!("no redis-server binary: skipping a fault test");
            return None;
        }
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts the server again on its port; waits (bounded) until it answers.
    pub fn restart(&mut self) -> bool {
        let binary =
            std::env::var("NANOLIMIT_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let spawned = Command::new(binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            return false;
        };
        self.child = Some(child);
        // Waiting for another process to listen, not for time to pass: bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server did not listen on {} within 10 s", self.port);
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing answers, as a server
    /// stuck or a network partition would.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server run again (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self
            .child
            .as_ref()
            .expect("a running server")
            .id()
            .to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Kills the server (as a crash would) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL ends a frozen server too.
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.stop();
    }
}
