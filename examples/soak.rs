//! Soak test of an SPMD job (item 8): every rank sends `N` requests of mixed
//! categories (short, medium, long in turn; random sizes) to random other
//! ranks; every request handler records (sender, sequence number) and
//! replies in the same category; every reply is recorded by the sender. At
//! the end the ranks all-gather their counts and check: every request run
//! exactly once (none lost, none twice), every reply received exactly once,
//! medium payloads intact, nothing returned; and they print the resident
//! memory (VmRSS) of each process after a warm-up (a tenth of the
//! requests, at least 2000) and at the end: no process may grow by more
//! than `RAMP_SOAK_RSS_SLACK_KIB` (default 4096) in between.
//!
//! Run (N per rank, default 2000; the faults are the job's):
//!   RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.02 RAMP_FAULT_REORDER=0.05 \
//!   RAMP_FAULT_CORRUPT=0.01 target/release/ramp-run -n 8 \
//!   target/release/examples/soak 125000
//! (10^6 requests in all). Exit status 0 when every check holds, 1 if not;
//! rank 0 prints `soak: PASS ...` or `soak: FAIL ...`.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, Data, Message, VecSegment};
use ramp::spmd::{self, Role};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// A counter per sequence number, kept at 1 + count so that the vector is
/// written (resident) from the start and the RSS figures do not grow with it.
fn counters(n: usize) -> Vec<AtomicU8> {
    (0..n).map(|_| AtomicU8::new(1)).collect()
}

fn count(c: &AtomicU8) {
    let _ = c.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
        Some(v.saturating_add(1))
    });
}

fn pattern(sender: u32, seq: u32, len: usize) -> impl Iterator<Item = u8> {
    (0..len).map(move |i| (i as u32 ^ seq.rotate_left(7) ^ sender.rotate_left(13)) as u8)
}

struct Xs(u64);
impl Xs {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const SEG: usize = 1 << 20;
const MAX_LONG: u64 = 16 * 1024;

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        _ => {
            eprintln!("soak: start me with ramp-run -n N target/release/examples/soak [requests per rank]");
            std::process::exit(2);
        }
    };
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let (bundle, ep, _) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    assert!(size >= 2, "soak needs 2 ranks or more");
    ep.set_segment(Some(VecSegment::new(SEG)));

    // handled[s][q]: times request q of rank s ran here
    let handled: Arc<Vec<Vec<AtomicU8>>> = Arc::new((0..size).map(|_| counters(n)).collect());
    // replied[q]: times the reply to our request q arrived
    let replied: Arc<Vec<AtomicU8>> = Arc::new(counters(n));
    let replies = Arc::new(AtomicU64::new(0));
    let damaged = Arc::new(AtomicU64::new(0));
    let returned = Arc::new(AtomicU64::new(0));

    for cat in 0..3u8 {
        let (h, d) = (handled.clone(), damaged.clone());
        ep.set_handler(
            10 + cat,
            handler(move |a| {
                // args: [sender, seq, len]
                let (s, q, len) = (a.args[0], a.args[1], a.args[2] as usize);
                match (&a.data, cat) {
                    (Data::None, 0) => {}
                    (Data::Medium(p), 1) => {
                        if p.len() != len || !p.iter().copied().eq(pattern(s, q, len)) {
                            d.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    (Data::Long { len: l, .. }, 2) if *l == len => {}
                    _ => {
                        d.fetch_add(1, Ordering::SeqCst);
                    }
                }
                match h.get(s as usize).and_then(|v| v.get(q as usize)) {
                    Some(c) => count(c),
                    None => {
                        d.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let args = [q];
                let p: Vec<u8> = pattern(rank as u32, q, 32).collect();
                let m = match cat {
                    0 => Message::short(20, &args),
                    1 => Message::medium(21, &args, &p),
                    _ => Message::long(22, &args, &p, (SEG / 2) as u64 + (q as u64 % 1024) * 64),
                };
                am::reply(a.token, &m).unwrap();
            }),
        );
        let (r, rs, d) = (replied.clone(), replies.clone(), damaged.clone());
        ep.set_handler(
            20 + cat,
            handler(move |a| match r.get(a.args[0] as usize) {
                Some(c) => {
                    count(c);
                    rs.fetch_add(1, Ordering::SeqCst);
                }
                None => {
                    d.fetch_add(1, Ordering::SeqCst);
                }
            }),
        );
    }
    let rt = returned.clone();
    ep.set_handler(
        0,
        handler(move |a| {
            eprintln!("soak: rank {rank}: handler 0 ran: {:?}", a.args);
            rt.fetch_add(1, Ordering::SeqCst);
        }),
    );
    spmd::barrier().expect("barrier");

    let mut rng = Xs(0x9E37_79B9_7F4A_7C15 ^ (rank as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut sent_to = vec![0u64; size];
    // the warm-up: a tenth of the requests, at least 2000 (half of a short run)
    let warm_at = (n / 10).max(2000).min(n / 2);
    let mut rss_warm = 0;
    let t0 = Instant::now();
    let mut payload = Vec::with_capacity(MAX_LONG as usize);
    for q in 0..n {
        if q == warm_at {
            rss_warm = rss_kib();
        }
        let mut dest = rng.next() as usize % (size - 1);
        if dest >= rank {
            dest += 1;
        }
        sent_to[dest] += 1;
        let cat = q % 3;
        let len = match cat {
            0 => 0,
            1 => (rng.next() % 4000) as usize,
            _ => 1 + (rng.next() % MAX_LONG) as usize,
        };
        payload.clear();
        payload.extend(pattern(rank as u32, q as u32, len));
        let args = [rank as u32, q as u32, len as u32];
        let off = (rank as u64 * (SEG as u64 / 2 / size as u64)) & !63;
        let m = match cat {
            0 => Message::short(10, &args),
            1 => Message::medium(11, &args, &payload),
            _ => Message::long(12, &args, &payload, off),
        };
        ep.request(dest as u32, &m, false).expect("request");
    }
    while replies.load(Ordering::SeqCst) < n as u64 {
        bundle.poll().expect("poll");
    }
    let took = t0.elapsed();
    // every rank has its replies: nobody sends any more; what ran here is final
    spmd::barrier().expect("barrier");
    let rss_end = rss_kib();

    // mine: [lost replies, replies twice, damaged, returned, rss warm, rss end,
    //        micros, then per sender: ran once, ran twice or more, then
    //        per destination: sent]
    let mut mine: Vec<u64> = Vec::new();
    let lost_replies = replied
        .iter()
        .filter(|c| c.load(Ordering::SeqCst) == 1)
        .count() as u64;
    let twice_replies = replied
        .iter()
        .filter(|c| c.load(Ordering::SeqCst) > 2)
        .count() as u64;
    mine.extend([
        lost_replies,
        twice_replies,
        damaged.load(Ordering::SeqCst),
        returned.load(Ordering::SeqCst),
        rss_warm,
        rss_end,
        took.as_micros() as u64,
    ]);
    for v in handled.iter() {
        mine.push(v.iter().filter(|c| c.load(Ordering::SeqCst) == 2).count() as u64);
        mine.push(v.iter().filter(|c| c.load(Ordering::SeqCst) > 2).count() as u64);
    }
    mine.extend(&sent_to);
    let width = mine.len();
    let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_be_bytes()).collect();
    let all = spmd::allgather(&bytes).expect("allgather");
    let rows: Vec<Vec<u64>> = all
        .chunks_exact(width * 8)
        .map(|r| {
            r.chunks_exact(8)
                .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
                .collect()
        })
        .collect();
    let sum = |k: usize| rows.iter().map(|r| r[k]).sum::<u64>();
    let (lost_rep, twice_rep, dmg, ret) = (sum(0), sum(1), sum(2), sum(3));
    // per (sender s, receiver d): ran once at d == sent by s to d
    let mut lost_req = 0u64;
    let mut twice_req = 0u64;
    for (d, row) in rows.iter().enumerate() {
        for s in 0..size {
            let once = row[7 + 2 * s];
            twice_req += row[8 + 2 * s];
            let sent = rows[s][7 + 2 * size + d];
            lost_req += sent.saturating_sub(once + row[8 + 2 * s]);
        }
    }
    let total: u64 = rows
        .iter()
        .map(|r| r[7 + 2 * size..].iter().sum::<u64>())
        .sum();
    let growth = rows
        .iter()
        .map(|r| r[5] as i64 - r[4] as i64)
        .max()
        .unwrap();
    let slack: i64 = std::env::var("RAMP_SOAK_RSS_SLACK_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let ok = growth <= slack
        && lost_req == 0
        && twice_req == 0
        && lost_rep == 0
        && twice_rep == 0
        && dmg == 0
        && ret == 0;
    if rank == 0 {
        let mut warm: Vec<u64> = rows.iter().map(|r| r[4]).collect();
        let mut end: Vec<u64> = rows.iter().map(|r| r[5]).collect();
        let growth = rows
            .iter()
            .map(|r| r[5] as i64 - r[4] as i64)
            .max()
            .unwrap();
        let secs = rows.iter().map(|r| r[6]).max().unwrap() as f64 / 1e6;
        warm.sort();
        end.sort();
        println!(
            "soak: {} {size} ranks, {total} requests (short/medium/long in turn) in {secs:.1} s \
             ({:.0}/s): lost {lost_req}, run twice {twice_req}, replies lost {lost_rep}, \
             replies twice {twice_rep}, damaged {dmg}, returned {ret}",
            if ok { "PASS" } else { "FAIL" },
            total as f64 / secs
        );
        println!(
            "soak: VmRSS after warm-up min/max {}/{} KiB, at the end min/max {}/{} KiB, \
             largest growth of one process {growth:+} KiB (allowed {slack:+})",
            warm[0],
            warm[size - 1],
            end[0],
            end[size - 1]
        );
        let st = ep.statistics();
        println!(
            "soak: rank 0: packets sent {}, received {}, retransmitted {}, duplicates dropped {}, \
             corrupt dropped {}",
            st.packets_sent,
            st.packets_received,
            st.packets_retransmitted,
            st.duplicates_dropped,
            st.corrupt_dropped
        );
    }
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(if ok { 0 } else { 1 });
}
