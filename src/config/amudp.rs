//! The environment variables AMUDP reads ([`AMUDP_VARIABLES`]), under the
//! two prefixes it accepts: `GASNET_` (GASNet's udp-conduit hosts AMUDP with
//! that prefix, so GASNet users set `GASNET_NETWORKDEPTH`, `GASNET_SPAWNFN`,
//! ...) and `AMUDP_`. Each is either honoured, through the `RAMP_*`
//! variable of the same meaning (whose parser checks it; the `RAMP_*` name
//! wins when both are set) or a setting of its own, or refused with a
//! message naming what ramp offers instead: never ignored. The README's
//! table "AMUDP and GASNet names" lists them (`tests/readme_vars.rs`).

use super::{find_var, Config};

/// An AMUDP variable: its name without prefix, what ramp does with it (the
/// README's table says the same), and how a value is applied (`None`:
/// refused, the text saying what to use instead).
pub struct AmudpVar {
    pub suffix: &'static str,
    pub ramp: &'static str,
    pub(super) set: Option<Setter>,
}

/// Checks a value and stores it in the configuration.
type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// The prefixes AMUDP reads its variables with.
pub const AMUDP_PREFIXES: [&str; 2] = ["GASNET_", "AMUDP_"];

/// Applies `v` as the `RAMP_*` variable `name` would be.
fn as_ramp(c: &mut Config, name: &str, v: &str) -> Result<(), String> {
    (find_var(name).expect("a variable of VARIABLES").set)(c, v)
}

fn text(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() {
        return Err("expected a non-empty value".into());
    }
    Ok(v.to_string())
}

/// Every AMUDP variable ramp knows (AMUDP 3.16's amudp_spmd.cpp,
/// amudp_ep.cpp, amudp_spawn.cpp).
pub const AMUDP_VARIABLES: &[AmudpVar] = &[
    AmudpVar {
        suffix: "NETWORKDEPTH",
        ramp: "honoured as RAMP_NETWORK_DEPTH",
        set: Some(|c, v| as_ramp(c, "RAMP_NETWORK_DEPTH", v)),
    },
    AmudpVar {
        suffix: "SPAWNFN",
        ramp: "honoured as RAMP_SPAWNFN",
        set: Some(|c, v| as_ramp(c, "RAMP_SPAWNFN", v)),
    },
    AmudpVar {
        suffix: "ROUTE_OUTPUT",
        ramp: "honoured as RAMP_ROUTE_OUTPUT",
        set: Some(|c, v| as_ramp(c, "RAMP_ROUTE_OUTPUT", v)),
    },
    AmudpVar {
        suffix: "RECVDEPTH",
        ramp: "honoured as RAMP_RECV_DEPTH",
        set: Some(|c, v| as_ramp(c, "RAMP_RECV_DEPTH", v)),
    },
    AmudpVar {
        suffix: "FAULT_RATE",
        ramp: "honoured as RAMP_FAULT_LOSS (probability of dropping a datagram)",
        set: Some(|c, v| as_ramp(c, "RAMP_FAULT_LOSS", v)),
    },
    AmudpVar {
        suffix: "REQUESTTIMEOUT_INITIAL",
        ramp: "honoured as RAMP_RTO_INITIAL_US (microseconds; AMUDP's 0, infinite, is refused)",
        set: Some(|c, v| as_ramp(c, "RAMP_RTO_INITIAL_US", v)),
    },
    AmudpVar {
        suffix: "REQUESTTIMEOUT_MAX",
        ramp: "honoured as RAMP_PEER_TIMEOUT_MS: microseconds, rounded up to milliseconds, at most 3600000000 (AMUDP's 0, infinite, is refused)",
        set: Some(|c, v| {
            let us = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&us| (1..=3_600_000_000).contains(&us))
                .ok_or("expected microseconds between 1 and 3600000000 (ramp has no infinite timeout)")?;
            as_ramp(c, "RAMP_PEER_TIMEOUT_MS", &us.div_ceil(1000).to_string())
        }),
    },
    AmudpVar {
        suffix: "MASTERIP",
        ramp: "honoured: the IP address the master form's workers reach the master at (empty: 127.0.0.1, the default)",
        set: Some(|c, v| {
            let v = v.trim();
            c.spmd.master_ip = if v.is_empty() {
                None
            } else {
                Some(v.parse().map_err(|_| "expected an IP address")?)
            };
            Ok(())
        }),
    },
    AmudpVar {
        suffix: "VERBOSEENV",
        ramp: "honoured (set, any value): the master form prints how it starts the workers on stderr",
        set: Some(|c, _| {
            c.spmd.verbose_env = true;
            Ok(())
        }),
    },
    AmudpVar {
        suffix: "CSPAWN_CMD",
        ramp: "honoured by the 'C' spawner: the command, with %N %C %D %P %M %% replaced",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.cspawn_cmd = Some(v))),
    },
    AmudpVar {
        suffix: "CSPAWN_SERVERS",
        ramp: "honoured by the 'C' spawner: the servers %M lists (the first N)",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.cspawn_servers = Some(v))),
    },
    AmudpVar {
        suffix: "CSPAWN_ROUTE_OUTPUT",
        ramp: "honoured when 0 (the default): the workers of the 'C' spawner write where its command sends them; 1 (routing through the master) is refused",
        set: Some(|_, v| match super::variables::flag(v)? {
            false => Ok(()),
            true => Err("expected 0: ramp's 'C' spawner leaves the workers' output to its command".into()),
        }),
    },
    AmudpVar {
        suffix: "SSH_SERVERS",
        ramp: "honoured by the 'S' spawner: the hosts, one per rank (separated by spaces, commas, slashes, semicolons or colons)",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.ssh_servers = Some(v))),
    },
    AmudpVar {
        suffix: "SSH_CMD",
        ramp: "honoured by the 'S' spawner: the remote shell command (default ssh)",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.ssh_cmd = Some(v))),
    },
    AmudpVar {
        suffix: "SSH_OPTIONS",
        ramp: "honoured by the 'S' spawner: options put before the host (split at blanks)",
        set: Some(|c, v| {
            c.spmd.spawn.ssh_options = Some(v.trim().to_string());
            Ok(())
        }),
    },
    AmudpVar {
        suffix: "SSH_REMOTE_PATH",
        ramp: "honoured by the 'S' spawner: the directory the workers start in (default the current one)",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.ssh_remote_path = Some(v))),
    },
    AmudpVar {
        suffix: "ENV_CMD",
        ramp: "honoured by the 'S' and 'C' spawners: the command that puts the job's variables in a worker's environment (default env)",
        set: Some(|c, v| text(v).map(|v| c.spmd.spawn.env_cmd = Some(v))),
    },
    AmudpVar {
        suffix: "WORKERIP",
        ramp: "refused: set RAMP_INTERFACE to the address or interface name the workers' endpoints bind to",
        set: None,
    },
    AmudpVar {
        suffix: "LINEBUFFERSZ",
        ramp: "refused: ramp's master forwards the workers' output line by line, lines of any length; unset it",
        set: None,
    },
    AmudpVar {
        suffix: "REQUESTTIMEOUT_BACKOFF",
        ramp: "refused: ramp doubles the retransmission timeout; bound it with RAMP_RTO_MIN_US and RAMP_RTO_MAX_US",
        set: None,
    },
    AmudpVar {
        suffix: "SENDDEPTH",
        ramp: "refused: ramp's sends are bounded by the network depth (RAMP_NETWORK_DEPTH) and RAMP_WINDOW",
        set: None,
    },
    AmudpVar {
        suffix: "EXPECTED_BANDWIDTH",
        ramp: "refused: ramp measures round trips for its timeouts (RAMP_RTO_INITIAL_US, RAMP_RTO_MIN_US, RAMP_RTO_MAX_US)",
        set: None,
    },
];

/// Applies every AMUDP variable that is set (before the `RAMP_*` ones,
/// which win); an error names the variable as it was set.
pub(super) fn apply(c: &mut Config, get: &impl Fn(&str) -> Option<String>, errs: &mut Vec<String>) {
    for var in AMUDP_VARIABLES {
        for prefix in AMUDP_PREFIXES {
            let name = format!("{prefix}{}", var.suffix);
            let Some(v) = get(&name) else { continue };
            let r = match var.set {
                Some(set) => set(c, &v),
                // an empty value is as unset (GASNet sets some to "")
                None if v.trim().is_empty() => Ok(()),
                None => Err(format!("not supported by ramp ({})", var.ramp)),
            };
            if let Err(e) = r {
                errs.push(format!("{name}={v:?}: {e}"));
            }
        }
    }
}
