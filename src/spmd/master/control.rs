//! The workers' control connections, at the master: a new connection's
//! Hello (the job's token first, then the rank it claims), answered with
//! the job's Init; then each worker's frames: all-gathers (answered when
//! every rank gave its part), exit and abort.

use crate::clock::real_now;
use crate::time::MILLIS;
use std::os::fd::{AsRawFd, RawFd};

use super::super::frame::{u32_at, write_frame, FrameReader, Kind};
use super::{Master, EXIT_GRACE};

/// Whether a Hello's payload (rank u32, pid u32, token) carries `token`
/// (compared in time independent of where they differ).
fn token_matches(hello: &[u8], token: &[u8; crate::config::SPMD_TOKEN_LEN]) -> bool {
    let Some(t) = hello.get(8..8 + token.len()) else {
        return false;
    };
    hello.len() == 8 + token.len() && t.iter().zip(token).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}

impl Master {
    pub(super) fn accept(&mut self) {
        while let Ok((s, _)) = self.listener.accept() {
            let _ = s.set_nonblocking(true);
            let _ = s.set_nodelay(true);
            self.pending
                .insert(s.as_raw_fd(), (s, FrameReader::default(), real_now()));
        }
    }

    /// A new connection's first frame says which rank it is.
    pub(super) fn hello(&mut self, fd: RawFd) {
        let Some((mut s, mut r, t0)) = self.pending.remove(&fd) else {
            return;
        };
        let open = r.fill(&mut s).unwrap_or(false);
        match r.next() {
            Ok(Some((Kind::Hello, p))) => {
                // the job's token first: a stranger learns nothing, not
                // even whether the rank it claims is free
                if !token_matches(&p, &self.token) {
                    eprintln!(
                        "ramp: a connection to the job's master did not give the job's token \
                         (not one of its workers); closed"
                    );
                    return;
                }
                let asked = u32_at(&p, 0).unwrap_or(u32::MAX - 1);
                // u32::MAX: the next rank no worker took (external spawners)
                let rank = if asked == u32::MAX {
                    self.workers
                        .iter()
                        .position(|w| w.external && !w.joined)
                        .unwrap_or(usize::MAX)
                } else {
                    asked as usize
                };
                let ok = rank < self.workers.len()
                    && self.workers[rank].stream.is_none()
                    && !self.workers[rank].joined;
                if !ok {
                    eprintln!(
                        "ramp: a worker announced rank {rank}, which is not expected; ignored"
                    );
                    return;
                }
                let mut init = Vec::new();
                init.extend_from_slice(&(self.workers.len() as u32).to_be_bytes());
                init.extend_from_slice(&self.depth.to_be_bytes());
                init.extend_from_slice(&self.job_id.to_be_bytes());
                init.extend_from_slice(&(rank as u32).to_be_bytes());
                init.extend_from_slice(&self.env);
                if write_frame(&mut s, Kind::Init, &init).is_err() {
                    return;
                }
                let _ = s.set_nonblocking(true);
                let w = &mut self.workers[rank];
                w.stream = Some(s);
                w.joined = true;
                w.reader = r;
                if w.external {
                    w.pid = u32_at(&p, 4).ok();
                }
            }
            Ok(None) if open && real_now().since(t0) < 10_000 * MILLIS => {
                self.pending.insert(fd, (s, r, t0));
            }
            _ => {
                eprintln!("ramp: a connection to the job's master did not introduce itself; closed")
            }
        }
    }

    pub(super) fn serve_worker(&mut self, rank: usize) {
        let w = &mut self.workers[rank];
        let Some(s) = w.stream.as_mut() else { return };
        let open = w.reader.fill(s).unwrap_or(false);
        loop {
            let f = self.workers[rank].reader.next();
            match f {
                Ok(Some((Kind::Gather, p))) => {
                    let Ok(seq) = u32_at(&p, 0) else { break };
                    self.workers[rank].gather = Some((seq, p[4..].to_vec()));
                    self.maybe_complete_gather();
                }
                Ok(Some((Kind::Exit, p))) => {
                    let code = u32_at(&p, 0).unwrap_or(1) as i32;
                    self.workers[rank].said_exit = true;
                    if self.job_code.is_none() {
                        self.job_code = Some(code);
                    }
                    if code != 0 {
                        // as AMUDP: the others are told to exit with 0
                        self.stop_all(0);
                    } else if self.exit_grace_until.is_none() {
                        self.exit_grace_until = Some(real_now().plus(EXIT_GRACE));
                    }
                }
                Ok(Some((Kind::Abort, p))) => {
                    let code = u32_at(&p, 0).unwrap_or(1) as i32;
                    let msg = String::from_utf8_lossy(p.get(4..).unwrap_or(&[])).into_owned();
                    eprintln!("ramp: rank {rank} aborted the job (code {code}): {msg}");
                    self.workers[rank].said_exit = true;
                    self.job_code.get_or_insert(code);
                    self.stop_all(code);
                }
                Ok(Some((k, _))) => {
                    eprintln!("ramp: unexpected {k:?} frame from rank {rank}; ignored");
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!(
                        "ramp: bad control data from rank {rank}: {e}; its connection is closed"
                    );
                    self.workers[rank].stream = None;
                    break;
                }
            }
        }
        if !open {
            self.workers[rank].stream = None;
            let w = &self.workers[rank];
            // an external worker's end is its connection's: gone without
            // an exit, it died
            if w.external && !w.said_exit && self.stopping.is_none() {
                eprintln!(
                    "ramp: rank {rank} (pid {}) ended without exiting through the job; stopping the job",
                    w.pid.unwrap_or(0)
                );
                let code = *self
                    .job_code
                    .get_or_insert(self.lost_rank_code.unwrap_or(1));
                self.stop_all(code);
            }
        }
    }

    fn maybe_complete_gather(&mut self) {
        let Some(seq) = self.workers[0].gather.as_ref().map(|g| g.0) else {
            return;
        };
        if !self
            .workers
            .iter()
            .all(|w| w.gather.as_ref().is_some_and(|g| g.0 == seq))
        {
            return;
        }
        let mut all = seq.to_be_bytes().to_vec();
        for w in &self.workers {
            all.extend_from_slice(&w.gather.as_ref().unwrap().1);
        }
        for w in self.workers.iter_mut() {
            w.gather = None;
            if let Some(s) = w.stream.as_mut() {
                let _ = s.set_nonblocking(false);
                let _ = write_frame(s, Kind::Gathered, &all);
                let _ = s.set_nonblocking(true);
            }
        }
    }
}
