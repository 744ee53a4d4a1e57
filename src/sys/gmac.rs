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
//! this is the only raw AWS-LC call in ramp.

use std::ffi::c_int;
use std::ptr::{self, NonNull};

use aws_lc_sys as lc;

/// Bytes of a GMAC key, nonce and tag.
pub(crate) const KEY_LEN: usize = 16;
pub(crate) const NONCE_LEN: usize = 12;
pub(crate) const TAG_LEN: usize = 16;

/// One keyed AES-128-GCM context, reused for every tag (its key schedule
/// and GHASH table are made once). Not shared between threads at once:
/// `&mut self` per tag.
pub(crate) struct GmacCtx {
    ctx: NonNull<lc::EVP_CIPHER_CTX>,
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
        let g = GmacCtx { ctx };
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
        let ctx = self.ctx.as_ptr();
        let mut tag = [0u8; TAG_LEN];
        let mut outl: c_int = 0;
        // SAFETY: `ctx` is live and keyed; the IV is 12 readable bytes (the
        // context's IV length, left at GCM's default); it resets the GHASH
        // state and the lengths (`CRYPTO_gcm128_setiv`).
        let mut ok = unsafe {
            lc::EVP_EncryptInit_ex(
                ctx,
                ptr::null(),
                ptr::null_mut(),
                ptr::null(),
                nonce.as_ptr(),
            )
        };
        for p in pieces.iter().filter(|p| !p.is_empty()) {
            let len = c_int::try_from(p.len()).expect("a piece below 2 GiB");
            // SAFETY: `p` is `len` readable bytes; a NULL output makes them
            // associated data (nothing is written but the context).
            ok &=
                unsafe { lc::EVP_EncryptUpdate(ctx, ptr::null_mut(), &mut outl, p.as_ptr(), len) };
        }
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
        assert_eq!(ok, 1, "AES-128-GMAC failed");
        tag
    }
}

impl Drop for GmacCtx {
    fn drop(&mut self) {
        // SAFETY: the context was made by `EVP_CIPHER_CTX_new` and is freed
        // once (it wipes the key schedule).
        unsafe { lc::EVP_CIPHER_CTX_free(self.ctx.as_ptr()) }
    }
}
