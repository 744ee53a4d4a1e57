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
//! - A query waits for its answer at most the peer timeout plus a second
//!   (`RAMP_PEER_TIMEOUT_MS`): an owner that is gone (its rank exited)
//!   fails the call with `Resource`. The owner must be running and polled:
//!   a rank keeps the names it owns only while it lives, so ranks that
//!   look names up should do so before the ranks that own them exit.
//! - Outside a job (no `ramp_SPMDStartup`), publish and look-up are
//!   `Resource`; a bad service string is `BadArg`.
//!
//! A service is 1..=48 bytes of `A-Z a-z 0-9 . _ -`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::HashMap;

use super::frame::{KV_OK, KV_REFUSED};
use super::JOB;
use crate::am::{self, Bundle, Endpoint, EndpointName, ServiceAnswer, ServiceQuery};
use crate::error::{Error, Result};

pub use crate::am::{valid_service, MAX_SERVICE};

/// The first pause between two look-ups that found nothing; each next
/// pause doubles, up to `MAX_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(50);

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
    let g = JOB.try_lock().ok_or(Error::Resource(
        "an SPMD call is already running (inside a handler?)",
    ))?;
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
    let give_up = Instant::now() + q.answer_within;
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
        let now = Instant::now();
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
    let d = end.saturating_duration_since(now);
    (d.as_micros().div_ceil(1000) as u64).max(1)
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
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let timed_out = || Error::Resource("nothing is published under that service (timeout)");
    let mut pause = FIRST_PAUSE;
    let mut first = true;
    loop {
        let q = job_ep.ask_service(owner, service, None)?;
        let answer = answer_of(&bundle, &job_ep, q, (!first).then_some(deadline))?;
        first = false;
        match answer {
            Some(ServiceAnswer::Found(n)) => return Ok(n),
            Some(ServiceAnswer::Missing) => {}
            None if Instant::now() >= deadline => return Err(timed_out()),
            other => return Err(unexpected(other)),
        }
        // nothing yet: progress (handlers run) through a pause, ask again
        let until = (Instant::now() + pause).min(deadline);
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            bundle.poll()?;
            bundle.wait_for_activity(millis_until(now, until));
        }
        if Instant::now() >= deadline {
            return Err(timed_out());
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// The key-value store of ramp's local launcher (its master): at most
/// `MAX_KV_KEYS` keys of at most `MAX_KV_KEY` bytes, values at most
/// `MAX_KV_VALUE` bytes, each key put once. What a worker sends is checked,
/// never trusted.
#[derive(Default)]
pub(crate) struct KvStore {
    map: HashMap<Vec<u8>, Vec<u8>>,
}

const MAX_KV_KEYS: usize = 4096;
const MAX_KV_KEY: usize = 128;
const MAX_KV_VALUE: usize = 1024;

impl KvStore {
    /// A `Put` frame's body (key length u8, key, value): `KV_OK`, or
    /// `KV_REFUSED` (bad lengths, the key exists, the store is full).
    pub(crate) fn put(&mut self, body: &[u8]) -> u8 {
        let Some((&klen, rest)) = body.split_first() else {
            return KV_REFUSED;
        };
        let klen = klen as usize;
        if klen == 0 || klen > MAX_KV_KEY || rest.len() < klen || rest.len() - klen > MAX_KV_VALUE {
            return KV_REFUSED;
        }
        let (key, value) = rest.split_at(klen);
        if self.map.len() >= MAX_KV_KEYS || self.map.contains_key(key) {
            return KV_REFUSED;
        }
        self.map.insert(key.to_vec(), value.to_vec());
        KV_OK
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.map.get(key).map(|v| v.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random `Put` bodies (lengths that lie, empty and huge values):
    /// never a panic, never more than the bounds.
    #[test]
    fn random_puts_stay_within_bounds() {
        let mut rng = crate::rng::Rng::new(7);
        let mut s = KvStore::default();
        for _ in 0..20_000 {
            let len = rng.below(1200) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if !b.is_empty() && rng.chance(0.5) {
                b[0] = rng.below(8) as u8; // a short key, so some puts succeed
            }
            let r = s.put(&b);
            assert!(r == KV_OK || r == KV_REFUSED);
            let _ = s.get(&b);
        }
        assert!(s.map.len() <= MAX_KV_KEYS);
        assert!(s
            .map
            .iter()
            .all(|(k, v)| k.len() <= MAX_KV_KEY && v.len() <= MAX_KV_VALUE));
        assert!(!s.map.is_empty(), "no put ever succeeded");
    }

    #[test]
    fn the_launchers_store_refuses_what_it_should() {
        let mut s = KvStore::default();
        let put = |s: &mut KvStore, k: &[u8], v: &[u8]| {
            let mut b = vec![k.len() as u8];
            b.extend_from_slice(k);
            b.extend_from_slice(v);
            s.put(&b)
        };
        assert_eq!(put(&mut s, b"k", b"v"), KV_OK);
        assert_eq!(s.get(b"k"), Some(&b"v"[..]));
        assert_eq!(s.get(b"other"), None);
        assert_eq!(put(&mut s, b"k", b"w"), KV_REFUSED, "a second put");
        assert_eq!(s.get(b"k"), Some(&b"v"[..]));
        assert_eq!(s.put(&[]), KV_REFUSED);
        assert_eq!(s.put(&[0, b'v']), KV_REFUSED, "empty key");
        assert_eq!(s.put(&[5, b'a']), KV_REFUSED, "key longer than the frame");
        assert_eq!(put(&mut s, &[b'k'; MAX_KV_KEY + 1], b""), KV_REFUSED);
        assert_eq!(put(&mut s, b"big", &vec![0; MAX_KV_VALUE + 1]), KV_REFUSED);
        assert_eq!(put(&mut s, b"max", &vec![0; MAX_KV_VALUE]), KV_OK);
        for i in 0..2 * MAX_KV_KEYS {
            put(&mut s, format!("f{i}").as_bytes(), b"x");
        }
        assert_eq!(s.map.len(), MAX_KV_KEYS, "the store is bounded");
    }

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
