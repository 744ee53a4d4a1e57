//! Unit tests of `config.rs`.

use super::*;
use std::collections::HashMap;

fn cfg(pairs: &[(&str, &str)]) -> Result<Config, Vec<String>> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| m.get(k).cloned())
}

#[test]
fn defaults_and_values() {
    let c = cfg(&[]).unwrap();
    assert!(!c.fault.enabled());
    let c = cfg(&[("RAMP_FAULT_LOSS", "0.05"), ("RAMP_RETRY_LIMIT", "4")]).unwrap();
    assert_eq!(c.fault.loss, 0.05);
    assert_eq!(c.proto.retry_limit, 4);
}

#[test]
fn every_bad_value_is_named() {
    let e = cfg(&[
        ("RAMP_FAULT_LOSS", "lots"),
        ("RAMP_WINDOW", "100"),
        ("RAMP_VERBOSE", "maybe"),
    ])
    .unwrap_err();
    assert_eq!(e.len(), 3);
    assert!(e[0].contains("RAMP_FAULT_LOSS"));
    assert!(e.iter().any(|m| m.contains("RAMP_WINDOW")));
    let e = cfg(&[("RAMP_RTO_MIN_US", "5000"), ("RAMP_RTO_MAX_US", "10")]).unwrap_err();
    assert!(e[0].contains("larger"));
}

#[test]
fn every_variable_names_itself_when_refused() {
    for var in VARIABLES {
        let r = cfg(&[(var.name, "not-a-value!")]);
        if var.name == JOB_KEY {
            // a secret: refused without being shown
            let e = r.unwrap_err();
            assert_eq!(e.len(), 1, "{e:?}");
            assert!(
                e[0].starts_with("RAMP_JOB_KEY (not shown, 12 characters): expected ")
                    && !e[0].contains("not-a-value!"),
                "{e:?}"
            );
            continue;
        }
        if var.name == INTERFACE {
            // any name may be an interface; choosing the address checks it
            assert_eq!(r.unwrap().interface.as_deref(), Some("not-a-value!"));
            continue;
        }
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{} took a bad value", var.name));
        assert_eq!(e.len(), 1, "{e:?}");
        let head = format!("{}=\"not-a-value!\": expected ", var.name);
        assert!(e[0].starts_with(&head), "{e:?}");
        for alias in var.aliases {
            let e = cfg(&[(alias, "not-a-value!")]).unwrap_err();
            assert!(e[0].starts_with(&format!("{alias}=")), "{e:?}");
        }
    }
}

#[test]
fn network_depth_is_checked_and_older_names_are_read() {
    for bad in ["abc", "0", "99999", "-1", ""] {
        let e = cfg(&[("RAMP_NETWORK_DEPTH", bad)]).unwrap_err();
        assert_eq!(
            e,
            vec![format!(
                "RAMP_NETWORK_DEPTH={bad:?}: expected an integer between 1 and 1024"
            )]
        );
    }
    assert_eq!(cfg(&[]).unwrap().spmd, SpmdConfig::default());
    let depth = |pairs: &[(&str, &str)]| cfg(pairs).unwrap().spmd.network_depth;
    assert_eq!(depth(&[("RAMP_NETWORK_DEPTH", " 1024 ")]), Some(1024));
    assert_eq!(depth(&[("NETWORKDEPTH", "64")]), Some(64));
    assert_eq!(depth(&[("AMUDP_NETWORKDEPTH", "8")]), Some(8));
    assert_eq!(
        depth(&[("RAMP_NETWORK_DEPTH", "32"), ("NETWORKDEPTH", "64")]),
        Some(32)
    );
    let e = cfg(&[("NETWORKDEPTH", "lots")]).unwrap_err();
    assert!(e[0].starts_with("NETWORKDEPTH=\"lots\""), "{e:?}");
}

#[test]
fn spmd_variables() {
    let c = cfg(&[
        ("RAMP_PMI", "2"),
        ("RAMP_LABEL_OUTPUT", "1"),
        ("ROUTE_OUTPUT", "0"),
        ("SPAWNFN", "l"),
        ("RAMP_SPMD_MASTER", "127.0.0.1:4000"),
        ("RAMP_SPMD_RANK", "3"),
        ("RAMP_SPMD_SIZE", "4"),
        ("RAMP_SPMD_TOKEN", "00112233445566778899aabbccddeeff"),
    ])
    .unwrap()
    .spmd;
    assert_eq!(c.pmi, Some(2));
    assert!(c.label_output && !c.route_output);
    assert_eq!(c.spawnfn, Some('L'));
    assert_eq!(c.master, Some("127.0.0.1:4000".parse().unwrap()));
    assert_eq!((c.rank, c.size), (Some(3), Some(4)));
    assert_eq!(
        c.token,
        Some([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff
        ])
    );
    for bad in [
        "0011",
        "zz112233445566778899aabbccddeeff",
        "00112233445566778899aabbccddeeff00",
    ] {
        let e = cfg(&[("RAMP_SPMD_TOKEN", bad)]).unwrap_err();
        assert!(
            e[0].contains("RAMP_SPMD_TOKEN") && e[0].contains("32 hex digits"),
            "{e:?}"
        );
    }
    let e = cfg(&[("RAMP_SPMD_MASTER", "127.0.0.1:4000")]).unwrap_err();
    assert_eq!(
        e,
        vec![
            "RAMP_SPMD_MASTER is set but RAMP_SPMD_SIZE is missing",
            "RAMP_SPMD_MASTER is set but RAMP_SPMD_TOKEN is missing"
        ]
    );
    let e = cfg(&[
        ("RAMP_SPMD_MASTER", "127.0.0.1:4000"),
        ("RAMP_SPMD_RANK", "4"),
        ("RAMP_SPMD_SIZE", "4"),
        ("RAMP_SPMD_TOKEN", "00112233445566778899aabbccddeeff"),
    ])
    .unwrap_err();
    assert_eq!(e, vec!["RAMP_SPMD_RANK=4 is not below RAMP_SPMD_SIZE=4"]);
    let e = cfg(&[("RAMP_SPAWNFN", "LS"), ("RAMP_PMI", "3")]).unwrap_err();
    assert_eq!(e.len(), 2, "{e:?}");
}

#[test]
fn job_key_and_auth() {
    let key = "0123456789abcdef";
    // defaults: auto, no key, no MAC
    let c = cfg(&[]).unwrap();
    assert_eq!((c.auth, c.job_key.clone()), (Auth::Auto, None));
    // the RUNTIME_JOB_KEY is process-wide: this is the only test that sets it
    assert_eq!(c.mac_job_key(), Ok(None));
    // auto with a key: MAC
    let c = cfg(&[(JOB_KEY, key)]).unwrap();
    assert_eq!(c.mac_job_key().unwrap().unwrap().expose(), key);
    // off: no MAC even with a key
    for off in ["off", "OFF", "0", " off "] {
        let c = cfg(&[(JOB_KEY, key), (AUTH, off)]).unwrap();
        assert_eq!(c.auth, Auth::Off);
        assert_eq!(c.mac_job_key(), Ok(None));
    }
    // on without a key: refused when an endpoint asks, naming both variables
    let c = cfg(&[(AUTH, "on")]).unwrap();
    let e = c.mac_job_key().unwrap_err();
    assert!(
        e.contains("RAMP_AUTH=on") && e.contains("RAMP_JOB_KEY"),
        "{e}"
    );
    assert_eq!(
        cfg(&[(AUTH, "on"), (JOB_KEY, key)])
            .unwrap()
            .mac_job_key()
            .unwrap()
            .map(|k| k.expose().to_string()),
        Some(key.to_string())
    );
    // short keys are refused, without being shown
    let e = cfg(&[(JOB_KEY, "short-secret")]).unwrap_err();
    assert_eq!(
        e,
        vec!["RAMP_JOB_KEY (not shown, 12 characters): expected a job key of at least 16 characters (ramp-run and the AMUDP master form make one: leave it unset)"]
    );
    assert!(cfg(&[(JOB_KEY, " 0123456789abcdef")]).is_err());
    assert!(cfg(&[(JOB_KEY, "")]).is_err());
    assert!(
        cfg(&[(AUTH, "maybe")]).unwrap_err()[0].starts_with("RAMP_AUTH=\"maybe\": expected auto")
    );
    // never in Debug
    let c = cfg(&[(JOB_KEY, key)]).unwrap();
    assert!(!format!("{c:?}").contains(key));
    // a key set at run time (PMI) wins over the environment's; off still wins
    assert!(set_job_key("too short").is_err());
    let runtime = "fedcba9876543210fedcba9876543210";
    set_job_key(runtime).unwrap();
    assert_eq!(c.mac_job_key().unwrap().unwrap().expose(), runtime);
    assert_eq!(
        cfg(&[]).unwrap().mac_job_key().unwrap().unwrap().expose(),
        runtime
    );
    let off = cfg(&[(AUTH, "off")]).unwrap();
    assert_eq!(off.mac_job_key(), Ok(None));
    *RUNTIME_JOB_KEY.lock() = None;
}

#[test]
fn request_batch_is_a_count_up_to_a_bundle() {
    assert_eq!(cfg(&[]).unwrap().request_batch, DEFAULT_REQUEST_BATCH);
    assert_eq!(cfg(&[(REQUEST_BATCH, "0")]).unwrap().request_batch, 0);
    assert_eq!(cfg(&[(REQUEST_BATCH, " 8 ")]).unwrap().request_batch, 8);
    for bad in ["33", "-1", "65536", "1.5", ""] {
        let e = cfg(&[(REQUEST_BATCH, bad)]).unwrap_err();
        assert!(
            e[0].contains("RAMP_REQUEST_BATCH") && e[0].contains("between 0 and 32"),
            "{bad}: {e:?}"
        );
    }
}

#[test]
fn clock_is_the_counter_unless_system_is_asked() {
    assert!(cfg(&[]).unwrap().clock_counter);
    assert!(cfg(&[(CLOCK, "counter")]).unwrap().clock_counter);
    assert!(!cfg(&[(CLOCK, "system")]).unwrap().clock_counter);
    assert!(cfg(&[(CLOCK, "tsc")]).is_err());
}

/// Every AMUDP variable, under both of AMUDP's prefixes, is honoured (a
/// good value accepted, a bad one refused naming it as it was set) or
/// refused with a message naming it and what ramp offers instead; an empty
/// value of a refused one is as unset.
#[test]
fn every_amudp_variable_is_honoured_or_refused_by_name() {
    for var in AMUDP_VARIABLES {
        for prefix in AMUDP_PREFIXES {
            let name = format!("{prefix}{}", var.suffix);
            let r = cfg(&[(name.as_str(), "not-a-value!")]);
            match var.set {
                None => {
                    let e = r.unwrap_err();
                    assert_eq!(
                        e,
                        vec![format!(
                            "{name}=\"not-a-value!\": not supported by ramp ({})",
                            var.ramp
                        )]
                    );
                    assert!(var.ramp.starts_with("refused: "), "{}", var.ramp);
                    assert!(cfg(&[(name.as_str(), "")]).is_ok(), "{name}");
                }
                Some(_) => {
                    assert!(var.ramp.starts_with("honoured"), "{}", var.ramp);
                    if let Err(e) = r {
                        assert_eq!(e.len(), 1, "{e:?}");
                        assert!(
                            e[0].starts_with(&format!("{name}=\"not-a-value!\": expected ")),
                            "{e:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn amudp_names_set_what_their_ramp_names_set() {
    let c = cfg(&[
        ("GASNET_NETWORKDEPTH", "8"),
        ("AMUDP_RECVDEPTH", "77"),
        ("GASNET_FAULT_RATE", "0.25"),
        ("GASNET_REQUESTTIMEOUT_INITIAL", "30000"),
        ("GASNET_REQUESTTIMEOUT_MAX", "2500"),
        ("GASNET_MASTERIP", "10.1.2.3"),
        ("GASNET_SPAWNFN", "c"),
        ("GASNET_ROUTE_OUTPUT", "0"),
        ("GASNET_VERBOSEENV", "1"),
        ("GASNET_CSPAWN_CMD", "sh -c %C"),
        ("GASNET_SSH_SERVERS", "a b"),
        ("AMUDP_SSH_CMD", "myssh"),
    ])
    .unwrap();
    assert_eq!(c.spmd.network_depth, Some(8));
    assert_eq!(c.recv_depth, Some(77));
    assert_eq!(c.fault.loss, 0.25);
    assert_eq!(c.proto.rto_initial, 30_000 * MICROS);
    assert_eq!(c.proto.peer_timeout, 3 * crate::time::MILLIS);
    assert_eq!(c.spmd.master_ip, Some("10.1.2.3".parse().unwrap()));
    assert_eq!(c.spmd.spawnfn, Some('C'));
    assert!(!c.spmd.route_output);
    assert!(c.spmd.verbose_env);
    assert_eq!(c.spmd.spawn.cspawn_cmd.as_deref(), Some("sh -c %C"));
    assert_eq!(c.spmd.spawn.ssh_servers.as_deref(), Some("a b"));
    assert_eq!(c.spmd.spawn.ssh_cmd.as_deref(), Some("myssh"));
    // the RAMP_* name wins; AMUDP's infinite timeout (0) is refused
    let c = cfg(&[("GASNET_NETWORKDEPTH", "8"), ("RAMP_NETWORK_DEPTH", "16")]).unwrap();
    assert_eq!(c.spmd.network_depth, Some(16));
    let e = cfg(&[("GASNET_NETWORKDEPTH", "lots")]).unwrap_err();
    assert_eq!(
        e,
        vec!["GASNET_NETWORKDEPTH=\"lots\": expected an integer between 1 and 1024".to_string()]
    );
    let e = cfg(&[("GASNET_REQUESTTIMEOUT_MAX", "0")]).unwrap_err();
    assert!(
        e[0].starts_with("GASNET_REQUESTTIMEOUT_MAX=\"0\": expected"),
        "{e:?}"
    );
    // empty MASTERIP: the default (GASNet's way to say "not forced")
    assert_eq!(
        cfg(&[("GASNET_MASTERIP", "")]).unwrap().spmd.master_ip,
        None
    );
}

#[test]
fn rails_are_checked_for_form_and_number() {
    assert_eq!(cfg(&[]).unwrap().rails, None);
    let rails = |v: &str| cfg(&[(RAILS, v)]).map(|c| c.rails.unwrap());
    assert_eq!(
        rails(" 127.0.0.1 , eth1,ib0.8001").unwrap(),
        ["127.0.0.1", "eth1", "ib0.8001"]
    );
    assert_eq!(rails("a,b,c,d").unwrap().len(), MAX_RAILS);
    let refused = |v: &str, why: &str| {
        let e = rails(v).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        let head = format!("{RAILS}={v:?}: expected ");
        assert!(e[0].starts_with(&head) && e[0].contains(why), "{v}: {e:?}");
    };
    refused("a,b,c,d,e", "at most 4 rails, not 5");
    refused("", "one is empty");
    refused("eth0,,eth1", "one is empty");
    refused("eth0,eth1,eth0", "eth0 is named twice");
    refused("127.0.0.1,127.0.0.1", "named twice");
    refused("::1", "IPv4");
    refused("0.0.0.0", "unicast");
    refused("224.0.0.1", "unicast");
    refused("eth0 1", "not \"eth0 1\"");
    refused("averyveryverylongname", "interface name");
}

#[test]
fn rails_and_interface_combine_only_when_they_agree() {
    let both = |i: &str, r: &str| cfg(&[(INTERFACE, i), (RAILS, r)]);
    let c = both("127.0.0.1", "127.0.0.1,127.0.0.2").unwrap();
    assert_eq!(c.interface.as_deref(), Some("127.0.0.1"));
    assert_eq!(c.rails.unwrap().len(), 2);
    let e = both("eth0", "eth1,eth0").unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains(INTERFACE) && e[0].contains(RAILS) && e[0].contains("first rail"),
        "{e:?}"
    );
}

#[test]
fn path_probe_is_milliseconds_within_a_second() {
    use crate::time::MILLIS;
    assert_eq!(cfg(&[]).unwrap().proto.path_probe, 100 * MILLIS);
    let probe = |v: &str| cfg(&[(PATH_PROBE_MS, v)]).map(|c| c.proto.path_probe);
    assert_eq!(probe("1").unwrap(), MILLIS);
    assert_eq!(probe(" 1000 ").unwrap(), 1000 * MILLIS);
    for bad in ["0", "1001", "-5", "0.5", "fast", ""] {
        assert_eq!(
            probe(bad).unwrap_err(),
            vec![format!(
                "{PATH_PROBE_MS}={bad:?}: expected an integer between 1 and 1000"
            )]
        );
    }
}

#[test]
fn stripe_min_is_bytes_within_a_gib() {
    use crate::proto::config::{DEFAULT_STRIPE_MIN, MAX_STRIPE_MIN};
    assert_eq!(cfg(&[]).unwrap().proto.stripe_min, DEFAULT_STRIPE_MIN);
    let min = |v: &str| cfg(&[(STRIPE_MIN, v)]).map(|c| c.proto.stripe_min);
    assert_eq!(min("1").unwrap(), 1);
    assert_eq!(min(" 65536 ").unwrap(), 65536);
    assert_eq!(min("1073741824").unwrap(), MAX_STRIPE_MIN);
    for bad in ["0", "1073741825", "-5", "0.5", "128K", ""] {
        assert_eq!(
            min(bad).unwrap_err(),
            vec![format!(
                "{STRIPE_MIN}={bad:?}: expected an integer between 1 and 1073741824"
            )]
        );
    }
}
