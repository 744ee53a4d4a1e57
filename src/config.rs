//! The one configuration struct, read once from `RAMP_*` environment
//! variables. Every variable is an entry of [`VARIABLES`] (name, older
//! names, meaning, parser), which the README's table lists too; a bad value
//! is reported with its name and what was expected, never silently ignored.
//! Here: the struct, its reading (`Config::from_lookup`, the checks across
//! variables), the job key and the process-wide configuration; the table
//! of variables and their parsers is `config/variables.rs`.

use std::net::SocketAddr;

use once_cell::sync::Lazy;

pub use crate::fault::FaultConfig;
use crate::proto::ProtoConfig;
use crate::time::MICROS;

mod amudp;
mod variables;
pub use amudp::{AmudpVar, AMUDP_PREFIXES, AMUDP_VARIABLES};
pub use variables::*;

/// The entry of [`VARIABLES`] named `name`.
pub fn find_var(name: &str) -> Option<&'static Var> {
    VARIABLES.iter().find(|v| v.name == name)
}

#[derive(Clone, Debug)]
pub struct Config {
    /// `RAMP_INTERFACE`: an IP address or an interface name to bind endpoints to.
    pub interface: Option<String>,
    /// `RAMP_RAILS`: the rails' interface names or addresses, the name's
    /// first (checked for form; resolved at open, `net::choose_rails`).
    pub rails: Option<Vec<String>>,
    pub fault: FaultConfig,
    pub proto: ProtoConfig,
    /// `RAMP_RECV_DEPTH`: set explicitly (else derived from the network depth).
    pub recv_depth: Option<usize>,
    /// `RAMP_SOCKET_BUFFER`: bytes asked for the kernel send and receive buffers.
    pub socket_buffer: usize,
    /// `RAMP_VERBOSE`: print every error return on stderr.
    pub verbose: bool,
    /// `RAMP_PROGRESS_THREAD`: every bundle starts with its progress thread on.
    pub progress_thread: bool,
    /// `RAMP_LOG_DIR`: every endpoint opens a transaction log there.
    pub log_dir: Option<std::path::PathBuf>,
    /// `RAMP_LOG_SYNC`: msync every log record (survives a machine crash).
    pub log_sync: bool,
    pub spmd: SpmdConfig,
    /// `RAMP_BENCH_SERVER_STATS`: the benchmark's server prints its statistics.
    pub bench_server_stats: bool,
    /// `RAMP_AUTH`: whether packets carry a MAC of the job key.
    pub auth: Auth,
    /// `RAMP_JOB_KEY`: the job key from the environment (launchers set it
    /// for their workers; under PMI it comes through the key-value space
    /// instead, see [`set_job_key`]).
    pub job_key: Option<JobKey>,
    /// `RAMP_TRANSPORT`: which transports reach same-host peers.
    pub transport: TransportChoice,
    /// `RAMP_SHM_EXPRESS`: short requests and their replies to a peer
    /// reached by a shared-memory ring go straight into it (`am/express.rs`).
    pub shm_express: bool,
    /// `RAMP_XFER_STAGING`: long requests of 32-128 KiB to a same-host
    /// peer go through a staging area it keeps for us (`am/rma/xfer_staged.rs`),
    /// and we keep one for each peer that asks.
    pub xfer_staging: bool,
    /// `RAMP_UDP_CONNECT`: an association's packets leave through a socket
    /// connected to the peer (`net/udp_conns.rs`), its port taken by the
    /// peer under a packet MAC from the seal, without one once announced
    /// from the endpoint's name (`proto/alias.rs`).
    pub udp_connect: bool,
    /// `RAMP_REQUEST_BATCH`: most requests held back to leave together
    /// (`am/request.rs`'s `Batch`); 0 or 1: none.
    pub request_batch: u16,
    /// `RAMP_CLOCK`: whether clock readings may be carried forward by the
    /// CPU's time-stamp counter (`sys/clock.rs`); false: every reading
    /// is the system's.
    pub clock_counter: bool,
}

/// `RAMP_TRANSPORT`: `auto` (default) reaches same-host peers through
/// shared memory when it can, else UDP; `udp` uses UDP only; `shm` is like
/// `auto` but an endpoint that cannot set up its shared-memory ring fails to
/// open instead of falling back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransportChoice {
    #[default]
    Auto,
    Udp,
    Shm,
}

/// `RAMP_AUTH`: `auto` (default) authenticates packets when a job key is
/// present; `on` refuses to open an endpoint without one; `off` never
/// authenticates (CRC32C only, for trusted networks), even with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Auth {
    #[default]
    Auto,
    On,
    Off,
}

/// A job key (the secret the packet MAC is derived from: `wire::mac`).
/// Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey(String);

/// The fewest characters a job key may have.
pub const MIN_JOB_KEY_LEN: usize = 16;

impl JobKey {
    /// Checks the length (at least [`MIN_JOB_KEY_LEN`] characters, no
    /// surrounding blanks, no NUL: it travels in environments and PMI values).
    pub fn new(key: &str) -> Result<JobKey, String> {
        if key.chars().count() < MIN_JOB_KEY_LEN {
            return Err(format!(
                "expected a job key of at least {MIN_JOB_KEY_LEN} characters (ramp-run and the AMUDP master form make one: leave it unset)"
            ));
        }
        if key.trim() != key || key.contains('\0') {
            return Err("expected a job key without surrounding blanks or NUL".into());
        }
        Ok(JobKey(key.to_string()))
    }

    /// The key itself: for the KDF and for handing to workers, never for printing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JobKey(<{} characters>)", self.0.chars().count())
    }
}

/// The job key this process received at run time (from rank 0 through the
/// PMI key-value space, set by `spmd::start_worker` before it opens its
/// endpoint); it takes precedence over `RAMP_JOB_KEY`.
static RUNTIME_JOB_KEY: parking_lot::Mutex<Option<JobKey>> = parking_lot::Mutex::new(None);

/// Sets the process's job key (see `RUNTIME_JOB_KEY`); endpoints opened
/// from now on use it. Refused like a bad `RAMP_JOB_KEY`.
pub fn set_job_key(key: &str) -> Result<(), String> {
    *RUNTIME_JOB_KEY.lock() = Some(JobKey::new(key)?);
    Ok(())
}

/// What SPMD start-up reads from the environment (launchers' own variables,
/// such as `PMI_FD`, are read where the PMI client uses them).
#[derive(Clone, Debug, PartialEq)]
pub struct SpmdConfig {
    /// `RAMP_NETWORK_DEPTH`: network depth when neither the launcher nor the
    /// program chooses one.
    pub network_depth: Option<u32>,
    /// `RAMP_PMI`: the PMI wire protocol version to use (1 or 2).
    pub pmi: Option<u8>,
    /// `RAMP_LABEL_OUTPUT`: the AMUDP master form prefixes output lines with [rank].
    pub label_output: bool,
    /// `RAMP_ROUTE_OUTPUT`: the AMUDP master form routes workers' output.
    pub route_output: bool,
    /// `RAMP_SPAWNFN`: the spawner letter of the AMUDP master form (upper case).
    pub spawnfn: Option<char>,
    /// `GASNET_MASTERIP` / `AMUDP_MASTERIP`: the address the master form's
    /// workers reach the master at (default 127.0.0.1).
    pub master_ip: Option<std::net::IpAddr>,
    /// `GASNET_VERBOSEENV` / `AMUDP_VERBOSEENV`: the master form says how it
    /// starts the workers.
    pub verbose_env: bool,
    /// The 'S' and 'C' spawners' settings (AMUDP's names, `config/amudp.rs`).
    pub spawn: SpawnConfig,
    /// `RAMP_SPMD_MASTER`, `RAMP_SPMD_RANK`, `RAMP_SPMD_SIZE`: set by the
    /// local launcher for its workers (all three, or none).
    pub master: Option<SocketAddr>,
    pub rank: Option<usize>,
    pub size: Option<usize>,
    /// `RAMP_SPMD_TOKEN`: the secret a worker introduces itself to the
    /// master with (the master's port is open to every local user; its
    /// answer carries the launcher's environment).
    pub token: Option<[u8; SPMD_TOKEN_LEN]>,
}

/// The settings of AMUDP's 'S' (ssh) and 'C' (custom command) spawners,
/// from `GASNET_*` / `AMUDP_*` variables (`config/amudp.rs`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpawnConfig {
    pub cspawn_cmd: Option<String>,
    pub cspawn_servers: Option<String>,
    pub ssh_servers: Option<String>,
    pub ssh_cmd: Option<String>,
    pub ssh_options: Option<String>,
    pub ssh_remote_path: Option<String>,
    pub env_cmd: Option<String>,
}

impl Default for SpmdConfig {
    fn default() -> Self {
        SpmdConfig {
            network_depth: None,
            pmi: None,
            label_output: false,
            route_output: true,
            spawnfn: None,
            master_ip: None,
            verbose_env: false,
            spawn: SpawnConfig::default(),
            master: None,
            rank: None,
            size: None,
            token: None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            interface: None,
            rails: None,
            fault: FaultConfig::default(),
            proto: ProtoConfig {
                // the protocol core's default is never (the simulator's
                // runs go quiet); an endpoint reclaims idle associations
                idle_timeout: crate::proto::DEFAULT_IDLE_TIMEOUT,
                ..ProtoConfig::default()
            },
            recv_depth: None,
            socket_buffer: 4 << 20,
            verbose: false,
            progress_thread: false,
            log_dir: None,
            log_sync: false,
            spmd: SpmdConfig::default(),
            bench_server_stats: false,
            auth: Auth::Auto,
            job_key: None,
            transport: TransportChoice::Auto,
            shm_express: true,
            xfer_staging: true,
            request_batch: DEFAULT_REQUEST_BATCH,
            udp_connect: true,
            clock_counter: true,
        }
    }
}

impl Config {
    /// Reads the configuration from a lookup function (the environment, or a
    /// map in tests). Returns every bad variable, one message each, naming
    /// the variable as it was found (an older name when that was set).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, Vec<String>> {
        let mut errs = Vec::new();
        let mut c = Config::default();
        // AMUDP's names first: the RAMP_* ones win
        amudp::apply(&mut c, &get, &mut errs);
        for var in VARIABLES {
            let found = std::iter::once(var.name)
                .chain(var.aliases.iter().copied())
                .find_map(|n| get(n).map(|v| (n, v)));
            if let Some((name, v)) = found {
                if let Err(e) = (var.set)(&mut c, &v) {
                    if name == JOB_KEY {
                        // a secret, even a bad one, is not printed
                        let n = v.chars().count();
                        errs.push(format!("{name} (not shown, {n} characters): {e}"));
                    } else {
                        errs.push(format!("{name}={v:?}: {e}"));
                    }
                }
            }
        }
        if c.proto.rto_min > c.proto.rto_max {
            errs.push(format!(
                "{RTO_MIN_US} ({}) is larger than {RTO_MAX_US} ({})",
                c.proto.rto_min / MICROS,
                c.proto.rto_max / MICROS
            ));
        }
        if let (Some(i), Some(r)) = (&c.interface, &c.rails) {
            if r.first() != Some(i) {
                errs.push(format!(
                    "{INTERFACE}={i:?} and {RAILS} (first {:?}) are both set: the first rail is the endpoint's name; set only {RAILS}, or make its first rail {INTERFACE}'s value",
                    r[0]
                ));
            }
        }
        let s = &c.spmd;
        if s.master.is_some() {
            // (no rank: the master assigns one)
            for (name, v) in [(SPMD_SIZE, s.size), (SPMD_TOKEN, s.token.map(|_| 0))] {
                if v.is_none() && get(name).is_none() {
                    errs.push(format!("{SPMD_MASTER} is set but {name} is missing"));
                }
            }
            if let (Some(r), Some(n)) = (s.rank, s.size) {
                if r >= n {
                    errs.push(format!("{SPMD_RANK}={r} is not below {SPMD_SIZE}={n}"));
                }
            }
        }
        if errs.is_empty() {
            Ok(c)
        } else {
            Err(errs)
        }
    }

    /// The job key packets are authenticated with, as `RAMP_AUTH` decides:
    /// none when it is `off`; else the key set at run time ([`set_job_key`])
    /// or `RAMP_JOB_KEY`; `on` without either is an error naming both.
    pub fn mac_job_key(&self) -> Result<Option<JobKey>, String> {
        if self.auth == Auth::Off {
            return Ok(None);
        }
        let key = RUNTIME_JOB_KEY
            .lock()
            .clone()
            .or_else(|| self.job_key.clone());
        if key.is_none() && self.auth == Auth::On {
            return Err(format!(
                "{AUTH}=on but there is no job key: start the job with ramp-run, the AMUDP master form or a PMI launcher, or set {JOB_KEY}"
            ));
        }
        Ok(key)
    }

    pub fn from_env() -> Result<Config, Vec<String>> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }
}

static GLOBAL: Lazy<Result<Config, String>> = Lazy::new(|| {
    Config::from_env().map_err(|errs| {
        let mut m = String::from("ramp: bad configuration:");
        for e in errs {
            m.push_str("\n  ");
            m.push_str(&e);
        }
        m
    })
});

/// The process-wide configuration, read from the environment on first use.
pub fn global() -> Result<&'static Config, &'static str> {
    GLOBAL.as_ref().map_err(|e| e.as_str())
}

#[cfg(test)]
mod tests;
