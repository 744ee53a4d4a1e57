//! `ramp log FILE`: prints a transaction log and checks it (exit 0: a log
//! ramp would open; 1: refused, with the reason).

use std::path::Path;

use ramp::txlog::state::TargetPhase;
use ramp::txlog::{inspect, record::LoggedMsg};

fn describe(m: &LoggedMsg) -> String {
    let cat = ["short", "medium", "long"][m.category.min(2) as usize];
    format!(
        "handler {} {cat} args {:?} {} payload bytes{}",
        m.handler,
        m.args,
        m.payload.len(),
        if m.category == 2 {
            format!(" at offset {}", m.dest_offset)
        } else {
            String::new()
        }
    )
}

/// Ids are 64 bits; past 2^32 the wire id (the low half) is shown too.
fn wire(txn: u64) -> String {
    if txn > u64::from(u32::MAX) {
        format!(" (wire id {})", txn as u32)
    } else {
        String::new()
    }
}

pub fn run(path: &str) -> i32 {
    let (id, state, rep) = match inspect(Path::new(path)) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ramp log: {e}");
            return 1;
        }
    };
    println!("transaction log {path}");
    println!(
        "  endpoint {} (identity {:02x}{:02x}{:02x}{:02x}..), created {} ns after the epoch",
        id.addr, id.secret[0], id.secret[1], id.secret[2], id.secret[3], id.created_unix_ns
    );
    println!(
        "  {} record(s), {} of {} bytes used, generation {} (compactions)",
        rep.records, rep.used, rep.capacity, rep.generation
    );
    if let Some(at) = rep.torn_tail_at {
        println!("  a torn last record at offset {at} is dropped (a crash while writing it)");
    }
    println!("  next transaction id {}", state.next_txn);
    println!("  issued transactions: {}", state.issued.len());
    for (txn, i) in &state.issued {
        println!(
            "    txn {txn}{} to {}: ack {} progress {} abandon {} status {}: {}",
            wire(*txn),
            i.dest,
            i.state.ack,
            i.state.progress,
            i.state.abandon,
            i.state.status,
            describe(&i.msg)
        );
    }
    println!("  transactions at this target: {}", state.target.len());
    let mut target: Vec<_> = state.target.iter().collect();
    target.sort_by_key(|(k, _)| **k);
    for (k, phase) in target {
        let what = match phase {
            TargetPhase::Acked(m) => format!("acknowledged, not started: {}", describe(m)),
            TargetPhase::Started => "started, not finished".to_string(),
            TargetPhase::Finished(None) => "finished, no reply".to_string(),
            TargetPhase::Finished(Some(r)) => format!("finished, kept reply: {}", describe(r)),
        };
        println!(
            "    from {} (incarnation {:#x}) txn {}{}: {what}",
            k.peer,
            k.incarnation,
            k.txn,
            wire(k.txn)
        );
    }
    println!("log OK");
    0
}
