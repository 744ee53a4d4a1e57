//! SPMD jobs under ramp's local launcher, with real processes: rank/size,
//! barriers and all-gathers, exit codes, a dying worker, 64 processes.

mod common;

use std::time::Duration;

use std::path::PathBuf;
use std::process::{Command, Output};

fn ramp_run() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"))
}

/// An example program built next to ramp-run (cargo test builds examples).
use common::example;

fn run(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("120")
        .arg(ramp_run())
        .args(args)
        .output()
        .expect("ramp-run starts")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_rank_reports_with_labels_for_several_sizes() {
    let _watchdog = common::watchdog(
        "spmd_local::every_rank_reports_with_labels_for_several_sizes",
        Duration::from_secs(180),
    );
    let hello = example("spmd_hello");
    for n in [1usize, 2, 4, 8] {
        let o = run(&["-n", &n.to_string(), "--label", hello.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "n={n}: {err}");
        for r in 0..n {
            let line = format!("[{r}] rank {r} of {n}: all-gather and 10 barriers ok");
            assert!(
                out.lines().any(|l| l == line),
                "n={n}: missing {line:?} in\n{out}"
            );
        }
        assert_eq!(out.lines().count(), n, "n={n}: one line per rank:\n{out}");
    }
}

#[test]
fn exit_code_of_spmd_exit_is_the_jobs() {
    let _watchdog = common::watchdog(
        "spmd_local::exit_code_of_spmd_exit_is_the_jobs",
        Duration::from_secs(180),
    );
    let hello = example("spmd_hello");
    let o = run(&["-n", "3", hello.to_str().unwrap(), "7"]);
    assert_eq!(o.status.code(), Some(7), "{:?}", text(&o));
}

#[test]
fn a_dying_worker_stops_the_job_with_a_message() {
    let _watchdog = common::watchdog(
        "spmd_local::a_dying_worker_stops_the_job_with_a_message",
        Duration::from_secs(180),
    );
    let o = run(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $RAMP_SPMD_RANK = 1 ]; then kill -SEGV $$; fi; sleep 60",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(128 + 11), "{err}");
    assert!(err.contains("rank 1") && err.contains("SIGSEGV"), "{err}");
}

#[test]
fn a_worker_exiting_badly_before_start_up_stops_the_job() {
    let _watchdog = common::watchdog(
        "spmd_local::a_worker_exiting_badly_before_start_up_stops_the_job",
        Duration::from_secs(180),
    );
    let o = run(&["-n", "2", "sh", "-c", "exit 3"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
}

#[test]
fn a_rank_that_never_joins_fails_the_job_and_is_named() {
    let _watchdog = common::watchdog(
        "spmd_local::a_rank_that_never_joins_fails_the_job_and_is_named",
        Duration::from_secs(180),
    );
    // exits 0 without start-up: not a job that ran
    let o = run(&["-n", "2", "true"]);
    let (_, err) = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("rank ")
            && err.contains("without joining the job")
            && err.contains("ramp_SPMDStartup"),
        "{err}"
    );
    // 127: a program or library not found, said so
    let o = run(&["-n", "2", "sh", "-c", "exit 127"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(127), "{err}");
    assert!(
        err.contains("127 means the program, or a library it needs, was not found"),
        "{err}"
    );
}

#[test]
fn a_missing_program_is_a_clear_error() {
    let _watchdog = common::watchdog(
        "spmd_local::a_missing_program_is_a_clear_error",
        Duration::from_secs(180),
    );
    let o = run(&["-n", "2", "/nonexistent/program"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("cannot start") && err.contains("/nonexistent/program"),
        "{err}"
    );
}

#[test]
fn bad_command_lines_are_refused() {
    let _watchdog = common::watchdog(
        "spmd_local::bad_command_lines_are_refused",
        Duration::from_secs(180),
    );
    for args in [
        &["prog"][..],
        &["-n", "0", "prog"],
        // more ranks than a translation table holds: refused before any
        // process is started
        &["-n", "1048577", "/bin/true"],
        &["-n", "2"],
        &["-n", "2", "--depth", "5000", "prog"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!o.stderr.is_empty());
    }
}

#[test]
fn a_bad_network_depth_stops_start_up_and_names_the_variable() {
    let hello = example("spmd_hello");
    for (var, bad) in [
        ("RAMP_NETWORK_DEPTH", "abc"),
        ("RAMP_NETWORK_DEPTH", "0"),
        ("RAMP_NETWORK_DEPTH", "99999"),
        ("NETWORKDEPTH", "-3"),
    ] {
        let o = Command::new("timeout")
            .arg("120")
            .arg(ramp_run())
            .args(["-n", "2", hello.to_str().unwrap()])
            .env(var, bad)
            .output()
            .expect("ramp-run starts");
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{var}={bad}: the job ran:\n{out}{err}");
        let msg = format!("{var}={bad:?}: expected an integer between 1 and 1024");
        assert!(err.contains(&msg), "{var}={bad}: no {msg:?} in:\n{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.contains("barriers ok"), "{out}");
    }
}

#[test]
fn a_non_numeric_pmi_fd_is_a_clear_error() {
    let o = Command::new("timeout")
        .arg("60")
        .arg(example("spmd_hello"))
        .env("PMI_FD", "abc")
        .env_remove("PMI_PORT")
        .env_remove("RAMP_SPMD_MASTER")
        .output()
        .expect("spmd_hello starts");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("PMI_FD=\"abc\" is not a file descriptor number"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn sixty_four_processes_ping_barrier_allgather() {
    let _watchdog = common::watchdog(
        "spmd_local::sixty_four_processes_ping_barrier_allgather",
        Duration::from_secs(180),
    );
    let scale = example("spmd_scale");
    let o = run(&["-n", "64", scale.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("64 processes: every rank pinged all 64 ranks"),
        "{out}"
    );
    println!("{out}");
}

/// The fingerprints `job_key` printed, one per rank, after checking that
/// every rank printed one and that the key was never on a command line.
fn job_key_fingerprints(o: &Output, n: usize, in_environ: bool) -> Vec<String> {
    let (out, err) = text(o);
    assert!(o.status.success(), "{out}\n{err}");
    let mut fps = Vec::new();
    for r in 0..n {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("rank {r} fingerprint ")))
            .unwrap_or_else(|| panic!("rank {r} missing in\n{out}\n{err}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            w[4..],
            [
                "in-cmdline",
                "false",
                "in-environ",
                if in_environ { "true" } else { "false" }
            ],
            "{line}"
        );
        fps.push(w[3].to_string());
    }
    fps
}

#[test]
fn workers_get_one_random_job_key_in_their_environment() {
    let _watchdog = common::watchdog(
        "spmd_local::workers_get_one_random_job_key_in_their_environment",
        Duration::from_secs(120),
    );
    let prog = example("job_key");
    let p = prog.to_str().unwrap();
    let job = |env: &[(&str, &str)]| {
        let mut c = Command::new("timeout");
        c.arg("120").arg(ramp_run()).args(["-n", "3", p]);
        c.env_remove("RAMP_JOB_KEY").env_remove("RAMP_AUTH");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("ramp-run starts")
    };
    // one key per job, the same on every rank, never on argv
    let a = job_key_fingerprints(&job(&[]), 3, true);
    let b = job_key_fingerprints(&job(&[]), 3, true);
    assert!(a.iter().all(|f| f == &a[0]) && a[0] != "none", "{a:?}");
    assert!(b.iter().all(|f| f == &b[0]), "{b:?}");
    assert_ne!(a[0], b[0], "two jobs got the same key");
    // a key set by the user is passed through
    let key = "a-user-chosen-job-key";
    let c = job_key_fingerprints(&job(&[("RAMP_JOB_KEY", key)]), 3, true);
    let d = job_key_fingerprints(&job(&[("RAMP_JOB_KEY", key)]), 3, true);
    assert!(c.iter().chain(&d).all(|f| f == &c[0]), "{c:?} {d:?}");
    assert_ne!(c[0], a[0]);
    // RAMP_AUTH=off: no key, no MAC
    let off = job_key_fingerprints(&job(&[("RAMP_AUTH", "off")]), 3, false);
    assert!(off.iter().all(|f| f == "none"), "{off:?}");
    // a short key is refused by name, and not shown
    let o = job(&[("RAMP_JOB_KEY", "tooshort")]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("RAMP_JOB_KEY (not shown, 8 characters): expected a job key of at least 16"),
        "{err}"
    );
    assert!(!err.contains("tooshort"), "{err}");
}

/// The processes `pid` started (its threads' children).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(c.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
            }
        }
    }
    out
}

/// The master's port is open to every user of the host, and its answer to
/// a Hello carries the launcher's whole environment: a connection that
/// claims a rank without the job's token (`RAMP_SPMD_TOKEN`, in the
/// workers' environment only) gets nothing, and the job runs as if it had
/// not come. (The test reads the port from a worker's environment; a
/// stranger would scan for it.)
#[test]
fn a_stranger_at_the_masters_port_gets_nothing_and_the_job_runs() {
    use std::io::{Read, Write};
    let _watchdog = common::watchdog(
        "spmd_local::a_stranger_at_the_masters_port_gets_nothing_and_the_job_runs",
        Duration::from_secs(180),
    );
    let hello = example("spmd_hello");
    // workers that start once the stranger has come (the file `go` is
    // created): the stranger comes first, whatever the speed
    let go = std::env::temp_dir().join(format!("ramp-stranger-go-{}", std::process::id()));
    let _ = std::fs::remove_file(&go);
    let child = Command::new(ramp_run())
        .args([
            "-n",
            "2",
            "--label",
            "sh",
            "-c",
            "while [ ! -e \"$RAMP_TEST_GO\" ]; do sleep 0.01; done; exec \"$0\"",
        ])
        .arg(&hello)
        .env("RAMP_TEST_GO", &go)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ramp-run starts");
    common::waiting_for("a worker with RAMP_SPMD_MASTER");
    let master = loop {
        let found = children_of(child.id()).into_iter().find_map(|c| {
            let env = std::fs::read(format!("/proc/{c}/environ")).ok()?;
            env.split(|&b| b == 0).find_map(|kv| {
                std::str::from_utf8(kv)
                    .ok()?
                    .strip_prefix("RAMP_SPMD_MASTER=")
                    .map(String::from)
            })
        });
        if let Some(m) = found {
            break m;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // rank 0 and rank 1, without a token and with a wrong one
    for payload in [
        [0u32.to_be_bytes(), 7u32.to_be_bytes()].concat(),
        [
            1u32.to_be_bytes().to_vec(),
            7u32.to_be_bytes().to_vec(),
            vec![0xab; 16],
        ]
        .concat(),
    ] {
        let mut s = std::net::TcpStream::connect(master.as_str()).expect("the master listens");
        let mut frame = ((payload.len() + 1) as u32).to_be_bytes().to_vec();
        frame.push(1); // Hello
        frame.extend_from_slice(&payload);
        s.write_all(&frame).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        assert!(
            got.is_empty(),
            "the master answered a stranger: {} bytes",
            got.len()
        );
    }
    // now the workers
    std::fs::write(&go, b"").unwrap();
    common::waiting_for("the job");
    let o = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&go);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    for r in 0..2 {
        let line = format!("[{r}] rank {r} of 2: all-gather and 10 barriers ok");
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in\n{out}\n{err}"
        );
    }
    assert_eq!(
        err.matches("did not give the job's token").count(),
        2,
        "{err}"
    );
}
