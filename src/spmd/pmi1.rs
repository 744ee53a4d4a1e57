//! A client of the PMI-1 wire protocol (MPICH's "simple" PMI, as Hydra's
//! `mpiexec` and Slurm's `mpi/pmi2` plugin serve it), and [`from_env`],
//! which picks PMI-1 or PMI-2 from the environment.
//!
//! Exchanges used (request, reply; every reply may carry `rc=` and `msg=`,
//! a non-zero `rc` is an error):
//!
//! | request | reply |
//! |---|---|
//! | `cmd=initack pmiid=ID` (only with `PMI_PORT` and `PMI_ID`) | `cmd=initack`, then `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=D` |
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0` |
//! | `cmd=get_maxes` | `cmd=maxes kvsname_max=K keylen_max=L vallen_max=V` |
//! | `cmd=get_appnum` | `cmd=appnum appnum=A` |
//! | `cmd=get_my_kvsname` | `cmd=my_kvsname kvsname=NAME` |
//! | `cmd=put kvsname=NAME key=K value=V` | `cmd=put_result rc=0 msg=success` |
//! | `cmd=barrier_in` | `cmd=barrier_out` (when every rank is in) |
//! | `cmd=get kvsname=NAME key=K` | `cmd=get_result rc=0 msg=success value=V` |
//! | `cmd=finalize` | `cmd=finalize_ack` |
//! | `cmd=abort exitcode=N` | none: Hydra ends the job with exit status N |
//!
//! (Confirmed against MPICH's `src/pmi/maint/pmi-1.1.txt`, `src/pmi/src/`
//! and Hydra 4.0's proxy/server handlers `pmip_pmi_v1.c` and
//! `pmiserv_pmi_v1.c`.) Rank and size come from `PMI_RANK`/`PMI_SIZE`
//! (Hydra and Slurm set both next to `PMI_FD`), or from the `initack`
//! handshake with `PMI_PORT`.

use std::io;

use super::bootstrap::{Bootstrap, Progress};
use super::pmi2::Pmi2;
use super::pmi_wire::{
    bad_reply, connect_env, env_num, format_v1, hash64, idle, invalid, kvs_allgather,
    kvs_share_job_key, parse_v1, Conn, Kvs, Msg, Stream, MAX_CHUNK_HEX,
};

/// Which PMI wire protocol the environment asks for: `None` when the
/// process was not started by a PMI launcher (neither `PMI_FD` nor
/// `PMI_PORT` is set).
///
/// In order: `RAMP_PMI=1|2` forces a version; `PMI_VERSION=2` asks for
/// PMI-2; Slurm's `mpi/pmi2` plugin (recognised by `PMI2_SUN_PATH` or
/// `PMI_JOBID`, which it sets next to `PMI_FD`) gets PMI-2; otherwise
/// PMI-1. Hydra serves both on the same socket and tells them apart by
/// what the client sends, so under `mpiexec` PMI-2 is chosen with
/// `RAMP_PMI=2` (or `PMI_VERSION=2`).
pub fn selected_version() -> io::Result<Option<u8>> {
    let cfg =
        crate::config::global().map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
    Ok(select_version(cfg.spmd.pmi, |k| std::env::var(k).ok()))
}

/// [`selected_version`] with `RAMP_PMI` given (checked by `config`) and
/// the launcher's variables from any lookup.
fn select_version(forced: Option<u8>, env: impl Fn(&str) -> Option<String>) -> Option<u8> {
    if env("PMI_FD").is_none() && env("PMI_PORT").is_none() {
        return None;
    }
    if forced.is_some() {
        return forced;
    }
    if let Some(v) = env("PMI_VERSION") {
        return Some(if v.trim() == "2" { 2 } else { 1 });
    }
    if env("PMI2_SUN_PATH").is_some() || env("PMI_JOBID").is_some() {
        return Some(2);
    }
    Some(1)
}

/// The PMI client the environment asks for (see [`selected_version`]),
/// connected and initialised; `None` when not under a PMI launcher.
pub fn from_env() -> io::Result<Option<Box<dyn Bootstrap>>> {
    from_env_with(&mut idle)
}

/// [`from_env`], calling `progress` while it waits for the launcher.
pub fn from_env_with(progress: &mut Progress<'_>) -> io::Result<Option<Box<dyn Bootstrap>>> {
    Ok(match selected_version()? {
        None => None,
        Some(2) => Some(Box::new(Pmi2::connect_env(progress)?)),
        Some(_) => Some(Box::new(Pmi1::connect_env(progress)?)),
    })
}

/// A connected, initialised PMI-1 client.
pub struct Pmi1 {
    conn: Conn,
    rank: usize,
    size: usize,
    kvsname: String,
    kvsname_max: usize,
    keylen_max: usize,
    vallen_max: usize,
    seq: u64,
    job_id: u64,
    finalized: bool,
}

impl Pmi1 {
    /// Connects as `PMI_FD` or `PMI_PORT` say and initialises.
    pub fn connect_env(progress: &mut Progress<'_>) -> io::Result<Pmi1> {
        let (stream, tcp) = connect_env()?;
        let id = if tcp { env_num("PMI_ID")? } else { None };
        let env = (env_num("PMI_RANK")?, env_num("PMI_SIZE")?);
        Pmi1::init(stream, id, env, progress)
    }

    /// Initialises over `stream`: the `initack` handshake first when `id`
    /// (`PMI_ID` with `PMI_PORT`) is given, else rank and size are `env`.
    fn init(
        stream: Stream,
        id: Option<i64>,
        env: (Option<i64>, Option<i64>),
        progress: &mut Progress<'_>,
    ) -> io::Result<Pmi1> {
        let mut conn = Conn::new(stream)?;
        let (mut rank, mut size) = env;
        if let Some(id) = id {
            let (r, s) = initack(&mut conn, id, progress)?;
            rank = Some(r);
            size = Some(s);
        }
        let (rank, size) = match (rank, size) {
            (Some(r), Some(s)) if s >= 1 && r >= 0 && r < s => (r as usize, s as usize),
            (Some(r), Some(s)) => {
                return Err(invalid(format!(
                    "PMI-1: rank {r} is not within size {s} (PMI_RANK/PMI_SIZE)"
                )))
            }
            _ => {
                return Err(invalid(
                    "PMI-1: the launcher set no PMI_RANK/PMI_SIZE (nor PMI_ID for the initack \
                     handshake)"
                        .to_string(),
                ))
            }
        };
        let mut p = Pmi1 {
            conn,
            rank,
            size,
            kvsname: String::new(),
            kvsname_max: 256,
            keylen_max: 64,
            vallen_max: 256,
            seq: 0,
            job_id: 0,
            finalized: false,
        };
        let m = p.call(
            "init",
            &[("pmi_version", "1"), ("pmi_subversion", "1")],
            "response_to_init",
            progress,
        )?;
        if let Some(v) = m.get("pmi_version") {
            if v.trim() != "1" {
                return Err(bad_reply(
                    "init",
                    &m.raw,
                    "server does not speak PMI version 1",
                ));
            }
        }
        let m = p.call("get_maxes", &[], "maxes", progress)?;
        let max = |k: &str| -> io::Result<usize> {
            let v = m.need_num("get_maxes", k)?;
            usize::try_from(v)
                .ok()
                .filter(|&v| v >= 8)
                .ok_or_else(|| bad_reply("get_maxes", &m.raw, &format!("{k}={v} is too small")))
        };
        p.kvsname_max = max("kvsname_max")?;
        p.keylen_max = max("keylen_max")?;
        p.vallen_max = max("vallen_max")?;
        let m = p.call("get_appnum", &[], "appnum", progress)?;
        // Asked as Hydra's own clients do; checked, not needed.
        m.need_num("get_appnum", "appnum")?;
        let m = p.call("get_my_kvsname", &[], "my_kvsname", progress)?;
        p.kvsname = m.need("get_my_kvsname", "kvsname")?.to_string();
        if p.kvsname.is_empty() {
            return Err(bad_reply("get_my_kvsname", &m.raw, "empty kvsname"));
        }
        p.job_id = hash64(&p.kvsname);
        Ok(p)
    }

    /// The key-value space name the launcher gave this job.
    #[cfg(test)]
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The launcher's limits: kvs name, key and value lengths.
    #[cfg(test)]
    pub fn maxes(&self) -> (usize, usize, usize) {
        (self.kvsname_max, self.keylen_max, self.vallen_max)
    }

    fn live(&self, command: &str) -> io::Result<()> {
        if self.finalized {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("PMI {command}: already finalized"),
            ));
        }
        Ok(())
    }

    /// Sends one command and waits (with `progress`) for its reply `want`.
    fn call(
        &mut self,
        command: &str,
        pairs: &[(&str, &str)],
        want: &str,
        progress: &mut Progress<'_>,
    ) -> io::Result<Msg> {
        self.live(command)?;
        let line = format_v1(command, pairs)?;
        self.conn.send(command, line.as_bytes(), progress)?;
        let reply = self.conn.recv_line(command, progress)?;
        let m = parse_v1(command, &reply)?;
        m.expect(command, want)?;
        Ok(m)
    }
}

/// The `PMI_PORT` handshake: `cmd=initack pmiid=ID`, answered by
/// `cmd=initack` and three `cmd=set` lines (size, rank, debug).
fn initack(conn: &mut Conn, id: i64, progress: &mut Progress<'_>) -> io::Result<(i64, i64)> {
    let id = id.to_string();
    let line = format_v1("initack", &[("pmiid", &id)])?;
    conn.send("initack", line.as_bytes(), progress)?;
    let m = parse_v1("initack", &conn.recv_line("initack", progress)?)?;
    m.expect("initack", "initack")?;
    let (mut rank, mut size, mut debug) = (None, None, false);
    while rank.is_none() || size.is_none() || !debug {
        let m = parse_v1("initack", &conn.recv_line("initack", progress)?)?;
        m.expect("initack", "set")?;
        if m.get("size").is_some() {
            size = Some(m.need_num("initack", "size")?);
        } else if m.get("rank").is_some() {
            rank = Some(m.need_num("initack", "rank")?);
        } else if m.get("debug").is_some() {
            debug = true;
        } else {
            return Err(bad_reply("initack", &m.raw, "unexpected cmd=set"));
        }
    }
    Ok((rank.unwrap_or(0), size.unwrap_or(0)))
}

impl Kvs for Pmi1 {
    fn put(&mut self, key: &str, val: &str, progress: &mut Progress<'_>) -> io::Result<()> {
        if key.len() >= self.keylen_max {
            return Err(invalid(format!(
                "PMI put: key {key:?} is longer than the launcher's keylen_max {}",
                self.keylen_max
            )));
        }
        let kvs = self.kvsname.clone();
        self.call(
            "put",
            &[("kvsname", &kvs), ("key", key), ("value", val)],
            "put_result",
            progress,
        )?;
        Ok(())
    }

    fn exchange(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.barrier(progress)
    }

    fn get(&mut self, key: &str, _src: usize, progress: &mut Progress<'_>) -> io::Result<String> {
        let kvs = self.kvsname.clone();
        let m = self.call(
            "get",
            &[("kvsname", &kvs), ("key", key)],
            "get_result",
            progress,
        )?;
        if m.get("found")
            .is_some_and(|f| f.eq_ignore_ascii_case("false"))
        {
            return Err(bad_reply("get", &m.raw, &format!("key {key} not found")));
        }
        Ok(m.need("get", "value")?.to_string())
    }

    fn chunk_hex(&self) -> usize {
        self.vallen_max.saturating_sub(1).min(MAX_CHUNK_HEX)
    }
}

impl Bootstrap for Pmi1 {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        self.live("allgather")?;
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
        self.call("barrier_in", &[], "barrier_out", progress)?;
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
        self.call("finalize", &[], "finalize_ack", &mut idle)?;
        self.finalized = true;
        Ok(())
    }

    fn abort(&mut self, code: i32, _msg: &str) {
        // Hydra 4.0 reads only `exitcode` (and splits on spaces, so free
        // text would not survive); the caller reports the message.
        if self.finalized {
            return;
        }
        let line = format!("cmd=abort exitcode={code}\n");
        self.conn.send_now(line.as_bytes());
        self.conn.linger(2000);
    }

    fn job_id(&self) -> u64 {
        self.job_id
    }
}

#[cfg(test)]
mod tests;
