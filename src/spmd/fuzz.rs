//! Test-support hook (the `testing` feature only): the launcher's and the
//! PMI clients' parsers of untrusted input, callable by the property tests
//! (`tests/fuzz_spmd.rs`) and the fuzz targets (`fuzz/`). Nothing else.

use super::frame::FrameReader;
use super::pmi_wire;

/// A PMI-1 reply line parsed: (cmd, pairs), or None when refused.
pub fn pmi_parse_v1(line: &str) -> Option<(String, Vec<(String, String)>)> {
    pmi_wire::parse_v1("fuzz", line)
        .ok()
        .map(|m| (m.cmd, m.pairs))
}

/// A PMI-2 reply body parsed: (cmd, pairs), or None when refused.
pub fn pmi_parse_v2(body: &str) -> Option<(String, Vec<(String, String)>)> {
    pmi_wire::parse_v2("fuzz", body)
        .ok()
        .map(|m| (m.cmd, m.pairs))
}

/// The local launcher's control stream `bytes`, arriving in pieces of
/// `chunk` bytes, cut into frames: (type, payload) each, then the error
/// that stopped it, if any.
pub fn launcher_frames(bytes: &[u8], chunk: usize) -> (Vec<(u8, Vec<u8>)>, Option<String>) {
    let mut r = FrameReader::default();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        let mut src = piece;
        if let Err(e) = r.fill(&mut src) {
            return (out, Some(e.to_string()));
        }
        loop {
            match r.next() {
                Ok(Some((k, p))) => out.push((k as u8, p)),
                Ok(None) => break,
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }
    (out, None)
}
