//! The packet MAC of a job (`RAMP_JOB_KEY`): AES-128-GMAC (AES-GCM that
//! encrypts nothing and authenticates the whole packet as associated data),
//! a 128-bit tag, from aws-lc-rs.
//!
//! Why GMAC (measured, single thread, hot cache, built as the crate is, no
//! `target-cpu=native`): AWS-LC picks its AES-NI/VAES and (V)PCLMULQDQ code
//! at run time and reaches 15-20 GB/s on 8-64 KiB packets, so it costs
//! almost nothing over the CRC32C it replaces (23 GB/s); BLAKE3 (5.7 GB/s),
//! SipHash-1-3 (4.4 GB/s), the RustCrypto GHASH/POLYVAL/Poly1305 (under
//! 3 GB/s) and HMAC-SHA256 (1.8 GB/s) would cost 10-50% of a 2 GB/s bulk
//! stream. A 64-byte packet costs ~110 ns instead of ~10 ns.
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

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use aws_lc_rs::hkdf::{self, Prk, HKDF_SHA256};

/// Bytes of the tag every packet carries when a job key is set.
pub const MAC_LEN: usize = 16;
/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;

/// HKDF salt: binds the derived keys to ramp and to this version of the rule.
const SALT: &[u8] = b"ramp job key v1";

/// The MAC key of a job (or of one association derived from it). Cheap to
/// clone; its `Debug` shows the fingerprint, never the key.
#[derive(Clone)]
pub struct MacKey {
    prk: Prk,
    aead: Arc<LessSafeKey>,
    fingerprint: [u8; 8],
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
        k.fill(0);
        let mut fingerprint = [0u8; 8];
        expand(&prk, b"fingerprint", &mut fingerprint);
        MacKey {
            prk,
            aead: Arc::new(aead),
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

    /// The tag of `bytes` (header and payload) under `nonce`, which must
    /// never be used again with this key for other bytes (module doc).
    pub fn tag(&self, nonce: &[u8; NONCE_LEN], bytes: &[u8]) -> [u8; MAC_LEN] {
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

    /// Whether `tag` is the tag of `bytes` under `nonce`; constant time in
    /// the tag's contents. A tag of another length is refused.
    pub fn verify(&self, nonce: &[u8; NONCE_LEN], bytes: &[u8], tag: &[u8]) -> bool {
        let Ok(t) = <[u8; MAC_LEN]>::try_from(tag) else {
            return false;
        };
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
