//! The raw UDP floors of `ramp bench`'s bulk figures, shared with its
//! remote-memory and LogGP roles: a blast of the largest datagrams at most
//! `BLAST_WINDOW` ahead of a busy receiver's count, and the page-aligned
//! receive buffer the raw floors read into.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant as StdInstant;

/// Starts the raw blast (the server counts what arrives, answers with
/// the count every `BLAST_ACK_EVERY` datagrams) and ends it (the server
/// answers with the final count).
pub(crate) const BLAST_START: &[u8] = b"BLAST";
const BLAST_END: &[u8] = b"BLASTEND";
/// The raw blast's datagram: as large as the largest of a ramp Xfer.
pub(crate) const BLAST_SIZE: usize = 65507;
/// Datagrams the raw blast sends ahead of the receiver's count.
pub(crate) const BLAST_WINDOW: u64 = 64;
const BLAST_ACK_EVERY: u64 = 8;

/// A receive buffer of `len` bytes starting on a page boundary. The
/// kernel's copy of a large datagram into user memory runs at a third of
/// its speed into some cache-line offsets on the AMD Zen 3 of our machines
/// (ramp's own receive slots are page-aligned: `sys::BatchReceiver`), and
/// a `Vec` starts wherever malloc puts it: the raw floors receive into
/// this, so that they are measured at their best in every run.
pub(crate) struct PageBuf {
    store: Vec<u8>,
    at: usize,
    len: usize,
}

impl PageBuf {
    pub(crate) fn new(len: usize) -> PageBuf {
        let store = vec![0u8; len + 4096];
        let at = store.as_ptr().align_offset(4096).min(4096);
        PageBuf { store, at, len }
    }

    pub(crate) fn get(&mut self) -> &mut [u8] {
        &mut self.store[self.at..self.at + self.len]
    }
}

/// The raw blast's busy receiver: counts datagrams until `BLAST_END`,
/// sending the count (8 bytes) back every `BLAST_ACK_EVERY` and at the end.
pub(crate) fn blast_receiver(raw: &UdpSocket, client: SocketAddr, stop: &AtomicBool) {
    let mut page = PageBuf::new(65536);
    let buf = page.get();
    let mut count = 0u64;
    let _ = raw.send_to(&count.to_le_bytes(), client);
    loop {
        match raw.recv_from(buf) {
            Ok((n, from)) => {
                if &buf[..n] == BLAST_END {
                    let mut fin = [0xffu8; 16];
                    fin[..8].copy_from_slice(&count.to_le_bytes());
                    let _ = raw.send_to(&fin, from);
                    return;
                }
                if n == BLAST_SIZE {
                    count += 1;
                    if count.is_multiple_of(BLAST_ACK_EVERY) {
                        let _ = raw.send_to(&count.to_le_bytes(), from);
                    }
                }
            }
            Err(_) => {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::hint::spin_loop();
            }
        }
    }
}

/// The raw blast, sender side: `total` datagrams of `BLAST_SIZE` bytes,
/// at most `BLAST_WINDOW` ahead of the receiver's count (a count that
/// stalls for 2 ms forgives what was lost). Returns MiB/s of what the
/// receiver counted.
pub(crate) fn blast_sender(raw: &UdpSocket, to: SocketAddr, total: u64) -> f64 {
    let data = vec![0x5au8; BLAST_SIZE];
    let mut ack = [0u8; 64];
    let read_count = |ack: &mut [u8]| -> Option<u64> {
        match raw.recv_from(ack) {
            Ok((8, _)) => Some(u64::from_le_bytes(ack[..8].try_into().unwrap())),
            _ => None,
        }
    };
    // start, and wait for the receiver's first count (resent if lost)
    let mut t = StdInstant::now();
    raw.send_to(BLAST_START, to).unwrap();
    while read_count(&mut ack).is_none() {
        if t.elapsed().as_millis() > 100 {
            raw.send_to(BLAST_START, to).unwrap();
            t = StdInstant::now();
        }
        std::hint::spin_loop();
    }
    let start = StdInstant::now();
    while raw.recv_from(&mut ack).is_ok() {} // stray answers of an earlier run
    let (mut sent, mut counted, mut forgiven) = (0u64, 0u64, 0u64);
    let mut last_progress = StdInstant::now();
    while sent < total {
        while let Some(c) = read_count(&mut ack) {
            if c > counted {
                counted = c;
                last_progress = StdInstant::now();
            }
        }
        if sent - (counted + forgiven).min(sent) < BLAST_WINDOW {
            if raw.send_to(&data, to).is_ok() {
                sent += 1;
            }
        } else if last_progress.elapsed().as_millis() >= 2 {
            forgiven = sent - counted;
            last_progress = StdInstant::now();
        } else {
            std::hint::spin_loop();
        }
    }
    // the final count answers BLAST_END (16 bytes), which arrives after
    // every datagram sent before it (resent until answered)
    let mut t = StdInstant::now() - std::time::Duration::from_secs(1);
    loop {
        if t.elapsed().as_millis() > 20 {
            raw.send_to(BLAST_END, to).unwrap();
            t = StdInstant::now();
        }
        if let Ok((16, _)) = raw.recv_from(&mut ack) {
            counted = u64::from_le_bytes(ack[..8].try_into().unwrap());
            break;
        }
        std::hint::spin_loop();
    }
    let secs = start.elapsed().as_secs_f64();
    (counted * BLAST_SIZE as u64) as f64 / secs / (1024.0 * 1024.0)
}
