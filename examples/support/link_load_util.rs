//! Helpers of examples/link_load.rs: counts per sequence number, words of a
//! payload, percentiles, the wall clock.

/// Counts per sequence number (saturating at 255), grown as numbers come.
#[derive(Default)]
pub struct Seen(Vec<u8>);

impl Seen {
    pub fn count(&mut self, q: u32) {
        let q = q as usize;
        if q >= self.0.len() {
            self.0.resize(q + 1, 0);
        }
        self.0[q] = self.0[q].saturating_add(1);
    }
    /// (sequence numbers below `sent` seen once, seen twice or more,
    /// numbers seen at `sent` or beyond)
    pub fn tally(&self, sent: u64) -> (u64, u64, u64) {
        let (mut once, mut twice, mut beyond) = (0, 0, 0);
        for (q, &c) in self.0.iter().enumerate() {
            match (q as u64) < sent {
                true if c == 1 => once += 1,
                true if c > 1 => twice += 1,
                false if c > 0 => beyond += 1,
                _ => {}
            }
        }
        (once, twice, beyond)
    }
}

pub fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Milliseconds since the Unix epoch: progress against outside events.
pub fn unix_ms() -> u128 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_millis())
}
