//! What the integrity check of a 64 KiB message costs each end of
//! `ramp bench`, timed with ramp's own functions (`ramp::bench_support`):
//! CRC32C at the receiver and at the sender, and AES-128-GMAC.

use std::time::Instant as StdInstant;

/// Nanoseconds per byte of the integrity check of a 64 KiB message, as
/// each end pays it, by ramp's own functions (`ramp::bench_support`).
pub(crate) struct IntegrityCost {
    /// CRC32C at the receiver: a later fragment parsed, copied where it
    /// goes and summed in one pass, and checked, less the copy alone.
    pub(crate) crc_receiver: f64,
    /// Whether the receiver sums as it copies (AVX-512); false: it sums the
    /// whole datagram apart, and `crc_receiver` is `crc_whole`.
    pub(crate) crc_folded: bool,
    /// CRC32C over a whole datagram, checked before it is copied (a first
    /// fragment's, a short message's, and where the CPU cannot sum as it
    /// copies).
    pub(crate) crc_whole: f64,
    /// CRC32C at the sender: the copy it makes anyway summed block by
    /// block, and its two datagrams sealed from the sums, less the copy
    /// alone.
    pub(crate) crc_sender: f64,
    /// AES-128-GMAC, the slower end: the sender seals a gathered datagram
    /// (header and payload in two pieces), the receiver checks one.
    pub(crate) gmac: f64,
}

/// What the integrity check costs each end (`IntegrityCost`) on messages
/// of `xfer_size` bytes (at least 512: the Xfer's). Each
/// figure is the best of 5 windows of 400 messages (~2 ms): the cost of
/// the function, not of the other processes that share the cores (a
/// single window of 2,000 read 6-23 GB/s for the same GMAC code).
pub(crate) fn integrity_ns_per_byte(xfer_size: usize) -> IntegrityCost {
    let xfer_size = xfer_size.max(512);
    use ramp::bench_support::{packet_crc32c, PacketMac, ReceiverSum, SenderSum};
    const WINDOWS: usize = 5;
    const ROUNDS: usize = 400;
    let per_byte = |t: StdInstant| t.elapsed().as_nanos() as f64 / (ROUNDS * xfer_size) as f64;
    let data = vec![0x5au8; xfer_size];
    let mac = PacketMac::new("ramp bench integrity key");
    let (head, body) = data.split_at(64);
    let (mut crc, mut seal, mut check) = (f64::MAX, f64::MAX, f64::MAX);
    let (mut summed, mut copied) = (f64::MAX, f64::MAX);
    let (mut checked, mut taken) = (f64::MAX, f64::MAX);
    // false: this CPU cannot sum as it copies (`ReceiverSum::take_checked`)
    let mut folded = true;
    let mut sender = SenderSum::default();
    let mut receiver = ReceiverSum::new(&data[..xfer_size - 300]);
    // the datagrams of a 64 KiB message: ~65,300 bytes, then the rest
    // with the next message's start
    let cut = xfer_size - 200;
    let mut tags = Vec::with_capacity(ROUNDS);
    for w in 0..WINDOWS {
        let t = StdInstant::now();
        let mut x = 0u32;
        for _ in 0..ROUNDS {
            x ^= sender.copy_and_seal(std::hint::black_box(&data), cut);
        }
        std::hint::black_box(x);
        summed = summed.min(per_byte(t));
        let t = StdInstant::now();
        let mut x = 0u8;
        for _ in 0..ROUNDS {
            x ^= sender.copy(std::hint::black_box(&data));
        }
        std::hint::black_box(x);
        copied = copied.min(per_byte(t));
        let t = StdInstant::now();
        for _ in 0..ROUNDS {
            match receiver.take_checked() {
                Some(holds) => assert!(holds, "a sealed datagram must check"),
                None => folded = false,
            }
        }
        checked = checked.min(per_byte(t));
        let t = StdInstant::now();
        let mut x = 0u8;
        for _ in 0..ROUNDS {
            x ^= receiver.copy();
        }
        std::hint::black_box(x);
        taken = taken.min(per_byte(t));
        let t = StdInstant::now();
        let mut x = 0u32;
        for _ in 0..ROUNDS {
            x ^= packet_crc32c(std::hint::black_box(&data));
        }
        std::hint::black_box(x);
        crc = crc.min(per_byte(t));
        let nonce = |i: usize| {
            let mut n = [0u8; 12];
            n[4..].copy_from_slice(&((w * ROUNDS + i) as u64).to_be_bytes());
            n
        };
        tags.clear();
        let t = StdInstant::now();
        for i in 0..ROUNDS {
            tags.push(mac.seal(&nonce(i), &[std::hint::black_box(head), body]));
        }
        seal = seal.min(per_byte(t));
        let t = StdInstant::now();
        for (i, tag) in tags.iter().enumerate() {
            assert!(mac.check(&nonce(i), std::hint::black_box(&data), tag));
        }
        check = check.min(per_byte(t));
    }
    IntegrityCost {
        // (without the folded copy the receiver sums a whole datagram
        // before copying it: `crc_whole`)
        crc_receiver: if folded {
            (checked - taken).max(0.0)
        } else {
            crc
        },
        crc_folded: folded,
        crc_whole: crc,
        crc_sender: (summed - copied).max(0.0),
        gmac: seal.max(check),
    }
}
