//! The receiving rank's progress lines of the jobs that stream over real
//! links (`examples/link_load`: "link_load: progress ...";
//! `c-tests/rails_stream.c` and python's rails_stream.py: "rails_stream:
//! progress ..."), each with `unix_ms=` (the wall clock) and
//! `delivered=` (bytes so far): read from the job's stdout on a thread,
//! and waited on ("until N more bytes have arrived").
//!
//! Included with `#[path = "common/progress.rs"] mod progress;`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Milliseconds since the Unix epoch (the progress lines' `unix_ms`).
pub fn unix_ms() -> u128 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.expect("the clock is past 1970").as_millis()
}

/// (unix_ms, delivered) of a line "`who`: progress ... unix_ms=T
/// delivered=D ..."; None for any other line.
pub fn parse(line: &str, who: &str) -> Option<(u128, u64)> {
    let rest = line.strip_prefix(who)?.strip_prefix(": progress ")?;
    let v = |k: &str| {
        rest.split(' ')
            .find_map(|kv| kv.strip_prefix(k)?.parse::<u64>().ok())
    };
    Some((v("unix_ms=")? as u128, v("delivered=")?))
}

/// The progress lines as they come.
pub struct Progress {
    lines: mpsc::Receiver<(u128, u64)>,
}

impl Progress {
    /// Waits until `more` bytes have arrived after the call, counted from
    /// the first progress line stamped after it (lines reach the test
    /// late, through the launcher), without a limit of its own (the
    /// caller's watchdog's): the bytes delivered then, or None when the
    /// job ended first.
    pub fn more(&mut self, more: u64) -> Option<u64> {
        let since = unix_ms();
        let mut base = None;
        loop {
            let (t, d) = self.lines.recv().ok()?;
            match base {
                None if t >= since => base = Some(d),
                Some(b) if d >= b + more => return Some(d),
                _ => {}
            }
        }
    }
}

/// Reads `out` (a job's stdout) on a thread: the progress lines of `who`
/// go to the `Progress`, every other line into what the thread returns.
pub fn read(out: impl Read + Send + 'static, who: &'static str) -> (Progress, JoinHandle<String>) {
    let (tx, lines) = mpsc::channel();
    let all = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            match parse(&l, who) {
                Some(p) => drop(tx.send(p)),
                None => {
                    all.push_str(&l);
                    all.push('\n');
                }
            }
        }
        all
    });
    (Progress { lines }, all)
}
