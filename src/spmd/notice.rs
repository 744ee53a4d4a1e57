//! Job-end notices between the ranks of a Slurm job, so that
//! `SPMDExit(code)` on one rank becomes the exit status of `srun`.
//!
//! Slurm has no way to end a step with a given code: its PMI-2 `abort`
//! kills every task with SIGTERM/SIGKILL, and `srun` then reports the
//! signal (137), because its status is the highest signal when any task
//! was signalled, else the highest exit code (`_task_finish` in
//! `src/srun/launch.c`). So the exiting rank tells the others itself: each
//! rank binds a small UDP control socket next to its endpoint and sends
//! its address along with the endpoint name in the name all-gather; a
//! thread waits on it. `finalize(code != 0)` sends every other rank a
//! notice and waits (up to [`ACK_WAIT`]) for their acknowledgements; a rank
//! that gets a notice acknowledges it and exits with 0 (as AMUDP's ranks
//! do when another exits with a code), so no task dies by a signal and
//! `srun` exits with `code`. When some rank does not acknowledge (it is
//! gone, or unreachable) the exit falls back to the PMI abort, which at
//! least ends the job.
//!
//! A notice ends a process, so it must not be forgeable by whoever can send
//! a datagram to the control port (the job id is no secret: `squeue` shows
//! it). Each rank draws a random 128-bit secret and sends it along in the
//! same all-gather, which travels through the launcher, not the network; a
//! notice to rank r carries r's secret, an acknowledgement its sender's own.
//! Anything else that reaches the socket is ignored.
//!
//! A rank that dies by a signal cannot send a notice. Under `srun -K`
//! Slurm ends the step; without it (and under `--mpi=pmi2`, whose plugin
//! does not notice a lost task) the others would wait in the next
//! collective forever. So while a rank waits in a collective it probes the
//! others' watcher threads (which answer whatever their main thread is
//! doing): a PING carrying the receiver's secret every [`PROBE_EVERY`], a
//! PONG carrying the sender's; a rank silent for the peer timeout
//! (`RAMP_PEER_TIMEOUT_MS`) is dead, and every survivor ends with 137 (a
//! death by signal, as under `srun -K`), so srun's status says so.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use crate::clock::{real_now, Clock};
use crate::time::{Instant, Nanos, MILLIS};

use super::bootstrap::{Bootstrap, Progress};
use crate::am::EndpointName;

const NOTICE: &[u8; 8] = b"rampEXIT";
const ACK: &[u8; 8] = b"rampEACK";
const PING: &[u8; 8] = b"rampPING";
const PONG: &[u8; 8] = b"rampPONG";
/// How often a rank in a collective probes the others.
const PROBE_EVERY: Nanos = 500 * MILLIS;
/// The job's status when a rank died without a notice (128 + SIGKILL).
const DIED: i32 = 137;
/// Bytes of each rank's secret.
const SECRET_LEN: usize = 16;
/// What each rank contributes to the names all-gather: endpoint name,
/// control address, secret.
const SLOT: usize = 32 + 32 + SECRET_LEN;
/// A notice: magic, the receiver's secret, the code, the sender's rank.
const NOTICE_LEN: usize = 8 + SECRET_LEN + 4 + 4;
/// An acknowledgement: magic, the sender's secret, its rank.
const ACK_LEN: usize = 8 + SECRET_LEN + 4;

type Secret = [u8; SECRET_LEN];

fn new_secret() -> io::Result<Secret> {
    super::random_bytes()
}
/// How long an exiting rank waits for every other rank's acknowledgement.
const ACK_WAIT: Nanos = 3_000 * MILLIS;
/// Between the last acknowledgement and this process's own exit, so that
/// the others have ended before the launcher learns of our exit (with
/// `srun -K` it would signal the survivors).
const AFTER_ACKS: Nanos = 100 * MILLIS;

/// A bootstrap whose ranks can tell each other that the job ends.
pub(super) struct Notifying {
    inner: Box<dyn Bootstrap>,
    /// This rank's control socket, once the names are exchanged.
    sock: Option<UdpSocket>,
    /// Every rank's control address (None: that rank has none) and secret.
    peers: Vec<(Option<SocketAddr>, Secret)>,
    names_done: bool,
    /// The socket PINGs leave from and PONGs come back to.
    probe: Option<UdpSocket>,
    /// When each rank last answered (reset as each collective starts).
    heard: Vec<Instant>,
    /// This rank's secret (PONGs carry the sender's own).
    secret: Secret,
}

impl Notifying {
    pub(super) fn new(inner: Box<dyn Bootstrap>) -> Notifying {
        Notifying {
            inner,
            sock: None,
            peers: Vec::new(),
            names_done: false,
            probe: None,
            heard: Vec::new(),
            secret: [0; SECRET_LEN],
        }
    }

    /// The first all-gather is start-up's exchange of endpoint names: the
    /// control socket's address rides along.
    fn names_allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        self.names_done = true;
        let mut name = [0u8; 32];
        name.copy_from_slice(data);
        let sock = EndpointName(name)
            .to_addr()
            .and_then(|a| UdpSocket::bind(SocketAddr::new(a.ip(), 0)).ok());
        // Without a secret there are no notices (the exit falls back to the
        // PMI abort): a control port anyone could end the job through is worse.
        let secret = new_secret().ok();
        let sock = sock.filter(|_| secret.is_some());
        let secret = secret.unwrap_or_default();
        let mine = sock
            .as_ref()
            .and_then(|s| s.local_addr().ok())
            .map_or([0u8; 32], |a| EndpointName::from_addr(a).0);
        let mut slot = data.to_vec();
        slot.extend_from_slice(&mine);
        slot.extend_from_slice(&secret);
        let all = self.inner.allgather(&slot, progress)?;
        if all.len() % SLOT != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the launcher's all-gather returned a partial entry",
            ));
        }
        let mut names = Vec::with_capacity(all.len() / SLOT * 32);
        self.peers.clear();
        for chunk in all.chunks_exact(SLOT) {
            names.extend_from_slice(&chunk[..32]);
            let mut n = [0u8; 32];
            n.copy_from_slice(&chunk[32..64]);
            let mut s = [0u8; SECRET_LEN];
            s.copy_from_slice(&chunk[64..]);
            self.peers.push((EndpointName(n).to_addr(), s));
        }
        self.secret = secret;
        if let Some(s) = sock {
            self.probe = s
                .local_addr()
                .and_then(|a| UdpSocket::bind(SocketAddr::new(a.ip(), 0)))
                .and_then(|p| p.set_nonblocking(true).map(|()| p))
                .ok();
            if let Ok(watch) = s.try_clone() {
                let spawned = std::thread::Builder::new()
                    .name("ramp job-end notices".into())
                    .spawn(move || watch_notices(watch, secret));
                if spawned.is_ok() {
                    self.sock = Some(s);
                }
            }
        }
        Ok(names)
    }

    /// Tells every other rank that the job ends; true when all acknowledged.
    fn notify_all(&self, code: i32) -> bool {
        let Some(sock) = &self.sock else {
            return false;
        };
        let me = self.inner.rank();
        // (rank, control address, the notice for it, its secret)
        let mut pending: Vec<(usize, SocketAddr, Vec<u8>, Secret)> = Vec::new();
        for (r, (addr, secret)) in self.peers.iter().enumerate() {
            if r == me {
                continue;
            }
            let Some(a) = addr else {
                return false;
            };
            let mut msg = Vec::with_capacity(NOTICE_LEN);
            msg.extend_from_slice(NOTICE);
            msg.extend_from_slice(secret);
            msg.extend_from_slice(&(code as u32).to_be_bytes());
            msg.extend_from_slice(&(me as u32).to_be_bytes());
            pending.push((r, *a, msg, *secret));
        }
        // The watcher thread owns the receiving side; acknowledgements come
        // to a socket of our own.
        let Ok(ack_sock) = sock
            .local_addr()
            .and_then(|a| UdpSocket::bind(SocketAddr::new(a.ip(), 0)))
        else {
            return false;
        };
        let _ = ack_sock.set_read_timeout(Some(Duration::from_millis(10)));
        let deadline = real_now().plus(ACK_WAIT);
        let mut buf = [0u8; 64];
        while !pending.is_empty() && real_now() < deadline {
            for (_, a, msg, _) in &pending {
                let _ = ack_sock.send_to(msg, a);
            }
            let round = real_now().plus(20 * MILLIS);
            while !pending.is_empty() && real_now() < round {
                let Ok((n, _)) = ack_sock.recv_from(&mut buf) else {
                    continue;
                };
                if n == ACK_LEN && &buf[..8] == ACK {
                    let s = &buf[8..8 + SECRET_LEN];
                    let r = &buf[8 + SECRET_LEN..ACK_LEN];
                    let r = u32::from_be_bytes([r[0], r[1], r[2], r[3]]) as usize;
                    pending.retain(|(p, _, _, secret)| !(*p == r && secret[..] == *s));
                }
            }
        }
        if pending.is_empty() {
            Clock::Real.sleep(AFTER_ACKS);
            true
        } else {
            false
        }
    }
}

/// The control socket's thread: a notice of this job is acknowledged and
/// ends this process with 0 (the exiting rank's code is the job's).
fn watch_notices(sock: UdpSocket, secret: Secret) {
    let mut buf = [0u8; 64];
    loop {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if is_probe_for(&buf[..n], &secret) {
            let me = super::rank().unwrap_or(0) as u32;
            let _ = sock.send_to(&signed(PONG, &secret, me), from);
            continue;
        }
        if !is_notice_for(&buf[..n], &secret) {
            continue;
        }
        let me = super::rank().unwrap_or(0) as u32;
        let ack = signed(ACK, &secret, me);
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // Leave the launcher properly before the acknowledgement lets the
        // exiting rank go (PMIx: a client gone without PMIx_Finalize makes
        // Slurm cancel the step, and srun says 137).
        super::finalize_launcher();
        let _ = sock.send_to(&ack, from);
        // Not end_process: the main thread may hold the AM layer's locks.
        if let Some(cb) = super::EXIT_CALLBACK.lock().take() {
            cb(0);
        }
        if let Some(k) = super::KILL.lock().take() {
            k(0);
        }
        std::process::exit(0);
    }
}

/// Whether `msg` is a job-end notice carrying this rank's secret.
fn is_notice_for(msg: &[u8], secret: &Secret) -> bool {
    msg.len() == NOTICE_LEN && &msg[..8] == NOTICE && same_secret(&msg[8..8 + SECRET_LEN], secret)
}

/// Whether `msg` is a PING carrying this rank's secret.
fn is_probe_for(msg: &[u8], secret: &Secret) -> bool {
    msg.len() == ACK_LEN && &msg[..8] == PING && same_secret(&msg[8..8 + SECRET_LEN], secret)
}

/// Compared without an early exit, so timing tells nothing about the secret.
fn same_secret(got: &[u8], secret: &Secret) -> bool {
    got.len() == SECRET_LEN && got.iter().zip(secret).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}

/// A PING, PONG or acknowledgement: magic, a secret, a rank.
fn signed(magic: &[u8; 8], secret: &Secret, rank: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(ACK_LEN);
    m.extend_from_slice(magic);
    m.extend_from_slice(secret);
    m.extend_from_slice(&rank.to_be_bytes());
    m
}

/// Probes the other ranks while this one waits in a collective: wraps
/// `progress`, and ends the job (through the launcher's abort) when a rank
/// has not answered for the peer timeout.
struct Prober<'a> {
    probe: &'a UdpSocket,
    peers: &'a [(Option<SocketAddr>, Secret)],
    heard: &'a mut Vec<Instant>,
    me: usize,
    timeout: Nanos,
    last_probe: Option<Instant>,
}

impl Prober<'_> {
    /// The first rank silent for the timeout, after sending the PINGs due
    /// and reading the PONGs that came.
    fn dead_rank(&mut self) -> Option<usize> {
        let now = real_now();
        let mut buf = [0u8; 64];
        while let Ok((n, _)) = self.probe.recv_from(&mut buf) {
            if n != ACK_LEN || &buf[..8] != PONG {
                continue;
            }
            let r = &buf[8 + SECRET_LEN..ACK_LEN];
            let r = u32::from_be_bytes([r[0], r[1], r[2], r[3]]) as usize;
            if let Some((_, secret)) = self.peers.get(r) {
                if same_secret(&buf[8..8 + SECRET_LEN], secret) {
                    self.heard[r] = now;
                }
            }
        }
        if self.last_probe.is_none_or(|t| now.since(t) >= PROBE_EVERY) {
            self.last_probe = Some(now);
            for (r, (addr, secret)) in self.peers.iter().enumerate() {
                if let (Some(a), true) = (addr, r != self.me) {
                    let _ = self.probe.send_to(&signed(PING, secret, r as u32), a);
                }
            }
        }
        (0..self.peers.len()).find(|&r| {
            r != self.me && self.peers[r].0.is_some() && now.since(self.heard[r]) > self.timeout
        })
    }
}

impl Notifying {
    /// Runs a collective of the launcher while probing the other ranks.
    fn probing<T>(
        &mut self,
        progress: &mut Progress<'_>,
        op: impl FnOnce(&mut dyn Bootstrap, &mut Progress<'_>) -> io::Result<T>,
    ) -> io::Result<T> {
        let Some(probe) = &self.probe else {
            return op(&mut *self.inner, progress);
        };
        let timeout = super::config()
            .map(|c| c.proto.peer_timeout)
            .unwrap_or(10_000 * MILLIS);
        let now = real_now();
        self.heard.clear();
        self.heard.resize(self.peers.len(), now);
        let me = self.inner.rank();
        let mut prober = Prober {
            probe,
            peers: &self.peers,
            heard: &mut self.heard,
            me,
            timeout,
            last_probe: None,
        };
        let mut dead = None;
        let mut wrapped = |fd: Option<std::os::fd::RawFd>| {
            if dead.is_none() {
                dead = prober.dead_rank();
            }
            if let Some(r) = dead {
                eprintln!(
                    "ramp: rank {me}: rank {r} stopped answering for {} ms while the job \
                     waited in a collective (it died?); ending the job with {DIED}",
                    timeout / MILLIS
                );
                // Each survivor finds the death itself and ends with the
                // same code, so the launcher's status is 137 whether or not
                // it ends the others (srun without -K does not).
                super::end_process(DIED);
            }
            progress(fd)
        };
        op(&mut *self.inner, &mut wrapped)
    }
}

impl Bootstrap for Notifying {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        if !self.names_done && data.len() == 32 {
            return self.names_allgather(data, progress);
        }
        self.probing(progress, |inner, p| inner.allgather(data, p))
    }

    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.probing(progress, |inner, p| inner.barrier(p))
    }

    fn getenv_master(&self, key: &str) -> Option<String> {
        self.inner.getenv_master(key)
    }

    fn master_env(&self) -> Vec<(String, String)> {
        self.inner.master_env()
    }

    fn finalize(&mut self, code: i32) -> io::Result<()> {
        if code != 0 && (self.inner.size() == 1 || self.notify_all(code)) {
            return self.inner.finalize(0);
        }
        self.inner.finalize(code)
    }

    fn abort(&mut self, code: i32, msg: &str) {
        self.inner.abort(code, msg)
    }

    fn job_id(&self) -> u64 {
        self.inner.job_id()
    }

    fn take_kill(&mut self) -> Option<i32> {
        self.inner.take_kill()
    }

    fn share_job_key(&mut self, progress: &mut Progress<'_>) -> io::Result<Option<String>> {
        self.inner.share_job_key(progress)
    }

    fn depth(&self) -> Option<u32> {
        self.inner.depth()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_notice_with_the_receivers_secret_counts() {
        let secret = [7u8; SECRET_LEN];
        let mut good = NOTICE.to_vec();
        good.extend_from_slice(&secret);
        good.extend_from_slice(&3u32.to_be_bytes());
        good.extend_from_slice(&1u32.to_be_bytes());
        assert!(is_notice_for(&good, &secret));
        // the job id (or anything else) in place of the secret: ignored
        for i in 8..8 + SECRET_LEN {
            let mut forged = good.clone();
            forged[i] ^= 1;
            assert!(!is_notice_for(&forged, &secret), "byte {i} flipped");
        }
        assert!(!is_notice_for(&good[..NOTICE_LEN - 1], &secret));
        let mut longer = good.clone();
        longer.push(0);
        assert!(!is_notice_for(&longer, &secret));
        let mut ack = good.clone();
        ack[..8].copy_from_slice(ACK);
        assert!(!is_notice_for(&ack, &secret));
    }

    #[test]
    fn only_a_ping_with_the_receivers_secret_is_answered() {
        let secret = [9u8; SECRET_LEN];
        let ping = signed(PING, &secret, 2);
        assert!(is_probe_for(&ping, &secret));
        for i in 0..8 + SECRET_LEN {
            let mut forged = ping.clone();
            forged[i] ^= 1;
            assert!(!is_probe_for(&forged, &secret), "byte {i} flipped");
        }
        assert!(!is_probe_for(&ping[..ACK_LEN - 1], &secret));
        // a notice or an acknowledgement is no probe, a probe no notice
        assert!(!is_probe_for(&signed(ACK, &secret, 2), &secret));
        assert!(!is_notice_for(&ping, &secret));
    }

    #[test]
    fn secrets_differ() {
        assert_ne!(new_secret().unwrap(), new_secret().unwrap());
    }
}
