//! Published endpoint names (`ramp_NamePublish`, `ramp_NameLookup`): an
//! endpoint's name stored under a service string, found by any rank of
//! the job, the same way under every launcher (ramp-run, mpiexec PMI-1 and
//! PMI-2, srun --mpi=pmi2 and pmix, Open MPI's mpirun) and without any
//! collective call: publish and look-up are ramp messages between the
//! job's endpoints, which every rank knows from start-up.
//!
//! - Each service is kept by one rank, its owner: [`service_owner`], the
//!   FNV-1a hash of the service string modulo the job's size (every rank
//!   computes the same). The owner's job endpoint keeps the names in a
//!   bounded table and answers queries (`am/services.rs`, wire kinds 12
//!   and 13) whenever it is polled: in `AM_Poll`, and in every ramp call
//!   that waits (barriers, look-ups, publishes, request calls). An owner
//!   that is the caller itself answers from its own table, with no message.
//! - A publish is one round trip to the owner. A service is published once
//!   per job: a second publish of it, by any rank, is refused (`Resource`)
//!   and the first name stays (ramp's launcher made the same rule).
//! - A look-up asks the owner; while the owner has nothing under the
//!   service it asks again, after pauses that double from 1 ms to 50 ms,
//!   until a name is found or `timeout_ms` passed (`Resource`); so it finds
//!   a name published after it started, and needs no barrier between the
//!   publish and the look-up. The first question is always answered (0:
//!   one try); a later one still in flight at the timeout is given up.
//!   The bundle is polled throughout, so handlers may run inside it.
//! - A question waits for its answer at most the peer timeout plus a
//!   second (`RAMP_PEER_TIMEOUT_MS`). A publish whose owner did not answer
//!   (its rank exited, or has not polled for the peer timeout) fails with
//!   `Resource`; a look-up asks such an owner again until its timeout, then
//!   says the owner did not answer. A rank keeps the names it owns only
//!   while it lives, so ranks look names up before the owners exit.
//! - Outside a job (no `ramp_SPMDStartup`), publish and look-up are
//!   `Resource`; a bad service string is `BadArg`.
//!
//! A service is 1..=48 bytes of `A-Z a-z 0-9 . _ -`.

use crate::time::{Instant, Nanos, MILLIS};
use std::sync::Arc;

use crate::am::{self, Bundle, Endpoint, EndpointName, ServiceAnswer, ServiceQuery};
use crate::error::{Error, Result};

pub use crate::am::{valid_service, MAX_SERVICE};

/// The first pause between two look-ups that found nothing; each next
/// pause doubles, up to `MAX_PAUSE`.
const FIRST_PAUSE: Nanos = MILLIS;
const MAX_PAUSE: Nanos = 50 * MILLIS;

/// The rank that keeps the name published under `service` in a job of
/// `size` ranks: FNV-1a (64 bits) of the service string, modulo `size`.
pub fn service_owner(service: &[u8], size: usize) -> usize {
    (am::service_hash(service) % size.max(1) as u64) as usize
}

fn check_service(service: &[u8]) -> Result<()> {
    if valid_service(service) {
        Ok(())
    } else {
        Err(Error::BadArg(
            "a service is 1..48 characters of A-Z a-z 0-9 . _ -",
        ))
    }
}

fn outside() -> Error {
    Error::Resource("not in an SPMD job (no ranks to publish names at)")
}

/// The job's bundle and endpoint, and the translation index (the rank) of
/// `service`'s owner.
fn job_and_owner(service: &[u8]) -> Result<(Arc<Bundle>, Arc<Endpoint>, u32)> {
    let g = super::lock_job("an SPMD collective is running on this thread (inside a handler?)")?;
    let job = g.as_ref().ok_or_else(outside)?;
    let size = super::size().ok_or_else(outside)?;
    let owner = service_owner(service, size) as u32;
    Ok((job.bundle.clone(), job.endpoint.clone(), owner))
}

/// Polls `bundle` until `q` is answered, `deadline` (if any) passes, or
/// its answer took `q.answer_within`: the answer, or None (given up).
fn answer_of(
    bundle: &Bundle,
    ep: &Endpoint,
    q: ServiceQuery,
    deadline: Option<Instant>,
) -> Result<Option<ServiceAnswer>> {
    // (the job's endpoint's clock: the simulator's in a simulated job)
    let clock = &ep.clock;
    let give_up = clock.now().plus(q.answer_within);
    let end = deadline.map_or(give_up, |d| d.min(give_up));
    let mut rounds = 0u32;
    loop {
        if let Err(e) = bundle.poll() {
            ep.forget_service_query(q);
            return Err(e);
        }
        if let Some(a) = ep.take_service_answer(&q) {
            return Ok(Some(a));
        }
        let now = clock.now();
        if now >= end {
            ep.forget_service_query(q);
            return Ok(None);
        }
        rounds += 1;
        // spin a little (a near owner answers within microseconds), then
        // sleep until a datagram or a timer, at most 5 ms
        if rounds > 100 {
            bundle.wait_for_activity(millis_until(now, end).min(5));
        }
    }
}

/// Whole milliseconds from `now` to `end`, at least 1.
fn millis_until(now: Instant, end: Instant) -> u64 {
    end.since(now).div_ceil(MILLIS).max(1)
}

/// An answer that is none of those its question allows.
fn unexpected(a: Option<ServiceAnswer>) -> Error {
    match a {
        Some(ServiceAnswer::Refused) => Error::Resource(
            "the rank that keeps that service refused the query (another job's endpoint?)",
        ),
        Some(ServiceAnswer::Unreachable) | None => Error::Resource(
            "the rank that keeps that service did not answer (it exited, or does not poll)",
        ),
        Some(_) => Error::Resource("the name query got an answer that does not fit it"),
    }
}

/// Publishes `ep`'s name under `service` for the whole job: one round trip
/// to the service's owner rank. `Resource` when a name is published under
/// `service` already (the first stays), outside a job, or when the owner
/// does not answer.
pub fn publish(ep: &Endpoint, service: &[u8]) -> Result<()> {
    check_service(service)?;
    let (bundle, job_ep, owner) = job_and_owner(service)?;
    let q = job_ep.ask_service(owner, service, Some(ep.name()))?;
    match answer_of(&bundle, &job_ep, q, None)? {
        Some(ServiceAnswer::Published) => Ok(()),
        Some(ServiceAnswer::Taken) => Err(Error::Resource(
            "a name is published under that service already",
        )),
        Some(ServiceAnswer::Full) => Err(Error::Resource(
            "the rank that keeps that service has no room for more names",
        )),
        other => Err(unexpected(other)),
    }
}

/// The name published under `service`, asking its owner rank again until
/// one appears or `timeout_ms` passed (0: one try; see the module doc).
pub fn lookup(service: &[u8], timeout_ms: i32) -> Result<EndpointName> {
    check_service(service)?;
    let timeout_ms = u64::try_from(timeout_ms).map_err(|_| Error::BadArg("negative timeout"))?;
    let (bundle, job_ep, owner) = job_and_owner(service)?;
    let clock = job_ep.clock.clone();
    let deadline = clock.now().plus(timeout_ms.saturating_mul(MILLIS));
    let nothing = || Error::Resource("nothing is published under that service (timeout)");
    let mut pause = FIRST_PAUSE;
    let mut first = true;
    loop {
        let q = job_ep.ask_service(owner, service, None)?;
        let answer = answer_of(&bundle, &job_ep, q, (!first).then_some(deadline))?;
        first = false;
        // (an owner that did not answer may be busy: asked again too, and
        // named at the timeout)
        let silent = match answer {
            Some(ServiceAnswer::Found(n)) => return Ok(n),
            Some(ServiceAnswer::Missing) => false,
            Some(ServiceAnswer::Unreachable) | None => true,
            other => return Err(unexpected(other)),
        };
        let timed_out = || if silent { unexpected(None) } else { nothing() };
        if clock.now() >= deadline {
            return Err(timed_out());
        }
        // nothing yet: progress (handlers run) through a pause, ask again
        let until = clock.now().plus(pause).min(deadline);
        loop {
            let now = clock.now();
            if now >= until {
                break;
            }
            bundle.poll()?;
            bundle.wait_for_activity(millis_until(now, until));
        }
        if clock.now() >= deadline {
            return Err(timed_out());
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_are_checked() {
        assert!(valid_service(b"a"));
        assert!(valid_service(b"Svc-1.two_3"));
        assert!(valid_service(&[b'x'; MAX_SERVICE]));
        for bad in [
            &b""[..],
            &[b'x'; MAX_SERVICE + 1],
            b"a b",
            b"a=b",
            b"a;b",
            b"a\\b",
            b"\xc3\xa9",
        ] {
            assert!(!valid_service(bad), "{bad:?}");
            assert!(matches!(check_service(bad), Err(Error::BadArg(_))));
        }
    }

    /// The owner rule is the same in every process and spreads services
    /// over the ranks; a job of one rank owns everything.
    #[test]
    fn owners_are_fixed_and_spread() {
        // FNV-1a 64 of "a" (a published constant): the rule cannot drift
        assert_eq!(am::service_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(am::service_hash(b""), 0xcbf2_9ce4_8422_2325);
        let mut per_rank = [0usize; 7];
        for i in 0..7000 {
            let s = format!("svc-{i}");
            let o = service_owner(s.as_bytes(), 7);
            assert_eq!(o, service_owner(s.as_bytes(), 7));
            per_rank[o] += 1;
            assert_eq!(service_owner(s.as_bytes(), 1), 0);
            assert_eq!(service_owner(s.as_bytes(), 0), 0);
        }
        assert!(per_rank.iter().all(|&n| n > 700), "{per_rank:?}");
    }

    #[test]
    fn outside_a_job_is_a_resource_error() {
        assert!(matches!(lookup(b"nobody", 0), Err(Error::Resource(_))));
        assert!(matches!(lookup(b"bad service", 0), Err(Error::BadArg(_))));
        assert!(matches!(lookup(b"x", -1), Err(Error::BadArg(_))));
    }
}
