//! The packet MAC of a job (`RAMP_JOB_KEY`): AES-128-GMAC (AES-GCM that
//! encrypts nothing and authenticates the whole packet as associated data),
//! a 128-bit tag, from aws-lc-rs; on CPUs with 256-bit VPCLMULQDQ but
//! without AVX-512 (AMD Zen 3), where AWS-LC's GHASH is its 128-bit one
//! (7.6 GB/s), with ramp's own GHASH (`sys/ghash.rs`, 14.6 GB/s there),
//! bit for bit the same tag.
//!
//! Why GMAC (measured, single thread, hot cache, built as the crate is, no
//! `target-cpu=native`): AWS-LC picks its AES-NI/VAES and (V)PCLMULQDQ code
//! at run time and reaches 15-20 GB/s on 8-64 KiB packets (with AVX-512;
//! 7.6 without, hence `sys/ghash.rs`), so it costs
//! almost nothing over the CRC32C it replaces (23 GB/s); BLAKE3 (5.7 GB/s),
//! SipHash-1-3 (4.4 GB/s), the RustCrypto GHASH/POLYVAL/Poly1305 (under
//! 3 GB/s) and HMAC-SHA256 (1.8 GB/s) would cost 10-50% of a 2 GB/s bulk
//! stream. A 64-byte packet costs ~110 ns instead of ~10 ns.
//!
//! Short packets (up to `SHORT_MAX` bytes) carry Poly1305-AES instead
//! (`ShortMac`): AWS-LC sets up an AEAD on every call (~800 instructions
//! on a 72-byte packet under callgrind), while Poly1305 (`wire::polyhash`)
//! and one AES block, both keyed once, cost ~550. Same trailer, same nonce
//! rule; the packet's length picks the construction at both ends, and the
//! two never share a key.
//!
//! GMAC needs a nonce that never repeats under one key (a repeat with two
//! different packets gives away the hash key and lets anyone forge). The
//! rule the codec follows:
//! - The job key is not used on packets directly: [`MacKey::derive`] makes a
//!   key per association and direction from the association's random
//!   verification tags (64 bits each, so two associations sharing a key is
//!   a 2^-64-or-less event even when a user reuses one `RAMP_JOB_KEY` for
//!   many jobs).
//! - Under such a key the nonce is a 64-bit counter of the packets sent
//!   (transmissions, not sequence numbers: a retransmission carrying other
//!   ACKs is another packet) after a 32-bit prefix (the endpoint's
//!   keying number: two keyings of the same pair of tags stay apart),
//!   carried in the trailer (`wire::Integrity`); the counter starts at 0
//!   with the association and never goes back (2^64 packets take
//!   centuries).
//! - Packets before the association exists (the handshake) use the job key
//!   with a nonce that is a random 96-bit start per endpoint plus a count:
//!   unique within the endpoint, and across a job's endpoints but with a
//!   negligible chance (`wire::Integrity`); handshakes are a few packets
//!   per peer.
//!
//! The key string goes through HKDF-SHA256 (RFC 5869), so a human-typed key
//! works too; it is never printed: logs show [`MacKey::fingerprint`].

use std::fmt;
use std::sync::Arc;

use super::polyhash::PolyKey;
use crate::sys::gmac::{self, GmacCtx};
use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use aws_lc_rs::hkdf::{self, Prk, HKDF_SHA256};

/// Bytes of the tag every packet carries when a job key is set.
pub const MAC_LEN: usize = 16;
/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;

/// Packets of at most this many bytes (header and payload, before the
/// trailer) carry Poly1305-AES instead of GMAC (see `ShortMac`).
pub const SHORT_MAX: usize = 256;

/// HKDF salt: binds the derived keys to ramp and to this version of the rule.
const SALT: &[u8] = b"ramp job key v1";

/// The MAC key of a job (or of one association derived from it). Cheap to
/// clone; its `Debug` shows the fingerprint, never the key.
#[derive(Clone)]
pub struct MacKey {
    prk: Prk,
    aead: Arc<LessSafeKey>,
    /// The same GMAC key for a packet in pieces (a gathered DATA packet:
    /// `tag_pieces`), in a context made on first use (only keys that seal
    /// large packets pay for one, and where `sys::gmac::wide_ghash`, keys
    /// that check them: it makes every large tag there); one tag at a time.
    pub(super) pieces: Arc<PieceMac>,
    short: Arc<ShortMac>,
    fingerprint: [u8; 8],
}

/// Poly1305-AES (Bernstein, 2005) for short packets: tag =
/// (Poly1305_r(bytes) + AES-128_k(nonce || 0xffffffff)) mod 2^128, with
/// `r` and `k` their own HKDF outputs (independent of the GMAC key, so
/// the two constructions never share a key; which one a packet carries
/// follows from its length, the same at both ends). A Carter-Wegman MAC
/// like GMAC: a forgery succeeds with probability at most 8*ceil(L/16)/2^106
/// per try while nonces never repeat under the key (the rule above), and
/// both its parts are prepared once per key: a packet costs a Poly1305 of
/// its bytes and one AES block, not an AEAD set-up (GMAC in AWS-LC costs
/// ~800 instructions on a 72-byte packet, this ~300).
struct ShortMac {
    /// Poly1305's `r` (its `s` is the AES block).
    poly: PolyKey,
    aes: Aes128,
}

impl ShortMac {
    fn tag(&self, nonce: &[u8; NONCE_LEN], bytes: &[u8]) -> [u8; MAC_LEN] {
        let mut n = [0xffu8; 16];
        n[..NONCE_LEN].copy_from_slice(nonce);
        self.tag16(&n, bytes)
    }

    /// Poly1305-AES of `bytes` under the 16-byte nonce `n`.
    fn tag16(&self, n: &[u8; 16], bytes: &[u8]) -> [u8; MAC_LEN] {
        let h = self.poly.hash(bytes);
        let mut b = (*n).into();
        self.aes.encrypt_block(&mut b);
        let s = u128::from_le_bytes(b.into());
        h.wrapping_add(s).to_le_bytes()
    }
}

/// The GMAC key and its context for packets in pieces (`sys::gmac`),
/// and what a tag from a payload digest needs (`wire/mac_digest.rs`).
pub(super) struct PieceMac {
    pub(super) key: [u8; 16],
    pub(super) ctx: parking_lot::Mutex<Option<GmacCtx>>,
    pub(super) split: super::split_key::SplitKey,
}

impl Drop for PieceMac {
    fn drop(&mut self) {
        self.key.fill(0);
    }
}

/// HKDF output of `len` bytes.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn expand(prk: &Prk, info: &[u8], out: &mut [u8]) {
    let info = [info];
    prk.expand(&info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF-SHA256 expands to at most 255*32 bytes");
}

impl MacKey {
    /// The job's key from `RAMP_JOB_KEY` (any string; the launchers make 64
    /// hex digits of randomness, `config` refuses fewer than 16 characters).
    pub fn from_job_key(job_key: &str) -> MacKey {
        let prk = hkdf::Salt::new(HKDF_SHA256, SALT).extract(job_key.as_bytes());
        MacKey::from_prk(prk)
    }

    fn from_prk(prk: Prk) -> MacKey {
        let mut k = [0u8; 16];
        expand(&prk, b"packet mac aes-128-gmac", &mut k);
        let aead = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &k).expect("16-byte key"));
        let pieces = Arc::new(PieceMac {
            key: k,
            ctx: parking_lot::Mutex::new(None),
            split: super::split_key::SplitKey::new(&k),
        });
        // Poly1305's r (clamped by the crate) and s = 0, and the AES key
        let mut rk = [0u8; 16];
        expand(&prk, b"packet mac poly1305-aes r", &mut rk);
        expand(&prk, b"packet mac poly1305-aes k", &mut k);
        let short = ShortMac {
            poly: PolyKey::new(&rk),
            aes: Aes128::new(&k.into()),
        };
        rk.fill(0);
        k.fill(0);
        let mut fingerprint = [0u8; 8];
        expand(&prk, b"fingerprint", &mut fingerprint);
        MacKey {
            prk,
            aead: Arc::new(aead),
            pieces,
            short: Arc::new(short),
            fingerprint,
        }
    }

    /// A key for one context (an association and direction: the two
    /// verification tags and a direction byte). Different contexts give
    /// independent keys, so each may count its nonces from 0.
    pub fn derive(&self, context: &[u8]) -> MacKey {
        let mut secret = [0u8; 32];
        expand(
            &self.prk,
            &[b"derive ".as_slice(), context].concat(),
            &mut secret,
        );
        let prk = Prk::new_less_safe(HKDF_SHA256, &secret);
        secret.fill(0);
        MacKey::from_prk(prk)
    }

    /// A keyed hash (HKDF-SHA256 expand, a PRF: no nonce) of `context`
    /// under this key: the one-time proof by which an express-lane sender
    /// shows a ring's receiver that it holds the job's key (`net/shm.rs`,
    /// `am/express.rs`). Its own HKDF label: never equal to a packet key.
    pub fn proof(&self, context: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        expand(
            &self.prk,
            &[b"shm express proof ".as_slice(), context].concat(),
            &mut out,
        );
        out
    }

    /// The tag of `bytes` (header and payload) under `nonce`, which must
    /// never be used again with this key for other bytes (module doc).
    pub fn tag(&self, nonce: &[u8; NONCE_LEN], bytes: &[u8]) -> [u8; MAC_LEN] {
        if bytes.len() <= SHORT_MAX {
            return self.short.tag(nonce, bytes);
        }
        if gmac::wide_ghash() {
            return self.tag_pieces(nonce, &[bytes]);
        }
        let t = self
            .aead
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(bytes),
                &mut [],
            )
            .expect("GMAC of at most 2^61 bytes");
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(t.as_ref());
        out
    }

    /// The tag of the concatenation of `pieces` under `nonce`: the same as
    /// `tag` of the pieces joined, without joining them (GMAC: AWS-LC's
    /// GHASH runs on across the pieces; a short packet is joined on the
    /// stack for Poly1305-AES).
    pub fn tag_pieces(&self, nonce: &[u8; NONCE_LEN], pieces: &[&[u8]]) -> [u8; MAC_LEN] {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        if len <= SHORT_MAX {
            let mut joined = [0u8; SHORT_MAX];
            let mut at = 0;
            for p in pieces {
                joined[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            return self.short.tag(nonce, &joined[..len]);
        }
        let mut ctx = self.pieces.ctx.lock();
        ctx.get_or_insert_with(|| GmacCtx::new(&self.pieces.key))
            .tag(nonce, pieces)
    }

    /// Whether `tag` is the tag of `bytes` under `nonce`; constant time in
    /// the tag's contents. A tag of another length is refused.
    pub fn verify(&self, nonce: &[u8; NONCE_LEN], bytes: &[u8], tag: &[u8]) -> bool {
        let Ok(t) = <[u8; MAC_LEN]>::try_from(tag) else {
            return false;
        };
        // constant time: every byte is compared
        let same =
            |want: [u8; MAC_LEN]| want.iter().zip(&t).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        if bytes.len() <= SHORT_MAX {
            return same(self.short.tag(nonce, bytes));
        }
        if gmac::wide_ghash() {
            // the GHASH that beats AWS-LC's on this CPU (`sys/ghash.rs`)
            return same(self.tag_pieces(nonce, &[bytes]));
        }
        let mut in_out = t;
        // AES-GCM open of an empty ciphertext: AWS-LC computes the tag and
        // compares it with CRYPTO_memcmp (constant time).
        self.aead
            .open_in_place(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(bytes),
                &mut in_out,
            )
            .is_ok()
    }

    /// 16 hex digits that name the key in logs and tests (HKDF output: says
    /// nothing about the key but whether two processes hold the same one).
    pub fn fingerprint(&self) -> String {
        self.fingerprint
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacKey(fingerprint {})", self.fingerprint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";
    const N: [u8; NONCE_LEN] = [7; NONCE_LEN];

    fn data() -> Vec<u8> {
        (0..200u32).map(|i| (i * 37 + 1) as u8).collect()
    }

    #[test]
    fn tag_depends_on_every_bit_of_data_nonce_and_key() {
        let k = MacKey::from_job_key(KEY);
        let d = data();
        let t = k.tag(&N, &d);
        assert_eq!(t, k.tag(&N, &d), "deterministic");
        assert!(k.verify(&N, &d, &t));
        for i in 0..d.len() * 8 {
            let mut e = d.clone();
            e[i / 8] ^= 1 << (i % 8);
            assert_ne!(k.tag(&N, &e), t, "data bit {i}");
            assert!(!k.verify(&N, &e, &t));
        }
        assert_ne!(k.tag(&N, &d[..d.len() - 1]), t, "length");
        assert_ne!(k.tag(&N, &[]), k.tag(&[8; NONCE_LEN], &[]));
        for i in 0..NONCE_LEN * 8 {
            let mut n = N;
            n[i / 8] ^= 1 << (i % 8);
            assert!(!k.verify(&n, &d, &t), "nonce bit {i}");
        }
        for i in 0..KEY.len() * 8 {
            let mut kb = KEY.as_bytes().to_vec();
            kb[i / 8] ^= 1 << (i % 8);
            let Ok(s) = String::from_utf8(kb) else {
                continue;
            };
            let k2 = MacKey::from_job_key(&s);
            assert_ne!(k2.tag(&N, &d), t, "key bit {i}");
            assert_ne!(k2.fingerprint(), k.fingerprint());
        }
    }

    #[test]
    fn verify_refuses_flipped_truncated_or_long_tags() {
        let k = MacKey::from_job_key(KEY);
        let d = data();
        let t = k.tag(&N, &d);
        for i in 0..MAC_LEN * 8 {
            let mut f = t;
            f[i / 8] ^= 1 << (i % 8);
            assert!(!k.verify(&N, &d, &f), "tag bit {i}");
        }
        for n in 0..MAC_LEN {
            assert!(!k.verify(&N, &d, &t[..n]), "truncated to {n}");
        }
        let mut long = t.to_vec();
        long.push(0);
        assert!(!k.verify(&N, &d, &long));
        assert!(!k.verify(&N, &d, &[0; MAC_LEN]));
    }

    #[test]
    fn derived_keys_are_independent_and_reproducible() {
        let k = MacKey::from_job_key(KEY);
        let a = k.derive(b"assoc 1 a->b");
        let b = k.derive(b"assoc 1 b->a");
        let d = data();
        assert_eq!(a.tag(&N, &d), k.derive(b"assoc 1 a->b").tag(&N, &d));
        assert_ne!(a.tag(&N, &d), b.tag(&N, &d));
        assert_ne!(a.tag(&N, &d), k.tag(&N, &d));
        assert_ne!(a.fingerprint(), k.fingerprint());
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Bernstein's Poly1305-AES test vectors ("The Poly1305-AES message-
    /// authentication code", 2005, appendix B: the first two).
    #[test]
    fn short_mac_is_poly1305_aes() {
        let cases = [
            (
                "",
                "75deaa25c09f208e1dc4ce6b5cad3fbfa0f3080000f46400d0c7e9076c834403",
                "61ee09218d29b0aaed7e154a2c5509cc",
                "dd3fab2251f11ac759f0887129cc2ee7",
            ),
            (
                "f3f6",
                "ec074c835580741701425b623235add6851fc40c3467ac0be05cc20404f3f700",
                "fb447350c4e868c52ac3275cf9d4327e",
                "f4c633c3044fc145f84f335cb81953de",
            ),
        ];
        for (m, key, n, want) in cases {
            // the paper's key is k (AES, 16 bytes) then r (16 bytes)
            let key = hex(key);
            let rk: [u8; 16] = key[16..].try_into().unwrap();
            let k: [u8; 16] = key[..16].try_into().unwrap();
            let s = ShortMac {
                poly: PolyKey::new(&rk),
                aes: Aes128::new(&k.into()),
            };
            let n: [u8; 16] = hex(n).try_into().unwrap();
            assert_eq!(s.tag16(&n, &hex(m)).to_vec(), hex(want), "message {m}");
        }
    }

    /// Both constructions, each side of `SHORT_MAX`: every bit counts, and
    /// a tag of one length never checks at another.
    #[test]
    fn short_and_long_packets_both_checked() {
        let k = MacKey::from_job_key(KEY);
        for len in [0, 1, 72, SHORT_MAX - 1, SHORT_MAX, SHORT_MAX + 1, 1000] {
            let d: Vec<u8> = (0..len as u32).map(|i| (i * 13 + 5) as u8).collect();
            let t = k.tag(&N, &d);
            assert!(k.verify(&N, &d, &t), "{len}");
            for i in (0..len * 8).step_by(7) {
                let mut e = d.clone();
                e[i / 8] ^= 1 << (i % 8);
                assert!(!k.verify(&N, &e, &t), "{len}: bit {i}");
            }
            let mut n = N;
            n[11] ^= 1;
            assert!(!k.verify(&n, &d, &t), "{len}: nonce");
            let mut longer = d.clone();
            longer.push(0);
            assert!(!k.verify(&N, &longer, &t), "{len}: extended");
            assert!(!k.derive(b"x").verify(&N, &d, &t), "{len}: other key");
        }
    }

    /// A packet's tag computed over its pieces is its tag: GHASH carries
    /// the partial blocks across pieces of any length (the split points
    /// at, before and after 16-byte boundaries, empty pieces, many pieces).
    #[test]
    fn the_tag_of_pieces_is_the_tag_of_the_packet() {
        let k = MacKey::from_job_key(KEY).derive(b"pieces");
        for len in [0, 1, 100, SHORT_MAX, SHORT_MAX + 1, 257, 1000, 4096, 65_000] {
            let d: Vec<u8> = (0..len as u32).map(|i| (i * 31 + 7) as u8).collect();
            let t = k.tag(&N, &d);
            assert_eq!(k.tag_pieces(&N, &[&d]), t, "{len}: one piece");
            for cut in [
                0,
                1,
                15,
                16,
                17,
                31,
                68,
                100,
                len / 2,
                len.saturating_sub(1),
                len,
            ] {
                let a = cut.min(len);
                let b = (a + 3 * cut / 2 + 5).min(len);
                let p = [&d[..a], &d[a..b], &[][..], &d[b..]];
                assert_eq!(k.tag_pieces(&N, &p), t, "{len}: cut at {a}, {b}");
                assert!(k.verify(&N, &d, &k.tag_pieces(&N, &p)));
            }
            let bytes: Vec<&[u8]> = d.chunks(7).collect();
            assert_eq!(k.tag_pieces(&N, &bytes), t, "{len}: pieces of 7");
            if len > 0 {
                let mut e = d.clone();
                e[len - 1] ^= 0x80;
                let (x, y) = e.split_at(len / 3);
                assert!(!k.verify(&N, &d, &k.tag_pieces(&N, &[x, y])), "{len}");
            }
            let mut n = N;
            n[0] ^= 1;
            assert_ne!(k.tag_pieces(&n, &[&d]), t, "{len}: nonce");
        }
    }

    #[test]
    fn known_answer_and_no_key_in_debug() {
        let k = MacKey::from_job_key(KEY);
        // the same key on every host and build: pinned so a change of the
        // derivation (which would split a job in two) is noticed
        let fp = k.fingerprint();
        assert_eq!(fp, "75598e277023a383");
        assert_eq!(fp, MacKey::from_job_key(KEY).fingerprint());
        let dbg = format!("{k:?}");
        assert!(dbg.contains(&fp) && !dbg.contains(KEY), "{dbg}");
        // a human-typed key works and differs
        assert_ne!(
            MacKey::from_job_key("correct horse battery staple").fingerprint(),
            fp
        );
    }
}
