//! The load of a shaped link (issue 37): ranks 1..N-1 stream long requests
//! (Xfers, 256 KiB by default) into rank 0's segment, plus a short request
//! now and then (one outstanding at a time, answered at once by a short
//! reply), for a given time or byte count. Rank 0 counts every message per
//! sender and sequence number; at the end the ranks all-gather and rank 0
//! prints, per sender, what arrived, the goodput, the share of the bytes
//! sent beyond first transmissions (retransmissions, from ramp's
//! statistics), its share of what arrived while every sender still had
//! messages arriving (for Jain's index), and the short requests' latency as the application saw it
//! (request call to reply handler: credit wait and every queue included;
//! the credit wait alone beside it: `short_credit_p50_us`),
//! then `link_load: PASS` or `link_load: FAIL` with what was wrong: a
//! message lost or run twice, a payload not where it belonged, a message
//! returned, statistics that disagree with what the program counted.
//!
//! Run (`scripts/link-bench.sh` does, in network namespaces over a shaped
//! link; `tests/link_shaped.rs` too, small):
//!   RAMP_TRANSPORT=udp target/release/ramp-run -n 2 \
//!     target/release/examples/link_load --secs 5
//! Options: `--secs S` (default 5) and `--bytes B` (per sender; whichever
//! limit comes first ends the sending), `--xfer BYTES` (default 262144),
//! `--short-ms MS` (gap between short requests, default 2; 0: none),
//! `--progress-ms MS` (progress lines, default 1000; 0: none),
//! `--stop-file PATH` (senders stop once PATH exists: tests end a job so).
//!
//! Lines for scripts (key=value): `link_load: progress t=.. delivered=..`
//! (rank 0, every progress period: bytes delivered so far, per sender too,
//! and `unix_ms`, the wall clock, to line them up with outside events),
//! `link_load: sender r ...` and `link_load: total ...` at the end. A run
//! whose network collapses never ends by itself: its progress lines show
//! the rate it achieved; its launcher's watchdog ends it.
//!
//! Exit status 0 when every check holds, 1 if not, 2 for bad arguments.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ramp::am::{self, handler, Data, Message, SegmentMemory, VecSegment};
use ramp::error::Error;
use ramp::spmd::{self, Role};

#[path = "support/link_load_util.rs"]
mod util;
use util::{percentile, unix_ms, words, Seen};

const H_XFER: u8 = 10;
const H_SHORT: u8 = 11;
const H_SHORT_REPLY: u8 = 12;
const H_DONE: u8 = 13;
const MAGIC: u32 = 0x4c4e_4b21;

struct Opts {
    secs: f64,
    bytes: u64,
    xfer: usize,
    short_ms: u64,
    progress_ms: u64,
    stop_file: Option<std::path::PathBuf>,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        secs: 5.0,
        bytes: u64::MAX,
        xfer: 256 * 1024,
        short_ms: 2,
        progress_ms: 1000,
        stop_file: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args
            .get(i + 1)
            .ok_or(format!("{} needs a value", args[i]))?;
        let bad = || format!("{} {v:?}: not a valid value", args[i]);
        match args[i].as_str() {
            "--secs" => o.secs = v.parse().ok().filter(|s: &f64| *s > 0.0).ok_or_else(bad)?,
            "--bytes" => o.bytes = v.parse().ok().filter(|b| *b > 0).ok_or_else(bad)?,
            "--xfer" => {
                o.xfer = v
                    .parse()
                    .ok()
                    .filter(|x| (16..=am::MAX_LONG).contains(x))
                    .ok_or_else(bad)?
            }
            "--short-ms" => o.short_ms = v.parse().map_err(|_| bad())?,
            "--progress-ms" => o.progress_ms = v.parse().map_err(|_| bad())?,
            "--stop-file" => o.stop_file = Some(v.into()),
            a => return Err(format!("unknown option {a:?}")),
        }
        i += 2;
    }
    Ok(o)
}

/// Where sender `s`'s message `q` goes: one slot per credit, so a slot is
/// written again only after its handler ran (its reply freed the credit).
fn slot(s: usize, q: u64, depth: u64, xfer: usize) -> u64 {
    ((s as u64 - 1) * depth + q % depth) * xfer as u64
}

/// One row of the all-gather: a sender's or the receiver's figures.
const W_HEAD: usize = 24;
const W_PER: usize = 8;

fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("link_load: {e}");
            std::process::exit(2);
        }
    };
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        _ => {
            eprintln!("link_load: start me with ramp-run -n N (N >= 2)");
            std::process::exit(2);
        }
    };
    let (bundle, ep, _) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    if size < 2 {
        eprintln!("link_load: needs 2 ranks or more (rank 0 receives)");
        let _ = spmd::exit(2);
    }
    let depth = ep.network_depth().expect("depth set") as u64;
    let xfer = o.xfer;
    let width = W_HEAD + W_PER * size;
    let mut row = vec![0u64; width];
    let returned = Arc::new(AtomicU64::new(0));
    let r = returned.clone();
    ep.set_handler(
        0,
        handler(move |a| {
            eprintln!("link_load: rank {rank}: a message came back: {:?}", a.args);
            r.fetch_add(1, SeqCst);
        }),
    );

    if rank == 0 {
        let seg = VecSegment::new((size - 1) * depth as usize * xfer);
        ep.set_segment(Some(seg.clone()));
        let base = seg.base();
        // per sender: xfers seen, shorts seen, bytes, bytes by the deadline,
        // last arrival (ns after the start), done (xfers sent, shorts sent)
        struct Rx {
            xfers: Vec<Seen>,
            shorts: Vec<Seen>,
            bytes: Vec<u64>,
            /// arrival of each Xfer (ns after the start), per sender
            arrivals: Vec<Vec<u64>>,
            last_ns: Vec<u64>,
            done: Vec<Option<(u64, u64)>>,
            damaged: u64,
        }
        let rx = Arc::new(Mutex::new(Rx {
            xfers: (0..size).map(|_| Seen::default()).collect(),
            shorts: (0..size).map(|_| Seen::default()).collect(),
            bytes: vec![0; size],
            arrivals: vec![Vec::new(); size],
            last_ns: vec![0; size],
            done: vec![None; size],
            damaged: 0,
        }));
        let start = Arc::new(Mutex::new(Instant::now()));
        let (x, st) = (rx.clone(), start.clone());
        ep.set_handler(
            H_XFER,
            handler(move |a| {
                let now = st.lock().unwrap().elapsed().as_nanos() as u64;
                let mut x = x.lock().unwrap();
                let (s, q) = (a.args.first().copied(), a.args.get(1).copied());
                let ok_s = matches!(s, Some(s) if (1..size as u32).contains(&s));
                let Data::Long { addr, len } = a.data else {
                    x.damaged += 1;
                    return;
                };
                if !ok_s || a.args.len() != 3 || len != xfer || a.args[2] as usize != len {
                    x.damaged += 1;
                    return;
                }
                let (s, q) = (s.unwrap() as usize, q.unwrap());
                let off = addr - base;
                let head = words(&seg.read(off, 16));
                let tail = words(&seg.read(off + len - 8, 8));
                if off as u64 != slot(s, q as u64, depth, xfer)
                    || head != [s as u32, q, len as u32, MAGIC]
                    || tail != [q, !(s as u32)]
                {
                    x.damaged += 1;
                }
                x.xfers[s].count(q);
                x.bytes[s] += len as u64;
                x.arrivals[s].push(now);
                x.last_ns[s] = now;
            }),
        );
        let x = rx.clone();
        ep.set_handler(
            H_SHORT,
            handler(move |a| {
                match (a.args.len(), a.args.first().copied()) {
                    (2, Some(s)) if (1..size as u32).contains(&s) => {
                        x.lock().unwrap().shorts[s as usize].count(a.args[1])
                    }
                    _ => x.lock().unwrap().damaged += 1,
                }
                am::reply(a.token, &Message::short(H_SHORT_REPLY, &a.args[1..2])).expect("reply");
            }),
        );
        let x = rx.clone();
        ep.set_handler(
            H_DONE,
            handler(move |a| {
                let mut x = x.lock().unwrap();
                match a.args {
                    [s, xh, xl, sh, sl] if (1..size as u32).contains(s) => {
                        let j = |h: u32, l: u32| (h as u64) << 32 | l as u64;
                        x.done[*s as usize] = Some((j(*xh, *xl), j(*sh, *sl)));
                    }
                    _ => x.damaged += 1,
                }
            }),
        );
        spmd::barrier().expect("barrier");
        *start.lock().unwrap() = Instant::now();
        let t0 = *start.lock().unwrap();
        let mut next = Duration::from_millis(o.progress_ms);
        let mut last_total = 0u64;
        loop {
            bundle.poll().expect("poll");
            if rx.lock().unwrap().done.iter().skip(1).all(Option::is_some) {
                break;
            }
            if o.progress_ms > 0 && t0.elapsed() >= next {
                let x = rx.lock().unwrap();
                let total: u64 = x.bytes.iter().sum();
                let per: Vec<String> = x.bytes[1..].iter().map(u64::to_string).collect();
                println!(
                    "link_load: progress t={:.2} delivered={total} last_MBps={:.2} per_sender={} \
                     unix_ms={}",
                    t0.elapsed().as_secs_f64(),
                    (total - last_total) as f64 / (o.progress_ms as f64 * 1e3),
                    per.join(","),
                    unix_ms()
                );
                last_total = total;
                next += Duration::from_millis(o.progress_ms);
            }
            bundle.wait_for_activity(5);
        }
        let x = rx.lock().unwrap();
        let st = ep.statistics();
        row[1] = x.damaged;
        row[2] = st.requests_received[2];
        row[3] = st.requests_received[0];
        row[4] = returned.load(SeqCst);
        // the senders' shares while all of them had messages arriving: up
        // to the first sender's last arrival
        let all_until = (1..size).map(|s| x.last_ns[s]).min().unwrap_or(0);
        for s in 1..size {
            let (xs, ss) = x.done[s].unwrap();
            let contended =
                x.arrivals[s].iter().filter(|&&t| t <= all_until).count() as u64 * xfer as u64;
            let (xo, xt, xb) = x.xfers[s].tally(xs);
            let (so, stw, sb) = x.shorts[s].tally(ss);
            let b = W_HEAD + W_PER * s;
            row[b..b + 8].copy_from_slice(&[
                xo,
                xt,
                so,
                stw,
                x.bytes[s],
                contended,
                x.last_ns[s],
                xb + sb,
            ]);
        }
    } else {
        // sender
        let replied = Arc::new(Mutex::new(Seen::default()));
        let short_out = Arc::new(AtomicBool::new(false));
        let lat = Arc::new(Mutex::new(Vec::<u64>::new()));
        let sent_at = Arc::new(Mutex::new(Vec::<Instant>::new()));
        let (rp, so, l, sa) = (
            replied.clone(),
            short_out.clone(),
            lat.clone(),
            sent_at.clone(),
        );
        ep.set_handler(
            H_SHORT_REPLY,
            handler(move |a| {
                let q = a.args[0];
                rp.lock().unwrap().count(q);
                if let Some(t) = sa.lock().unwrap().get(q as usize) {
                    l.lock().unwrap().push(t.elapsed().as_nanos() as u64);
                }
                so.store(false, SeqCst);
            }),
        );
        let mut payload = vec![0u8; xfer];
        spmd::barrier().expect("barrier");
        let t0 = Instant::now();
        let (mut xq, mut sq, mut bytes) = (0u64, 0u64, 0u64);
        let mut last_short = t0;
        let mut next = Duration::from_millis(o.progress_ms);
        let progress = |t0: Instant, bytes: u64, phase: &str| {
            let st = ep.statistics();
            let first: u64 = st.request_total_bytes_sent.iter().sum::<u64>()
                + st.reply_total_bytes_sent.iter().sum::<u64>();
            println!(
                "link_load: rank {rank} progress t={:.2} {phase} sent={bytes} unanswered={} \
                 wire_bytes={} beyond_first={} packets_retransmitted={}",
                t0.elapsed().as_secs_f64(),
                ep.unanswered_requests(),
                st.total_bytes_sent,
                st.total_bytes_sent.saturating_sub(first),
                st.packets_retransmitted
            );
        };
        let (mut pending_xfer, mut pending_short) = (false, false);
        let mut credit_waits: Vec<u64> = Vec::new();
        let (mut stop_seen, mut stop_checked) = (false, t0); // looked for every 20 ms
        while t0.elapsed().as_secs_f64() < o.secs && (bytes < o.bytes || pending_xfer) {
            if let (Some(f), true) = (&o.stop_file, stop_checked.elapsed().as_millis() >= 20) {
                (stop_seen, stop_checked) = (f.exists(), Instant::now());
            }
            if stop_seen && !pending_xfer && !pending_short {
                break;
            }
            if o.progress_ms > 0 && t0.elapsed() >= next {
                progress(t0, bytes, "sending");
                next += Duration::from_millis(o.progress_ms);
            }
            if o.short_ms > 0
                && !pending_short
                && !short_out.load(SeqCst)
                && last_short.elapsed() >= Duration::from_millis(o.short_ms)
            {
                // its latency counts from now: a wait for a credit is part of it
                short_out.store(true, SeqCst);
                sent_at.lock().unwrap().push(Instant::now());
                pending_short = true;
            }
            if pending_short {
                let args = [rank as u32, sq as u32];
                match ep.request(0, &Message::short(H_SHORT, &args), true) {
                    Ok(()) => {
                        // the wait for a credit, part of its latency
                        if let Some(t) = sent_at.lock().unwrap().last() {
                            credit_waits.push(t.elapsed().as_nanos() as u64);
                        }
                        pending_short = false;
                        sq += 1;
                        last_short = Instant::now();
                    }
                    Err(Error::InUse(_)) => {
                        // the short request goes first: no Xfer takes its credit
                        bundle.wait_for_activity(1);
                        continue;
                    }
                    Err(e) => panic!("link_load: rank {rank}: short request: {e}"),
                }
            }
            if !pending_xfer {
                payload[..16].copy_from_slice(
                    &[rank as u32, xq as u32, xfer as u32, MAGIC]
                        .map(u32::to_le_bytes)
                        .concat(),
                );
                payload[xfer - 8..]
                    .copy_from_slice(&[xq as u32, !(rank as u32)].map(u32::to_le_bytes).concat());
                pending_xfer = true;
            }
            let args = [rank as u32, xq as u32, xfer as u32];
            let off = slot(rank, xq, depth, xfer);
            match ep.request(0, &Message::long(H_XFER, &args, &payload, off), true) {
                Ok(()) => {
                    pending_xfer = false;
                    xq += 1;
                    bytes += xfer as u64;
                }
                Err(Error::InUse(_)) => bundle.wait_for_activity(1),
                Err(e) => panic!("link_load: rank {rank}: request: {e}"),
            }
        }
        // every message answered (its handler ran at rank 0)
        while ep.unanswered_requests() > 0 {
            bundle.poll().expect("poll");
            if o.progress_ms > 0 && t0.elapsed() >= next {
                progress(t0, bytes, "draining");
                next += Duration::from_millis(o.progress_ms);
            }
            bundle.wait_for_activity(5);
        }
        let elapsed = t0.elapsed().as_nanos() as u64;
        let h = |v: u64| (v >> 32) as u32;
        let lo = |v: u64| v as u32;
        ep.request(
            0,
            &Message::short(H_DONE, &[rank as u32, h(xq), lo(xq), h(sq), lo(sq)]),
            false,
        )
        .expect("done request");
        while ep.unanswered_requests() > 0 {
            bundle.poll().expect("poll");
            bundle.wait_for_activity(5);
        }
        let st = ep.statistics();
        let mut lat = lat.lock().unwrap();
        let (once, twice, beyond) = replied.lock().unwrap().tally(sq);
        row[0] = 1;
        row[1] = xq;
        row[2] = sq;
        row[3] = bytes;
        row[4] = once;
        row[5] = twice + beyond;
        row[6] = percentile(&mut lat, 0.5);
        row[7] = percentile(&mut lat, 0.99);
        row[8] = lat.len() as u64;
        row[9] = st.total_bytes_sent;
        row[10] = st.request_total_bytes_sent.iter().sum::<u64>()
            + st.reply_total_bytes_sent.iter().sum::<u64>();
        row[11] = st.packets_sent;
        row[12] = st.packets_retransmitted;
        row[13] = returned.load(SeqCst);
        row[14] = st.requests_sent[2];
        row[15] = st.requests_sent[0];
        row[16] = st.request_data_bytes_sent[2];
        row[17] = elapsed;
        row[18] = lat.last().copied().unwrap_or(0);
        row[19] = percentile(&mut credit_waits, 0.5);
        row[20] = percentile(&mut credit_waits, 0.99);
    }

    let bytes: Vec<u8> = row.iter().flat_map(|v| v.to_be_bytes()).collect();
    let all = spmd::allgather(&bytes).expect("allgather");
    let rows: Vec<Vec<u64>> = all
        .chunks_exact(width * 8)
        .map(|r| {
            r.chunks_exact(8)
                .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
                .collect()
        })
        .collect();
    let ok = report(&rows, &o, size);
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(if ok { 0 } else { 1 });
}

/// Rank 0's lines; whether every check holds (every rank computes it).
fn report(rows: &[Vec<u64>], o: &Opts, size: usize) -> bool {
    let print = spmd::rank() == Some(0);
    let rx = &rows[0];
    let mut problems: Vec<String> = Vec::new();
    let (mut lost, mut twice) = (0u64, 0u64);
    let (mut total_bytes, mut total_x, mut total_s, mut secs) = (0u64, 0u64, 0u64, 0f64);
    let mut shares = Vec::new();
    for (s, tx) in rows.iter().enumerate().skip(1) {
        let b = W_HEAD + W_PER * s;
        let r = &rx[b..b + W_PER];
        let (xs, ss) = (tx[1], tx[2]);
        let l = xs.saturating_sub(r[0] + r[1]) + ss.saturating_sub(r[2] + r[3]);
        lost += l;
        twice += r[1] + r[3] + r[7] + tx[5];
        if tx[4] != ss {
            problems.push(format!("sender {s}: {} short replies of {ss}", tx[4]));
        }
        if r[4] != xs * o.xfer as u64 {
            problems.push(format!(
                "sender {s}: {} bytes arrived of {}",
                r[4],
                xs * o.xfer as u64
            ));
        }
        // the statistics agree with what the program counted
        if tx[14] != xs || tx[15] != ss + 1 || tx[16] != tx[3] || tx[9] < tx[10] {
            problems.push(format!(
                "sender {s}: statistics: long requests sent {} (program: {xs}), short {} \
                 (program: {} with the final notice), long bytes {} (program: {}), wire bytes \
                 {} below first transmissions {}",
                tx[14],
                tx[15],
                ss + 1,
                tx[16],
                tx[3],
                tx[9],
                tx[10]
            ));
        }
        if tx[13] > 0 {
            problems.push(format!("sender {s}: {} messages came back", tx[13]));
        }
        total_bytes += r[4];
        total_x += xs;
        total_s += ss;
        let last = r[6] as f64 / 1e9;
        secs = f64::max(secs, last);
        shares.push(r[5] as f64);
        let beyond = tx[9].saturating_sub(tx[10]);
        if print {
            println!(
                "link_load: sender {s} xfers={xs} bytes={} secs={last:.3} goodput_MBps={:.3} \
                 bytes_contended={} wire_bytes={} retx_share={:.4} packets={} \
                 packets_retransmitted={} shorts={ss} short_p50_us={:.0} short_p99_us={:.0} \
                 short_max_us={:.0} short_credit_p50_us={:.0} short_credit_p99_us={:.0} \
                 lost={l} twice={}",
                r[4],
                r[4] as f64 / last.max(1e-9) / 1e6,
                r[5],
                tx[9],
                beyond as f64 / tx[9].max(1) as f64,
                tx[11],
                tx[12],
                tx[6] as f64 / 1e3,
                tx[7] as f64 / 1e3,
                tx[18] as f64 / 1e3,
                tx[19] as f64 / 1e3,
                tx[20] as f64 / 1e3,
                r[1] + r[3] + r[7] + tx[5]
            );
        }
    }
    if rx[1] > 0 {
        problems.push(format!("{} messages damaged or misplaced", rx[1]));
    }
    if rx[2] != total_x || rx[3] != total_s + (size as u64 - 1) {
        problems.push(format!(
            "receiver statistics: long requests received {} (program: {total_x}), short {} \
             (program: {})",
            rx[2],
            rx[3],
            total_s + size as u64 - 1
        ));
    }
    if rx[4] > 0 {
        problems.push(format!("receiver: {} messages came back", rx[4]));
    }
    if lost > 0 || twice > 0 {
        problems.push(format!("lost {lost}, run twice {twice}"));
    }
    let sum: f64 = shares.iter().sum();
    let sq: f64 = shares.iter().map(|x| x * x).sum();
    let jain = if sq > 0.0 {
        sum * sum / (shares.len() as f64 * sq)
    } else {
        0.0
    };
    if print {
        println!(
            "link_load: total senders={} bytes={total_bytes} secs={secs:.3} goodput_MBps={:.3} \
             jain={jain:.4}",
            size - 1,
            total_bytes as f64 / secs.max(1e-9) / 1e6
        );
        if problems.is_empty() {
            println!(
                "link_load: PASS {total_x} xfers and {total_s} short requests from {} senders, \
                 each run exactly once; statistics agree",
                size - 1
            );
        } else {
            println!("link_load: FAIL {}", problems.join("; "));
        }
    }
    problems.is_empty()
}
