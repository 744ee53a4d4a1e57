//! The raw baselines of `ramp bench --loggp`, written for it and measured
//! in the same run as ramp by the same code (`loggp_measure.rs`): a
//! busy-polled raw UDP echo on loopback and a raw shared-memory echo (a
//! pair of single-producer rings between two threads; its round trip is
//! that of a flag pair, the floor of any shared-memory ping-pong), the
//! client and the server threads pinned to cores 0 and 1 as ramp's
//! processes are.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::bench_shm::pin_thread;
use crate::loggp_measure::{measure, Chan, Figures, Params, SHORT};

/// The largest UDP datagram on IPv4.
pub const UDP_MAX: usize = 65507;

/// What an echo server answers to `msg`: the message itself when short,
/// else an 8-byte acknowledgement; nothing to a short one starting with
/// `ONE_WAY` (`Chan::try_post`).
fn answer(msg: &[u8]) -> Option<&[u8]> {
    match msg.len() {
        n if n <= SHORT && msg.first() == Some(&ONE_WAY) => None,
        n if n <= SHORT => Some(msg),
        _ => Some(&msg[..8]),
    }
}

/// The first byte of a one-way message (the measurements' own start with 7).
const ONE_WAY: u8 = 0;

fn udp_socket() -> UdpSocket {
    use socket2::{Domain, Protocol, Socket, Type};
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).expect("udp socket");
    // as large as ramp asks for its own (RAMP_SOCKET_BUFFER's default)
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(4 << 20);
    s.bind(&addr.into()).expect("udp bind");
    let s: UdpSocket = s.into();
    s.set_nonblocking(true).unwrap();
    s
}

struct UdpChan {
    sock: UdpSocket,
    to: SocketAddr,
    buf: Vec<u8>,
}

impl Chan for UdpChan {
    fn try_send(&mut self, data: &[u8]) -> bool {
        self.sock.send_to(data, self.to).is_ok()
    }

    fn poll(&mut self) -> usize {
        let mut n = 0;
        while self.sock.recv_from(&mut self.buf).is_ok() {
            n += 1;
        }
        n
    }
}

/// Raw UDP: a busy-polled echo thread and the measurements.
pub fn raw_udp(p: &Params, pin: bool, progress: &(dyn Fn(&str) + Sync)) -> Figures {
    let server = udp_socket();
    let to = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let echo = std::thread::spawn(move || {
        pin_thread(pin.then_some(1));
        let mut page = crate::bench_roles::PageBuf::new(65536);
        let buf = page.get();
        while !s.load(Ordering::Relaxed) {
            match server.recv_from(buf) {
                Ok((n, from)) => {
                    if let Some(a) = answer(&buf[..n]) {
                        let _ = server.send_to(a, from);
                    }
                }
                Err(_) => std::hint::spin_loop(),
            }
        }
    });
    let f = std::thread::scope(|sc| {
        sc.spawn(|| {
            pin_thread(pin.then_some(0));
            let mut ch = UdpChan {
                sock: udp_socket(),
                to,
                buf: vec![0u8; 65536],
            };
            measure(&mut ch, p, UDP_MAX, progress)
        })
        .join()
        .unwrap()
    });
    stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
    f
}

/// Slots per ring.
const SLOTS: usize = 32;

/// One slot: a short message in atomics, a longer one in its buffer (the
/// ring's counters give it to one side at a time; the lock is never
/// contended, it only keeps this file free of `unsafe`).
#[derive(Default)]
struct Slot {
    len: AtomicUsize,
    words: [AtomicU64; SHORT / 8],
    data: Mutex<Vec<u8>>,
}

#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// A single-producer single-consumer ring of messages.
#[derive(Default)]
struct Ring {
    head: Counter,
    tail: Counter,
    slots: [Slot; SLOTS],
}

impl Ring {
    fn push(&self, msg: &[u8]) -> bool {
        let h = self.head.0.load(Ordering::Relaxed);
        if h - self.tail.0.load(Ordering::Acquire) >= SLOTS as u64 {
            return false;
        }
        let s = &self.slots[h as usize % SLOTS];
        s.len.store(msg.len(), Ordering::Relaxed);
        if msg.len() <= SHORT {
            for (w, c) in s.words.iter().zip(msg.chunks(8)) {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                w.store(u64::from_le_bytes(b), Ordering::Relaxed);
            }
        } else {
            let mut d = s.data.lock().unwrap();
            d.clear();
            d.extend_from_slice(msg);
        }
        self.head.0.store(h + 1, Ordering::Release);
        true
    }

    /// Copies the next message into `out`: its length.
    fn pop(&self, out: &mut [u8]) -> Option<usize> {
        let t = self.tail.0.load(Ordering::Relaxed);
        if t == self.head.0.load(Ordering::Acquire) {
            return None;
        }
        let s = &self.slots[t as usize % SLOTS];
        let n = s.len.load(Ordering::Relaxed).min(out.len());
        if n <= SHORT {
            for (w, c) in s.words.iter().zip(out[..n].chunks_mut(8)) {
                let b = w.load(Ordering::Relaxed).to_le_bytes();
                c.copy_from_slice(&b[..c.len()]);
            }
        } else {
            out[..n].copy_from_slice(&s.data.lock().unwrap()[..n]);
        }
        self.tail.0.store(t + 1, Ordering::Release);
        Some(n)
    }
}

struct ShmChan {
    out: Arc<Ring>,
    back: Arc<Ring>,
    buf: Vec<u8>,
}

impl Chan for ShmChan {
    fn try_send(&mut self, data: &[u8]) -> bool {
        self.out.push(data)
    }

    fn poll(&mut self) -> usize {
        let mut n = 0;
        while self.back.pop(&mut self.buf).is_some() {
            n += 1;
        }
        n
    }

    fn has_one_way(&self) -> bool {
        true
    }

    fn try_post(&mut self) -> bool {
        self.out.push(&[ONE_WAY; SHORT])
    }

    fn posted_done(&mut self) -> u64 {
        // every message the echo thread took (the caller counts from its
        // own start)
        self.out.tail.0.load(Ordering::Acquire)
    }
}

/// A word on a cache line of its own.
#[repr(align(128))]
struct Flag(AtomicU64);

/// The round trip of a flag pair (microseconds, median of batches of
/// `FLAG_BATCH`): the client writes i into one line, the server, spinning
/// on it, writes i into the other, which the client spins on. Two cache
/// lines move per round trip and nothing else runs: the floor the issue
/// names (a ring's round trip moves its slot, head and tail lines too).
fn flag_pair_rtt(iters: usize, pin: bool) -> f64 {
    const FLAG_BATCH: u64 = 256;
    let ping = Arc::new(Flag(AtomicU64::new(0)));
    let pong = Arc::new(Flag(AtomicU64::new(0)));
    let batches = (iters as u64 / FLAG_BATCH).max(1);
    let total = (batches + batches / 10) * FLAG_BATCH;
    let (pi, po) = (ping.clone(), pong.clone());
    let echo = std::thread::spawn(move || {
        pin_thread(pin.then_some(1));
        for i in 1..=total {
            while pi.0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            po.0.store(i, Ordering::Release);
        }
    });
    let v = std::thread::scope(|sc| {
        sc.spawn(|| {
            pin_thread(pin.then_some(0));
            let mut v = Vec::with_capacity(batches as usize);
            let mut i = 0;
            for b in 0..batches + batches / 10 {
                let t = std::time::Instant::now();
                for _ in 0..FLAG_BATCH {
                    i += 1;
                    ping.0.store(i, Ordering::Release);
                    while pong.0.load(Ordering::Acquire) != i {
                        std::hint::spin_loop();
                    }
                }
                if b >= batches / 10 {
                    v.push(t.elapsed().as_secs_f64() * 1e6 / FLAG_BATCH as f64);
                }
            }
            v
        })
        .join()
        .unwrap()
    });
    echo.join().unwrap();
    crate::loggp_measure::median(v)
}

/// Raw shared memory: an echo thread over two rings and the measurements;
/// the round trip is a flag pair's (`flag_pair_rtt`).
pub fn raw_shm(p: &Params, pin: bool, progress: &(dyn Fn(&str) + Sync)) -> Figures {
    let max = p.sizes.iter().copied().max().unwrap_or(0).max(SHORT);
    let (out, back) = (Arc::new(Ring::default()), Arc::new(Ring::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (o2, b2, s) = (out.clone(), back.clone(), stop.clone());
    let echo = std::thread::spawn(move || {
        pin_thread(pin.then_some(1));
        let mut buf = vec![0u8; max];
        while !s.load(Ordering::Relaxed) {
            match o2.pop(&mut buf) {
                Some(n) => {
                    if let Some(a) = answer(&buf[..n]) {
                        while !b2.push(a) {
                            std::hint::spin_loop();
                        }
                    }
                }
                None => std::hint::spin_loop(),
            }
        }
    });
    let f = std::thread::scope(|sc| {
        sc.spawn(|| {
            pin_thread(pin.then_some(0));
            let mut ch = ShmChan {
                out,
                back,
                buf: vec![0u8; max],
            };
            measure(&mut ch, p, usize::MAX, progress)
        })
        .join()
        .unwrap()
    });
    stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
    progress("flag pair");
    Figures {
        rtt: Some(flag_pair_rtt(p.iters, pin)),
        ..f
    }
}
