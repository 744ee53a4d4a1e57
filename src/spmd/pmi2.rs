//! A client of the PMI-2 wire protocol, as Slurm's `srun --mpi=pmi2` and
//! Hydra's `mpiexec` serve it.
//!
//! The first exchange is in PMI-1 form (Slurm reads it to learn which
//! version the task speaks); everything after it is a PMI-2 message, a
//! 6-character length then `cmd=NAME;key=value;...;`:
//!
//! | request | reply |
//! |---|---|
//! | `cmd=init pmi_version=2 pmi_subversion=0\n` (PMI-1 form) | `cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n` |
//! | `cmd=fullinit;pmijobid=J;pmirank=R;threaded=FALSE;` | `cmd=fullinit-response;rc=0;rank=R;size=N;appnum=A;debugged=FALSE;pmiverbose=FALSE;...` |
//! | `cmd=job-getid;` | `cmd=job-getid-response;jobid=J;rc=0;` |
//! | `cmd=kvs-put;key=K;value=V;` | `cmd=kvs-put-response;rc=0;` |
//! | `cmd=kvs-fence;` | `cmd=kvs-fence-response;rc=0;` |
//! | `cmd=kvs-get;jobid=J;srcid=S;key=K;` | `cmd=kvs-get-response;found=TRUE;value=V;rc=0;` |
//! | `cmd=finalize;` | `cmd=finalize-response;rc=0;` |
//! | `cmd=abort;isworld=TRUE;exitcode=N;msg=M;message=M;` (Slurm) | none |
//! | `cmd=abort exitcode=N\n` (PMI-1 form, Hydra) | none: the job ends with N |
//!
//! (Confirmed against Slurm's `src/plugins/mpi/pmi2/{agent,client,pmi2}.c`,
//! MPICH's `src/pmi/maint/pmi-2.0.txt`, `src/pmi/src/pmi_v2.c` and Hydra
//! 4.0's `pmip_pmi_v2.c`/`pmiserv_pmi_v2.c`.) `pmijobid` is sent when the
//! launcher set `PMI_JOBID` (Slurm, which requires it); `pmirank` is
//! `PMI_ID` or else `PMI_RANK`. Slurm reads `isworld`/`msg` of an abort,
//! MPICH 4.1's Hydra `exitcode`/`message`; Hydra 4.0 has no PMI-2 abort
//! and stops with "Unrecognized PMI command: abort" (exit status 255), but
//! it reads each message in the wire version its first bytes show, so
//! without `PMI_JOBID` (not Slurm) the abort is sent as the PMI-1 line,
//! which every Hydra ends the job on with the given exit code.
//!
//! A fence is a collective in Slurm but returns at once in Hydra, whose
//! `kvs-get` instead waits until every rank has fenced as often as the
//! asker. So a barrier is a fence followed by a get of a key nobody puts
//! (MPICH's own PMI-2 barrier does the same), which is correct under both.

use std::io;

use super::bootstrap::{Bootstrap, Progress};
use super::pmi_wire::{
    bad_reply, connect_env, env_num, format_v1, format_v2, frame_v2, hash64, idle, invalid,
    kvs_allgather, kvs_share_job_key, parse_v1, parse_v2, text_v2, Conn, Kvs, Msg, Stream,
    MAX_CHUNK_HEX,
};

/// The key the barrier asks for: never put, so the reply comes only once
/// every rank has fenced.
const BARRIER_KEY: &str = "ramp-barrier-none";

/// A connected, initialised PMI-2 client.
pub struct Pmi2 {
    conn: Conn,
    rank: usize,
    size: usize,
    appnum: i64,
    jobid: String,
    seq: u64,
    job_id: u64,
    finalized: bool,
    /// Abort with a PMI-1 line (Hydra), not a PMI-2 message (Slurm).
    v1_abort: bool,
}

impl Pmi2 {
    /// Connects as `PMI_FD` or `PMI_PORT` say and initialises.
    pub fn connect_env(progress: &mut Progress<'_>) -> io::Result<Pmi2> {
        let (stream, _tcp) = connect_env()?;
        let pmirank = match env_num("PMI_ID")? {
            Some(id) => Some(id),
            None => env_num("PMI_RANK")?,
        };
        let pmijobid = std::env::var("PMI_JOBID").ok();
        Pmi2::init(stream, pmirank, pmijobid.as_deref(), progress)
    }

    fn init(
        stream: Stream,
        pmirank: Option<i64>,
        pmijobid: Option<&str>,
        progress: &mut Progress<'_>,
    ) -> io::Result<Pmi2> {
        let mut conn = Conn::new(stream)?;
        let line = format_v1("init", &[("pmi_version", "2"), ("pmi_subversion", "0")])?;
        conn.send("init", line.as_bytes(), progress)?;
        let m = parse_v1("init", &conn.recv_line("init", progress)?)?;
        m.expect("init", "response_to_init")?;
        if let Some(v) = m.get("pmi_version") {
            if v.trim() != "2" {
                return Err(bad_reply(
                    "init",
                    &m.raw,
                    "server does not speak PMI version 2",
                ));
            }
        }
        let pmirank = pmirank.ok_or_else(|| {
            invalid("PMI-2: the launcher set neither PMI_RANK nor PMI_ID".to_string())
        })?;
        let mut p = Pmi2 {
            conn,
            rank: 0,
            size: 0,
            appnum: 0,
            jobid: String::new(),
            seq: 0,
            job_id: 0,
            finalized: false,
            v1_abort: pmijobid.is_none(),
        };
        let r = pmirank.to_string();
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if let Some(j) = pmijobid {
            pairs.push(("pmijobid", j));
        }
        pairs.push(("pmirank", &r));
        pairs.push(("threaded", "FALSE"));
        let m = p.call("fullinit", &pairs, progress)?;
        let rank = m.need_num("fullinit", "rank")?;
        let size = m.need_num("fullinit", "size")?;
        if size < 1 || rank < 0 || rank >= size {
            return Err(bad_reply(
                "fullinit",
                &m.raw,
                &format!("rank {rank} is not within size {size}"),
            ));
        }
        p.rank = rank as usize;
        p.size = size as usize;
        p.appnum = match m.get("appnum") {
            Some(_) => m.need_num("fullinit", "appnum")?,
            None => 0,
        };
        let m = p.call("job-getid", &[], progress)?;
        p.jobid = m.need("job-getid", "jobid")?.to_string();
        if p.jobid.is_empty() {
            return Err(bad_reply("job-getid", &m.raw, "empty jobid"));
        }
        p.job_id = hash64(&p.jobid);
        Ok(p)
    }

    /// The application number (MPMD programs count up from 0).
    #[cfg(test)]
    pub fn appnum(&self) -> i64 {
        self.appnum
    }

    /// Sends `cmd=command;...` and waits (with `progress`) for
    /// `command-response` with `rc=0`.
    fn call(
        &mut self,
        command: &str,
        pairs: &[(&str, &str)],
        progress: &mut Progress<'_>,
    ) -> io::Result<Msg> {
        if self.finalized {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("PMI {command}: already finalized"),
            ));
        }
        let msg = format_v2(command, pairs)?;
        self.conn.send(command, &msg, progress)?;
        let body = self.conn.recv_v2(command, progress)?;
        let m = parse_v2(command, &body)?;
        m.expect(command, &format!("{command}-response"))?;
        Ok(m)
    }

    fn fence(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.call("kvs-fence", &[], progress)?;
        Ok(())
    }

    fn kvs_get(
        &mut self,
        key: &str,
        src: &str,
        progress: &mut Progress<'_>,
    ) -> io::Result<Option<String>> {
        let jobid = self.jobid.clone();
        let m = self.call(
            "kvs-get",
            &[("jobid", &jobid), ("srcid", src), ("key", key)],
            progress,
        )?;
        let found = m.need("kvs-get", "found")?;
        if found.eq_ignore_ascii_case("true") {
            Ok(Some(m.need("kvs-get", "value")?.to_string()))
        } else if found.eq_ignore_ascii_case("false") {
            Ok(None)
        } else {
            Err(bad_reply(
                "kvs-get",
                &m.raw,
                "found= is neither TRUE nor FALSE",
            ))
        }
    }
}

impl Kvs for Pmi2 {
    fn put(&mut self, key: &str, val: &str, progress: &mut Progress<'_>) -> io::Result<()> {
        self.call("kvs-put", &[("key", key), ("value", val)], progress)?;
        Ok(())
    }

    fn exchange(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.fence(progress)
    }

    fn get(&mut self, key: &str, src: usize, progress: &mut Progress<'_>) -> io::Result<String> {
        let src = src.to_string();
        self.kvs_get(key, &src, progress)?.ok_or_else(|| {
            invalid(format!(
                "PMI kvs-get: key {key} (from rank {src}) not found after the fence"
            ))
        })
    }

    fn chunk_hex(&self) -> usize {
        MAX_CHUNK_HEX
    }
}

impl Bootstrap for Pmi2 {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        let seq = self.seq;
        self.seq += 1;
        if data.is_empty() {
            self.barrier(progress)?;
            return Ok(Vec::new());
        }
        let (rank, size) = (self.rank, self.size);
        kvs_allgather(self, seq, rank, size, data, progress)
    }

    fn share_job_key(&mut self, progress: &mut Progress<'_>) -> io::Result<Option<String>> {
        let rank = self.rank;
        kvs_share_job_key(self, rank, progress)
    }

    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.fence(progress)?;
        self.kvs_get(BARRIER_KEY, "-1", progress)?;
        Ok(())
    }

    fn getenv_master(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }

    fn finalize(&mut self, code: i32) -> io::Result<()> {
        if self.finalized {
            return Ok(());
        }
        if code != 0 {
            // SPMDExit with a failure ends the whole job with that code; PMI
            // has no other way to say so (ranks still waiting would hang).
            self.abort(code, "exit with a non-zero code");
            return Ok(());
        }
        self.call("finalize", &[], &mut idle)?;
        self.finalized = true;
        Ok(())
    }

    fn abort(&mut self, code: i32, msg: &str) {
        if self.finalized {
            return;
        }
        if self.v1_abort {
            // Hydra tells the versions apart message by message, and
            // Hydra 4.0 has no PMI-2 abort ("Unrecognized PMI command").
            let line = format!("cmd=abort exitcode={code}\n");
            self.conn.send_now(line.as_bytes());
            self.conn.linger(2000);
            return;
        }
        let text = text_v2(msg);
        let body = format!("cmd=abort;isworld=TRUE;exitcode={code};msg={text};message={text};");
        self.conn.send_now(&frame_v2(&body));
        // No lingering here (Hydra needs it, above): Slurm's step daemon
        // answers an abort by cancelling the step, and a task still waiting
        // then is killed (srun reports 137, not the code): the task ends
        // with `code` at once, its abort message already in the socket.
    }

    fn job_id(&self) -> u64 {
        self.job_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    fn read_v2(s: &mut UnixStream) -> String {
        let mut len = [0u8; 6];
        s.read_exact(&mut len).unwrap();
        let n: usize = String::from_utf8_lossy(&len).trim().parse().unwrap();
        let mut body = vec![0u8; n];
        s.read_exact(&mut body).unwrap();
        String::from_utf8(body).unwrap()
    }

    /// A scripted server: the PMI-1 init, then PMI-2 exchanges.
    fn server(script: Vec<(&'static str, String)>) -> (UnixStream, std::thread::JoinHandle<()>) {
        let (a, mut b) = UnixStream::pair().unwrap();
        let h = std::thread::spawn(move || {
            let mut line = Vec::new();
            let mut c = [0u8; 1];
            while c[0] != b'\n' {
                b.read_exact(&mut c).unwrap();
                line.push(c[0]);
            }
            assert_eq!(line, b"cmd=init pmi_version=2 pmi_subversion=0\n");
            b.write_all(b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n")
                .unwrap();
            for (expect, reply) in script {
                let got = read_v2(&mut b);
                assert!(got.starts_with(expect), "got {got:?}, expected {expect:?}");
                b.write_all(&frame_v2(&reply)).unwrap();
            }
        });
        (a, h)
    }

    fn init_script() -> Vec<(&'static str, String)> {
        vec![
            (
                "cmd=fullinit;pmijobid=12.0;pmirank=1;threaded=FALSE;",
                "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=2;\
                 appnum=-1;debugged=FALSE;pmiverbose=FALSE;"
                    .to_string(),
            ),
            (
                "cmd=job-getid;",
                "cmd=job-getid-response;rc=0;jobid=12.0;".to_string(),
            ),
        ]
    }

    #[test]
    fn allgather_barrier_finalize() {
        let mut s = init_script();
        s.push((
            "cmd=kvs-put;key=ramp-ag-0-1;value=0707;",
            "cmd=kvs-put-response;rc=0;".into(),
        ));
        s.push(("cmd=kvs-fence;", "cmd=kvs-fence-response;rc=0;".into()));
        s.push((
            "cmd=kvs-get;jobid=12.0;srcid=0;key=ramp-ag-0-0;",
            "cmd=kvs-get-response;rc=0;found=TRUE;value=0505;".into(),
        ));
        s.push(("cmd=kvs-fence;", "cmd=kvs-fence-response;rc=0;".into()));
        s.push((
            "cmd=kvs-get;jobid=12.0;srcid=-1;key=ramp-barrier-none;",
            "cmd=kvs-get-response;found=FALSE;rc=0;".into(),
        ));
        s.push(("cmd=finalize;", "cmd=finalize-response;rc=0;".into()));
        let (a, h) = server(s);
        let mut p = Pmi2::init(Stream::Unix(a), Some(1), Some("12.0"), &mut idle).unwrap();
        assert_eq!((p.rank(), p.size(), p.appnum()), (1, 2, -1));
        assert_eq!(p.job_id(), hash64("12.0"));
        assert_eq!(p.allgather(&[7, 7], &mut idle).unwrap(), vec![5, 5, 7, 7]);
        p.barrier(&mut idle).unwrap();
        p.finalize(0).unwrap();
        assert!(p.barrier(&mut idle).is_err());
        h.join().unwrap();
    }

    #[test]
    fn bad_replies_are_errors() {
        let mut s = init_script();
        s.push((
            "cmd=kvs-fence;",
            "cmd=kvs-fence-response;rc=3;errmsg=boom;".into(),
        ));
        let (a, h) = server(s);
        let mut p = Pmi2::init(Stream::Unix(a), Some(1), Some("12.0"), &mut idle).unwrap();
        let e = p.barrier(&mut idle).unwrap_err().to_string();
        assert!(
            e.contains("PMI kvs-fence") && e.contains("rc=3") && e.contains("boom"),
            "{e}"
        );
        h.join().unwrap();

        let s = vec![(
            "cmd=fullinit;",
            "cmd=fullinit-response;rc=0;rank=5;size=2;".to_string(),
        )];
        let (a, h) = server(s);
        let e = Pmi2::init(Stream::Unix(a), Some(1), None, &mut idle)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("PMI fullinit") && e.contains("rank 5"), "{e}");
        h.join().unwrap();
    }
}
