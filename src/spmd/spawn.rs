//! AMUDP's spawners beside fork/exec ('L', `master.rs`): 'C', a custom
//! command run once with %N %C %D %P %M %% replaced (AMUDP's README), and
//! 'S', one ssh (or `SSH_CMD`) per worker to the hosts of `SSH_SERVERS`;
//! their settings are AMUDP's variables (`config/amudp.rs`). Both start the
//! workers without telling each its rank: the master gives the next one
//! as each connects (as a program's own spawn function does, `ffi/spmd.rs`).
//!
//! The job's secrets (`RAMP_SPMD_TOKEN`, `RAMP_JOB_KEY`) reach an ssh
//! worker through its ssh client's standard input, never its command line;
//! the custom command's %C carries them (as AMUDP's carries its job
//! settings): that command line is visible to the host's users.

use std::io::{self, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::config::SpawnConfig;

/// How the master starts its workers (AMUDP's spawners).
#[derive(Clone, Default)]
pub enum Spawner {
    /// 'L': fork/exec on this host, each worker told its rank.
    #[default]
    Local,
    /// 'C' and 'S', and a program's own spawn function: the workers are
    /// started by others (`spawn.rs`) and get their ranks from the master
    /// in the order they connect; they are watched through their control
    /// connections (and the helper processes `start` returns).
    External(StartWorkers),
}

/// Starts an external spawner's workers; returns the helper processes it
/// leaves to the master (ssh clients, the custom command).
pub type StartWorkers = Arc<dyn Fn(&ExternalJob) -> io::Result<Vec<Child>> + Send + Sync>;

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Spawner::Local => "Local",
            Spawner::External(_) => "External",
        })
    }
}

/// What an external spawner must start: `nproc` processes running `argv`
/// with `env` added to their environment (the job's secrets among them).
pub struct ExternalJob {
    pub nproc: usize,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// AMUDP's separators of a server list.
const SERVER_DELIMS: &[char] = &[' ', ',', '/', ';', ':'];

/// `arg` in single quotes for a POSIX shell.
fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

/// `text` made safe inside double quotes of a POSIX shell.
fn quote_in_double(text: &str) -> String {
    let mut o = String::new();
    for c in text.chars() {
        if matches!(c, '$' | '`' | '\\' | '"') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// `env 'K=V' ... 'arg' ...`: a worker's command with its variables.
fn env_command(env_cmd: &str, env: &[(String, String)], argv: &[String]) -> String {
    let mut c = String::from(env_cmd);
    for (k, v) in env {
        c.push(' ');
        c.push_str(&quote(&format!("{k}={v}")));
    }
    for a in argv {
        c.push(' ');
        c.push_str(&quote(a));
    }
    c
}

/// 'C': `CSPAWN_CMD` with %N (workers), %C (the command each runs once),
/// %D (the current directory), %P (the program), %M (the first N servers of
/// `CSPAWN_SERVERS`), %% replaced (either case; another %x: nothing), run
/// once by /bin/sh.
pub fn custom(cfg: &SpawnConfig) -> io::Result<Spawner> {
    let template = cfg.cspawn_cmd.clone().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the 'C' spawner needs GASNET_CSPAWN_CMD (or AMUDP_CSPAWN_CMD): the command that starts the workers, with %N %C %D %P %M replaced",
        )
    })?;
    let servers = cfg.cspawn_servers.clone();
    let env_cmd = cfg.env_cmd.clone().unwrap_or_else(|| "env".into());
    Ok(Spawner::External(Arc::new(move |job: &ExternalJob| {
        let worker = format!(
            "/bin/sh -c \"{}\"",
            quote_in_double(&env_command(&env_cmd, &job.env, &job.argv))
        );
        let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
        let mut cmd = String::new();
        let mut it = template.chars().peekable();
        while let Some(c) = it.next() {
            if c != '%' {
                cmd.push(c);
                continue;
            }
            match it.next() {
                Some('N' | 'n') => cmd.push_str(&job.nproc.to_string()),
                Some('C' | 'c') => cmd.push_str(&worker),
                Some('D' | 'd') => cmd.push_str(&cwd),
                Some('P' | 'p') => cmd.push_str(&job.argv[0]),
                Some('M' | 'm') => {
                    let list = servers.as_deref().ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "%M in GASNET_CSPAWN_CMD needs GASNET_CSPAWN_SERVERS (or AMUDP_CSPAWN_SERVERS)",
                        )
                    })?;
                    cmd.push_str(&first_servers(list, job.nproc, "CSPAWN_SERVERS")?.join(" "));
                }
                Some('%') => cmd.push('%'),
                _ => {}
            }
        }
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot run /bin/sh for the 'C' spawner: {e}"),
                )
            })?;
        Ok(vec![child])
    })))
}

/// The first `n` servers of an AMUDP server list.
fn first_servers(list: &str, n: usize, name: &str) -> io::Result<Vec<String>> {
    let all: Vec<String> = list
        .split(SERVER_DELIMS)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if all.len() < n {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{n} workers but only {} server(s) in {name}: {list}",
                all.len()
            ),
        ));
    }
    Ok(all[..n].to_vec())
}

/// 'S': one `SSH_CMD` (default ssh) per worker, to the i-th host of
/// `SSH_SERVERS`, with `SSH_OPTIONS`, running the program in
/// `SSH_REMOTE_PATH` (default the current directory); rank i is the i-th
/// host's. OpenSSH (a command named ssh) also gets
/// `-o StrictHostKeyChecking=no` (AMUDP's choice) and `-o BatchMode=yes`
/// (a password prompt would hang the job).
pub fn ssh(cfg: &SpawnConfig) -> io::Result<Spawner> {
    let servers = cfg.ssh_servers.clone().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the 'S' spawner needs GASNET_SSH_SERVERS (or AMUDP_SSH_SERVERS): the hosts, one per worker",
        )
    })?;
    let ssh_cmd = cfg.ssh_cmd.clone().unwrap_or_else(|| "ssh".into());
    let options = cfg.ssh_options.clone().unwrap_or_default();
    let remote_path = cfg.ssh_remote_path.clone();
    let env_cmd = cfg.env_cmd.clone().unwrap_or_else(|| "env".into());
    Ok(Spawner::External(Arc::new(move |job: &ExternalJob| {
        let hosts = first_servers(&servers, job.nproc, "SSH_SERVERS")?;
        let dir = match &remote_path {
            Some(p) => p.clone(),
            None => std::env::current_dir()?.to_string_lossy().into_owned(),
        };
        let secret = |k: &str| k == crate::config::SPMD_TOKEN || k == crate::config::JOB_KEY;
        let (secrets, plain): (Vec<_>, Vec<_>) =
            job.env.iter().cloned().partition(|(k, _)| secret(k));
        let mut words: Vec<String> = ssh_cmd.split_whitespace().map(String::from).collect();
        if words.is_empty() {
            words.push("ssh".into());
        }
        if words[0].rsplit('/').next() == Some("ssh") {
            words.extend(
                ["-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"].map(String::from),
            );
        }
        words.extend(options.split_whitespace().map(String::from));
        let mut children: Vec<Child> = Vec::new();
        for (rank, host) in hosts.iter().enumerate() {
            let mut env = plain.clone();
            env.push((crate::config::SPMD_RANK.to_string(), rank.to_string()));
            // the secrets come on standard input, one a line
            let mut remote = format!("cd {} && ", quote(&dir));
            for (k, _) in &secrets {
                remote.push_str(&format!("IFS= read -r {k} && export {k} && "));
            }
            remote.push_str("exec ");
            remote.push_str(&env_command(&env_cmd, &env, &job.argv));
            remote.push_str(" < /dev/null");
            let spawned = Command::new(&words[0])
                .args(&words[1..])
                .arg(host)
                .arg(&remote)
                .stdin(Stdio::piped())
                .spawn();
            let mut child = match spawned {
                Ok(c) => c,
                Err(e) => {
                    for mut c in children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot run {}: {e}", words[0]),
                    ));
                }
            };
            if let Some(mut input) = child.stdin.take() {
                for (_, v) in &secrets {
                    let _ = writeln!(input, "{v}");
                }
            }
            children.push(child);
        }
        Ok(children)
    })))
}
