//! ramp: a Reliable Active Message Protocol library.
//!
//! The shape of the house (layers, which file holds what, the life of a
//! request) is in `ARCHITECTURE.md` at the root of the repository. From the
//! top: `ffi` (the C ABI) -> `am` (AM-2 semantics) -> `proto` (the sans-IO
//! reliable protocol) -> `wire` (packet format); `am` -> `net` (transports)
//! -> `sys` (the OS calls).
//!
//! The Rust API is `am` (bundles, endpoints, handlers, messages), `spmd` (job
//! start-up), `config`, `error`, `txlog` (the transaction log's files) and
//! `perf` (the performability model `ramp perf` solves). The `testing` feature, which only tests,
//! benches and examples turn on, also exposes the internals they drive
//! (`proto`, `wire`, `time`, the simulator `sim`, the PMI clients); the
//! shipped library is built without it.

// `unsafe` is allowed only in `sys` (the OS calls) and `ffi` (the C ABI).
#![deny(unsafe_code)]

pub mod am;
#[cfg(feature = "testing")]
pub mod clock;
#[cfg(not(feature = "testing"))]
mod clock;
pub mod config;
pub mod error;
mod fault;
#[allow(unsafe_code)]
mod ffi;
mod fxhash;
mod net;
/// A path (a local rail, a remote address): what the protocol chooses
/// and the transports route by.
#[cfg(feature = "testing")]
pub mod path;
#[cfg(not(feature = "testing"))]
mod path;
/// The performability model: response time as faults grow (`ramp perf`).
pub mod perf;
mod rng;
pub mod spmd;
mod stats;
#[allow(unsafe_code)]
mod sys;
/// The transaction log's file format (read by `ramp log FILE`).
pub mod txlog;

#[cfg(feature = "testing")]
pub mod proto;
#[cfg(not(feature = "testing"))]
mod proto;
#[cfg(feature = "testing")]
pub mod sim;
#[cfg(feature = "testing")]
pub mod time;
#[cfg(not(feature = "testing"))]
mod time;

#[cfg(feature = "testing")]
pub mod wire;
#[cfg(not(feature = "testing"))]
mod wire;

/// What `ramp bench` times of the packet path itself: the integrity
/// checks a bulk packet pays at each end, the very functions the wire uses
/// (not an API; the `ramp` binary is built without the `testing` feature).
#[doc(hidden)]
pub mod bench_support {
    /// A fresh job key for `RAMP_JOB_KEY`: 64 hex digits of the kernel's
    /// randomness, from the crate's one source of it (`sys::random`).
    pub fn random_job_key() -> std::io::Result<String> {
        crate::spmd::new_job_key()
    }

    /// ramp's bulk copy (`sys::copy_bytes`): `copy_from_slice`, clear of
    /// glibc's slow `rep movsb` on AMD.
    pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
        crate::sys::copy_bytes(dst, src)
    }

    /// The wire's CRC32C of `bytes` (`wire::crc32c`).
    pub fn packet_crc32c(bytes: &[u8]) -> u32 {
        crate::wire::crc32c(bytes)
    }

    /// The packet MAC of a job key, as the sender seals a gathered
    /// datagram (`MacKey::tag_pieces`) and the receiver checks one
    /// (`MacKey::verify`).
    pub struct PacketMac(crate::wire::mac::MacKey);

    impl PacketMac {
        /// The MAC of `job_key` (any string).
        pub fn new(job_key: &str) -> PacketMac {
            PacketMac(crate::wire::mac::MacKey::from_job_key(job_key))
        }

        /// The sender's tag of `pieces` under `nonce`.
        pub fn seal(&self, nonce: &[u8; 12], pieces: &[&[u8]]) -> [u8; 16] {
            self.0.tag_pieces(nonce, pieces)
        }

        /// The receiver's check of `bytes` against `tag`.
        pub fn check(&self, nonce: &[u8; 12], bytes: &[u8], tag: &[u8]) -> bool {
            self.0.verify(nonce, bytes, tag)
        }
    }

    /// What the sender of a bulk message does with its payload under
    /// CRC32C: it copies it (kept for retransmission) with the sums of its
    /// blocks (`wire::copy_summed`), then seals the datagrams it is cut
    /// into from the sums (`Integrity::seal_gathered`); `copy` is the
    /// copy alone, which the sender makes with or without a sum.
    #[derive(Default)]
    pub struct SenderSum {
        copy: Vec<u8>,
        sums: Vec<u32>,
        head: Vec<u8>,
    }

    impl SenderSum {
        /// `src` copied and summed, and the trailers of its two datagrams,
        /// cut at `cut` (each after a DATA header without arguments),
        /// combined.
        pub fn copy_and_seal(&mut self, src: &[u8], cut: usize) -> u32 {
            use crate::wire::{Integrity, PayloadPiece, DATA_HEADER_LEN};
            self.copy.clear();
            crate::wire::copy_summed(&mut self.copy, src, &mut self.sums);
            let mut t = 0;
            for (at, len) in [(0, cut), (cut, src.len() - cut)] {
                self.head.clear();
                self.head.resize(DATA_HEADER_LEN, at as u8);
                let piece = PayloadPiece::summed(&self.copy, &self.sums, at, len);
                Integrity::Crc32c.seal_gathered(&mut self.head, 0, piece);
                let crc = &self.head[DATA_HEADER_LEN..];
                t ^= u32::from_be_bytes(crc.try_into().expect("a CRC"));
            }
            t
        }

        /// `src` copied alone.
        pub fn copy(&mut self, src: &[u8]) -> u8 {
            self.copy.clear();
            self.copy.extend_from_slice(src);
            self.copy[src.len() / 2]
        }
    }

    /// What the receiver of a bulk message does with a later fragment
    /// under CRC32C: the packet parsed unchecked (`wire::decode_deferred`),
    /// its payload copied where it goes (here a reused buffer, as the
    /// reassembly's) and summed in the same pass, then checked; `copy` is
    /// the copy alone, which the receiver makes with or without a sum.
    pub struct ReceiverSum {
        dgram: Vec<u8>,
        buf: Vec<u8>,
    }

    impl ReceiverSum {
        /// A later fragment carrying `payload`, sealed as a sender seals it.
        pub fn new(payload: &[u8]) -> ReceiverSum {
            use crate::wire::{Category, Common, Integrity, MsgKind, MsgMeta};
            let meta = MsgMeta::new(MsgKind::User, Category::Long, 1, &[]);
            let mut dgram = Vec::new();
            let len = payload.len() as u32;
            let c = Common::default();
            crate::wire::encode_data(
                &mut dgram,
                &Integrity::Crc32c,
                &c,
                &meta,
                len + 64,
                64,
                payload,
            );
            ReceiverSum {
                dgram,
                buf: Vec::with_capacity(payload.len()),
            }
        }

        /// The packet taken as the receiver takes it: whether it holds;
        /// None when this CPU cannot sum as it copies (no AVX-512: the
        /// receiver then sums the whole datagram before the copy, what
        /// `packet_crc32c` costs).
        pub fn take_checked(&mut self) -> Option<bool> {
            use crate::wire::Packet;
            self.buf.clear();
            let Some((Packet::Data { payload, .. }, check)) =
                crate::wire::decode_deferred(&self.dgram)
            else {
                return Some(false);
            };
            crate::wire::extend_sum(&mut self.buf, payload).map(|s| check.holds(s))
        }

        /// The packet's payload copied alone (the packet has no
        /// arguments: its payload follows the DATA header).
        pub fn copy(&mut self) -> u8 {
            self.buf.clear();
            let payload = &self.dgram[crate::wire::DATA_HEADER_LEN..self.dgram.len() - 4];
            self.buf.extend_from_slice(payload);
            self.buf[payload.len() / 2]
        }
    }
}
