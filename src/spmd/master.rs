//! The master of ramp's local launcher: starts the workers (fork/exec on
//! this host, or through a wrapper command such as `ip netns exec`), serves
//! their control connections (names, barriers, all-gathers, exit:
//! `control`), routes their output to the terminal (`output`), and ends
//! the job with the right code. A worker that dies takes the job down with
//! a clear message.

use crate::time::{Instant, Nanos, MILLIS};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, Command, ExitStatus, Stdio};

mod control;
mod ending;
mod output;

pub use super::spawn::{ExternalJob, Spawner};

use super::frame::FrameReader;
use crate::sys as os;
use output::{OutputPipe, PipeSrc};

/// Environment variables that make a process a worker of a local job
/// (named, read and checked in `config`).
pub use crate::config::{SPMD_MASTER as ENV_MASTER, SPMD_RANK as ENV_RANK, SPMD_SIZE as ENV_SIZE};

/// How long workers get to finish on their own after one called exit(0).
const EXIT_GRACE: Nanos = 5_000 * MILLIS;

/// What to run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub nproc: usize,
    pub program: String,
    pub args: Vec<String>,
    /// Prefix every output line with "[rank] ".
    pub label_output: bool,
    /// Route worker output through the master (else workers inherit it).
    pub route_output: bool,
    /// Network depth handed to every worker.
    pub depth: u32,
    /// Address workers use to reach the master (default 127.0.0.1).
    pub master_ip: Option<IpAddr>,
    /// A command put before the program, with `{rank}` replaced
    /// (e.g. `ip netns exec ramp{rank}`).
    pub wrap: Option<Vec<String>>,
    /// Variables added to every worker's environment.
    pub extra_env: Vec<(String, String)>,
    /// The job's exit code when a rank dies without SPMDExit (killed by a
    /// signal, or a non-zero exit): None, ramp-run's rule (the rank's code,
    /// 128 + signal); Some(255) in the AMUDP master form, as AMUDP's master
    /// exits with -1 when it loses a worker.
    pub lost_rank_code: Option<i32>,
    /// How the workers are started (default: fork/exec here).
    pub spawner: Spawner,
}

impl JobSpec {
    /// A job of `nproc` copies of `program`; its network depth is
    /// `RAMP_NETWORK_DEPTH` when set (and valid), else 128.
    pub fn new(nproc: usize, program: String, args: Vec<String>) -> JobSpec {
        let depth = crate::config::global()
            .ok()
            .and_then(|c| c.spmd.network_depth)
            .unwrap_or(super::DEFAULT_DEPTH);
        JobSpec {
            nproc,
            program,
            args,
            label_output: false,
            route_output: true,
            depth,
            master_ip: None,
            wrap: None,
            extra_env: Vec::new(),
            lost_rank_code: None,
            spawner: Spawner::Local,
        }
    }
}

struct Worker {
    rank: usize,
    child: Option<Child>,
    pid: Option<u32>,
    stream: Option<TcpStream>,
    reader: FrameReader,
    gather: Option<(u32, Vec<u8>)>,
    /// It sent Exit or Abort: its end is expected.
    said_exit: bool,
    /// It connected and said hello (called start-up) at some point.
    joined: bool,
    /// Started by an external spawner: not our child; its end is its
    /// control connection's.
    external: bool,
    status: Option<ExitStatus>,
}

/// The master's environment, as sent to every worker (NUL-separated).
fn env_blob() -> Vec<u8> {
    let mut b = Vec::new();
    for (k, v) in std::env::vars_os() {
        b.extend_from_slice(k.as_encoded_bytes());
        b.push(b'=');
        b.extend_from_slice(v.as_encoded_bytes());
        b.push(0);
    }
    b
}

/// Runs a whole job; returns the code the launcher exits with.
pub fn run_job(spec: &JobSpec) -> i32 {
    let code = match Master::start(spec) {
        Ok(mut m) => m.serve(),
        Err(e) => {
            eprintln!("ramp: cannot start the job: {e}");
            1
        }
    };
    // workers killed (kill -9) leave their shared-memory files behind
    crate::am::remove_stale_shm_files();
    code
}

struct Master {
    /// Processes an external spawner left to us (ssh clients, the custom
    /// command): one failing before every worker joined fails the job.
    helpers: Vec<Child>,
    listener: TcpListener,
    workers: Vec<Worker>,
    pipes: Vec<OutputPipe>,
    label: bool,
    depth: u32,
    job_id: u64,
    /// The secret each worker's Hello must carry (`RAMP_SPMD_TOKEN` in its
    /// environment): the port is open to every local user, and the answer
    /// carries this process's environment.
    token: [u8; crate::config::SPMD_TOKEN_LEN],
    env: Vec<u8>,
    job_code: Option<i32>,
    lost_rank_code: Option<i32>,
    /// When the job ends by Kill frames / signals.
    stopping: Option<(Instant, u8)>,
    exit_grace_until: Option<Instant>,
    pending: HashMap<RawFd, (TcpStream, FrameReader, Instant)>,
}

impl Master {
    fn start(spec: &JobSpec) -> io::Result<Master> {
        if spec.nproc == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the job needs at least one process",
            ));
        }
        // every rank maps every rank: a larger job could not start, and
        // would fork that many processes first
        if spec.nproc > crate::am::MAX_TRANSLATIONS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} processes: an endpoint maps at most {} (AM_MaxNumTranslations)",
                    spec.nproc,
                    crate::am::MAX_TRANSLATIONS
                ),
            ));
        }
        let ip = spec.master_ip.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let bind_ip = if ip.is_loopback() {
            ip
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        let listener = TcpListener::bind(SocketAddr::new(bind_ip, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let master_addr = SocketAddr::new(ip, port);
        // shared by the workers (their network pid and tags derive from
        // it): random, so that two jobs on one host never share it
        let job_id = u64::from_ne_bytes(super::random_bytes()?) | 1;
        // out of band: in the workers' environment, never on their argv
        let job_key = super::job_key_for_workers()?;
        let token = super::random_bytes::<{ crate::config::SPMD_TOKEN_LEN }>()?;
        let token_hex = super::pmi_wire::hex(&token);
        let mut workers = Vec::new();
        let mut pipes = Vec::new();
        let local_ranks = match spec.spawner {
            Spawner::Local => spec.nproc,
            Spawner::External(_) => 0,
        };
        for rank in 0..local_ranks {
            let mut argv: Vec<String> = Vec::new();
            if let Some(w) = &spec.wrap {
                argv.extend(w.iter().map(|t| t.replace("{rank}", &rank.to_string())));
            }
            argv.push(spec.program.clone());
            argv.extend(spec.args.iter().cloned());
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .env(ENV_MASTER, master_addr.to_string())
                .env(ENV_RANK, rank.to_string())
                .env(ENV_SIZE, spec.nproc.to_string())
                .env(crate::config::SPMD_TOKEN, &token_hex)
                .stdin(Stdio::null());
            if let Some(k) = &job_key {
                cmd.env(crate::config::JOB_KEY, k);
            }
            for (k, v) in &spec.extra_env {
                cmd.env(k, v);
            }
            if spec.route_output {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    for w in workers.iter_mut() {
                        let w: &mut Worker = w;
                        if let Some(c) = w.child.as_mut() {
                            let _ = c.kill();
                            let _ = c.wait();
                        }
                    }
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot start {:?}: {e}", argv[0]),
                    ));
                }
            };
            if let Some(o) = child.stdout.take() {
                pipes.push(OutputPipe {
                    rank,
                    src: PipeSrc::Out(o),
                    partial: Vec::new(),
                });
            }
            if let Some(e) = child.stderr.take() {
                pipes.push(OutputPipe {
                    rank,
                    src: PipeSrc::Err(e),
                    partial: Vec::new(),
                });
            }
            workers.push(Worker {
                rank,
                pid: Some(child.id()),
                child: Some(child),
                stream: None,
                reader: FrameReader::default(),
                gather: None,
                said_exit: false,
                joined: false,
                external: false,
                status: None,
            });
        }
        let helpers = match &spec.spawner {
            Spawner::Local => Vec::new(),
            Spawner::External(start) => {
                let mut env = vec![
                    (ENV_MASTER.to_string(), master_addr.to_string()),
                    (ENV_SIZE.to_string(), spec.nproc.to_string()),
                    (crate::config::SPMD_TOKEN.to_string(), token_hex.clone()),
                ];
                if let Some(k) = &job_key {
                    env.push((crate::config::JOB_KEY.to_string(), k.clone()));
                }
                env.extend(spec.extra_env.iter().cloned());
                let mut argv = vec![spec.program.clone()];
                argv.extend(spec.args.iter().cloned());
                for rank in 0..spec.nproc {
                    workers.push(Worker {
                        rank,
                        pid: None,
                        child: None,
                        stream: None,
                        reader: FrameReader::default(),
                        gather: None,
                        said_exit: false,
                        joined: false,
                        external: true,
                        status: None,
                    });
                }
                start(&ExternalJob {
                    nproc: spec.nproc,
                    argv,
                    env,
                })?
            }
        };
        Ok(Master {
            helpers,
            listener,
            workers,
            pipes,
            label: spec.label_output,
            depth: spec.depth,
            job_id,
            token,
            env: env_blob(),
            job_code: None,
            lost_rank_code: spec.lost_rank_code,
            stopping: None,
            exit_grace_until: None,
            pending: HashMap::new(),
        })
    }

    fn all_ended(&self) -> bool {
        self.workers.iter().all(|w| {
            w.status.is_some()
                || (w.child.is_none() && w.stream.is_none() && (w.joined || !w.external))
        })
    }

    fn serve(&mut self) -> i32 {
        loop {
            let mut fds = vec![self.listener.as_raw_fd()];
            let pend: Vec<RawFd> = self.pending.keys().copied().collect();
            fds.extend(&pend);
            let wfd: Vec<(usize, RawFd)> = self
                .workers
                .iter()
                .filter_map(|w| w.stream.as_ref().map(|s| (w.rank, s.as_raw_fd())))
                .collect();
            fds.extend(wfd.iter().map(|x| x.1));
            let pfd: Vec<RawFd> = self.pipes.iter().map(|p| p.fd()).collect();
            fds.extend(&pfd);
            let ready = os::poll_fds(&fds, 50);
            let mut i = 0;
            if ready[i] {
                self.accept();
            }
            i += 1;
            for fd in pend {
                if ready[i] {
                    self.hello(fd);
                }
                i += 1;
            }
            for (rank, _) in wfd {
                if ready[i] {
                    self.serve_worker(rank);
                }
                i += 1;
            }
            let mut closed = Vec::new();
            for (k, _) in pfd.iter().enumerate() {
                if ready[i + k] && !self.pipes[k].pump(self.label) {
                    closed.push(k);
                }
            }
            for k in closed.into_iter().rev() {
                self.pipes.remove(k);
            }
            self.reap();
            self.timers();
            if self.all_ended() {
                // what is still in the pipes comes out before the end
                while !self.pipes.is_empty() {
                    let pfd: Vec<RawFd> = self.pipes.iter().map(|p| p.fd()).collect();
                    let ready = os::poll_fds(&pfd, 200);
                    if !ready.iter().any(|&r| r) {
                        break;
                    }
                    let mut closed = Vec::new();
                    for (k, r) in ready.iter().enumerate() {
                        if *r && !self.pipes[k].pump(self.label) {
                            closed.push(k);
                        }
                    }
                    for k in closed.into_iter().rev() {
                        self.pipes.remove(k);
                    }
                }
                self.end_helpers();
                return self.job_code.unwrap_or(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AMUDP master form (`./prog N`) and ramp-run both start jobs here:
    /// more ranks than a translation table holds are refused before a
    /// listener is opened or a process started.
    #[test]
    fn a_job_larger_than_a_translation_table_starts_nothing() {
        let n = crate::am::MAX_TRANSLATIONS + 1;
        let spec = JobSpec::new(n, "/nonexistent/never-started".into(), vec![]);
        let e = Master::start(&spec).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("AM_MaxNumTranslations"), "{e}");
        assert!(e.to_string().contains(&n.to_string()), "{e}");
        // the same size is refused by the job's first exit code
        assert_eq!(run_job(&spec), 1);
    }
}
