//! Small helpers the benchmark roles share: an endpoint's name as the hex
//! a role prints and its peer reads, and the median of a run's figures.

use ramp::am::EndpointName;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn name_from_hex(s: &str) -> Option<EndpointName> {
    let s = s.trim();
    if s.len() != 64 {
        return None;
    }
    let mut n = [0u8; 32];
    for (i, b) in n.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(EndpointName(n))
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
