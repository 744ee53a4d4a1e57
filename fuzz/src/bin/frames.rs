//! The local launcher's frame reader: never panics; the first byte picks
//! the size of the pieces the stream arrives in.
use ramp::spmd::fuzz;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some((&c, rest)) = data.split_first() {
            let (frames, _) = fuzz::launcher_frames(rest, 1 + c as usize);
            let total: usize = frames.iter().map(|f| f.1.len() + 5).sum();
            assert!(total <= rest.len());
        }
    });
}
