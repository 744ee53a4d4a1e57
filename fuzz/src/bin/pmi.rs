//! The PMI-1 and PMI-2 reply parsers: never panic.
use ramp::spmd::fuzz;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let s = String::from_utf8_lossy(data);
        let _ = fuzz::pmi_parse_v1(&s);
        let _ = fuzz::pmi_parse_v2(&s);
    });
}
