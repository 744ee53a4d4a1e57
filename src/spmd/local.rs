//! The worker side of ramp's local launcher: a TCP connection to the master
//! named by RAMP_SPMD_MASTER, over which this process introduces itself,
//! gathers, waits at barriers and reports its exit.

use std::io::{self, ErrorKind};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use super::bootstrap::{Bootstrap, Progress};
use super::frame::{u32_at, u64_at, write_frame, FrameReader, Kind};
use super::master::ENV_SIZE;

pub struct LocalWorker {
    stream: TcpStream,
    reader: FrameReader,
    rank: usize,
    size: usize,
    depth: u32,
    job_id: u64,
    env: Vec<(String, String)>,
    seq: u32,
    killed: Option<i32>,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, msg)
}

impl LocalWorker {
    /// Connects when this process was started by the local launcher
    /// (`RAMP_SPMD_MASTER` and the rest, read and checked by `config`).
    pub fn from_env() -> io::Result<Option<LocalWorker>> {
        let cfg = crate::config::global().map_err(|m| bad(m.to_string()))?;
        let (Some(addr), Some(size), Some(token)) =
            (cfg.spmd.master, cfg.spmd.size, cfg.spmd.token)
        else {
            // The configuration refuses a master without size and token.
            return Ok(None);
        };
        // no rank (the 'C' spawner and spawn functions start every worker
        // alike): the master assigns the next one
        let asked = cfg.spmd.rank.map_or(u32::MAX, |r| r as u32);
        let mut stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(30)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot reach the job's master at {addr}: {e}"),
                )
            })?;
        stream.set_nodelay(true)?;
        let mut hello = asked.to_be_bytes().to_vec();
        hello.extend_from_slice(&std::process::id().to_be_bytes());
        hello.extend_from_slice(&token);
        write_frame(&mut stream, Kind::Hello, &hello)?;
        let mut reader = FrameReader::default();
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let init = loop {
            if let Some((k, p)) = reader.next()? {
                if k != Kind::Init {
                    return Err(bad(format!("the master sent {k:?} instead of Init")));
                }
                break p;
            }
            if !reader.fill(&mut stream)? {
                return Err(bad(
                    "the master closed the connection during start-up".into()
                ));
            }
        };
        let got_size = u32_at(&init, 0)? as usize;
        if got_size != size {
            return Err(bad(format!(
                "the master says the job has {got_size} processes, {ENV_SIZE} says {size}"
            )));
        }
        let depth = u32_at(&init, 4)?;
        let job_id = u64_at(&init, 8)?;
        let rank = u32_at(&init, 16)? as usize;
        if rank >= size || (asked != u32::MAX && rank != asked as usize) {
            return Err(bad(format!(
                "the master gave rank {rank} (asked: {asked}, job of {size})"
            )));
        }
        let mut env: Vec<(String, String)> = init[20..]
            .split(|&b| b == 0)
            .filter(|kv| !kv.is_empty())
            .filter_map(|kv| {
                let s = String::from_utf8_lossy(kv);
                s.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        // Variables the program set itself before start-up (as AMUDP
        // programs do before the master spawns them) are visible too: under
        // ramp-run the launcher is another program, which never saw them.
        for (k, v) in std::env::vars() {
            if !env.iter().any(|(mk, _)| *mk == k) {
                env.push((k, v));
            }
        }
        stream.set_read_timeout(None)?;
        stream.set_nonblocking(true)?;
        Ok(Some(LocalWorker {
            stream,
            reader,
            rank,
            size,
            depth,
            job_id,
            env,
            seq: 0,
            killed: None,
        }))
    }

    /// Waits for the Gathered frame of `seq`, calling `progress` meanwhile.
    fn wait_gathered(&mut self, seq: u32, progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        self.wait_for(Kind::Gathered, seq, progress)
    }

    /// Waits for the frame `want` of `seq` (its payload after the sequence
    /// number), calling `progress` meanwhile.
    fn wait_for(
        &mut self,
        want: Kind,
        seq: u32,
        progress: &mut Progress<'_>,
    ) -> io::Result<Vec<u8>> {
        loop {
            if let Some((k, p)) = self.reader.next()? {
                match k {
                    k if k == want && u32_at(&p, 0)? == seq => return Ok(p[4..].to_vec()),
                    Kind::Kill => {
                        let code = u32_at(&p, 0).unwrap_or(0) as i32;
                        self.killed = Some(code);
                        return Err(io::Error::new(
                            ErrorKind::Interrupted,
                            "the job's master ended the job",
                        ));
                    }
                    other => {
                        return Err(bad(format!("unexpected {other:?} frame from the master")))
                    }
                }
            }
            if !self.reader.fill(&mut self.stream)? {
                return Err(io::Error::new(
                    ErrorKind::BrokenPipe,
                    "the job's master is gone",
                ));
            }
            if !self.reader.has_frame() {
                progress(Some(self.stream.as_raw_fd()));
            }
        }
    }
}

impl Bootstrap for LocalWorker {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        self.seq += 1;
        let mut p = self.seq.to_be_bytes().to_vec();
        p.extend_from_slice(data);
        self.stream.set_nonblocking(false)?;
        write_frame(&mut self.stream, Kind::Gather, &p)?;
        self.stream.set_nonblocking(true)?;
        let all = self.wait_gathered(self.seq, progress)?;
        if all.len() != data.len() * self.size {
            return Err(bad(format!(
                "all-gather of {} bytes per rank came back with {} bytes for {} ranks (ranks gave different lengths)",
                data.len(),
                all.len(),
                self.size
            )));
        }
        Ok(all)
    }

    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.allgather(&[], progress).map(|_| ())
    }

    fn getenv_master(&self, key: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn master_env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    fn finalize(&mut self, code: i32) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        write_frame(&mut self.stream, Kind::Exit, &(code as u32).to_be_bytes())
    }

    fn abort(&mut self, code: i32, msg: &str) {
        let mut p = (code as u32).to_be_bytes().to_vec();
        p.extend_from_slice(msg.as_bytes());
        let _ = self.stream.set_nonblocking(false);
        let _ = write_frame(&mut self.stream, Kind::Abort, &p);
    }

    fn job_id(&self) -> u64 {
        self.job_id
    }

    fn take_kill(&mut self) -> Option<i32> {
        self.killed.take()
    }

    fn depth(&self) -> Option<u32> {
        Some(self.depth)
    }

    fn control_fd(&self) -> Option<RawFd> {
        Some(self.stream.as_raw_fd())
    }

    /// Outside a collective the master sends nothing but Kill; the master
    /// gone (end of stream, or an error) ends this process too (with 1),
    /// as the job is over.
    fn end_ordered(&mut self) -> Option<i32> {
        let _ = self.stream.set_nonblocking(true);
        let open = self.reader.fill(&mut self.stream).unwrap_or(false);
        match self.reader.next() {
            Ok(Some((Kind::Kill, p))) => Some(u32_at(&p, 0).unwrap_or(0) as i32),
            Ok(Some((k, _))) => {
                eprintln!(
                    "ramp: rank {}: unexpected {k:?} frame from the master; ignored",
                    self.rank
                );
                None
            }
            Ok(None) if open => None,
            _ => {
                eprintln!("ramp: rank {}: the job's master is gone; ending", self.rank);
                Some(1)
            }
        }
    }
}
