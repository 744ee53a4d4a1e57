//! How a local job ends, at the master: children reaped (a death without
//! an exit stops the job, with a message that says why), an external
//! spawner's helper processes watched and ended, every worker told to
//! exit (a Kill frame), then signalled (SIGTERM, then SIGKILL) after
//! `KILL_GRACE` each.

use crate::clock::real_now;
use crate::sys as os;
use crate::time::{Nanos, MILLIS};
use std::process::ExitStatus;

use super::super::frame::{write_frame, Kind};
use super::Master;

/// After a Kill frame, how long before SIGTERM, and again before SIGKILL.
const KILL_GRACE: Nanos = 2_000 * MILLIS;

fn describe(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => format!("was killed by signal {s} ({})", signal_name(s)),
        _ => "ended".into(),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// The code a job ends with when a worker ended this way.
fn code_of(status: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

impl Master {
    /// Helper processes of an external spawner: one that fails before
    /// every worker joined fails the job (the workers it should have started
    /// will never come).
    fn reap_helpers(&mut self) {
        let mut failed = None;
        for h in self.helpers.iter_mut() {
            if let Ok(Some(st)) = h.try_wait() {
                if !st.success() && self.workers.iter().any(|w| !w.joined) {
                    failed = Some((h.id(), st));
                }
            }
        }
        self.helpers
            .retain_mut(|h| !matches!(h.try_wait(), Ok(Some(_))));
        if let Some((pid, st)) = failed {
            if self.stopping.is_none() {
                eprintln!(
                    "ramp: the spawner's process (pid {pid}) {} before every worker joined the job; stopping the job",
                    describe(&st)
                );
                let code = *self
                    .job_code
                    .get_or_insert(self.lost_rank_code.unwrap_or(1));
                self.stop_all(code);
                // workers that never joined will not come: the job is over
                // once those that did have ended
                for w in self.workers.iter_mut().filter(|w| w.external && !w.joined) {
                    w.joined = true;
                }
            }
        }
    }

    /// After the job: the helper processes get a moment to end on their
    /// own (an ssh client whose remote command ended), then are killed.
    pub(super) fn end_helpers(&mut self) {
        let until = real_now().plus(2_000 * MILLIS);
        while !self.helpers.is_empty() && real_now() < until {
            self.helpers
                .retain_mut(|h| !matches!(h.try_wait(), Ok(Some(_))));
            os::poll_fds(&[], 10);
        }
        for h in self.helpers.iter_mut() {
            let _ = h.kill();
            let _ = h.wait();
        }
    }

    /// Children that ended: a death without an exit stops the job.
    pub(super) fn reap(&mut self) {
        self.reap_helpers();
        let mut failed = None;
        for rank in 0..self.workers.len() {
            let w = &mut self.workers[rank];
            let Some(c) = w.child.as_mut() else { continue };
            if w.status.is_some() {
                continue;
            }
            if let Ok(Some(st)) = c.try_wait() {
                if !w.said_exit && w.stream.is_some() {
                    // what it wrote before it ended (its exit's frame) is
                    // read first: the poll may have looked before it came
                    self.serve_worker(rank);
                }
                let w = &mut self.workers[rank];
                w.status = Some(st);
                // A rank that never joined (no start-up call) would leave
                // the others waiting for it in start-up: the job fails.
                let unjoined = !w.joined;
                if (!st.success() || unjoined) && !w.said_exit && self.stopping.is_none() {
                    failed = Some((w.rank, w.pid.unwrap_or(0), st, unjoined));
                }
            }
        }
        if let Some((rank, pid, st, unjoined)) = failed {
            let running = self.workers.iter().filter(|w| w.status.is_none()).count();
            let why = match (unjoined, st.code()) {
                (true, Some(127)) => {
                    " without joining the job: 127 means the program, or a library it \
                     needs, was not found (check the program's path, and LD_LIBRARY_PATH \
                     or the rpath for libramp.so)"
                }
                (true, _) => {
                    " without joining the job: every rank must call ramp_SPMDStartup \
                     (AMUDP_SPMDStartup; Python: ramp.spmd.startup()) first"
                }
                (false, _) => " before the job ended",
            };
            eprintln!(
                "ramp: rank {rank} (pid {pid}) {}{why}; stopping the job ({running} other process(es) still running)",
                describe(&st)
            );
            let code = *self
                .job_code
                .get_or_insert(self.lost_rank_code.unwrap_or(code_of(&st).max(1)));
            // the survivors' exit callbacks learn that the job failed
            self.stop_all(code);
        }
    }

    /// Tells every worker to exit with `code`; signals follow for those
    /// that do not.
    pub(super) fn stop_all(&mut self, code: i32) {
        if self.stopping.is_some() {
            return;
        }
        for w in self.workers.iter_mut() {
            if let Some(s) = w.stream.as_mut() {
                let _ = s.set_nonblocking(false);
                let _ = write_frame(s, Kind::Kill, &(code as u32).to_be_bytes());
                let _ = s.set_nonblocking(true);
            }
        }
        self.stopping = Some((real_now().plus(KILL_GRACE), 0));
    }

    pub(super) fn timers(&mut self) {
        if let Some(t) = self.exit_grace_until {
            if real_now() >= t {
                self.exit_grace_until = None;
                self.stop_all(0);
            }
        }
        if let Some((t, stage)) = self.stopping {
            if real_now() >= t {
                let sig = if stage == 0 {
                    libc::SIGTERM
                } else {
                    libc::SIGKILL
                };
                // (our children only: an external worker's pid may be
                // another host's)
                for w in &self.workers {
                    if w.status.is_none() && w.child.is_some() {
                        if let Some(pid) = w.pid {
                            os::kill(pid, sig);
                        }
                    }
                }
                for h in &self.helpers {
                    os::kill(h.id(), sig);
                }
                if stage > 0 {
                    // external workers that never came will not
                    for w in self.workers.iter_mut().filter(|w| w.external) {
                        w.joined = true;
                    }
                }
                self.stopping = Some((real_now().plus(KILL_GRACE), stage.saturating_add(1)));
            }
        }
    }
}
