//! The launcher's output routing: each worker's stdout and stderr read
//! from its pipe and written to the master's own, whole lines at a time,
//! optionally labelled with the rank.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{ChildStderr, ChildStdout};

pub(super) enum PipeSrc {
    Out(ChildStdout),
    Err(ChildStderr),
}

pub(super) struct OutputPipe {
    pub(super) rank: usize,
    pub(super) src: PipeSrc,
    pub(super) partial: Vec<u8>,
}

impl OutputPipe {
    pub(super) fn fd(&self) -> RawFd {
        match &self.src {
            PipeSrc::Out(p) => p.as_raw_fd(),
            PipeSrc::Err(p) => p.as_raw_fd(),
        }
    }

    fn is_err(&self) -> bool {
        matches!(self.src, PipeSrc::Err(_))
    }

    /// Reads once; writes whole lines out. Returns false at end of file.
    pub(super) fn pump(&mut self, label: bool) -> bool {
        let mut buf = [0u8; 16384];
        let n = match &mut self.src {
            PipeSrc::Out(p) => p.read(&mut buf),
            PipeSrc::Err(p) => p.read(&mut buf),
        };
        let n = match n {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return true,
            Err(_) => 0,
        };
        if n == 0 {
            if !self.partial.is_empty() {
                let rest = std::mem::take(&mut self.partial);
                self.emit(&rest, label);
            }
            return false;
        }
        self.partial.extend_from_slice(&buf[..n]);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            self.emit(&line, label);
        }
        true
    }

    fn emit(&self, bytes: &[u8], label: bool) {
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 8);
        if label {
            out.extend_from_slice(format!("[{}] ", self.rank).as_bytes());
        }
        out.extend_from_slice(bytes);
        if self.is_err() {
            let _ = io::stderr().write_all(&out);
        } else {
            let mut so = io::stdout();
            let _ = so.write_all(&out);
            let _ = so.flush();
        }
    }
}
