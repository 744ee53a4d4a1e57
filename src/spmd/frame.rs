//! The control protocol between the local launcher's master and its
//! workers, over TCP: frames of [u32 length (big-endian)][u8 type][payload].

use std::io::{self, Read, Write};

/// Largest frame accepted (an all-gather of a few MiB across a job).
pub const MAX_FRAME: usize = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// worker -> master: rank u32 (u32::MAX: the master assigns the next
    /// one), pid u32, the job's token (16 bytes, `RAMP_SPMD_TOKEN`)
    Hello = 1,
    /// master -> worker: size u32, depth u32, job id u64, the worker's rank
    /// u32, then the master's environment as NUL-separated KEY=VALUE strings
    Init = 2,
    /// worker -> master: seq u32, data (an all-gather or, empty, a barrier)
    Gather = 3,
    /// master -> worker: seq u32, every rank's data in rank order
    Gathered = 4,
    /// worker -> master: the job ends with code i32 (SPMDExit)
    Exit = 5,
    /// master -> worker: exit now with code i32
    Kill = 6,
    /// worker -> master: stop the whole job with code i32, then a message
    Abort = 7,
    // (8, 9, 10 were a key-value store's frames, for published names,
    // which now travel between the workers' endpoints: `spmd/names.rs`)
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Hello,
            2 => Kind::Init,
            3 => Kind::Gather,
            4 => Kind::Gathered,
            5 => Kind::Exit,
            6 => Kind::Kill,
            7 => Kind::Abort,
            _ => return None,
        })
    }
}

pub fn write_frame(w: &mut impl Write, kind: Kind, payload: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(5 + payload.len());
    b.extend_from_slice(&((payload.len() + 1) as u32).to_be_bytes());
    b.push(kind as u8);
    b.extend_from_slice(payload);
    w.write_all(&b)?;
    w.flush()
}

/// Accumulates bytes from a non-blocking stream and cuts them into frames.
#[derive(Default)]
pub struct FrameReader {
    buf: Vec<u8>,
}

impl FrameReader {
    /// Reads what is available. Ok(false) when the peer closed the stream.
    pub fn fill(&mut self, r: &mut impl Read) -> io::Result<bool> {
        let mut tmp = [0u8; 65536];
        loop {
            match r.read(&mut tmp) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    if n < tmp.len() {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a whole frame is buffered.
    pub fn has_frame(&self) -> bool {
        self.buf.len() >= 4
            && self.buf.len()
                >= 4 + u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize
    }

    /// The next whole frame, if one has arrived.
    pub fn next(&mut self) -> io::Result<Option<(Kind, Vec<u8>)>> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("control frame of {len} bytes"),
            ));
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let kind = Kind::from_u8(self.buf[4]).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unknown control frame type {}", self.buf[4]),
            )
        })?;
        let payload = self.buf[5..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some((kind, payload)))
    }
}

pub fn u32_at(b: &[u8], at: usize) -> io::Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short control frame"))
}

pub fn u64_at(b: &[u8], at: usize) -> io::Result<u64> {
    let hi = u32_at(b, at)? as u64;
    let lo = u32_at(b, at + 4)? as u64;
    Ok((hi << 32) | lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_in_pieces() {
        let mut wire = Vec::new();
        write_frame(&mut wire, Kind::Gather, b"hello").unwrap();
        write_frame(&mut wire, Kind::Exit, &7i32.to_be_bytes()).unwrap();
        let mut r = FrameReader::default();
        for chunk in wire.chunks(3) {
            let mut c: &[u8] = chunk;
            r.fill(&mut c).unwrap();
        }
        assert_eq!(r.next().unwrap(), Some((Kind::Gather, b"hello".to_vec())));
        assert_eq!(
            r.next().unwrap(),
            Some((Kind::Exit, 7i32.to_be_bytes().to_vec()))
        );
        assert_eq!(r.next().unwrap(), None);
    }

    #[test]
    fn kinds_past_abort_are_no_frames() {
        for k in [8u8, 9, 10, 11] {
            let mut r = FrameReader::default();
            let mut c: &[u8] = &[0, 0, 0, 1, k];
            r.fill(&mut c).unwrap();
            assert!(r.next().is_err(), "kind {k} is not a frame");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut r = FrameReader::default();
        let mut c: &[u8] = &[0, 0, 0, 2, 99, 1];
        r.fill(&mut c).unwrap();
        assert!(r.next().is_err());
        let mut r = FrameReader::default();
        let mut c: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        r.fill(&mut c).unwrap();
        assert!(r.next().is_err());
    }
}
