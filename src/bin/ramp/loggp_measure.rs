//! The LogGP measurements of `ramp bench --loggp` (after Culler et al.,
//! "LogP performance assessment of fast network interfaces", 1996, and
//! Alexandrov et al.'s G), written once over a request/reply channel
//! (`Chan`) so that ramp's endpoints and the raw baselines are measured by
//! the same code:
//!
//! - round trip: one short message and its answer, timed in batches of
//!   32 (a clock read is a tenth of a fast round trip), the median of the
//!   batches' means;
//! - cost per message of a burst of `k` sends, timed from the first send
//!   to the return of the `k`-th (the answers are drained untimed after):
//!   for small bursts (send-only regime) it is the send overhead `o_s`;
//!   past the window it tends to the gap;
//! - gap `g`: the steady state, requests pipelined (a window of
//!   outstanding ones), time until the last answer over their number, in
//!   short runs of 8 windows, their median (1/g is the message rate);
//! - one-way gap `g1`: the same with messages the receiver answers
//!   nothing to (ramp: requests whose handler does not reply, their
//!   credits back in automatic replies; the raw ring: a slot given back),
//!   timed until the receiver has taken the last (1/g1 is the one-way
//!   message rate, as UCX's `ucp_am_bw` measures it);
//! - receive overhead `o_r`: a request, then a computed delay (twice the
//!   round trip, so the answer is surely there) spent without polling,
//!   then the time to take the answer in;
//! - `L = RTT/2 - o_s - o_r`;
//! - bandwidth per message size (bursts of large messages, each answered
//!   by a short acknowledgement, a window outstanding), and `G`, the time
//!   per byte of the largest.

use std::time::Instant;

/// Short messages: the size of a ramp short request with no argument on
/// the wire, so the raw baselines move the same bytes.
pub const SHORT: usize = 72;
/// Messages outstanding in the steady state and in bandwidth runs: ramp's
/// credits per peer in the benchmark (`AM_SetExpectedResources` depth).
pub const WINDOW: usize = 32;

/// A request/reply channel to an echo server: a message of at most
/// `SHORT` bytes comes back as it is, a longer one is answered by an
/// 8-byte acknowledgement.
pub trait Chan {
    /// Sends `data` if there is room now (false: try again).
    fn try_send(&mut self, data: &[u8]) -> bool;
    /// Takes in what arrived (answers), without waiting: how many.
    fn poll(&mut self) -> usize;
    /// Whether this channel has one-way messages (`try_post`).
    fn has_one_way(&self) -> bool {
        false
    }
    /// Sends a short one-way message (no answer at the application level)
    /// if there is room now: whether it went.
    fn try_post(&mut self) -> bool {
        false
    }
    /// One-way messages the other side has taken so far (their room
    /// given back to us).
    fn posted_done(&mut self) -> u64 {
        0
    }
}

/// How much to measure.
#[derive(Clone, Debug)]
pub struct Params {
    /// Round trips timed; the other counts follow from it.
    pub iters: usize,
    /// Largest burst (powers of two from 1).
    pub max_burst: usize,
    /// Bytes moved per bandwidth point.
    pub total_bytes: usize,
    /// Message sizes of the bandwidth curve.
    pub sizes: Vec<usize>,
}

impl Params {
    pub fn bursts(&self) -> Vec<usize> {
        let mut v = vec![];
        let mut k = 1;
        while k <= self.max_burst {
            v.push(k);
            k *= 2;
        }
        v
    }
}

/// The figures of one line of the table (microseconds unless said).
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub rtt: Option<f64>,
    pub o_s: Option<f64>,
    pub o_r: Option<f64>,
    pub g: Option<f64>,
    /// the one-way gap: short messages the receiver answers nothing to
    /// (1/g1 is the one-way message rate)
    pub g1: Option<f64>,
    /// (burst size, microseconds per message)
    pub burst: Vec<(usize, f64)>,
    /// (message size, MiB/s)
    pub bw: Vec<(usize, f64)>,
    /// put and get of 1 MiB (remote memory), MiB/s
    pub put1m: Option<f64>,
    pub get1m: Option<f64>,
    /// the same to a region of user memory (registered, not allocated by
    /// ramp: no peer can map it)
    pub put1m_reg: Option<f64>,
    pub get1m_reg: Option<f64>,
}

impl Figures {
    /// `L = RTT/2 - o_s - o_r`.
    pub fn latency(&self) -> Option<f64> {
        Some(self.rtt? / 2.0 - self.o_s? - self.o_r?)
    }

    /// `G`, nanoseconds per byte, from the largest message measured.
    pub fn big_g(&self) -> Option<f64> {
        let &(size, mibs) = self.bw.iter().max_by_key(|p| p.0)?;
        (size > 0 && mibs > 0.0).then(|| 1e9 / (mibs * 1024.0 * 1024.0))
    }

    /// Bandwidth at `size` (or within 1% of it: raw UDP's largest
    /// datagram stands for 64 KiB), MiB/s.
    pub fn bw_at(&self, size: usize) -> Option<f64> {
        self.bw
            .iter()
            .find(|p| p.0.abs_diff(size) * 100 <= size)
            .map(|p| p.1)
    }

    /// `o_s`: the cost per message of a burst of 8 (or the largest below),
    /// well inside the window: the send-only regime, the timer's own cost
    /// spread over the burst.
    pub fn set_o_s_from_bursts(&mut self) {
        self.o_s = self
            .burst
            .iter()
            .filter(|p| p.0 <= 8)
            .max_by_key(|p| p.0)
            .map(|p| p.1);
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// Waits until `poll` has counted `want` answers; false when nothing came
/// for `patience` seconds (raw UDP may lose datagrams: the caller goes on).
fn drain(ch: &mut impl Chan, want: usize, patience: f64) -> bool {
    let mut got = 0;
    // The clock only every `PATIENCE_LOOK` empty polls, from the first
    // such look on: a read costs ~22 ns here, and one on every poll, or
    // on every arrival, would be measured as the channel's (the flag
    // pair's round trip reads none).
    let mut idle = 0u32;
    let mut since = None;
    while got < want {
        let n = ch.poll();
        if n > 0 {
            got += n;
            idle = 0;
            since = None;
            continue;
        }
        idle += 1;
        if idle.is_multiple_of(PATIENCE_LOOK)
            && since
                .get_or_insert_with(Instant::now)
                .elapsed()
                .as_secs_f64()
                > patience
        {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// Empty polls between two looks at the clock while `drain` waits.
const PATIENCE_LOOK: u32 = 1024;

fn send(ch: &mut impl Chan, data: &[u8], outstanding: &mut usize) {
    while !ch.try_send(data) {
        *outstanding = outstanding.saturating_sub(ch.poll());
        std::hint::spin_loop();
    }
    *outstanding += 1;
}

/// Round trips timed together: a clock read costs ~22 ns here (the vDSO's
/// `clock_gettime`), a tenth of a fast shared-memory round trip, so each
/// sample is the mean of a batch, not one round trip.
const RT_BATCH: usize = 32;

/// Batches or repetitions given up (an answer that did not come within
/// the patience) are made up for by others, at most this many times the
/// number wanted: a run on a loaded machine, where an answer may be late
/// by more than the patience, still has its figure.
const RETRIES: usize = 10;

/// Median round trip, microseconds: the median over batches of
/// `RT_BATCH` round trips of each batch's mean (a preempted batch is an
/// outlier the median ignores, as a preempted round trip was).
pub fn round_trip(ch: &mut impl Chan, iters: usize) -> f64 {
    let msg = [7u8; SHORT];
    let batches = (iters / RT_BATCH).max(1);
    let warm = batches / 10;
    let mut v = Vec::with_capacity(batches);
    let mut done = 0;
    'batch: for _ in 0..RETRIES * (batches + warm) {
        if v.len() == batches {
            break;
        }
        let t = Instant::now();
        for _ in 0..RT_BATCH {
            let mut o = 0;
            send(ch, &msg, &mut o);
            if !drain(ch, 1, 0.1) {
                // raw UDP lost it, or it is late: the batch is not a
                // measurement (another is made)
                continue 'batch;
            }
        }
        done += 1;
        if done > warm {
            v.push(us(t) / RT_BATCH as f64);
        }
    }
    median(v)
}

/// Cost per message of bursts of each size (median of repetitions).
pub fn bursts(ch: &mut impl Chan, p: &Params) -> Vec<(usize, f64)> {
    let msg = [7u8; SHORT];
    p.bursts()
        .into_iter()
        .map(|k| {
            let reps = (p.iters / k).clamp(5, 2000);
            let v = (0..reps)
                .map(|_| {
                    let mut o = 0;
                    let t = Instant::now();
                    for _ in 0..k {
                        send(ch, &msg, &mut o);
                    }
                    let c = us(t) / k as f64;
                    drain(ch, o, 0.1);
                    c
                })
                .collect();
            (k, median(v))
        })
        .collect()
}

/// Pipelines `n` messages of `data` with at most `WINDOW` outstanding;
/// seconds until the last answer.
fn pipelined(ch: &mut impl Chan, data: &[u8], n: usize) -> f64 {
    let t = Instant::now();
    let mut o = 0usize;
    let mut last = Instant::now();
    for _ in 0..n {
        while o >= WINDOW {
            let got = ch.poll();
            if got > 0 {
                o -= got.min(o);
                last = Instant::now();
            } else if last.elapsed().as_millis() > 20 {
                o = 0; // lost (raw UDP): forgiven
            } else {
                std::hint::spin_loop();
            }
        }
        send(ch, data, &mut o);
    }
    drain(ch, o, 0.05);
    t.elapsed().as_secs_f64()
}

/// Repetitions of a bandwidth figure: short ones (at most 8 windows, as
/// the gap), their median (on a shared machine a repetition the scheduler
/// interrupted does not count).
const REPS: usize = 15;

/// The steady-state gap, microseconds per message: the median of short
/// pipelined runs of 8 windows each.
pub fn gap(ch: &mut impl Chan, iters: usize) -> f64 {
    let n = 8 * WINDOW;
    let v = (0..(iters / n).clamp(5, 200))
        .map(|_| pipelined(ch, &[7u8; SHORT], n) * 1e6 / n as f64)
        .collect();
    median(v)
}

/// The one-way gap, microseconds per message: short runs of 8 windows of
/// one-way messages (`Chan::try_post`), each timed until the receiver has
/// taken the last, their median; None when the receiver stopped taking
/// them.
pub fn one_way_gap(ch: &mut impl Chan, iters: usize) -> Option<f64> {
    let n = 8 * WINDOW;
    let mut v = vec![];
    for _ in 0..(iters / n).clamp(5, 200) {
        let base = ch.posted_done();
        let t = Instant::now();
        for _ in 0..n {
            while !ch.try_post() {
                ch.poll();
                std::hint::spin_loop();
            }
        }
        // the receiver stopped: nothing taken for a second
        let (mut idle, mut seen, mut since) = (0u32, ch.posted_done(), None);
        while ch.posted_done() - base < n as u64 {
            ch.poll();
            let now_done = ch.posted_done();
            if now_done != seen {
                (seen, since, idle) = (now_done, None, 0);
                continue;
            }
            idle += 1;
            if idle.is_multiple_of(PATIENCE_LOOK)
                && since
                    .get_or_insert_with(Instant::now)
                    .elapsed()
                    .as_secs_f64()
                    > 1.0
            {
                return None;
            }
        }
        v.push(us(t) / n as f64);
    }
    Some(median(v))
}

/// Receive overhead: a request, a delay of `delay_us` without polling,
/// then the time to take the answer in (median), microseconds.
pub fn recv_overhead(ch: &mut impl Chan, iters: usize, delay_us: f64) -> f64 {
    let msg = [7u8; SHORT];
    let reps = (iters / 10).max(5);
    let v = (0..RETRIES * reps)
        .filter_map(|_| {
            let mut o = 0;
            send(ch, &msg, &mut o);
            let t = Instant::now();
            while us(t) < delay_us {
                std::hint::spin_loop();
            }
            let t = Instant::now();
            drain(ch, 1, 0.1).then(|| us(t))
        })
        .take(reps)
        .collect();
    median(v)
}

/// Bandwidth of each size (MiB/s); sizes above `max` become one point
/// at `max`.
pub fn bandwidth(ch: &mut impl Chan, p: &Params, max: usize) -> Vec<(usize, f64)> {
    let data = vec![0x5au8; p.sizes.iter().copied().max().unwrap_or(0)];
    let mut sizes: Vec<usize> = p.sizes.iter().map(|&s| s.min(max)).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|s| {
            let n = (p.total_bytes / s / REPS).clamp(16, 8 * WINDOW);
            let v = (0..REPS)
                .map(|_| (n * s) as f64 / pipelined(ch, &data[..s], n) / (1024.0 * 1024.0))
                .collect();
            (s, median(v))
        })
        .collect()
}

/// Everything but remote memory, over `ch`.
pub fn measure(
    ch: &mut impl Chan,
    p: &Params,
    max_size: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Figures {
    let mut f = Figures::default();
    progress("round trip");
    let rtt = round_trip(ch, p.iters);
    f.rtt = Some(rtt);
    progress("bursts");
    f.burst = bursts(ch, p);
    f.set_o_s_from_bursts();
    progress("gap");
    f.g = Some(gap(ch, p.iters));
    if ch.has_one_way() {
        progress("one-way gap");
        f.g1 = one_way_gap(ch, p.iters);
    }
    progress("receive overhead");
    f.o_r = Some(recv_overhead(ch, p.iters, 2.0 * rtt + 1.0));
    progress("bandwidth");
    f.bw = bandwidth(ch, p, max_size);
    f
}

/// memcpy bandwidth of each size (MiB/s): the floor of every copy. A
/// warm copy: source and destination of exactly that size, written before
/// (no page faults, in cache when they fit), copied over and over in
/// windows of at least 2 ms; the best of 15 windows, since a window the
/// scheduler cut (2 cores shared with the other benchmark processes) only
/// reads slower. (The median of 3 windows over the first bytes of two
/// buffers of the largest size read 1.8-9 GB/s for 8 KiB-256 KiB on the
/// 2-core machine, where the copy runs at 46-55 GB/s.) The destination
/// lies 256 bytes past a page from the source: two buffers of one size
/// from the allocator lie 16 past, where glibc's `rep movsb` runs 15-25x
/// slower on AMD's Zen cores (`memcpy_trap`), which read 2.7 GB/s from
/// 8 to 256 KiB on a Zen 3.
pub fn memcpy_bw(p: &Params) -> Vec<(usize, f64)> {
    p.sizes
        .iter()
        .map(|&s| (s, copy_speed(s, 256, |d, x| d.copy_from_slice(x))))
        .collect()
}

/// The best of 15 windows of at least 2 ms of `copy` over `len` bytes
/// whose destination lies `past` bytes beyond a page after the source
/// (MiB/s).
fn copy_speed(len: usize, past: usize, copy: impl Fn(&mut [u8], &[u8])) -> f64 {
    let mut buf = vec![0x5au8; 2 * len + 3 * 4096];
    let at = buf.as_ptr().align_offset(4096);
    let gap = len.next_multiple_of(4096) + past;
    let (a, b) = buf.split_at_mut(at + gap);
    let (src, dst) = (&a[at..at + len], &mut b[..len]);
    let copies = |dst: &mut [u8], n: usize| {
        let t = Instant::now();
        for _ in 0..n {
            copy(dst, std::hint::black_box(src));
            std::hint::black_box(&mut *dst);
        }
        t.elapsed()
    };
    let mut n = 16;
    while copies(dst, n) < std::time::Duration::from_millis(2) && n < 1 << 26 {
        n *= 2;
    }
    let best = (0..15)
        .map(|_| (n * len) as f64 / copies(dst, n).as_secs_f64())
        .fold(0.0, f64::max);
    best / (1024.0 * 1024.0)
}

/// A 64 KiB copy whose destination lies 16 bytes past a page from its
/// source (two allocations of one size): by `memcpy` and by ramp's copy
/// (`bench_support::copy_bytes`, in pieces below glibc's `rep movsb`
/// threshold there), beside `memcpy` 256 past (MiB/s).
pub fn memcpy_trap() -> (f64, f64, f64) {
    const LEN: usize = 65536;
    (
        copy_speed(LEN, 16, |d, x| d.copy_from_slice(x)),
        copy_speed(LEN, 16, ramp::bench_support::copy_bytes),
        copy_speed(LEN, 256, |d, x| d.copy_from_slice(x)),
    )
}
