//! The packet decoder: never panics. The first byte's low bit asks for the
//! rest to be resealed (a valid CRC32C trailer recomputed), so that the
//! fuzzer reaches past the trailer check.
use ramp::wire::{decode, Integrity};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let i = Integrity::Crc32c;
        let Some((&flag, rest)) = data.split_first() else {
            return;
        };
        if flag & 1 == 1 {
            let mut v = rest.to_vec();
            i.seal(&mut v, 0);
            let _ = decode(&i, &v);
        } else {
            let _ = decode(&i, rest);
        }
    });
}
