//! An endpoint opens only with a secret of its own (`endpoint.rs`).

use crate::am::{allocate_bundle, allocate_endpoint_with, BundleMode};
use crate::config::Config;
use crate::error::Error;
use crate::sys::random::failing::FailingRandomness;

#[test]
fn no_endpoint_opens_without_randomness_for_its_secret() {
    crate::am::init().unwrap();
    let cfg = Config::from_lookup(|_| None).unwrap();
    let b = allocate_bundle(BundleMode::Seq).unwrap();
    {
        let _f = FailingRandomness::start();
        let Err(Error::Resource(why)) = allocate_endpoint_with(&b, &cfg) else {
            panic!("an endpoint opened without randomness");
        };
        assert!(why.contains("randomness"), "{why}");
        assert!(
            b.endpoints().is_empty(),
            "a refused endpoint joined its bundle"
        );
    }
    // with randomness: open, each with a secret of its own
    let e0 = allocate_endpoint_with(&b, &cfg);
    let e1 = allocate_endpoint_with(&b, &cfg);
    let (s0, s1) = (
        e0.unwrap().with(|s| s.secret),
        e1.unwrap().with(|s| s.secret),
    );
    assert!(s0 != [0; 32] && s0 != s1);
    crate::am::free_bundle(&b).unwrap();
}

#[test]
fn path_news_lines_name_the_rail_the_addresses_and_what_happened() {
    use crate::path::{Path, Rail};
    use crate::proto::{PathChange, PathEvent};
    let a = |s: &str| s.parse::<std::net::SocketAddr>().unwrap();
    let e = PathEvent {
        peer: a("127.0.0.1:5000"),
        path: Path {
            remote: a("127.0.0.2:5001"),
            rail: Rail(1),
        },
        change: PathChange::Failed,
    };
    let line = super::paths::path_line(&e, Some(a("127.0.0.2:4000")));
    assert_eq!(
        line,
        "ramp: path rail 1 127.0.0.2:4000 -> 127.0.0.2:5001 to peer 127.0.0.1:5000 failed"
    );
    let e = PathEvent {
        change: PathChange::Partitioned,
        ..e
    };
    assert!(super::paths::path_line(&e, None).ends_with("(partitioned)"));
    let e = PathEvent {
        change: PathChange::Rejoined,
        ..e
    };
    assert!(super::paths::path_line(&e, None).ends_with("(rejoined)"));
    let e = PathEvent {
        change: PathChange::Suspect,
        ..e
    };
    assert!(super::paths::path_line(&e, None)
        .ends_with("127.0.0.1:5000 suspect: its timeouts moved its traffic to another path"));
    let e = PathEvent {
        change: PathChange::Cleared,
        ..e
    };
    assert!(super::paths::path_line(&e, None).ends_with("answered: no longer suspect"));
}
