//! Every `RAMP_*` variable, in one table ([`VARIABLES`]): its name, the
//! older (AMUDP) names read when it is unset, what it means (the README's
//! table says the same) and the parser that checks a value and stores it
//! in [`Config`]; the names other code uses too, and the limits a value is
//! checked against.

use super::{Auth, Config, JobKey, TransportChoice};
use crate::time::{MICROS, MILLIS};

/// One variable: its name, the older (AMUDP) names read when it is unset,
/// what it means (the README's table says the same), and how a value is
/// checked and stored. A bad value gives `Err(what was expected)`.
pub struct Var {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub meaning: &'static str,
    pub(super) set: fn(&mut Config, &str) -> Result<(), String>,
}

// Names other code uses too (the local launcher sets these for its workers;
// a check across variables names two of them).
/// The largest network depth (credits per peer) AM_SetExpectedResources and
/// `RAMP_NETWORK_DEPTH` accept (re-exported as `am::MAX_NETWORK_DEPTH`).
pub const MAX_NETWORK_DEPTH: u32 = 1024;

pub const INTERFACE: &str = "RAMP_INTERFACE";
pub const RAILS: &str = "RAMP_RAILS";
pub const PATH_PROBE_MS: &str = "RAMP_PATH_PROBE_MS";
pub const STRIPE_MIN: &str = "RAMP_STRIPE_MIN";
/// The most rails (local sockets) an endpoint sends and receives on
/// (`RAMP_RAILS`; the default's further rails stop there too).
pub const MAX_RAILS: usize = 4;
pub const SPMD_MASTER: &str = "RAMP_SPMD_MASTER";
pub const SPMD_RANK: &str = "RAMP_SPMD_RANK";
pub const SPMD_SIZE: &str = "RAMP_SPMD_SIZE";
pub const SPMD_TOKEN: &str = "RAMP_SPMD_TOKEN";
/// Bytes of the local launcher's job token (`RAMP_SPMD_TOKEN`: twice as
/// many hex digits).
pub const SPMD_TOKEN_LEN: usize = 16;
pub const RTO_MIN_US: &str = "RAMP_RTO_MIN_US";
pub const RTO_MAX_US: &str = "RAMP_RTO_MAX_US";
pub const JOB_KEY: &str = "RAMP_JOB_KEY";
pub const AUTH: &str = "RAMP_AUTH";
pub const TRANSPORT: &str = "RAMP_TRANSPORT";
pub const SHM_EXPRESS: &str = "RAMP_SHM_EXPRESS";
pub const XFER_STAGING: &str = "RAMP_XFER_STAGING";
pub const REQUEST_BATCH: &str = "RAMP_REQUEST_BATCH";
pub const UDP_CONNECT: &str = "RAMP_UDP_CONNECT";
pub const CLOCK: &str = "RAMP_CLOCK";
/// Path news and the statistics on stderr (tests/link_rails.rs reads the lines).
pub const VERBOSE: &str = "RAMP_VERBOSE";
/// The fault injector's loss rate (`ramp bench --repair` sets it for its roles).
pub const FAULT_LOSS: &str = "RAMP_FAULT_LOSS";
/// The transaction log's directory (`ramp perf` sets it for transactions).
pub const LOG_DIR: &str = "RAMP_LOG_DIR";
/// The fault injector's loss at the receiver (`ramp perf sweep` sets it).
pub const FAULT_RECV_LOSS: &str = "RAMP_FAULT_RECV_LOSS";
/// The fault injector's bit error rate (`ramp perf sweep` sets it).
pub const FAULT_BER: &str = "RAMP_FAULT_BER";
/// The simulator's seed to replay (`sim::seeds`), and its trace on stderr:
/// test tools, not the library's configuration.
pub const SIM_SEED: &str = "RAMP_SIM_SEED";
pub const SIM_TRACE: &str = "RAMP_SIM_TRACE";
/// The most requests in a batch: as many packets as the sender joins into
/// one datagram (`proto/outbox.rs`'s `SEND_BUNDLE_MAX`); also the default.
pub const MAX_REQUEST_BATCH: u16 = 32;
pub const DEFAULT_REQUEST_BATCH: u16 = MAX_REQUEST_BATCH;
const _: () = assert!(MAX_REQUEST_BATCH as usize <= crate::proto::SEND_BUNDLE_MAX);

const HOUR_US: u64 = 3_600_000_000;

/// Every `RAMP_*` variable: the one place names are written, read by
/// [`Config::from_lookup`] and compared with the README's table by a test.
pub const VARIABLES: &[Var] = &[
    Var {
        name: INTERFACE,
        aliases: &[],
        meaning: "IP address or interface name endpoints bind to (default: an address other hosts can reach, else loopback)",
        set: |c, v| {
            c.interface = Some(v.trim())
                .filter(|v| !v.is_empty())
                .map(String::from);
            Ok(())
        },
    },
    Var {
        name: RAILS,
        aliases: &[],
        meaning: "comma-separated interface names or IPv4 addresses an endpoint sends and receives on (its rails), at most 4, each once; the first is the endpoint's name (its en_t), the others are told to peers in the handshake; a name that does not exist or is down is refused at open; loopback addresses are allowed when named; not together with RAMP_INTERFACE unless that is the first rail (default: the name RAMP_INTERFACE or the default chooses, plus every other up, non-loopback IPv4 interface, when the name is not loopback)",
        set: |c, v| rails(v).map(|r| c.rails = Some(r)),
    },
    Var {
        name: PATH_PROBE_MS,
        aliases: &[],
        meaning: "milliseconds between probes of a failed path (one rail to one address of a peer), 1..1000, backing off to at most 1 s, 0.5 s while every path to the peer has failed (default 100)",
        set: |c, v| int(v, 1, 1000).map(|x| c.proto.path_probe = x * MILLIS),
    },
    Var {
        name: STRIPE_MIN,
        aliases: &[],
        meaning: "bytes from which a message is striped over every active path to its peer (its fragments spread in proportion to each path's measured delivery rate); smaller ones take the best path; 1..1073741824 (default 262144)",
        set: |c, v| {
            let max = crate::proto::config::MAX_STRIPE_MIN as u64;
            int(v, 1, max).map(|x| c.proto.stripe_min = x as usize)
        },
    },
    Var {
        name: FAULT_LOSS,
        aliases: &[],
        meaning: "probability [0,1] of dropping an outgoing datagram",
        set: |c, v| prob(v).map(|x| c.fault.loss = x),
    },
    Var {
        name: FAULT_RECV_LOSS,
        aliases: &[],
        meaning: "probability [0,1] of dropping an incoming datagram after the socket gave it (a loss at the receiver: its kernel or library), on top of the outgoing faults",
        set: |c, v| prob(v).map(|x| c.fault.recv_loss = x),
    },
    Var {
        name: FAULT_BER,
        aliases: &[],
        meaning: "bit error rate [0,1]: an outgoing datagram of n bytes is dropped with probability 1-(1-ber)^(8n)",
        set: |c, v| prob(v).map(|x| c.fault.ber = x),
    },
    Var {
        name: "RAMP_FAULT_DUP",
        aliases: &[],
        meaning: "probability [0,1] of duplicating an outgoing datagram",
        set: |c, v| prob(v).map(|x| c.fault.dup = x),
    },
    Var {
        name: "RAMP_FAULT_CORRUPT",
        aliases: &[],
        meaning: "probability [0,1] of flipping a bit in an outgoing datagram",
        set: |c, v| prob(v).map(|x| c.fault.corrupt = x),
    },
    Var {
        name: "RAMP_FAULT_REORDER",
        aliases: &[],
        meaning: "probability [0,1] of holding a datagram back so later ones overtake it",
        set: |c, v| prob(v).map(|x| c.fault.reorder = x),
    },
    Var {
        name: "RAMP_FAULT_DELAY_US",
        aliases: &[],
        meaning: "delay in microseconds added to every outgoing datagram",
        set: |c, v| int(v, 0, 10_000_000).map(|x| c.fault.delay = x * MICROS),
    },
    Var {
        name: "RAMP_FAULT_SEED",
        aliases: &[],
        meaning: "seed of the fault injector (default 1)",
        set: |c, v| int(v, 0, u64::MAX).map(|x| c.fault.seed = x),
    },
    Var {
        name: "RAMP_RTO_INITIAL_US",
        aliases: &[],
        meaning: "retransmission timeout before a round trip is measured (default 20000)",
        set: |c, v| int(v, 1, HOUR_US).map(|x| c.proto.rto_initial = x * MICROS),
    },
    Var {
        name: RTO_MIN_US,
        aliases: &[],
        meaning: "lower bound of the retransmission timeout (default 5000)",
        set: |c, v| int(v, 1, HOUR_US).map(|x| c.proto.rto_min = x * MICROS),
    },
    Var {
        name: RTO_MAX_US,
        aliases: &[],
        meaning: "upper bound of the retransmission timeout (default 1000000)",
        set: |c, v| int(v, 1, HOUR_US).map(|x| c.proto.rto_max = x * MICROS),
    },
    Var {
        name: "RAMP_RETRY_LIMIT",
        aliases: &[],
        meaning: "retransmissions of a packet before its messages return EUNREACHABLE; a second bound behind RAMP_PEER_TIMEOUT_MS (default 30)",
        set: |c, v| int(v, 0, 1_000_000).map(|x| c.proto.retry_limit = x as u32),
    },
    Var {
        name: "RAMP_PEER_TIMEOUT_MS",
        aliases: &[],
        meaning: "silence from a peer with messages outstanding after which it is dead: they and new ones return EUNREACHABLE at once until a new handshake succeeds (default 10000)",
        set: |c, v| int(v, 1, HOUR_US / 1000).map(|x| c.proto.peer_timeout = x * MILLIS),
    },
    Var {
        name: "RAMP_IDLE_TIMEOUT_MS",
        aliases: &[],
        meaning: "quiet time after which an association with nothing queued, in flight or held is shut down (SHUTDOWN exchange) and both ends free its state; the next message opens a new one; 0 never (default 120000)",
        set: |c, v| int(v, 0, 24 * HOUR_US / 1000).map(|x| c.proto.idle_timeout = x * MILLIS),
    },
    Var {
        name: "RAMP_PEER_BUFFER",
        aliases: &[],
        meaning: "bytes one peer may make us hold (out-of-order packets, partial messages); beyond it out-of-order packets are dropped and resent (default 4194304)",
        set: |c, v| int(v, 4096, 1 << 40).map(|x| c.proto.peer_buffer = x as usize),
    },
    Var {
        name: "RAMP_ACK_DELAY_US",
        aliases: &[],
        meaning: "how long an ACK waits for a packet to ride on (default 25)",
        set: |c, v| int(v, 0, HOUR_US).map(|x| c.proto.ack_delay = x * MICROS),
    },
    Var {
        name: "RAMP_NACK_LIMIT",
        aliases: &[],
        meaning: "refusals (NACKs) of one message before it returns with ECONGESTION (default 200)",
        set: |c, v| int(v, 0, 1_000_000).map(|x| c.proto.nack_limit = x as u32),
    },
    Var {
        name: "RAMP_NACK_BACKOFF_US",
        aliases: &[],
        meaning: "pause after a NACK before the sender goes back (default 1000)",
        set: |c, v| int(v, 1, HOUR_US).map(|x| c.proto.nack_backoff = x * MICROS),
    },
    Var {
        name: "RAMP_RECV_DEPTH",
        aliases: &[],
        meaning: "requests held delivered but not yet handled before NACKs (default 2*depth*min(max(1,P-1),4))",
        set: |c, v| int(v, 1, 1 << 20).map(|x| c.recv_depth = Some(x as usize)),
    },
    Var {
        name: "RAMP_WINDOW",
        aliases: &[],
        meaning: "packets in flight per channel, 1..64 (default 64)",
        set: |c, v| int(v, 1, 64).map(|x| c.proto.window = x as usize),
    },
    Var {
        name: "RAMP_MAX_DATAGRAM",
        aliases: &[],
        meaning: "largest datagram in bytes, 1500..65507 (default 65507)",
        set: |c, v| int(v, 1500, 65507).map(|x| c.proto.max_datagram = x as usize),
    },
    Var {
        name: "RAMP_SOCKET_BUFFER",
        aliases: &[],
        meaning: "kernel socket buffer size in bytes (default 4194304)",
        set: |c, v| int(v, 4096, 1 << 30).map(|x| c.socket_buffer = x as usize),
    },
    Var {
        name: "RAMP_VERBOSE",
        aliases: &[],
        meaning: "1: print every error return on stderr",
        set: |c, v| flag(v).map(|x| c.verbose = x),
    },
    Var {
        name: "RAMP_PROGRESS_THREAD",
        aliases: &[],
        meaning: "1: every bundle starts with a progress thread that performs remote puts and gets while the program computes (ramp_SetProgressThread)",
        set: |c, v| flag(v).map(|x| c.progress_thread = x),
    },
    Var {
        name: LOG_DIR,
        aliases: &[],
        meaning: "an existing directory: every endpoint keeps its transactions in a log there (ramp_LogOpen), endpoint-N.ramplog for the process's N-th endpoint (from 0), so a restarted process comes back as the same endpoints",
        set: |c, v| {
            if std::path::Path::new(v).is_dir() {
                c.log_dir = Some(v.into());
                Ok(())
            } else {
                Err("expected an existing directory".to_string())
            }
        },
    },
    Var {
        name: "RAMP_LOG_SYNC",
        aliases: &[],
        meaning: "1: msync every transaction log record (survives a machine crash, at a disk write each); default 0 (survives a process crash)",
        set: |c, v| flag(v).map(|x| c.log_sync = x),
    },
    Var {
        name: "RAMP_NETWORK_DEPTH",
        aliases: &["NETWORKDEPTH"],
        meaning: "SPMD jobs: network depth (credits per peer), 1..1024, when the program passes 0 (default 128; NETWORKDEPTH, GASNET_NETWORKDEPTH and AMUDP_NETWORKDEPTH are also read)",
        set: |c, v| {
            int(v, 1, MAX_NETWORK_DEPTH as u64).map(|x| c.spmd.network_depth = Some(x as u32))
        },
    },
    Var {
        name: "RAMP_PMI",
        aliases: &[],
        meaning: "SPMD jobs under a PMI launcher: 1 or 2 forces the PMI wire protocol version",
        set: |c, v| {
            c.spmd.pmi = match v.trim() {
                "1" => Some(1),
                "2" => Some(2),
                _ => return Err("expected 1 or 2".into()),
            };
            Ok(())
        },
    },
    Var {
        name: "RAMP_LABEL_OUTPUT",
        aliases: &[],
        meaning: "AMUDP master form (`./prog N L`): 1 prefixes every output line with [rank]",
        set: |c, v| flag(v).map(|x| c.spmd.label_output = x),
    },
    Var {
        name: "RAMP_ROUTE_OUTPUT",
        aliases: &["ROUTE_OUTPUT"],
        meaning: "AMUDP master form: 0 lets workers write to the terminal directly (default 1, through the master; ROUTE_OUTPUT, GASNET_ROUTE_OUTPUT and AMUDP_ROUTE_OUTPUT are also read)",
        set: |c, v| flag(v).map(|x| c.spmd.route_output = x),
    },
    Var {
        name: "RAMP_SPAWNFN",
        aliases: &["SPAWNFN"],
        meaning: "AMUDP master form: spawner letter when none is given: L (fork/exec here, the default), S (ssh) or C (custom command) (SPAWNFN, GASNET_SPAWNFN and AMUDP_SPAWNFN are also read)",
        set: |c, v| {
            let mut ch = v.trim().chars();
            c.spmd.spawnfn = match (ch.next(), ch.next()) {
                (None, _) => None,
                (Some(l), None) if l.is_ascii_alphabetic() => Some(l.to_ascii_uppercase()),
                _ => return Err("expected a spawner letter: L, S or C".into()),
            };
            Ok(())
        },
    },
    Var {
        name: SPMD_MASTER,
        aliases: &[],
        meaning: "set by the local launcher for its workers: the master's address:port; not for users",
        set: |c, v| {
            let a = v.trim().parse().map_err(|_| "expected address:port")?;
            c.spmd.master = Some(a);
            Ok(())
        },
    },
    Var {
        name: SPMD_TOKEN,
        aliases: &[],
        meaning: "set by the local launcher for its workers: the secret they introduce themselves to it with; not for users",
        set: |c, v| {
            let v = v.trim().as_bytes();
            let mut t = [0u8; SPMD_TOKEN_LEN];
            if v.len() != 2 * SPMD_TOKEN_LEN || !v.iter().all(u8::is_ascii_hexdigit) {
                return Err("expected 32 hex digits".into());
            }
            for (i, b) in t.iter_mut().enumerate() {
                let d = std::str::from_utf8(&v[2 * i..2 * i + 2]).map_err(|_| "expected 32 hex digits")?;
                *b = u8::from_str_radix(d, 16).map_err(|_| "expected 32 hex digits")?;
            }
            c.spmd.token = Some(t);
            Ok(())
        },
    },
    Var {
        name: SPMD_RANK,
        aliases: &[],
        meaning: "set by the local launcher for its workers: the worker's rank; not for users",
        set: |c, v| int(v, 0, u32::MAX as u64 - 1).map(|x| c.spmd.rank = Some(x as usize)),
    },
    Var {
        name: SPMD_SIZE,
        aliases: &[],
        meaning: "set by the local launcher for its workers: the number of processes; not for users",
        set: |c, v| int(v, 1, u32::MAX as u64).map(|x| c.spmd.size = Some(x as usize)),
    },
    Var {
        name: "RAMP_BENCH_SERVER_STATS",
        aliases: &[],
        meaning: "`ramp bench` server role: 1 prints the endpoint's statistics on stderr when it ends",
        set: |c, v| flag(v).map(|x| c.bench_server_stats = x),
    },
    Var {
        name: JOB_KEY,
        aliases: &[],
        meaning: "set by the launchers for their workers (ramp-run and the AMUDP master form: 64 random hex digits; under PMI rank 0 shares one): every packet carries a MAC of it; at least 16 characters; a value set by the user is passed through; never printed",
        set: |c, v| JobKey::new(v).map(|k| c.job_key = Some(k)),
    },
    Var {
        name: AUTH,
        aliases: &[],
        meaning: "auto (default): packets carry a MAC when a job key is present; on: refuse to open an endpoint without a job key; off: no MAC even with a key (CRC32C only, trusted networks)",
        set: |c, v| {
            c.auth = match v.trim().to_ascii_lowercase().as_str() {
                "auto" | "" => Auth::Auto,
                "on" | "1" => Auth::On,
                "off" | "0" => Auth::Off,
                _ => return Err("expected auto, on or off".into()),
            };
            Ok(())
        },
    },
    Var {
        name: TRANSPORT,
        aliases: &[],
        meaning: "auto (default): peers on the same host are reached through shared memory (rings in anonymous shared memory handed over between the processes; nothing is left in /dev/shm), others through UDP; udp: UDP only; shm: like auto, but an endpoint that cannot set up shared memory fails to open",
        set: |c, v| {
            c.transport = match v.trim().to_ascii_lowercase().as_str() {
                "auto" | "" => TransportChoice::Auto,
                "udp" => TransportChoice::Udp,
                "shm" => TransportChoice::Shm,
                _ => return Err("expected auto, udp or shm".into()),
            };
            Ok(())
        },
    },
    Var {
        name: SHM_EXPRESS,
        aliases: &[],
        meaning: "1 (default): short AM requests and their replies to a peer reached through a shared-memory ring are written straight into the ring, outside the reliable protocol, when the protocol has nothing unacknowledged for that peer (not with a job key's MAC, nor under fault injection); 0: every message goes through the protocol",
        set: |c, v| flag(v).map(|x| c.shm_express = x),
    },
    Var {
        name: XFER_STAGING,
        aliases: &[],
        meaning: "1 (default): a long request (AM_RequestXfer) of 32 KiB to 128 KiB to a peer reached through a shared-memory ring, into a segment the peer cannot share, is copied into a staging area of 512 KiB the peer keeps for us and returns at once, the peer copying it into its segment when it handles it (one memcpy each end); each peer that asks gets such an area from us; 0: neither (those requests are copied by the peer across processes, the call waiting for it)",
        set: |c, v| flag(v).map(|x| c.xfer_staging = x),
    },
    Var {
        name: REQUEST_BATCH,
        aliases: &[],
        meaning: "most small requests sent as one datagram (default 32, at most 32; 0 or 1: none held): a request to a peer reached over UDP that still owes the answer to an earlier request waits until the batch is full or the endpoint's next poll, wait or request, or the progress thread's next pass; a lone request (a ping-pong's) never waits",
        set: |c, v| int(v, 0, MAX_REQUEST_BATCH as u64).map(|x| c.request_batch = x as u16),
    },
    Var {
        name: UDP_CONNECT,
        aliases: &[],
        meaning: "1 (default): the small packets (up to 4 KiB) of an association with a peer reached over UDP leave through a socket connected to that peer, bound to a port of its own (the kernel then looks the route up once, not for every datagram; the peer takes the port as ours from the association's tag), for up to 8 peers an endpoint; 0: every packet leaves through the endpoint's own socket",
        set: |c, v| flag(v).map(|x| c.udp_connect = x),
    },
    Var {
        name: "RAMP_CC",
        aliases: &[],
        meaning: "on (default): congestion control and pacing per peer path (a window in bytes, slow start, a reduction per loss episode that tells random loss from congestion, pacing at the window's rate; `proto/congestion.rs`); off: the packet window alone, as before it (for comparison)",
        set: |c, v| {
            c.proto.congestion = match v.trim() {
                "" | "on" | "1" => true,
                "off" | "0" => false,
                _ => return Err("expected on or off".into()),
            };
            Ok(())
        },
    },
    Var {
        name: CLOCK,
        aliases: &[],
        meaning: "counter (default): readings of the monotonic clock (every poll and request takes one) are carried forward by the CPU's time-stamp counter from a real reading at most about 50 us old, where the kernel itself keeps time by that counter (clocksource tsc); system: every reading is the system's (clock_gettime), as profilers that replace the clock need",
        set: |c, v| {
            c.clock_counter = match v.trim() {
                "counter" => true,
                "system" => false,
                _ => return Err("expected counter or system".into()),
            };
            Ok(())
        },
    },
];

/// `RAMP_RAILS`: 1..=`MAX_RAILS` names, each an IPv4 address or what an
/// interface name may be (at most 15 of `A-Za-z0-9_.-@`), none twice.
/// Whether each exists and is up is asked at open (`net::choose_rails`).
fn rails(v: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
    if names.len() > MAX_RAILS {
        return Err(format!(
            "expected at most {MAX_RAILS} rails, not {}",
            names.len()
        ));
    }
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            return Err(
                "expected interface names or IPv4 addresses separated by commas (one is empty)"
                    .into(),
            );
        }
        if let Ok(ip) = n.parse::<std::net::IpAddr>() {
            if ip.is_ipv6() || ip.is_unspecified() || ip.is_multicast() {
                return Err(format!(
                    "expected a unicast IPv4 address or an interface name, not {n}"
                ));
            }
        } else if n.len() > 15
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-@".contains(c))
        {
            return Err(format!(
                "expected an IPv4 address or an interface name, not {n:?}"
            ));
        }
        if names[..i].contains(n) {
            return Err(format!("expected each rail once, {n} is named twice"));
        }
    }
    Ok(names)
}

fn prob(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err("expected a probability between 0 and 1".into()),
    }
}

fn int(v: &str, min: u64, max: u64) -> Result<u64, String> {
    match v.trim().parse::<u64>() {
        Ok(x) if (min..=max).contains(&x) => Ok(x),
        _ => Err(format!("expected an integer between {min} and {max}")),
    }
}

pub(super) fn flag(v: &str) -> Result<bool, String> {
    match v.trim() {
        "" | "0" | "no" | "false" => Ok(false),
        "1" | "yes" | "true" => Ok(true),
        _ => Err("expected 0 or 1".into()),
    }
}
