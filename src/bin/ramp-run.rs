//! `ramp-run`: starts an SPMD job of N processes on this host (or, with
//! --wrap, through a command per rank such as `ip netns exec`), routes their
//! output, and exits with the job's code.

use std::net::IpAddr;
use std::process::ExitCode;

use ramp::spmd::{run_job, JobSpec};

const USAGE: &str = "usage: ramp-run -n N [options] program [args...]
  -n, --np N          number of processes (required)
  --label             prefix every output line with [rank]
  --no-route          let workers write to the terminal directly
  --depth D           network depth (credits per peer), 1..1024 (default RAMP_NETWORK_DEPTH, else 128)
  --master-ip IP      address workers use to reach this launcher (default 127.0.0.1)
  --wrap 'CMD ...'    run each worker as CMD ... program args; {rank} in CMD is replaced
                      (e.g. --wrap 'ip netns exec ramp{rank}')
  -x VAR=VALUE        add a variable to every worker's environment (repeatable)";

fn parse(args: &[String]) -> Result<JobSpec, String> {
    let mut n = None;
    let mut spec = JobSpec::new(0, String::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let mut val = |name: &str| -> Result<String, String> {
            i += 1;
            args.get(i).cloned().ok_or(format!("{name} needs a value"))
        };
        match a.as_str() {
            "-n" | "--np" | "-np" => {
                let v = val(a)?;
                n = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|&x| (1..=ramp::am::MAX_TRANSLATIONS).contains(&x))
                        .ok_or(format!(
                            "-n {v:?}: expected a number from 1 to {} (an endpoint maps at most that many)",
                            ramp::am::MAX_TRANSLATIONS
                        ))?,
                );
            }
            "--label" => spec.label_output = true,
            "--no-route" => spec.route_output = false,
            "--depth" => {
                let v = val(a)?;
                spec.depth = v
                    .parse::<u32>()
                    .ok()
                    .filter(|d| (1..=1024).contains(d))
                    .ok_or(format!("--depth {v:?}: expected 1..1024"))?;
            }
            "--master-ip" => {
                let v = val(a)?;
                spec.master_ip = Some(
                    v.parse::<IpAddr>()
                        .map_err(|_| format!("--master-ip {v:?}: not an IP address"))?,
                );
            }
            "--wrap" => {
                let v = val(a)?;
                let w: Vec<String> = v.split_whitespace().map(String::from).collect();
                if w.is_empty() {
                    return Err("--wrap needs a command".into());
                }
                spec.wrap = Some(w);
            }
            "-x" => {
                let v = val(a)?;
                let (k, x) = v
                    .split_once('=')
                    .ok_or(format!("-x {v:?}: expected VAR=VALUE"))?;
                spec.extra_env.push((k.to_string(), x.to_string()));
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s:?}")),
            _ => {
                spec.program = a.clone();
                spec.args = args[i + 1..].to_vec();
                break;
            }
        }
        i += 1;
    }
    spec.nproc = n.ok_or("-n N is required")?;
    if spec.program.is_empty() {
        return Err("no program given".into());
    }
    Ok(spec)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(spec) => {
            let code = run_job(&spec);
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Err(e) => {
            if e.is_empty() {
                println!("{USAGE}");
                ExitCode::SUCCESS
            } else {
                eprintln!("ramp-run: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        }
    }
}
