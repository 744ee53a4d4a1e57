//! The one configuration struct, read once from `RAMP_*` environment
//! variables. Every variable is listed in the README's table; a bad value is
//! reported with its name and what was expected, never silently ignored.

use once_cell::sync::Lazy;

pub use crate::fault::FaultConfig;
use crate::proto::ProtoConfig;
use crate::time::MICROS;

#[derive(Clone, Debug)]
pub struct Config {
    /// `RAMP_INTERFACE`: an IP address or an interface name to bind endpoints to.
    pub interface: Option<String>,
    pub fault: FaultConfig,
    pub proto: ProtoConfig,
    /// `RAMP_RECV_DEPTH`: set explicitly (else derived from the network depth).
    pub recv_depth: Option<usize>,
    /// `RAMP_SOCKET_BUFFER`: bytes asked for the kernel send and receive buffers.
    pub socket_buffer: usize,
    /// `RAMP_VERBOSE`: print every error return on stderr.
    pub verbose: bool,
}

/// The table of variables: name, meaning (README lists the same).
pub const VARIABLES: &[(&str, &str)] = &[
    ("RAMP_INTERFACE", "IP address or interface name endpoints bind to (default: an address other hosts can reach, else loopback)"),
    ("RAMP_FAULT_LOSS", "probability [0,1] of dropping an outgoing datagram"),
    ("RAMP_FAULT_DUP", "probability [0,1] of duplicating an outgoing datagram"),
    ("RAMP_FAULT_CORRUPT", "probability [0,1] of flipping a bit in an outgoing datagram"),
    ("RAMP_FAULT_REORDER", "probability [0,1] of holding a datagram back so later ones overtake it"),
    ("RAMP_FAULT_DELAY_US", "delay in microseconds added to every outgoing datagram"),
    ("RAMP_FAULT_SEED", "seed of the fault injector (default 1)"),
    ("RAMP_RTO_INITIAL_US", "retransmission timeout before a round trip is measured (default 20000)"),
    ("RAMP_RTO_MIN_US", "lower bound of the retransmission timeout (default 5000)"),
    ("RAMP_RTO_MAX_US", "upper bound of the retransmission timeout (default 1000000)"),
    ("RAMP_RETRY_LIMIT", "retransmissions of a packet before the peer is unreachable (default 30)"),
    ("RAMP_ACK_DELAY_US", "how long an ACK waits for a packet to ride on (default 200)"),
    ("RAMP_NACK_LIMIT", "refusals (NACKs) of one message before it returns with ECONGESTION (default 200)"),
    ("RAMP_NACK_BACKOFF_US", "pause after a NACK before the sender goes back (default 1000)"),
    ("RAMP_RECV_DEPTH", "requests held delivered but not yet handled before NACKs (default 2*depth*min(max(1,P-1),4))"),
    ("RAMP_WINDOW", "packets in flight per channel, 1..64 (default 64)"),
    ("RAMP_MAX_DATAGRAM", "largest datagram in bytes, 1500..65507 (default 65507)"),
    ("RAMP_SOCKET_BUFFER", "kernel socket buffer size in bytes (default 4194304)"),
    ("RAMP_VERBOSE", "1: print every error return on stderr"),
    ("RAMP_NETWORK_DEPTH", "SPMD jobs: network depth (credits per peer) when the program passes 0 (default 128; NETWORKDEPTH is also read)"),
    ("RAMP_PMI", "SPMD jobs under a PMI launcher: 1 or 2 forces the PMI wire protocol version"),
    ("RAMP_LABEL_OUTPUT", "AMUDP master form (`./prog N L`): 1 prefixes every output line with [rank]"),
    ("RAMP_SPAWNFN", "AMUDP master form: spawner letter when none is given (only L, the default, is supported; SPAWNFN is also read)"),
    ("RAMP_SPMD_MASTER", "set by the local launcher for its workers (with RAMP_SPMD_RANK, RAMP_SPMD_SIZE); not for users"),
];

fn parse_prob(name: &str, v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "{name}={v:?}: expected a probability between 0 and 1"
        )),
    }
}

fn parse_u64(name: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    match v.trim().parse::<u64>() {
        Ok(x) if (min..=max).contains(&x) => Ok(x),
        _ => Err(format!(
            "{name}={v:?}: expected an integer between {min} and {max}"
        )),
    }
}

impl Config {
    /// Reads the configuration from a lookup function (the environment, or a
    /// map in tests). Returns every bad variable, one message each.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, Vec<String>> {
        let mut errs = Vec::new();
        let mut c = Config {
            interface: None,
            fault: FaultConfig::default(),
            proto: ProtoConfig::default(),
            recv_depth: None,
            socket_buffer: 4 << 20,
            verbose: false,
        };
        let mut prob = |name: &str, slot: &mut f64| {
            if let Some(v) = get(name) {
                match parse_prob(name, &v) {
                    Ok(p) => *slot = p,
                    Err(e) => errs.push(e),
                }
            }
        };
        prob("RAMP_FAULT_LOSS", &mut c.fault.loss);
        prob("RAMP_FAULT_DUP", &mut c.fault.dup);
        prob("RAMP_FAULT_CORRUPT", &mut c.fault.corrupt);
        prob("RAMP_FAULT_REORDER", &mut c.fault.reorder);
        let mut int = |name: &str, min: u64, max: u64| -> Option<u64> {
            let v = get(name)?;
            match parse_u64(name, &v, min, max) {
                Ok(x) => Some(x),
                Err(e) => {
                    errs.push(e);
                    None
                }
            }
        };
        const HOUR_US: u64 = 3_600_000_000;
        if let Some(x) = int("RAMP_FAULT_DELAY_US", 0, 10_000_000) {
            c.fault.delay = x * MICROS;
        }
        if let Some(x) = int("RAMP_FAULT_SEED", 0, u64::MAX) {
            c.fault.seed = x;
        }
        if let Some(x) = int("RAMP_RTO_INITIAL_US", 1, HOUR_US) {
            c.proto.rto_initial = x * MICROS;
        }
        if let Some(x) = int("RAMP_RTO_MIN_US", 1, HOUR_US) {
            c.proto.rto_min = x * MICROS;
        }
        if let Some(x) = int("RAMP_RTO_MAX_US", 1, HOUR_US) {
            c.proto.rto_max = x * MICROS;
        }
        if let Some(x) = int("RAMP_RETRY_LIMIT", 0, 1_000_000) {
            c.proto.retry_limit = x as u32;
        }
        if let Some(x) = int("RAMP_ACK_DELAY_US", 0, HOUR_US) {
            c.proto.ack_delay = x * MICROS;
        }
        if let Some(x) = int("RAMP_NACK_LIMIT", 0, 1_000_000) {
            c.proto.nack_limit = x as u32;
        }
        if let Some(x) = int("RAMP_NACK_BACKOFF_US", 1, HOUR_US) {
            c.proto.nack_backoff = x * MICROS;
        }
        if let Some(x) = int("RAMP_RECV_DEPTH", 1, 1 << 20) {
            c.recv_depth = Some(x as usize);
        }
        if let Some(x) = int("RAMP_WINDOW", 1, 64) {
            c.proto.window = x as usize;
        }
        if let Some(x) = int("RAMP_MAX_DATAGRAM", 1500, 65507) {
            c.proto.max_datagram = x as usize;
        }
        if let Some(x) = int("RAMP_SOCKET_BUFFER", 4096, 1 << 30) {
            c.socket_buffer = x as usize;
        }
        if let Some(v) = get("RAMP_VERBOSE") {
            match v.trim() {
                "" | "0" | "no" | "false" => c.verbose = false,
                "1" | "yes" | "true" => c.verbose = true,
                _ => errs.push(format!("RAMP_VERBOSE={v:?}: expected 0 or 1")),
            }
        }
        if let Some(v) = get("RAMP_INTERFACE") {
            if !v.trim().is_empty() {
                c.interface = Some(v.trim().to_string());
            }
        }
        if c.proto.rto_min > c.proto.rto_max {
            errs.push(format!(
                "RAMP_RTO_MIN_US ({}) is larger than RAMP_RTO_MAX_US ({})",
                c.proto.rto_min / MICROS,
                c.proto.rto_max / MICROS
            ));
        }
        if errs.is_empty() {
            Ok(c)
        } else {
            Err(errs)
        }
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, Vec<String>> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_values() {
        let c = cfg(&[]).unwrap();
        assert!(!c.fault.enabled());
        let c = cfg(&[("RAMP_FAULT_LOSS", "0.05"), ("RAMP_RETRY_LIMIT", "4")]).unwrap();
        assert_eq!(c.fault.loss, 0.05);
        assert_eq!(c.proto.retry_limit, 4);
    }

    #[test]
    fn every_bad_value_is_named() {
        let e = cfg(&[
            ("RAMP_FAULT_LOSS", "lots"),
            ("RAMP_WINDOW", "100"),
            ("RAMP_VERBOSE", "maybe"),
        ])
        .unwrap_err();
        assert_eq!(e.len(), 3);
        assert!(e[0].contains("RAMP_FAULT_LOSS"));
        assert!(e.iter().any(|m| m.contains("RAMP_WINDOW")));
        let e = cfg(&[("RAMP_RTO_MIN_US", "5000"), ("RAMP_RTO_MAX_US", "10")]).unwrap_err();
        assert!(e[0].contains("larger"));
    }
}
