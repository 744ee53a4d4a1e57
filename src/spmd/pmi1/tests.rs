//! Unit tests of `pmi1.rs`, against a scripted PMI-1 server on the other
//! end of a socket pair: a job too large, the all-gather in chunks, the
//! choice of PMI version, the initack handshake, errors that name the
//! command.

use super::*;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

/// A scripted PMI-1 server on the other end of a socket pair.
fn server(script: Vec<(&'static str, &'static str)>) -> (UnixStream, std::thread::JoinHandle<()>) {
    let (a, b) = UnixStream::pair().unwrap();
    let h = std::thread::spawn(move || {
        let mut r = BufReader::new(b.try_clone().unwrap());
        let mut w = b;
        for (expect, reply) in script {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(
                line.starts_with(expect),
                "got {line:?}, expected {expect:?}"
            );
            w.write_all(reply.as_bytes()).unwrap();
        }
    });
    (a, h)
}

fn init_script() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "cmd=init pmi_version=1 pmi_subversion=1",
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
        ),
        (
            "cmd=get_maxes",
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=40\n",
        ),
        ("cmd=get_appnum", "cmd=appnum appnum=0\n"),
        ("cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_7_0\n"),
    ]
}

fn client(
    script: Vec<(&'static str, &'static str)>,
) -> (io::Result<Pmi1>, std::thread::JoinHandle<()>) {
    let (a, h) = server(script);
    (
        Pmi1::init(Stream::Unix(a), None, (Some(0), Some(2)), &mut idle),
        h,
    )
}

/// A launcher that says the job is larger than a translation table
/// (PMI_SIZE, or its initack) is refused at start-up with the figures,
/// before every rank's name is gathered into one buffer (2^40 ranks:
/// 32 TiB asked of the allocator, which aborts the process).
#[test]
fn a_job_larger_than_a_translation_table_is_refused_at_start_up() {
    let huge = 1i64 << 40;
    let (a, h) = server(init_script());
    let p = Pmi1::init(Stream::Unix(a), None, (Some(0), Some(huge)), &mut idle).unwrap();
    assert_eq!(p.size(), huge as usize);
    let e = crate::spmd::start_worker(Box::new(p), 0).err().unwrap();
    assert!(e.to_string().contains("translation table"), "{e}");
    assert!(!crate::spmd::started());
    h.join().unwrap();
}

#[test]
fn allgather_chunks_and_checks() {
    let mut s = init_script();
    // vallen_max=40: 39 hex digits allowed, 38 used per chunk; 24 bytes
    // are 48 digits, so 2 chunks.
    s.push((
        "cmd=put kvsname=kvs_7_0 key=ramp-ag-0-0 value=",
        "cmd=put_result rc=0 msg=success\n",
    ));
    s.push((
        "cmd=put kvsname=kvs_7_0 key=ramp-ag-0-0-1 value=",
        "cmd=put_result rc=0\n",
    ));
    s.push(("cmd=barrier_in", "cmd=barrier_out\n"));
    s.push((
        "cmd=get kvsname=kvs_7_0 key=ramp-ag-0-1\n",
        "cmd=get_result rc=0 msg=success value=01010101010101010101010101010101010101\n",
    ));
    s.push((
        "cmd=get kvsname=kvs_7_0 key=ramp-ag-0-1-1",
        "cmd=get_result rc=0 msg=success value=0101010101\n",
    ));
    s.push(("cmd=finalize", "cmd=finalize_ack\n"));
    let (p, h) = client(s);
    let mut p = p.unwrap();
    assert_eq!(p.kvsname(), "kvs_7_0");
    assert_eq!(p.job_id(), hash64("kvs_7_0"));
    let out = p.allgather(&[0u8; 24], &mut idle).unwrap();
    assert_eq!(&out[..24], &[0u8; 24]);
    assert_eq!(&out[24..], &[1u8; 24]);
    p.finalize(0).unwrap();
    h.join().unwrap();
}

#[test]
fn version_selection() {
    let sel = |vars: &[(&str, &str)]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        // RAMP_PMI is read and checked by the configuration.
        let forced = crate::config::Config::from_lookup(&get)?.spmd.pmi;
        Ok::<_, Vec<String>>(select_version(forced, get))
    };
    assert_eq!(sel(&[]).unwrap(), None);
    assert_eq!(sel(&[("RAMP_PMI", "2")]).unwrap(), None);
    assert_eq!(sel(&[("PMI_FD", "5")]).unwrap(), Some(1));
    assert_eq!(sel(&[("PMI_PORT", "h:1")]).unwrap(), Some(1));
    assert_eq!(
        sel(&[("PMI_FD", "5"), ("PMI_VERSION", "2")]).unwrap(),
        Some(2)
    );
    assert_eq!(
        sel(&[("PMI_FD", "5"), ("PMI_JOBID", "7.0")]).unwrap(),
        Some(2)
    );
    assert_eq!(
        sel(&[("PMI_FD", "5"), ("PMI2_SUN_PATH", "/x")]).unwrap(),
        Some(2)
    );
    assert_eq!(
        sel(&[("PMI_FD", "5"), ("PMI_JOBID", "7.0"), ("RAMP_PMI", "1")]).unwrap(),
        Some(1)
    );
    let e = sel(&[("PMI_FD", "5"), ("RAMP_PMI", "3")]).unwrap_err();
    assert!(e[0].contains("RAMP_PMI=\"3\": expected 1 or 2"), "{e:?}");
}

#[test]
fn initack_handshake() {
    let mut s = vec![(
        "cmd=initack pmiid=3",
        "cmd=initack\ncmd=set size=4\ncmd=set rank=3\ncmd=set debug=0\n",
    )];
    s.extend(init_script());
    let (a, h) = server(s);
    let p = Pmi1::init(Stream::Unix(a), Some(3), (None, None), &mut idle).unwrap();
    assert_eq!((p.rank(), p.size()), (3, 4));
    assert_eq!(p.maxes(), (256, 64, 40));
    h.join().unwrap();
}

#[test]
fn errors_name_the_command() {
    let mut s = init_script();
    s.push((
        "cmd=get kvsname=kvs_7_0 key=ramp-ag-0-1",
        "cmd=get_result rc=-1 msg=key_ramp-ag-0-1_not_found value=unknown\n",
    ));
    let mut s2 = s.clone();
    s.insert(4, ("cmd=put", "cmd=put_result rc=0\n"));
    s.insert(5, ("cmd=barrier_in", "cmd=barrier_out\n"));
    let (p, h) = client(s);
    let e = p
        .unwrap()
        .allgather(&[1], &mut idle)
        .unwrap_err()
        .to_string();
    assert!(e.contains("PMI get") && e.contains("rc=-1"), "{e}");
    h.join().unwrap();

    s2.truncate(4);
    s2.push(("cmd=barrier_in", "garbage\n"));
    let (p, h) = client(s2);
    let e = p.unwrap().barrier(&mut idle).unwrap_err().to_string();
    assert!(e.contains("PMI barrier_in") && e.contains("garbage"), "{e}");
    h.join().unwrap();

    let (p, h) = client(vec![(
        "cmd=init",
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n",
    )]);
    let e = p.err().unwrap().to_string();
    assert!(e.contains("PMI init") && e.contains("rc=-1"), "{e}");
    h.join().unwrap();
}
