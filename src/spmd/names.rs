//! Published endpoint names (`ramp_NamePublish`, `ramp_NameLookup`): an
//! endpoint's name stored under a service string in the job's key-value
//! space, found by any rank of the job.
//!
//! The store is the launcher's: ramp's local launcher keeps it in its
//! master (`Put` / `Get` frames, `frame.rs`; a put is visible to every
//! rank at once); under PMI-1 / PMI-2 (mpiexec, srun --mpi=pmi2) it is the
//! PMI key-value space, where a put usually becomes visible to other ranks
//! only after the publisher's next barrier (fence), so a program publishes,
//! calls `ramp_SPMDBarrier` on every rank, then looks up. Under PMIx the
//! call fails (`Resource`, said on stderr with RAMP_VERBOSE=1).
//!
//! Key `ramp-svc-<service>`; value: the 32-byte name as 64 hex digits.
//! A service is 1..=48 bytes of `A-Z a-z 0-9 . _ -` (what every key-value
//! encoding carries as is, within PMI's 64-byte keys). A service is
//! published once per job: publishing it again is refused by ramp's
//! launcher (PMI launchers such as MPICH's Hydra accept it; which value a
//! look-up sees is then theirs). Under Hydra's PMI-1 a put is not visible
//! to the other ranks before the publisher's next barrier (tried:
//! examples/names.rs, mode `late`).
//! A look-up asks again every few milliseconds until the name appears or
//! `timeout_ms` passes, polling the job's endpoints meanwhile.

use std::time::{Duration, Instant};

use std::collections::HashMap;

use super::frame::{KV_OK, KV_REFUSED};
use super::{progress_on, JOB};
use crate::am::{Endpoint, EndpointName};
use crate::error::{Error, Result};

/// Longest service string, in bytes.
pub const MAX_SERVICE: usize = 48;

/// Whether `s` is a service string: 1..=48 of `A-Z a-z 0-9 . _ -`.
pub fn valid_service(s: &[u8]) -> bool {
    (1..=MAX_SERVICE).contains(&s.len())
        && s.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn key(service: &[u8]) -> Result<String> {
    if !valid_service(service) {
        return Err(Error::BadArg(
            "a service is 1..48 characters of A-Z a-z 0-9 . _ -",
        ));
    }
    Ok(format!("ramp-svc-{}", String::from_utf8_lossy(service)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim().as_bytes();
    if s.len() != 64 || !s.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let d = std::str::from_utf8(&s[2 * i..2 * i + 2]).ok()?;
        *o = u8::from_str_radix(d, 16).ok()?;
    }
    Some(out)
}

fn outside() -> Error {
    Error::Resource("not in an SPMD job (no launcher to publish names with)")
}

fn launcher_failed(what: &str, e: std::io::Error) -> Error {
    if crate::config::global().is_ok_and(|c| c.verbose) {
        eprintln!("ramp: {what}: {e}");
    }
    Error::Resource("the job's launcher refused or failed the name operation")
}

/// Publishes `ep`'s name under `service` in the job's key-value space.
pub fn publish(ep: &Endpoint, service: &[u8]) -> Result<()> {
    let key = key(service)?;
    let mut g = JOB.try_lock().ok_or(Error::Resource(
        "an SPMD call is already running (inside a handler?)",
    ))?;
    let job = g.as_mut().ok_or_else(outside)?;
    let bundle = job.bundle.clone();
    job.boot
        .kv_put(&key, &hex(&ep.name().0), &mut |fd| progress_on(&bundle, fd))
        .map_err(|e| launcher_failed("publishing a name", e))
}

/// The name published under `service`, waiting up to `timeout_ms` (0:
/// one try) for it to appear.
pub fn lookup(service: &[u8], timeout_ms: i32) -> Result<EndpointName> {
    let key = key(service)?;
    let timeout_ms = u64::try_from(timeout_ms).map_err(|_| Error::BadArg("negative timeout"))?;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    loop {
        let bundle = {
            let mut g = JOB.try_lock().ok_or(Error::Resource(
                "an SPMD call is already running (inside a handler?)",
            ))?;
            let job = g.as_mut().ok_or_else(outside)?;
            let bundle = job.bundle.clone();
            let got = job
                .boot
                .kv_get(&key, &mut |fd| progress_on(&bundle, fd))
                .map_err(|e| launcher_failed("looking a name up", e))?;
            if let Some(v) = got {
                return unhex32(&v).map(EndpointName).ok_or(Error::Resource(
                    "the value published under that service is not an endpoint name",
                ));
            }
            bundle
        };
        if Instant::now() >= deadline {
            return Err(Error::Resource(
                "nothing is published under that service (timeout)",
            ));
        }
        // between tries: handlers run, at most ~5 ms pass
        let _ = bundle.poll();
        bundle.wait_for_activity(5);
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
    fn services_and_values_are_checked() {
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
            assert!(matches!(key(bad), Err(Error::BadArg(_))));
        }
        assert!(key(&[b'x'; MAX_SERVICE]).unwrap().len() < 64);
        let n: [u8; 32] = std::array::from_fn(|i| i as u8 * 7);
        assert_eq!(unhex32(&hex(&n)), Some(n));
        assert_eq!(unhex32("00"), None);
        assert_eq!(unhex32(&"zz".repeat(32)), None);
        assert_eq!(unhex32(&"+1".repeat(32)), None);
    }

    #[test]
    fn outside_a_job_is_a_resource_error() {
        assert!(matches!(lookup(b"nobody", 0), Err(Error::Resource(_))));
        assert!(matches!(lookup(b"bad service", 0), Err(Error::BadArg(_))));
        assert!(matches!(lookup(b"x", -1), Err(Error::BadArg(_))));
    }
}
