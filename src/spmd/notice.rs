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

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::bootstrap::{Bootstrap, Progress};
use crate::am::EndpointName;

const NOTICE: &[u8; 8] = b"rampEXIT";
const ACK: &[u8; 8] = b"rampEACK";
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
    use std::io::Read;
    let mut s = [0u8; SECRET_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut s)?;
    Ok(s)
}
/// How long an exiting rank waits for every other rank's acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(3);
/// Between the last acknowledgement and this process's own exit, so that
/// the others have ended before the launcher learns of our exit (with
/// `srun -K` it would signal the survivors).
const AFTER_ACKS: Duration = Duration::from_millis(100);

/// A bootstrap whose ranks can tell each other that the job ends.
pub(super) struct Notifying {
    inner: Box<dyn Bootstrap>,
    /// This rank's control socket, once the names are exchanged.
    sock: Option<UdpSocket>,
    /// Every rank's control address (None: that rank has none) and secret.
    peers: Vec<(Option<SocketAddr>, Secret)>,
    names_done: bool,
}

impl Notifying {
    pub(super) fn new(inner: Box<dyn Bootstrap>) -> Notifying {
        Notifying {
            inner,
            sock: None,
            peers: Vec::new(),
            names_done: false,
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
        if let Some(s) = sock {
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
        let deadline = Instant::now() + ACK_WAIT;
        let mut buf = [0u8; 64];
        while !pending.is_empty() && Instant::now() < deadline {
            for (_, a, msg, _) in &pending {
                let _ = ack_sock.send_to(msg, a);
            }
            let round = Instant::now() + Duration::from_millis(20);
            while !pending.is_empty() && Instant::now() < round {
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
            std::thread::sleep(AFTER_ACKS);
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
        if !is_notice_for(&buf[..n], &secret) {
            continue;
        }
        let me = super::rank().unwrap_or(0) as u32;
        let mut ack = Vec::with_capacity(ACK_LEN);
        ack.extend_from_slice(ACK);
        ack.extend_from_slice(&secret);
        ack.extend_from_slice(&me.to_be_bytes());
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
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

/// Whether `msg` is a job-end notice carrying this rank's secret (compared
/// without an early exit, so timing tells nothing about the secret).
fn is_notice_for(msg: &[u8], secret: &Secret) -> bool {
    if msg.len() != NOTICE_LEN || &msg[..8] != NOTICE {
        return false;
    }
    let diff = msg[8..8 + SECRET_LEN]
        .iter()
        .zip(secret)
        .fold(0u8, |d, (a, b)| d | (a ^ b));
    diff == 0
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
        self.inner.allgather(data, progress)
    }

    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.inner.barrier(progress)
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

    fn kv_put(&mut self, key: &str, value: &str, progress: &mut Progress<'_>) -> io::Result<()> {
        self.inner.kv_put(key, value, progress)
    }

    fn kv_get(&mut self, key: &str, progress: &mut Progress<'_>) -> io::Result<Option<String>> {
        self.inner.kv_get(key, progress)
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
    fn secrets_differ() {
        assert_ne!(new_secret().unwrap(), new_secret().unwrap());
    }
}
