//! One `ramp bench` pair: a server and a client process (pinned to
//! different cores with `taskset` when asked), the endpoint names relayed
//! between them, the client's figures read back (`run_pair`); the options
//! of `ramp bench` (`BenchOptions`). Used by `bench.rs` (UDP, with and
//! without the MAC) and `bench_shm.rs` (shared memory).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

/// Options of `ramp bench`.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub iters: usize,
    pub runs: usize,
    pub xfer_mib: usize,
    pub pin: bool,
    /// `--repair`: the loss-repair figures only (`bench_repair.rs`).
    pub repair: bool,
    /// `--busy`: a neighbour spinning on the server's core (with `--repair`).
    pub busy: bool,
    /// `--against OLD`: another ramp binary's roles beside this one's.
    pub against: Option<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            iters: 20_000,
            runs: 3,
            xfer_mib: 256,
            pin: true,
            repair: false,
            busy: false,
            against: None,
        }
    }
}

pub(crate) fn have_taskset() -> bool {
    Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn spawn_role(
    exe: &str,
    cpu: Option<usize>,
    args: &[String],
    env: &[(&str, String)],
) -> std::io::Result<Child> {
    let mut cmd = match cpu {
        Some(c) => {
            let mut c0 = Command::new("taskset");
            c0.arg("-c").arg(c.to_string()).arg(exe);
            c0
        }
        None => Command::new(exe),
    };
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
}

fn read_line(r: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut l = String::new();
    match r.read_line(&mut l) {
        Ok(0) => Err(format!("the bench {who} exited before answering")),
        Ok(_) => Ok(l.trim_end().to_string()),
        Err(e) => Err(format!("reading from the bench {who}: {e}")),
    }
}

/// The client's figures: raw UDP, ramp 0 and 4 args round trips (us,
/// medians), Xfer bandwidth (MiB/s, median).
pub(crate) struct Figures {
    pub(crate) raw: f64,
    pub(crate) rt0: f64,
    pub(crate) rt4: f64,
    pub(crate) bw: f64,
    /// 0-argument requests per second, pipelined.
    pub(crate) rate: f64,
    /// Raw UDP blast, MiB/s.
    pub(crate) blast: f64,
}

/// One server and client pair with `env`; prints the client's lines.
pub(crate) fn run_pair(
    exe: &str,
    pin: bool,
    opts: &BenchOptions,
    env: &[(&str, String)],
) -> Result<Figures, String> {
    let (c_srv, c_cli) = if pin {
        (Some(1), Some(0))
    } else {
        (None, None)
    };
    let mut server =
        spawn_role(exe, c_srv, &["bench-server".into()], env).map_err(|e| e.to_string())?;
    let mut srv_out = BufReader::new(server.stdout.take().unwrap());
    let ready = read_line(&mut srv_out, "server")?;
    let mut args: Vec<String> = vec!["bench-client".into()];
    args.extend(ready.split_whitespace().map(String::from));
    args.extend([
        opts.iters.to_string(),
        opts.runs.to_string(),
        opts.xfer_mib.to_string(),
    ]);
    let mut client = spawn_role(exe, c_cli, &args, env).map_err(|e| e.to_string())?;
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let client_name = read_line(&mut cli_out, "client")?;
    let mut srv_in = server.stdin.take().unwrap();
    writeln!(srv_in, "{client_name}").map_err(|e| e.to_string())?;
    srv_in.flush().map_err(|e| e.to_string())?;
    let mut figures = None;
    loop {
        match read_line(&mut cli_out, "client") {
            Ok(l) if l == "DONE" => break,
            Ok(l) if l.starts_with("FIGURES ") => {
                let v: Vec<f64> = l
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if let [raw, rt0, rt4, bw, rate, blast] = v[..] {
                    figures = Some(Figures {
                        raw,
                        rt0,
                        rt4,
                        bw,
                        rate,
                        blast,
                    });
                }
            }
            Ok(l) => println!("{l}"),
            Err(e) => {
                let _ = server.kill();
                return Err(e);
            }
        }
    }
    drop(srv_in);
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    if !cs.success() || !ss.success() {
        return Err(format!("bench roles ended badly: client {cs}, server {ss}"));
    }
    figures.ok_or_else(|| "the bench client printed no figures".to_string())
}
