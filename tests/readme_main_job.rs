//! The README's first command, the main job, works: it is the command this
//! test runs (a 4-process job of `examples/demo` on ramp's local launcher),
//! and it shows ramp working and prints its figures. A change to the README's
//! first lines, or to the demo's output, that breaks what a new user runs
//! first fails here.

mod common;

use std::process::Command;
use std::time::Duration;

/// The README's first command block: its first line (the main job).
fn readme_main_job() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md reads");
    let mut lines = readme.lines().skip_while(|l| !l.starts_with("```"));
    lines.next().expect("the README has a command block");
    lines
        .next()
        .expect("the block has a first line")
        .to_string()
}

/// The first number in `line` after `after`.
fn number_after(line: &str, after: &str) -> f64 {
    let rest = &line[line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line:?}"))
        + after.len()..];
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|s| !s.is_empty())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after {after:?} in {line:?}"))
}

#[test]
fn the_readmes_main_job_runs_and_prints_its_figures() {
    let _w = common::watchdog("readme_main_job", Duration::from_secs(300));
    let first = readme_main_job();
    assert!(
        first.contains("target/release/ramp-run -n 4 target/release/examples/demo"),
        "the README's first command is no longer the main job this test runs: {first}"
    );
    let o = common::output_within(
        Command::new(env!("CARGO_BIN_EXE_ramp-run"))
            .args(["-n", "4"])
            .arg(common::example("demo")),
        common::scaled(Duration::from_secs(240)),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}\n{out}\n{err}", o.status);
    let line = |what: &str| -> String {
        out.lines()
            .find(|l| l.starts_with("demo:") && l.contains(what))
            .unwrap_or_else(|| panic!("no {what:?} line:\n{out}\n{err}"))
            .to_string()
    };
    assert_eq!(number_after(&line("processes started by"), "demo:"), 4.0);
    assert!(number_after(&line("round trip"), "median") > 0.0);
    assert!(number_after(&line("Xfer bandwidth"), "messages:") > 0.0);
    let all = line("all-to-all");
    assert_eq!(number_after(&all, "all-to-all:"), 4.0, "{all}");
    assert!(number_after(&line("barrier"), "median") > 0.0);
    let totals = line("job totals");
    let sent = number_after(&totals, "totals:");
    let received = number_after(&totals, "sent,");
    assert!(sent > 0.0 && sent == received, "{totals}");
    assert!(out.lines().any(|l| l == "demo: ok"), "{out}");
}
