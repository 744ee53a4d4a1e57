//! AES-128-GMAC over a packet in pieces, through AWS-LC's `EVP_CIPHER`
//! interface: AES-GCM that encrypts nothing, the pieces fed one after the
//! other as associated data (`EVP_EncryptUpdate` with no output, which
//! AWS-LC's GHASH carries across calls: `CRYPTO_gcm128_aad` keeps the
//! partial block). The tag is the one `aws-lc-rs` gives for the pieces
//! joined (checked in `wire/mac.rs`), at the same cost per byte (AWS-LC's
//! PCLMULQDQ/VPCLMULQDQ GHASH), without joining them: a large DATA packet
//! under the packet MAC is sent gathered, its payload where it lies.
//!
//! `aws-lc-rs` offers one associated-data slice per call (GHASH pads each
//! input of its own, so two calls are not the MAC of the concatenation);
//! these are ramp's only raw AWS-LC calls.
//!
//! On a CPU with 256-bit VPCLMULQDQ but without AVX-512 (`wide_ghash`),
//! the tag is computed here instead, AES by AWS-LC (`AES_encrypt`) and
//! GHASH by `ghash.rs`, twice as fast as AWS-LC's there; every large tag
//! of such a process is then made and checked this way
//! (`wire::MacKey::tag`, `verify`).

use std::ffi::c_int;
use std::ptr::{self, NonNull};

use aws_lc_sys as lc;

use super::ghash::Ghash;

/// Bytes of a GMAC key, nonce and tag.
pub(crate) const KEY_LEN: usize = 16;
pub(crate) const NONCE_LEN: usize = 12;
pub(crate) const TAG_LEN: usize = 16;

/// One keyed AES-128-GCM context, reused for every tag (its key schedule
/// and GHASH table are made once). Not shared between threads at once:
/// `&mut self` per tag.
pub(crate) struct GmacCtx {
    ctx: NonNull<lc::EVP_CIPHER_CTX>,
    /// Every call since `begin` succeeded.
    ok: bool,
    /// Where the CPU has 256-bit VPCLMULQDQ but not AVX-512 (which
    /// AWS-LC's own GHASH uses): the tag computed with `ghash.rs`, AES by
    /// AWS-LC, bit for bit the same (the EVP context then unused).
    wide: Option<Box<WideGmac>>,
}

/// GMAC with `ghash.rs`'s GHASH: the key's AES schedule (H = AES_K(0^128)
/// made from it once), the hash, and AES_K(J0) of the tag being made.
struct WideGmac {
    aes: lc::AES_KEY,
    ghash: Ghash,
    ek0: [u8; TAG_LEN],
}

impl WideGmac {
    /// The wide GMAC under `key`, where this CPU should use it.
    fn new(key: &[u8; KEY_LEN]) -> Option<Box<WideGmac>> {
        if !wide_ghash() {
            return None;
        }
        Self::make(key)
    }

    /// The wide GMAC under `key` wherever the CPU can run it (tests
    /// compare it with AWS-LC's even where AWS-LC's is the faster).
    fn make(key: &[u8; KEY_LEN]) -> Option<Box<WideGmac>> {
        // SAFETY: an all-zero AES_KEY is plain data (words and a count),
        // filled by `AES_set_encrypt_key` below before any use.
        let mut aes: lc::AES_KEY = unsafe { std::mem::zeroed() };
        // SAFETY: the key is 16 readable bytes (128 bits), `aes` a
        // writable AES_KEY.
        let rc = unsafe { lc::AES_set_encrypt_key(key.as_ptr(), 128, &mut aes) };
        assert_eq!(rc, 0, "AES-128 keying failed");
        let mut h = [0u8; 16];
        // SAFETY: one 16-byte block in and out (distinct), a keyed schedule.
        unsafe { lc::AES_encrypt([0u8; 16].as_ptr(), h.as_mut_ptr(), &aes) };
        let ghash = Ghash::new(&h)?;
        h.fill(0);
        Some(Box::new(WideGmac {
            aes,
            ghash,
            ek0: [0; TAG_LEN],
        }))
    }
}

impl Drop for WideGmac {
    fn drop(&mut self) {
        // the key's schedule and the last tag's mask wiped, as AWS-LC
        // wipes its context's (the hash wipes its own)
        // SAFETY: `aes` and `ek0` are live, aligned fields of ours; plain
        // data (an all-zero AES_KEY is valid).
        unsafe {
            ptr::write_volatile(&mut self.aes, std::mem::zeroed());
            ptr::write_volatile(&mut self.ek0, [0; TAG_LEN]);
        }
    }
}

/// Whether `GmacCtx` computes its tags with `ghash.rs` on this CPU (so
/// that a whole packet's tag is made and checked with it too, not with
/// AWS-LC's AES-GCM; asked once).
pub(crate) fn wide_ghash() -> bool {
    static WIDE: once_cell::sync::Lazy<bool> = once_cell::sync::Lazy::new(ghash_is_faster);
    *WIDE
}

/// Whether `ghash.rs` beats AWS-LC's GHASH on this CPU: it has 256-bit
/// VPCLMULQDQ and AWS-LC would not take its AVX-512 path (its test:
/// VAES, AVX-512 F, BW, VL and VPCLMULQDQ, `crypto_gcm_avx512_enabled`).
fn ghash_is_faster() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx512 = has!("vaes") && has!("avx512f") && has!("avx512bw") && has!("avx512vl");
        super::ghash::available() && !avx512
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

// SAFETY: the context is plain memory owned by this value, reached only
// through `&mut self` (or dropped); AWS-LC keeps no thread-local state in it.
unsafe impl Send for GmacCtx {}

impl GmacCtx {
    /// A context keyed with `key`. Panics only if AWS-LC cannot allocate.
    pub(crate) fn new(key: &[u8; KEY_LEN]) -> GmacCtx {
        // SAFETY: a fresh context from AWS-LC, checked for NULL.
        let ctx = NonNull::new(unsafe { lc::EVP_CIPHER_CTX_new() })
            .expect("AWS-LC could not allocate a cipher context");
        let g = GmacCtx {
            ctx,
            ok: true,
            wide: WideGmac::new(key),
        };
        // SAFETY: `ctx` is a live context; the cipher is AWS-LC's static
        // AES-128-GCM; the key is 16 readable bytes (its length for this
        // cipher); no IV yet (given per tag), no engine.
        let ok = unsafe {
            lc::EVP_EncryptInit_ex(
                g.ctx.as_ptr(),
                lc::EVP_aes_128_gcm(),
                ptr::null_mut(),
                key.as_ptr(),
                ptr::null(),
            )
        };
        assert_eq!(ok, 1, "AES-128-GCM keying failed");
        g
    }

    /// The GMAC tag of the concatenation of `pieces` under `nonce` (96
    /// bits: GCM's default IV length). Each piece is below 2 GiB.
    pub(crate) fn tag(&mut self, nonce: &[u8; NONCE_LEN], pieces: &[&[u8]]) -> [u8; TAG_LEN] {
        self.begin(nonce);
        for p in pieces {
            self.update(p);
        }
        self.finish()
    }

    /// Starts a tag under `nonce`: its bytes follow (`update`), then
    /// `finish`. (Only the state is reset; a failure is reported by
    /// `finish`.)
    pub(crate) fn begin(&mut self, nonce: &[u8; NONCE_LEN]) {
        if let Some(w) = &mut self.wide {
            // J0 = nonce || 1 (a 96-bit IV), encrypted: the tag's mask
            let mut j0 = [0u8; 16];
            j0[..NONCE_LEN].copy_from_slice(nonce);
            j0[15] = 1;
            // SAFETY: one 16-byte block in and out (distinct), a keyed
            // schedule.
            unsafe { lc::AES_encrypt(j0.as_ptr(), w.ek0.as_mut_ptr(), &w.aes) };
            w.ghash.reset();
            self.ok = true;
            return;
        }
        // SAFETY: `ctx` is live and keyed; the IV is 12 readable bytes (the
        // context's IV length, left at GCM's default); it resets the GHASH
        // state and the lengths (`CRYPTO_gcm128_setiv`).
        let ok = unsafe {
            lc::EVP_EncryptInit_ex(
                self.ctx.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
                ptr::null(),
                nonce.as_ptr(),
            )
        };
        self.ok = ok == 1;
    }

    /// The tag's next bytes (below 2 GiB; GHASH carries a partial block
    /// over to the next call).
    pub(crate) fn update(&mut self, piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        if let Some(w) = &mut self.wide {
            return w.ghash.update(piece);
        }
        let len = c_int::try_from(piece.len()).expect("a piece below 2 GiB");
        let mut outl: c_int = 0;
        // SAFETY: `piece` is `len` readable bytes; a NULL output makes them
        // associated data (nothing is written but the context).
        let ok = unsafe {
            lc::EVP_EncryptUpdate(
                self.ctx.as_ptr(),
                ptr::null_mut(),
                &mut outl,
                piece.as_ptr(),
                len,
            )
        };
        self.ok &= ok == 1;
    }

    /// The tag of the bytes given since `begin`.
    pub(crate) fn finish(&mut self) -> [u8; TAG_LEN] {
        if let Some(w) = &mut self.wide {
            let mut tag = w.ghash.finish();
            for (t, m) in tag.iter_mut().zip(w.ek0) {
                *t ^= m;
            }
            return tag;
        }
        let ctx = self.ctx.as_ptr();
        let mut tag = [0u8; TAG_LEN];
        let mut outl: c_int = 0;
        let mut ok = 1;
        // SAFETY: GCM's final writes no bytes (nothing was encrypted; the
        // buffer is 16 writable bytes anyway) and computes the tag, which
        // the control call copies into the 16 writable bytes of `tag`.
        unsafe {
            ok &= lc::EVP_EncryptFinal_ex(ctx, tag.as_mut_ptr(), &mut outl);
            ok &= lc::EVP_CIPHER_CTX_ctrl(
                ctx,
                lc::EVP_CTRL_GCM_GET_TAG as c_int,
                TAG_LEN as c_int,
                tag.as_mut_ptr().cast(),
            );
        }
        assert!(self.ok && ok == 1, "AES-128-GMAC failed");
        tag
    }
}

/// `x * y` in GCM's field GF(2^128) (SP 800-38D: a block read as a
/// big-endian number, its most significant bit the coefficient of x^0;
/// modulo x^128 + x^7 + x^2 + x + 1): with PCLMULQDQ when the CPU has it,
/// else bit by bit (without branches on the operands either way).
pub(crate) fn gf128_mul(x: u128, y: u128) -> u128 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has PCLMULQDQ (checked just above; SSE2 is part
        // of x86-64).
        return unsafe { gf128_mul_clmul(x, y) };
    }
    gf128_mul_soft(x, y)
}

/// `gf128_mul` bit by bit (SP 800-38D, Algorithm 1).
pub(crate) fn gf128_mul_soft(x: u128, y: u128) -> u128 {
    const R: u128 = 0xE1 << 120;
    let (mut z, mut v) = (0u128, y);
    for i in 0..128 {
        z ^= v & 0u128.wrapping_sub((x >> (127 - i)) & 1);
        v = (v >> 1) ^ (R & 0u128.wrapping_sub(v & 1));
    }
    z
}

/// `gf128_mul` by carry-less multiplication: with the bits reversed, GCM's
/// product is the ordinary one of polynomials (bit i the coefficient of
/// x^i), reduced with x^128 = x^7 + x^2 + x + 1.
///
/// # Safety
/// The CPU must have PCLMULQDQ (`gf128_mul` checks it with
/// `is_x86_feature_detected!` before each call).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
unsafe fn gf128_mul_clmul(x: u128, y: u128) -> u128 {
    use std::arch::x86_64::{__m128i, _mm_clmulepi64_si128};
    let (a, b) = (x.reverse_bits(), y.reverse_bits());
    // SAFETY: `__m128i` and `u128` are both 16 plain bytes (the low lane
    // the low 64 bits on this little-endian machine); PCLMULQDQ is enabled
    // for this function, which the caller checked the CPU has.
    let (lo, mid, hi) = unsafe {
        let (va, vb) = (
            std::mem::transmute::<u128, __m128i>(a),
            std::mem::transmute::<u128, __m128i>(b),
        );
        let w = |v: __m128i| std::mem::transmute::<__m128i, u128>(v);
        (
            w(_mm_clmulepi64_si128(va, vb, 0x00)),
            w(_mm_clmulepi64_si128(va, vb, 0x01)) ^ w(_mm_clmulepi64_si128(va, vb, 0x10)),
            w(_mm_clmulepi64_si128(va, vb, 0x11)),
        )
    };
    // the 256-bit product (h:l), then h * x^128 folded in twice
    let l = lo ^ (mid << 64);
    let h = hi ^ (mid >> 64);
    let t = (h >> 127) ^ (h >> 126) ^ (h >> 121);
    let r = l ^ h ^ (h << 1) ^ (h << 2) ^ (h << 7) ^ t ^ (t << 1) ^ (t << 2) ^ (t << 7);
    r.reverse_bits()
}

impl Drop for GmacCtx {
    fn drop(&mut self) {
        // SAFETY: the context was made by `EVP_CIPHER_CTX_new` and is freed
        // once (it wipes the key schedule).
        unsafe { lc::EVP_CIPHER_CTX_free(self.ctx.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) for the test's bytes.
    fn bytes(seed: &mut u64, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                *seed as u8
            })
            .collect()
    }

    /// Where this CPU can run the wide GHASH, its tags are AWS-LC's bit
    /// for bit: every length from 0 to 700 and large ones, fed whole and in
    /// pieces cut anywhere (partial blocks carried), keys and nonces
    /// random, the context reused.
    #[test]
    fn the_wide_ghash_gives_aws_lcs_tags() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        println!("seed {seed:#x}");
        for round in 0..40 {
            let key: [u8; KEY_LEN] = bytes(&mut seed, KEY_LEN).try_into().unwrap();
            let mut wide = GmacCtx::new(&key);
            wide.wide = WideGmac::make(&key);
            if wide.wide.is_none() {
                println!("this CPU has no 256-bit VPCLMULQDQ: nothing to compare");
                return;
            }
            let mut aws = GmacCtx::new(&key);
            aws.wide = None;
            let lens: Vec<usize> = if round == 0 {
                (0..=700).collect()
            } else {
                vec![
                    round * 37 % 300,
                    1024 + round,
                    65_000 - round,
                    65_536,
                    (round * 7919) % 70_000,
                ]
            };
            for len in lens {
                let data = bytes(&mut seed, len);
                let nonce: [u8; NONCE_LEN] = bytes(&mut seed, NONCE_LEN).try_into().unwrap();
                let want = aws.tag(&nonce, &[&data]);
                assert_eq!(wide.tag(&nonce, &[&data]), want, "whole, {len} bytes");
                // in pieces: cut at two points anywhere
                let cuts = bytes(&mut seed, 4);
                let a = (usize::from(cuts[0]) * 257 + usize::from(cuts[1])) % (len + 1);
                let b = a + (usize::from(cuts[2]) * 131 + usize::from(cuts[3])) % (len - a + 1);
                let pieces = [&data[..a], &data[a..b], &data[b..]];
                assert_eq!(
                    wide.tag(&nonce, &pieces),
                    want,
                    "{len} bytes cut at {a}, {b}"
                );
            }
        }
    }
}
