//! `ramp bench --rails`: bandwidth per path over time (issue 38, item 7).
//!
//! A two-rank job: rank 1 streams 1 MiB long requests (Xfers) into rank 0's
//! segment for `--secs S` over the rails the job was given (`RAMP_RAILS`),
//! and every `--sample-ms` (50 by default) reads its paths to rank 0
//! (`Endpoint::peer_paths`, C's `ramp_GetPeerPaths`): the bytes each path
//! sent since the last sample give its bandwidth, the new data
//! acknowledged on all of them the total. A path's state changing between two samples
//! is an event: a path failed or recovered, the peer partitioned (no path
//! active) or rejoined; and so is a change of a rail's own link as this
//! host sees it (`bench_links.rs`: "link rail1 down", "link rail1 up"). Rank 1 prints one row per sample (Mbit/s per path
//! and the total), the events, and the mean of each path; with `--plot
//! FILE.png` it draws them (`bench_rails_plot.rs`). Rank 0 counts every
//! message by its sequence number and checks its place in the segment:
//! each handled exactly once (`bench-rails: PASS`), else FAIL and exit 1.
//!
//! Run under a launcher: `ramp-run -n 2 [--wrap ..] ramp bench --rails`
//! (scripts/rails-bench.sh does, between network namespaces, with links
//! going down and up); started outside a job, `ramp bench --rails` starts
//! itself under the `ramp-run` beside it (`-n 2`, this environment).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ramp::am::{self, handler, Data, Message, SegmentMemory, VecSegment};
use ramp::error::Error;
use ramp::spmd::{self, Role};

use crate::bench_rails_plot;
use crate::bench_rails_trace::{self, PathKey, Trace};

const H_XFER: u8 = 20;
const H_DONE: u8 = 21;
const MIB: usize = 1 << 20;
const MAGIC: u32 = 0x5241_494c;

pub const USAGE: &str =
    "ramp bench --rails [--secs S] [--sample-ms MS] [--rate-mbit R] [--plot FILE.png]
                   [--font FILE.ttf] [--rtt N]
  rank 1 streams 1 MiB messages to rank 0 for S seconds (default 10) over RAMP_RAILS;
  every MS ms (default 50) the bytes each path sent give its Mbit/s; path state changes
  (failed, recovered, partitioned, rejoined) and the rails' links going down or up
  (/sys/class/net/IFACE/operstate) are the events; --plot draws both. From the link
  events: failover, rejoin and resume times (bench_rails_trace.rs), against each rail's
  rate R Mbit/s (default: measured, its 90th percentile sample).
  --rtt N: instead, N short round trips (a 0-arg request and its reply, busy polling),
  their median and p99 in microseconds.
  Under ramp-run -n 2 (outside a job it starts itself under the ramp-run beside it).";

/// Options of `ramp bench --rails`.
#[derive(Clone, Debug)]
pub struct Opts {
    pub secs: f64,
    pub sample_ms: u64,
    pub plot: Option<String>,
    pub font: Option<String>,
    /// Each rail's rate in Mbit/s (the shaping), for the figures.
    pub rate_mbit: Option<f64>,
    /// `--rtt N`: N short round trips instead of the stream.
    pub rtt: Option<usize>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        secs: 10.0,
        sample_ms: 50,
        plot: None,
        font: None,
        rate_mbit: None,
        rtt: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().ok_or(format!("{name} needs a value")).cloned();
        match a.as_str() {
            "--rails" => {}
            "--secs" => {
                o.secs = val("--secs")?
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && *s <= 86400.0)
                    .ok_or("--secs: seconds, more than 0")?
            }
            "--sample-ms" => {
                o.sample_ms = val("--sample-ms")?
                    .parse()
                    .ok()
                    .filter(|m| (1..=60_000).contains(m))
                    .ok_or("--sample-ms: 1 to 60000")?
            }
            "--rate-mbit" => {
                o.rate_mbit = Some(
                    val("--rate-mbit")?
                        .parse()
                        .ok()
                        .filter(|r: &f64| *r > 0.0 && *r <= 1e6)
                        .ok_or("--rate-mbit: Mbit/s, more than 0")?,
                )
            }
            "--rtt" => {
                o.rtt = Some(
                    val("--rtt")?
                        .parse()
                        .ok()
                        .filter(|n| (1..=10_000_000).contains(n))
                        .ok_or("--rtt: round trips, 1 to 10000000")?,
                )
            }
            "--plot" => o.plot = Some(val("--plot")?),
            "--font" => o.font = Some(val("--font")?),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

/// `ramp bench --rails ARGS`: the exit status.
pub fn main(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ramp bench --rails: {e}\n{USAGE}");
            return 2;
        }
    };
    if !spmd::is_worker_env() {
        return under_launcher(args);
    }
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => return under_launcher(args),
        Err(e) => {
            eprintln!("ramp bench --rails: {e}");
            return 2;
        }
    };
    let (bundle, ep, _) = match spmd::start_worker(boot, 0) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ramp bench --rails: start-up: {e}");
            return 1;
        }
    };
    let (rank, size) = (spmd::rank().unwrap_or(0), spmd::size().unwrap_or(0));
    if size != 2 {
        eprintln!("ramp bench --rails: a job of 2 ranks (ramp-run -n 2), not {size}");
        let _ = spmd::exit(2);
    }
    let returned = Arc::new(AtomicU64::new(0));
    let r = returned.clone();
    ep.set_handler(
        0,
        handler(move |a| {
            eprintln!(
                "bench-rails: rank {rank}: a message came back: {:?}",
                a.args
            );
            r.fetch_add(1, SeqCst);
        }),
    );
    let depth = ep.network_depth().unwrap_or(32) as usize;
    let ok = if let Some(n) = o.rtt {
        crate::bench_rails_rtt::run(&bundle, &ep, rank, n)
    } else if rank == 0 {
        receive(&bundle, &ep, depth)
    } else {
        send(&bundle, &ep, depth, &o)
    };
    let ok = ok && returned.load(SeqCst) == 0;
    let _ = spmd::barrier();
    let _ = spmd::exit(if ok { 0 } else { 1 });
    1
}

/// Outside a job: `ramp-run -n 2 THIS bench ARGS` (the ramp-run beside
/// this binary), its exit status.
fn under_launcher(args: &[String]) -> i32 {
    let Ok(me) = std::env::current_exe() else {
        eprintln!("ramp bench --rails: where am I? (current_exe)");
        return 2;
    };
    let run = me.with_file_name("ramp-run");
    eprintln!(
        "ramp bench --rails: not in a job; starting {} -n 2 {} bench {}",
        run.display(),
        me.display(),
        args.join(" ")
    );
    match std::process::Command::new(&run)
        .args(["-n", "2"])
        .arg(&me)
        .arg("bench")
        .args(args)
        .status()
    {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("ramp bench --rails: {}: {e}", run.display());
            2
        }
    }
}

/// Where message `q` goes in rank 0's segment: one slot per credit.
fn slot(q: u64, depth: usize) -> u64 {
    (q % depth as u64) * MIB as u64
}

/// Rank 0: counts each message by its sequence number until rank 1's
/// done (the count it sent); true when each ran exactly once, whole and
/// in its place.
fn receive(bundle: &am::Bundle, ep: &Arc<am::Endpoint>, depth: usize) -> bool {
    struct Rx {
        seen: Vec<u8>,
        damaged: u64,
        done: Option<u64>,
    }
    let rx = Arc::new(Mutex::new(Rx {
        seen: Vec::new(),
        damaged: 0,
        done: None,
    }));
    let seg = VecSegment::new(depth * MIB);
    ep.set_segment(Some(seg.clone()));
    let base = seg.base();
    let x = rx.clone();
    ep.set_handler(
        H_XFER,
        handler(move |a| {
            let mut x = x.lock().unwrap();
            let (Data::Long { addr, len }, [q, m]) = (&a.data, a.args) else {
                x.damaged += 1;
                return;
            };
            let q = *q as u64;
            let (addr, len) = (*addr, *len);
            let head = seg.read(addr - base, 8);
            if *m != MAGIC
                || len != MIB
                || (addr - base) as u64 != slot(q, depth)
                || head[..4] != (q as u32).to_le_bytes()
            {
                x.damaged += 1;
                return;
            }
            let q = q as usize;
            if q >= x.seen.len() {
                x.seen.resize(q + 1, 0);
            }
            x.seen[q] = x.seen[q].saturating_add(1);
        }),
    );
    let x = rx.clone();
    ep.set_handler(
        H_DONE,
        handler(move |a| {
            let mut x = x.lock().unwrap();
            match a.args {
                [h, l] => x.done = Some((*h as u64) << 32 | *l as u64),
                _ => x.damaged += 1,
            }
        }),
    );
    if spmd::barrier().is_err() {
        return false;
    }
    let n = loop {
        if let Err(e) = bundle.poll() {
            eprintln!("bench-rails: rank 0: poll: {e}");
            return false;
        }
        if let Some(n) = rx.lock().unwrap().done {
            break n;
        }
        bundle.wait_for_activity(5);
    };
    let x = rx.lock().unwrap();
    let once = x.seen.iter().take(n as usize).filter(|&&c| c == 1).count() as u64;
    let twice = x.seen.iter().filter(|&&c| c > 1).count();
    let beyond = x.seen.iter().skip(n as usize).filter(|&&c| c > 0).count();
    let ok = once == n && twice == 0 && beyond == 0 && x.damaged == 0;
    println!(
        "bench-rails: {}: {n} messages of 1 MiB sent, {once} handled once, {twice} more than once, \
         {} never, {beyond} never sent, {} damaged",
        if ok { "PASS" } else { "FAIL" },
        n - once,
        x.damaged
    );
    ok
}

/// The sampler's memory between samples.
struct Sampler {
    t0: Instant,
    last: Instant,
    sent: Vec<u64>,
    acked: Vec<u64>,
    state: Vec<&'static str>,
    any_active: bool,
    partitioned: bool,
    trace: Trace,
    links: crate::bench_links::Links,
    /// the watched links' tx bytes at the last sample
    link_sent: Vec<u64>,
}

impl Sampler {
    fn sample(&mut self, ep: &am::Endpoint, peer: SocketAddr) {
        let now = Instant::now();
        let dt = now.duration_since(self.last).as_secs_f64().max(1e-6);
        let t = now.duration_since(self.t0).as_secs_f64();
        self.last = now;
        self.links.sample(t, &mut self.trace.events);
        let mbps = |b: u64| b as f64 * 8.0 / dt / 1e6;
        let tx = self.links.tx_bytes();
        let on_links = tx.iter().zip(&self.link_sent);
        let on_links = on_links.map(|(now, was)| mbps(now.saturating_sub(*was)));
        self.trace.link_rows.push(on_links.collect());
        self.link_sent = tx;
        let mut row = vec![0.0; self.trace.paths.len()];
        let mut active = false;
        let mut total = 0;
        for p in ep.peer_paths(peer).unwrap_or_default() {
            let key = PathKey {
                rail: p.rail,
                local: p.local,
                remote: p.remote,
            };
            let i = match self.trace.paths.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    self.trace.paths.push(key);
                    self.sent.push(0);
                    self.acked.push(0);
                    self.state.push("unconfirmed");
                    row.push(0.0);
                    self.trace.paths.len() - 1
                }
            };
            row[i] = mbps(p.bytes_sent.saturating_sub(self.sent[i]));
            self.sent[i] = p.bytes_sent;
            total += p.bytes_acked.saturating_sub(self.acked[i]);
            self.acked[i] = p.bytes_acked;
            let (was, is) = (self.state[i], am::state_name(p.state));
            let down = |s: &str| s == "failed" || s == "probing";
            let what = match (was, is) {
                ("active", s) if down(s) => Some("failed"),
                (w, "active") if down(w) => Some("recovered"),
                _ => None,
            };
            if let Some(w) = what {
                self.trace
                    .events
                    .push((t, w, self.trace.paths[i].to_string()));
            }
            self.state[i] = is;
            active |= is == "active";
        }
        // partitioned: no path active after one was; rejoined: one again
        if self.any_active && !active || self.partitioned && active {
            let w = if active { "rejoined" } else { "partitioned" };
            self.trace.events.push((t, w, "-".into()));
            self.partitioned = !active;
        }
        self.any_active = active;
        self.trace.rows.push((t, row, mbps(total)));
    }
}

/// Rank 1: streams for `o.secs`, sampling; prints the trace, plots it.
fn send(bundle: &am::Bundle, ep: &Arc<am::Endpoint>, depth: usize, o: &Opts) -> bool {
    let peer = match ep.translation(0) {
        Ok(Some((name, _))) => name.to_addr(),
        _ => None,
    };
    let Some(peer) = peer else {
        eprintln!("bench-rails: rank 1: rank 0 has no address");
        return false;
    };
    let mut payload = vec![0u8; MIB];
    if spmd::barrier().is_err() {
        return false;
    }
    let t0 = Instant::now();
    let every = Duration::from_millis(o.sample_ms);
    let mut s = Sampler {
        t0,
        last: t0,
        sent: Vec::new(),
        acked: Vec::new(),
        state: Vec::new(),
        any_active: false,
        partitioned: false,
        trace: Trace::default(),
        links: crate::bench_links::Links::of(ep),
        link_sent: Vec::new(),
    };
    for (rail, iface) in s.links.watched() {
        println!("bench-rails: rail {rail}'s link: {iface}");
    }
    // (the links' first reading: a change from it is an event)
    s.links.sample(0.0, &mut s.trace.events);
    s.link_sent = s.links.tx_bytes();
    s.trace.links = s
        .links
        .watched()
        .iter()
        .map(|(r, i)| (*r, i.to_string()))
        .collect();
    let mut next = t0 + every;
    let mut q = 0u64;
    let tick = |s: &mut Sampler, next: &mut Instant| {
        if Instant::now() >= *next {
            s.sample(ep, peer);
            *next += every;
        }
    };
    while t0.elapsed().as_secs_f64() < o.secs {
        tick(&mut s, &mut next);
        payload[..4].copy_from_slice(&(q as u32).to_le_bytes());
        let args = [q as u32, MAGIC];
        let m = Message::long(H_XFER, &args, &payload, slot(q, depth));
        match ep.request(0, &m, true) {
            Ok(()) => q += 1,
            Err(Error::InUse(_)) => bundle.wait_for_activity(1),
            Err(e) => {
                eprintln!("bench-rails: rank 1: request: {e}");
                return false;
            }
        }
    }
    while ep.unanswered_requests() > 0 {
        tick(&mut s, &mut next);
        let _ = bundle.poll();
        bundle.wait_for_activity(1);
    }
    s.sample(ep, peer);
    let done = [(q >> 32) as u32, q as u32];
    if let Err(e) = ep.request(0, &Message::short(H_DONE, &done), false) {
        eprintln!("bench-rails: rank 1: done: {e}");
        return false;
    }
    while ep.unanswered_requests() > 0 {
        let _ = bundle.poll();
        bundle.wait_for_activity(5);
    }
    print_trace(&s.trace, q, t0.elapsed().as_secs_f64());
    for f in bench_rails_trace::figures(&s.trace, o.rate_mbit) {
        let ms = f.ms.map_or("-".into(), |m| format!("{m:.0}"));
        println!(
            "bench-rails: figure {} rail={} at_s={:.3} ms={ms} threshold_mbit={:.1}",
            f.kind, f.rail, f.at, f.threshold
        );
    }
    match &o.plot {
        None => true,
        Some(f) => match bench_rails_plot::write(f, o.font.as_deref(), &s.trace) {
            Ok(font) => {
                let how = font.map_or("no font found: lines without text".into(), |f| {
                    format!("text in {f}")
                });
                println!("bench-rails: plot written to {f} ({how})");
                true
            }
            Err(e) => {
                eprintln!("bench-rails: {e}");
                false
            }
        },
    }
}

/// The rows (Mbit/s per path and the total), the events, the means.
fn print_trace(tr: &Trace, messages: u64, secs: f64) {
    println!(
        "bench-rails: paths (Mbit/s sent on each; total: new data acknowledged; then what \
         each rail's link sent, the kernel's counters):"
    );
    for (i, p) in tr.paths.iter().enumerate() {
        println!("bench-rails:   p{i} = {p}");
    }
    let head: Vec<String> = (0..tr.paths.len())
        .map(|i| format!("{:>8}", format!("p{i}")))
        .chain(tr.links.iter().map(|l| format!("{:>8}", l.1)))
        .collect();
    println!(
        "bench-rails: {:>7} {} {:>8}",
        "t_s",
        head.join(" "),
        "total"
    );
    for (n, (t, row, total)) in tr.rows.iter().enumerate() {
        let links = tr.link_rows.get(n).map_or(&[][..], |l| &l[..]);
        let v: Vec<String> = (0..tr.paths.len())
            .map(|i| row.get(i).copied().unwrap_or(0.0))
            .chain((0..tr.links.len()).map(|c| links.get(c).copied().unwrap_or(0.0)))
            .map(|v| format!("{v:>8.1}"))
            .collect();
        println!("bench-rails: {t:>7.3} {} {total:>8.1}", v.join(" "));
    }
    for (t, what, path) in &tr.events {
        println!("bench-rails: event t={t:.3} {what} {path}");
    }
    let n = tr.rows.len().max(1) as f64;
    for (i, p) in tr.paths.iter().enumerate() {
        let mean = tr
            .rows
            .iter()
            .map(|r| r.1.get(i).copied().unwrap_or(0.0))
            .sum::<f64>()
            / n;
        println!("bench-rails: mean p{i} ({p}): {mean:.1} Mbit/s");
    }
    let mib = messages as f64;
    println!(
        "bench-rails: total: {messages} MiB in {secs:.2} s: {:.1} Mbit/s",
        mib * 8.0 * MIB as f64 / 1e6 / secs.max(1e-9)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_parsed_and_bad_values_refused() {
        let o = parse(&args(
            "--rails --secs 2.5 --sample-ms 20 --plot x.png --rate-mbit 200 --rtt 1000",
        ))
        .unwrap();
        assert_eq!(
            (o.secs, o.sample_ms, o.plot.as_deref(), o.rate_mbit, o.rtt),
            (2.5, 20, Some("x.png"), Some(200.0), Some(1000))
        );
        let d = parse(&args("--rails")).unwrap();
        assert_eq!(
            (d.secs, d.sample_ms, d.plot, d.rate_mbit, d.rtt),
            (10.0, 50, None, None, None)
        );
        for bad in [
            "--secs 0",
            "--secs x",
            "--sample-ms 0",
            "--plot",
            "--what",
            "--rate-mbit 0",
            "--rate-mbit x",
            "--rtt 0",
            "--rtt",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad} accepted");
        }
    }
}
