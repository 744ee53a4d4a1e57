//! What a GMAC key keeps for tags from payload digests (`mac_digest.rs`):
//! GCM's parts of the key, the hash key H = E_K(0), E_K(nonce || 1) and
//! the last powers of H. Below both `mac.rs` (whose `PieceMac` holds one)
//! and `mac_digest.rs` (which computes with it): it takes nothing from
//! either.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;

use crate::sys::gmac::{gf128_mul, NONCE_LEN};

/// The digest's own nonce (its tag is never sent).
pub(super) const N0: [u8; NONCE_LEN] = [0; NONCE_LEN];
/// H^k kept for this many k.
const POWERS: usize = 4;
/// The field's 1 (the coefficient of x^0 is the most significant bit).
pub(super) const ONE: u128 = 1 << 127;

/// What a key keeps for tags from digests: the hash key H = E_K(0), the
/// AES key for E_K(nonce || 1), E_K(N0 || 1), the last powers of H used.
pub(super) struct SplitKey {
    pub(super) aes: Aes128,
    pub(super) h: u128,
    pub(super) ek0: u128,
    powers: parking_lot::Mutex<[(usize, u128); POWERS]>,
}

impl SplitKey {
    pub(super) fn new(key: &[u8; 16]) -> SplitKey {
        let aes = Aes128::new(key.into());
        let h = block(&aes, [0; 16]);
        let ek0 = j0(&aes, &N0);
        SplitKey {
            aes,
            h,
            ek0,
            powers: parking_lot::Mutex::new([(0, ONE); POWERS]),
        }
    }

    /// H^k, kept for the next packet of the same shape.
    pub(super) fn power(&self, k: usize) -> u128 {
        let mut kept = self.powers.lock();
        if let Some(&(_, p)) = kept.iter().find(|(e, _)| *e == k) {
            return p;
        }
        let (mut r, mut b, mut e) = (ONE, self.h, k);
        while e > 0 {
            if e & 1 == 1 {
                r = gf128_mul(r, b);
            }
            b = gf128_mul(b, b);
            e >>= 1;
        }
        kept.rotate_right(1);
        kept[0] = (k, r);
        r
    }
}

impl Drop for SplitKey {
    fn drop(&mut self) {
        self.h = 0;
    }
}

/// AES-128 of one block, read as a big-endian number.
fn block(aes: &Aes128, b: [u8; 16]) -> u128 {
    let mut b = b.into();
    aes.encrypt_block(&mut b);
    u128::from_be_bytes(b.into())
}

/// E_K(nonce || 1): GCM's mask of the tag for a 96-bit nonce.
pub(super) fn j0(aes: &Aes128, nonce: &[u8; NONCE_LEN]) -> u128 {
    let mut b = [0u8; 16];
    b[..NONCE_LEN].copy_from_slice(nonce);
    b[15] = 1;
    block(aes, b)
}
