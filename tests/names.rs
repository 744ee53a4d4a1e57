//! Handler names and published endpoint names with real processes and
//! sockets: jobs under ramp-run (examples/names.rs: publishes and look-ups
//! with no barrier between them, a look-up that starts before its publish,
//! owners of every kind, a second publish refused; handler names with
//! ranks that installed their handlers in different orders), a look-up
//! outside any job, and a look-up at a peer that is gone.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode};
use ramp::config::Config;
use ramp::error::Error;

fn ramp_run() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"))
}

#[test]
fn names_are_published_and_found_without_a_barrier_and_handlers_by_name() {
    let _watchdog = common::watchdog(
        "names::names_are_published_and_found_without_a_barrier_and_handlers_by_name",
        Duration::from_secs(300),
    );
    let names = common::example("names");
    for n in [1usize, 2, 3, 4] {
        let o = common::output_within(
            Command::new(ramp_run()).args(["-n", &n.to_string(), names.to_str().unwrap()]),
            Duration::from_secs(120),
        );
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "n={n}: {out}\n{err}");
        for r in 0..n {
            let line = format!("rank {r} of {n}: names ok");
            assert!(out.contains(&line), "n={n}: no {line:?} in\n{out}\n{err}");
        }
    }
}

#[test]
fn a_lookup_outside_a_job_is_a_resource_error() {
    let _watchdog = common::watchdog(
        "names::a_lookup_outside_a_job_is_a_resource_error",
        Duration::from_secs(60),
    );
    assert!(matches!(
        ramp::spmd::name_lookup(b"anything", 50),
        Err(Error::Resource(_))
    ));
    assert!(matches!(
        ramp::spmd::name_lookup(b"not a service", 0),
        Err(Error::BadArg(_))
    ));
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let ep = am::allocate_endpoint(&b).unwrap();
    assert!(matches!(
        ramp::spmd::name_publish(&ep, b"svc"),
        Err(Error::Resource(_))
    ));
}

/// A look-up at a peer whose endpoint is closed ends with an error within
/// the peer timeout (here 500 ms), never hangs; the cache of a peer found
/// dead is dropped.
#[test]
fn a_lookup_at_a_gone_peer_fails_instead_of_hanging() {
    let _watchdog = common::watchdog(
        "names::a_lookup_at_a_gone_peer_fails_instead_of_hanging",
        Duration::from_secs(60),
    );
    let cfg = Config::from_lookup(|k| (k == "RAMP_PEER_TIMEOUT_MS").then(|| "500".into())).unwrap();
    let (_b0, e0, b1, e1) = common::two_bundles(&cfg, 5, 4);
    e1.set_handler(42, handler(|_| {}));
    e1.set_handler_name(42, b"answer").unwrap();
    // e1 answers from its own thread
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s, b1c) = (stop.clone(), b1.clone());
    let t = std::thread::spawn(move || {
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            b1c.poll().unwrap();
            b1c.wait_for_activity(5);
        }
    });
    assert_eq!(e0.lookup_handler(1, b"answer").unwrap(), 42);
    assert!(matches!(
        e0.lookup_handler(1, b"question"),
        Err(Error::BadArg(_))
    ));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    t.join().unwrap();
    // e1's endpoint goes away (its socket closes)
    am::free_bundle(&b1).unwrap();
    drop(e1);
    drop(b1);
    let r = e0.lookup_handler(1, b"question");
    assert!(matches!(r, Err(Error::Resource(_))), "{r:?}");
    // the peer's death dropped what was cached about it
    assert!(matches!(
        e0.lookup_handler(1, b"answer"),
        Err(Error::Resource(_))
    ));
}
