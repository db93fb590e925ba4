//! What every Redis limiter shares: the connection, the key names, the epoch, and the one way a
//! script is called (within the timeout, its failures counted), alone or in a pipeline.

use super::policy::FailurePolicy;
use super::quota::hex;
use super::stats::Counters;
use crate::clock::Timestamp;
use crate::engine::error::RequestError;
use crate::engine::request::Request;
use crate::engine::stats::Stats;
use ::redis::aio::ConnectionManager;
use ::redis::{FromRedisValue, Script};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A Redis limiter's connection and settings: a [`RedisLimiter`](super::RedisLimiter) of a
/// state word and one of a sliding log differ only in their scripts and in how they read a
/// reply.
pub(crate) struct Store {
    pub(crate) connection: ConnectionManager,
    /// `{prefix}:{algorithm}:`.
    pub(crate) key_prefix: String,
    pub(crate) timeout: Duration,
    pub(crate) policy: FailurePolicy,
    pub(crate) epoch_unix_seconds: u64,
    pub(crate) counters: Counters,
}

impl core::fmt::Debug for Store {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Store")
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .field("epoch_unix_seconds", &self.epoch_unix_seconds)
            .finish_non_exhaustive()
    }
}

/// One script call: the Redis key and the arguments after it.
pub(crate) type Call = (String, Vec<String>);

impl Store {
    /// `{prefix}:{algorithm}:{{key}}`.
    pub(crate) fn key_name(&self, key: &str) -> String {
        format!("{}{{{key}}}", self.key_prefix)
    }

    /// A wall-clock time as nanoseconds since the epoch; `None` before it or past its horizon.
    pub(crate) fn timestamp_of(&self, time: SystemTime) -> Option<Timestamp> {
        let since_epoch = time
            .duration_since(UNIX_EPOCH + Duration::from_secs(self.epoch_unix_seconds))
            .ok()?;
        Timestamp::from_ns(u64::try_from(since_epoch.as_nanos()).ok()?).ok()
    }

    pub(crate) fn stats(&self) -> Stats {
        self.counters.read()
    }

    /// The failure policy.
    pub(crate) fn policy(&self) -> FailurePolicy {
        self.policy
    }

    /// The time a fallback decision is judged at: the request's, else the local clock's.
    pub(crate) fn fallback_time(&self, at: Option<Timestamp>) -> Timestamp {
        at.or_else(|| self.timestamp_of(SystemTime::now()))
            .unwrap_or(Timestamp::ORIGIN)
    }

    /// The arguments every script takes first (see `lua/prelude.lua`): the explicit time (or
    /// none: the server's `TIME`), the epoch, and whether to apply an admission.
    pub(crate) fn common_arguments(&self, at: Option<Timestamp>, apply: bool) -> Vec<String> {
        vec![
            at.map_or_else(String::new, |at| hex(at.as_ns())),
            self.epoch_unix_seconds.to_string(),
            if apply { "1" } else { "0" }.to_owned(),
        ]
    }

    /// One call of `script` on `key_name` within the timeout, its reply read by `read`; `None`
    /// (counted as a timeout or an error) when there is no reply in time, the call failed, or
    /// `read` could not make sense of the reply: the caller's failure policy decides then.
    pub(crate) async fn call<R: FromRedisValue, D>(
        &self,
        script: &Script,
        (key_name, arguments): Call,
        read: impl FnOnce(R) -> Option<D>,
    ) -> Option<D> {
        let mut invocation = script.prepare_invoke();
        invocation.key(key_name);
        for argument in arguments {
            invocation.arg(argument);
        }
        let mut connection = self.connection.clone();
        let call = invocation.invoke_async::<R>(&mut connection);
        let decided = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(reply)) => read(reply),
            Ok(Err(_)) => None,
            Err(_) => {
                self.counters.count_timeout();
                return None;
            }
        };
        if decided.is_none() {
            self.counters.count_error();
        }
        decided
    }

    /// The batch every limiter's `check_many` funnels into: each request's cost validated
    /// (`validate`: the cost, or why the request can never pass), one call per valid request
    /// (`call`), all sent in one pipeline by [`call_many`](Self::call_many), each reply read as
    /// a decision (`read`, with the request's cost), and `fallback` (cost, time) for a call left
    /// without one. One result per request, in order.
    pub(crate) async fn check_many<Q, R: FromRedisValue, D>(
        &self,
        script: &Script,
        requests: &[(&str, Request<Q>)],
        validate: impl Fn(&Request<Q>) -> Result<u64, RequestError>,
        call: impl Fn(&str, &Request<Q>) -> Call,
        read: impl Fn(R, u64) -> Option<D>,
        fallback: impl Fn(u64, Option<Timestamp>) -> D,
    ) -> Vec<Result<D, RequestError>> {
        let costs: Vec<Result<u64, RequestError>> = requests
            .iter()
            .map(|(_, request)| validate(request))
            .collect();
        let judged: Vec<usize> = (0..requests.len()).filter(|&i| costs[i].is_ok()).collect();
        let calls: Vec<Call> = judged
            .iter()
            .map(|&i| call(requests[i].0, &requests[i].1))
            .collect();
        let read_call = |index: usize, reply| read(reply, requests[judged[index]].1.cost);
        let mut decisions = self.call_many(script, &calls, read_call).await.into_iter();
        requests
            .iter()
            .zip(costs)
            .map(|((_, request), cost)| {
                let cost = cost?;
                Ok(match decisions.next().flatten() {
                    Some(decision) => decision,
                    None => fallback(cost, request.at),
                })
            })
            .collect()
    }

    /// The calls of `script` in one pipeline within the timeout (see a limiter's
    /// `check_many`), each reply read by
    /// `read`: one result per call, in order, `None` (counted) for a call without a reply in
    /// time, that failed, or whose reply `read` refused.
    pub(crate) async fn call_many<R: FromRedisValue, D>(
        &self,
        script: &Script,
        calls: &[Call],
        mut read: impl FnMut(usize, R) -> Option<D>,
    ) -> Vec<Option<D>> {
        if calls.is_empty() {
            return Vec::new();
        }
        let replies = match tokio::time::timeout(self.timeout, self.pipeline(script, calls)).await {
            Ok(Ok(replies)) => replies,
            Ok(Err(_)) => calls.iter().map(|_| None).collect(),
            Err(_) => {
                calls.iter().for_each(|_| self.counters.count_timeout());
                return calls.iter().map(|_| None).collect();
            }
        };
        replies
            .into_iter()
            .enumerate()
            .map(|(index, reply)| {
                let decided = reply.and_then(|reply| read(index, reply));
                if decided.is_none() {
                    self.counters.count_error();
                }
                decided
            })
            .collect()
    }

    /// The pipeline of `call_many`: one `EVALSHA` per call; those the server refuses for want
    /// of the script are repeated once it is loaded.
    async fn pipeline<R: FromRedisValue>(
        &self,
        script: &Script,
        calls: &[Call],
    ) -> ::redis::RedisResult<Vec<Option<R>>> {
        let mut connection = self.connection.clone();
        let pipeline = |indices: &mut dyn Iterator<Item = usize>| {
            let mut pipeline = ::redis::pipe();
            for index in indices {
                let (key_name, arguments) = &calls[index];
                pipeline
                    .cmd("EVALSHA")
                    .arg(script.get_hash())
                    .arg(1)
                    .arg(key_name)
                    .arg(arguments);
            }
            pipeline.ignore_errors();
            pipeline
        };
        let mut replies: Vec<::redis::RedisResult<R>> = pipeline(&mut (0..calls.len()))
            .query_async(&mut connection)
            .await?;
        let no_script = |reply: &::redis::RedisResult<R>| {
            matches!(reply, Err(error) if error.kind()
                == ::redis::ErrorKind::Server(::redis::ServerErrorKind::NoScript))
        };
        let refused: Vec<usize> = (0..replies.len())
            .filter(|&i| no_script(&replies[i]))
            .collect();
        if !refused.is_empty() {
            script.load_async(&mut connection).await?;
            let again: Vec<::redis::RedisResult<R>> = pipeline(&mut refused.iter().copied())
                .query_async(&mut connection)
                .await?;
            for (slot, reply) in refused.into_iter().zip(again) {
                replies[slot] = reply;
            }
        }
        Ok(replies.into_iter().map(Result::ok).collect())
    }
}
