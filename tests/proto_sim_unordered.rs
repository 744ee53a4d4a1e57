//! No head-of-line blocking where no order is promised (issue 37): a user
//! reply whole in one packet, arriving ahead of a gap on the reply
//! channel, is delivered at once, before the lost packet is repaired; its
//! marker stays held so that it is SACKed, refused as a duplicate, and
//! stepped over when the gap fills (`proto/recv.rs`). Requests, fragmented
//! replies and the other kinds keep their channel's order.

mod common;
#[path = "common/sim.rs"]
mod sim;

use ramp::sim::seeds;
use sim::*;

/// Node 0 sends `n` replies (or requests) of 8 bytes to node 1; the first
/// packet is lost; the others reach node 1 at once, nothing else moves.
/// Returns the duo, node 1's ledger, and the packets that arrived.
fn first_lost(ch: u8, n: u32) -> (Duo, Ledger, Vec<Vec<u8>>) {
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    for k in 0..n {
        duo.send(0, ch, k, 8);
    }
    let mut pkts = duo.out(0);
    assert_eq!(pkts.len(), n as usize, "one DATA packet each");
    pkts.remove(0); // lost
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    (duo, ledger, pkts)
}

#[test]
fn a_reply_behind_a_lost_packet_is_delivered_before_the_repair() {
    let _watchdog = common::watchdog("proto_sim_unordered::reply", Duration::from_secs(60));
    let (mut duo, mut ledger, pkts) = first_lost(CHANNEL_REPLY, 4);
    // delivered without any time passing: no retransmission could have
    // come
    let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
    assert_eq!(ks, vec![1, 2, 3], "the three behind the gap, at once");
    assert_eq!(duo.p[0].stats().packets_retransmitted, 0);
    // replayed before the repair: refused, nothing delivered twice
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 3);
    assert!(duo.p[1].stats().duplicates_dropped >= 3);
    // the repair: the lost one delivered, once; both ends idle
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 4 && d.p[0].is_idle() && d.p[1].is_idle()
    }));
    assert_eq!(ledger.trace.last().map(|t| t.3), Some(0));
    // replayed after it: refused too
    let dups = duo.p[1].stats().duplicates_dropped;
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 4);
    assert!(duo.p[1].stats().duplicates_dropped >= dups + 3);
    duo.p[1].check_invariants();
}

#[test]
fn a_request_behind_a_lost_packet_waits_for_it() {
    let _watchdog = common::watchdog("proto_sim_unordered::request", Duration::from_secs(60));
    let (mut duo, mut ledger, _) = first_lost(CHANNEL_REQUEST, 4);
    assert_eq!(ledger.delivered, 0, "requests keep their order");
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 4 && d.p[0].is_idle()
    }));
    assert_eq!(ledger.early, 0);
}

#[test]
fn a_fragmented_reply_behind_a_lost_packet_waits_for_it() {
    let _watchdog = common::watchdog("proto_sim_unordered::fragmented", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig {
        max_datagram: 600,
        ..Default::default()
    });
    let mut ledger = Ledger::default();
    duo.send(0, CHANNEL_REPLY, 0, 8);
    duo.send(0, CHANNEL_REPLY, 1, 1000); // two fragments
    duo.send(0, CHANNEL_REPLY, 2, 8);
    let mut pkts = duo.out(0);
    assert_eq!(pkts.len(), 4);
    pkts.remove(0);
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
    assert_eq!(ks, vec![2], "only the whole one");
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 3 && d.p[0].is_idle() && d.p[1].is_idle()
    }));
    let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
    assert_eq!(ks, vec![2, 0, 1]);
}

/// Two nodes each send 300 messages on both channels under loss,
/// duplication, corruption and reordering: every one delivered exactly
/// once (the ledger), requests in order, some replies ahead of a gap.
#[test]
fn exactly_once_with_early_replies_under_faults() {
    let _watchdog = common::watchdog("proto_sim_unordered::faults", Duration::from_secs(180));
    let mut early = 0;
    for seed in seeds(8) {
        println!("seed {seed} (RAMP_SIM_SEED={seed} replays it)");
        let mut net = SimNet::new(2, ProtoConfig::default(), faults(seed));
        let plan = all_to_all_plan(2, 300, |k| 8 + (k as usize * 37) % 200);
        let ledger = run_plan(&mut net, &plan, 32, &[0, 1], 600 * SECOND);
        assert!(net.stats.lost > 0 && net.stats.duplicated > 0);
        early += ledger.early;
        for i in 0..2 {
            net.node(i).check_invariants();
        }
    }
    assert!(early > 0, "no reply was delivered ahead of a gap");
}
