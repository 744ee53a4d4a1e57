//! The stages file of `ramp perf measure` (written) and `ramp perf model`
//! (read): the transport, the timer policy, then per (protocol, bytes) a
//! `stage` line (the stage costs, us) and a `dist` line (the loss-free
//! round trip's distribution, `t:p` atoms, `Dist::of_samples`). Every
//! value is checked; a bad line is refused naming the file and the line.

use crate::perf_measure::StageTable;
use ramp::perf::{Dist, Policy, Stages};

/// The names of a `stage` line's values, in order.
const FIELDS: [&str; 6] = [
    "send",
    "request_way",
    "handler",
    "reply_way",
    "log",
    "rttvar",
];

/// The stages file's text.
pub fn text(transport: &str, runs: usize, p: &Policy, t: &StageTable) -> String {
    let mut s = format!(
        "# ramp perf measure: stage costs (us) of serial requests between two processes, \
         loss-free, medians of {runs} runs\n\
         # send: the request call; request_way/reply_way: wire, receive and dispatch each way;\n\
         # handler: the handler with its reply; log: the transaction log's cost (txn: log on less\n\
         # log off); rttvar: the round trips' mean absolute deviation; dist: the loss-free round\n\
         # trip's distribution (t:p, of the median run), which the model convolves with the repairs\n\
         transport {transport}\n\
         policy rto_initial_us {} rto_min_us {} rto_max_us {} ack_delay_us {} retry_limit {} burst_us_per_byte {}\n\
         # tail-loss probe max(2 srtt, srtt + 4 rttvar) + 2 ack_delay (at most the RTO); a first copy\n\
         # lost again in a flight of <= 2 packets: a second probe (2 pto); then RTO, doubling;\n\
         # RACK: a packet before one SACKed is resent max(srtt/2, 4 rttvar) after it was sent\n",
        p.rto_initial_us, p.rto_min_us, p.rto_max_us, p.ack_delay_us, p.retry_limit, p.burst_us_per_byte
    );
    for ((proto, bytes), (st, p99, ..)) in t {
        let rt = st.round_trip();
        let v = [
            st.send,
            st.request_way,
            st.handler,
            st.reply_way,
            st.log,
            st.rttvar,
        ];
        s += &format!("stage {proto} {bytes}");
        for (name, x) in FIELDS.iter().zip(v) {
            s += &format!(" {name} {x:.3}");
        }
        s += &format!(
            " # round trip {rt:.2} p99 {p99:.2} pto {:.1} rto {:.0}\n",
            p.pto(rt, st.rttvar),
            p.rto(rt, st.rttvar)
        );
        if let Some(d) = &st.loss_free {
            s += &format!("dist {proto} {bytes}");
            for (t, p) in d.atoms() {
                s += &format!(" {t:.3}:{p:.6}");
            }
            s += "\n";
        }
    }
    s
}

fn num(w: &str) -> Option<f64> {
    w.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

fn proto(w: &str) -> Option<&'static str> {
    match w {
        "plain" => Some("plain"),
        "txn" => Some("txn"),
        _ => None,
    }
}

/// Reads a stages file: its transport and stages.
pub fn read(path: &str) -> Result<(String, StageTable), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{path}: {e} (write it with `ramp perf measure --out {path}`)"))?;
    let mut transport = None;
    let mut table = StageTable::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let w: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: &str| format!("{path}:{}: not a stages line ({why}): {line:?}", n + 1);
        match w.first() {
            None | Some(&"policy") => {}
            Some(&"transport") => transport = w.get(1).map(|t| t.to_string()),
            Some(&"stage") if w.len() == 3 + 2 * FIELDS.len() => {
                let proto = proto(w[1]).ok_or_else(|| bad("plain or txn"))?;
                let bytes: usize = w[2].parse().map_err(|_| bad("bytes"))?;
                let mut v = [0.0; FIELDS.len()];
                for (i, name) in FIELDS.iter().enumerate() {
                    if w[3 + 2 * i] != *name {
                        return Err(bad(&format!("{name} expected")));
                    }
                    v[i] = num(w[4 + 2 * i]).ok_or_else(|| bad("a number >= 0"))?;
                }
                let st = Stages {
                    send: v[0],
                    request_way: v[1],
                    handler: v[2],
                    reply_way: v[3],
                    log: v[4],
                    rttvar: v[5],
                    loss_free: None,
                };
                table.insert((proto, bytes), (st, 0.0, 0.0, 0));
            }
            Some(&"dist") if w.len() > 3 => {
                let proto = proto(w[1]).ok_or_else(|| bad("plain or txn"))?;
                let bytes: usize = w[2].parse().map_err(|_| bad("bytes"))?;
                let atoms = w[3..]
                    .iter()
                    .map(|a| {
                        let (t, p) = a.split_once(':')?;
                        Some((num(t)?, num(p)?))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("t:p atoms"))?;
                let mass: f64 = atoms.iter().map(|a| a.1).sum();
                if (mass - 1.0).abs() > 1e-3 {
                    return Err(bad(&format!("its shares sum to {mass}, not 1")));
                }
                let (st, ..) = table
                    .get_mut(&(proto, bytes))
                    .ok_or_else(|| bad("no stage line before it"))?;
                st.loss_free = Some(Dist::normalized(atoms));
            }
            _ => return Err(bad("unknown")),
        }
    }
    let transport = transport.ok_or(format!("{path}: no transport line"))?;
    if table.is_empty() {
        return Err(format!("{path}: no stage lines"));
    }
    Ok((transport, table))
}
