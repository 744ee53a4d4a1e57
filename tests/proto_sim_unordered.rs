//! No head-of-line blocking where no order is promised (issue 37): a user
//! reply whole in one packet, or a user request whole in one packet that
//! its sender marked unordered (nothing that keeps order, a put or get,
//! unacknowledged before it), arriving ahead of a gap, is delivered at
//! once, before the lost packet is repaired; its marker stays held so
//! that it is SACKed, refused as a duplicate, and stepped over when the
//! gap fills (`proto/recv.rs`). Fragmented messages, requests behind a
//! put and the other kinds keep their channel's order.

mod common;
#[path = "common/sim.rs"]
mod sim;

use ramp::sim::seeds;
use sim::*;

/// Node 0 sends `n` replies (or requests) of 8 bytes to node 1, the first
/// of kind `first`; the first packet is lost; the others reach node 1 at
/// once, nothing else moves. Returns the duo, node 1's ledger, and the
/// packets that arrived.
fn first_lost(ch: u8, n: u32, first: MsgKind) -> (Duo, Ledger, Vec<Vec<u8>>) {
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    let now = duo.now;
    let m = MsgMeta {
        kind: first,
        ..meta(0, 0, 8)
    };
    duo.p[0].send(now, 1, ch, m, payload(0, 0, ch, 8));
    for k in 1..n {
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
    let (mut duo, mut ledger, pkts) = first_lost(CHANNEL_REPLY, 4, MsgKind::User);
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

/// Node 1's events so far: the number (`k`) of each request delivered and
/// how many packets it overtook (`MsgMeta::overtook`).
fn overtaking(duo: &mut Duo, ledger: &mut Ledger) -> Vec<(u32, u8)> {
    let mut v = Vec::new();
    while let Some(ev) = duo.p[1].poll_event() {
        if let Event::Delivered { meta, .. } = &ev {
            v.push((meta.args()[1], meta.overtook));
        }
        ledger.take(1, ev);
    }
    v
}

#[test]
fn a_request_behind_a_lost_request_is_delivered_before_the_repair() {
    let _watchdog = common::watchdog("proto_sim_unordered::request", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    for k in 0..4 {
        duo.send(0, CHANNEL_REQUEST, k, 8);
    }
    let mut pkts = duo.out(0);
    assert_eq!(pkts.len(), 4);
    pkts.remove(0); // lost
                    // 2 before 1: each counts the one packet not delivered before it
    for p in [&pkts[1], &pkts[0], &pkts[2]] {
        duo.feed(1, p);
    }
    let got = overtaking(&mut duo, &mut ledger);
    assert_eq!(
        got,
        vec![(2, 2), (1, 1), (3, 1)],
        "ahead of the gap, at once"
    );
    assert_eq!(duo.p[0].stats().packets_retransmitted, 0);
    // replayed before the repair: refused, nothing delivered twice
    for p in &pkts {
        duo.feed(1, p);
    }
    assert!(overtaking(&mut duo, &mut ledger).is_empty());
    assert!(duo.p[1].stats().duplicates_dropped >= 3);
    duo.p[1].check_invariants();
    // the repair: the lost one delivered in order, once; both ends idle
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 4 && d.p[0].is_idle() && d.p[1].is_idle()
    }));
    assert_eq!(ledger.trace.last().map(|t| t.3), Some(0));
    assert_eq!(ledger.early_requests, 3);
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 4, "refused after the repair too");
    duo.p[1].check_invariants();
}

/// A put (or any kind that keeps order) lost before requests: they wait
/// for it, so that it is performed before their handlers run (ramp.h).
#[test]
fn a_request_behind_a_lost_put_waits_for_it() {
    let _watchdog = common::watchdog("proto_sim_unordered::put", Duration::from_secs(60));
    for kind in [
        MsgKind::Put,
        MsgKind::Get,
        MsgKind::NameQuery,
        MsgKind::TxnProbe,
    ] {
        let (mut duo, mut ledger, _) = first_lost(CHANNEL_REQUEST, 4, kind);
        assert_eq!(ledger.delivered, 0, "{kind:?}: the requests wait");
        assert!(duo.run(SECOND, |d| {
            d.drain(1, &mut ledger);
            ledger.delivered == 4 && d.p[0].is_idle()
        }));
        let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
        assert_eq!(ks, vec![0, 1, 2, 3], "{kind:?}");
    }
}

/// A put acknowledged orders nothing more: requests sent after its ACK
/// came back overtake a lost one again.
#[test]
fn a_put_acknowledged_holds_nothing_back() {
    let _watchdog = common::watchdog("proto_sim_unordered::put_acked", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    let now = duo.now;
    let m = MsgMeta {
        kind: MsgKind::Put,
        ..meta(0, 0, 8)
    };
    duo.p[0].send(
        now,
        1,
        CHANNEL_REQUEST,
        m,
        payload(0, 0, CHANNEL_REQUEST, 8),
    );
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 1 && d.p[0].is_idle()
    }));
    for k in 1..4 {
        duo.send(0, CHANNEL_REQUEST, k, 8);
    }
    let mut pkts = duo.out(0);
    pkts.remove(0);
    for p in &pkts {
        duo.feed(1, p);
    }
    assert_eq!(overtaking(&mut duo, &mut ledger), vec![(2, 1), (3, 1)]);
}

/// The mark is the sender's word, for a user request alone: a forged one
/// on a put ahead of a gap is not believed, and one on a request that
/// arrived already does not deliver it twice.
#[test]
fn a_forged_mark_delivers_nothing_it_should_not() {
    let _watchdog = common::watchdog("proto_sim_unordered::forged", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    let (tag, _) = duo.p[1].association(&0).expect("associated");
    let forged = |seq: u32, k: u32, kind: MsgKind| {
        let c = Common {
            unordered: true,
            ..forge::header(tag, CHANNEL_REQUEST, 0, seq)
        };
        let m = MsgMeta {
            kind,
            ..meta(0, k, 4)
        };
        forge::data(&c, &m, &payload(0, k, CHANNEL_REQUEST, 4))
    };
    duo.feed(1, &forged(1, 1, MsgKind::Put));
    duo.feed(1, &forged(2, 2, MsgKind::User));
    assert_eq!(overtaking(&mut duo, &mut ledger), vec![(2, 2)]);
    duo.feed(1, &forged(2, 2, MsgKind::User));
    duo.feed(1, &forged(2, 7, MsgKind::User));
    assert!(overtaking(&mut duo, &mut ledger).is_empty(), "refused");
    // the gap filled: the put, then nothing again
    duo.feed(1, &forged(0, 0, MsgKind::User));
    let ks: Vec<u32> = overtaking(&mut duo, &mut ledger)
        .iter()
        .map(|t| t.0)
        .collect();
    assert_eq!(ks, vec![0, 1]);
    assert_eq!(ledger.delivered, 3);
    duo.p[1].check_invariants();
}

/// A receive buffer full of requests (the receive depth) takes no request
/// ahead of a gap: it is held, as in order it would be refused.
#[test]
fn a_full_receive_buffer_holds_requests_ahead_of_a_gap() {
    let _watchdog = common::watchdog("proto_sim_unordered::full", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig {
        recv_depth: 2,
        ..Default::default()
    });
    let mut ledger = Ledger::default();
    for k in 0..5 {
        duo.send(0, CHANNEL_REQUEST, k, 8);
    }
    let mut pkts = duo.out(0);
    pkts.remove(0);
    for p in &pkts {
        duo.feed(1, p);
    }
    // two delivered early fill it; the other two wait, SACKed
    assert_eq!(duo.p[1].events().len(), 2);
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 5 && d.p[0].is_idle()
    }));
    duo.p[1].check_invariants();
}

#[test]
fn a_fragmented_request_behind_a_lost_packet_waits_for_it() {
    let _watchdog = common::watchdog("proto_sim_unordered::frag_req", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig {
        max_datagram: 600,
        ..Default::default()
    });
    let mut ledger = Ledger::default();
    duo.send(0, CHANNEL_REQUEST, 0, 8);
    duo.send(0, CHANNEL_REQUEST, 1, 1000); // two fragments
    duo.send(0, CHANNEL_REQUEST, 2, 8);
    let mut pkts = duo.out(0);
    assert_eq!(pkts.len(), 4);
    pkts.remove(0);
    for p in &pkts {
        duo.feed(1, p);
    }
    assert_eq!(
        overtaking(&mut duo, &mut ledger),
        vec![(2, 3)],
        "only the whole one"
    );
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 3 && d.p[0].is_idle() && d.p[1].is_idle()
    }));
    let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
    assert_eq!(ks, vec![2, 0, 1]);
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
/// once (the ledger), some replies and some requests ahead of a gap.
#[test]
fn exactly_once_with_early_replies_under_faults() {
    let _watchdog = common::watchdog("proto_sim_unordered::faults", Duration::from_secs(180));
    let (mut early, mut early_requests) = (0, 0);
    for seed in seeds(8) {
        println!("seed {seed} (RAMP_SIM_SEED={seed} replays it)");
        let mut net = SimNet::new(2, ProtoConfig::default(), faults(seed));
        let plan = all_to_all_plan(2, 300, |k| 8 + (k as usize * 37) % 200);
        let ledger = run_plan(&mut net, &plan, 32, &[0, 1], 600 * SECOND);
        assert!(net.stats.lost > 0 && net.stats.duplicated > 0);
        early += ledger.early;
        early_requests += ledger.early_requests;
        for i in 0..2 {
            net.node(i).check_invariants();
        }
    }
    assert!(early > 0, "no reply was delivered ahead of a gap");
    assert!(
        early_requests > 0,
        "no request was delivered ahead of a gap"
    );
}

/// Long requests keep their order (`MsgMeta::keeps_order`): their bytes
/// land in the target's segment before their handlers run (a direct
/// Xfer's descriptor is one packet and copies them when dispatched), so
/// neither a long request nor a short one behind a lost long request is
/// delivered before it. Found by AMX's testbulk (many Xfers to one offset
/// over shared memory, each handler checking its own data): with long
/// requests delivered ahead of a gap, a handler saw the next one's bytes.
#[test]
fn requests_behind_a_lost_long_request_wait_for_it() {
    let _watchdog = common::watchdog("proto_sim_unordered::long", Duration::from_secs(60));
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    let now = duo.now;
    for k in 0..4u32 {
        let m = MsgMeta {
            category: ramp::wire::Category::Long,
            ..meta(0, k, 8)
        };
        duo.p[0].send(
            now,
            1,
            CHANNEL_REQUEST,
            m,
            payload(0, k, CHANNEL_REQUEST, 8),
        );
    }
    duo.send(0, CHANNEL_REQUEST, 4, 8); // a short one after them
    let mut pkts = duo.out(0);
    assert_eq!(pkts.len(), 5, "one DATA packet each");
    pkts.remove(0); // the first long request lost
    for p in &pkts {
        duo.feed(1, p);
    }
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 0, "nothing passes a long request");
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 5 && d.p[0].is_idle()
    }));
    let ks: Vec<u32> = ledger.trace.iter().map(|t| t.3).collect();
    assert_eq!(ks, vec![0, 1, 2, 3, 4]);
}
