//! Published names in the simulated world (`sim::World`), on virtual time:
//! each endpoint a node (a simulated process) on a clean LAN; a query's
//! answer is awaited with the query's own bound (`answer_within`) as the
//! virtual-time limit while the world runs the owner. Publish and look-up
//! at an owner, the owner being the asker, a second publish, refusals,
//! bounds, a gone owner (killed: Unreachable after the peer timeout), and
//! hostile or forged service messages.

use std::sync::Arc;

use super::*;
use crate::am::state::services::MAX_SERVICES;
use crate::am::tests::{cfg, connect, is_reply};
use crate::config::Config;
use crate::rng::Rng;
use crate::sim::{seeds, World};
use crate::time::MICROS;

const TAG: u64 = 0x5e1;

/// `n` nodes of `w` configured by `cfg`, each endpoint mapped to all
/// (index i is node i's), tagged TAG, depth 4.
fn endpoints_with(w: &World, n: usize, cfg: &Config) -> Vec<Arc<Endpoint>> {
    let eps: Vec<_> = (0..n).map(|_| w.node(cfg).ep).collect();
    connect(&eps.iter().collect::<Vec<_>>(), TAG, 4);
    eps
}

fn endpoints(w: &World, n: usize) -> Vec<Arc<Endpoint>> {
    endpoints_with(w, n, &cfg())
}

/// Runs the world until `q` is answered, within the query's own bound.
fn answer(w: &World, e: &Endpoint, q: ServiceQuery) -> ServiceAnswer {
    let mut a = None;
    assert!(
        w.run_until(q.answer_within, || {
            a = e.take_service_answer(&q);
            a.is_some()
        }),
        "no answer to {q:?}"
    );
    a.expect("answered")
}

fn ask(
    w: &World,
    e: &Endpoint,
    dest: u32,
    s: &[u8],
    publish: Option<EndpointName>,
) -> ServiceAnswer {
    let q = e.ask_service(dest, s, publish).unwrap();
    answer(w, e, q)
}

fn table_len(e: &Endpoint) -> usize {
    e.with(|s| s.services.table.len())
}

#[test]
fn publish_then_look_up_at_the_owner_and_a_second_publish_is_refused() {
    let w = World::seeded(1);
    let eps = endpoints(&w, 3);
    let (e0, e1, e2) = (&eps[0], &eps[1], &eps[2]);
    // nothing yet
    assert_eq!(ask(&w, e1, 2, b"svc", None), ServiceAnswer::Missing);
    // e0 publishes at the owner e2; e1 finds it there
    assert_eq!(
        ask(&w, e0, 2, b"svc", Some(e0.name())),
        ServiceAnswer::Published
    );
    assert_eq!(
        ask(&w, e1, 2, b"svc", None),
        ServiceAnswer::Found(e0.name())
    );
    // a second publish, by anyone, is refused; the first name stays
    assert_eq!(
        ask(&w, e1, 2, b"svc", Some(e1.name())),
        ServiceAnswer::Taken
    );
    assert_eq!(
        ask(&w, e0, 2, b"svc", Some(e0.name())),
        ServiceAnswer::Taken
    );
    assert_eq!(
        ask(&w, e0, 2, b"svc", None),
        ServiceAnswer::Found(e0.name())
    );
    // the owner itself answers from its table at once, sending nothing
    let (sent, t0) = (e2.statistics().packets_sent, w.now());
    assert_eq!(
        ask(&w, e2, 2, b"svc", None),
        ServiceAnswer::Found(e0.name())
    );
    assert_eq!(
        ask(&w, e2, 2, b"own", Some(e1.name())),
        ServiceAnswer::Published
    );
    assert_eq!(
        e2.statistics().packets_sent,
        sent,
        "a local query sent packets"
    );
    assert_eq!(w.now(), t0, "a local query waited");
    assert_eq!(
        ask(&w, e0, 2, b"own", None),
        ServiceAnswer::Found(e1.name())
    );
    // only the owner has the names
    assert_eq!(ask(&w, e0, 1, b"svc", None), ServiceAnswer::Missing);
    assert_eq!(table_len(e2), 2);
    assert_eq!((table_len(e0), table_len(e1)), (0, 0));
}

#[test]
fn bad_arguments_are_refused_before_anything_is_sent() {
    let w = World::seeded(2);
    let eps = endpoints(&w, 2);
    let e0 = &eps[0];
    for bad in [
        &b""[..],
        &[b'x'; MAX_SERVICE + 1],
        b"a b",
        b"a=b",
        b"\xc3\xa9",
    ] {
        assert!(matches!(
            e0.ask_service(1, bad, None),
            Err(Error::BadArg(_))
        ));
    }
    assert!(matches!(
        e0.ask_service(9, b"s", None),
        Err(Error::BadArg(_))
    ));
    let garbage = EndpointName([0xee; 32]);
    assert!(matches!(
        e0.ask_service(1, b"s", Some(garbage)),
        Err(Error::BadArg(_))
    ));
    assert!(e0.with(|s| s.services.pending.is_empty()));
    assert_eq!(e0.statistics().packets_sent, 0, "nothing was sent");
    // before AM_SetExpectedResources
    let fresh = w.node(&cfg()).ep;
    fresh.map(0, fresh.name(), 0).unwrap();
    assert!(matches!(
        fresh.ask_service(0, b"s", None),
        Err(Error::NotInit(_))
    ));
}

/// An asker whose tag the owner does not accept is refused: nothing stored.
#[test]
fn a_query_with_the_wrong_tag_is_refused() {
    let w = World::seeded(3);
    let eps = endpoints(&w, 2);
    eps[0].set_translation_tag(1, TAG + 1).unwrap();
    let n = eps[0].name();
    assert_eq!(ask(&w, &eps[0], 1, b"s", Some(n)), ServiceAnswer::Refused);
    assert_eq!(ask(&w, &eps[0], 1, b"s", None), ServiceAnswer::Refused);
    assert_eq!(table_len(&eps[1]), 0);
}

/// The owner's table holds at most MAX_SERVICES names, then says Full; at
/// most MAX_PENDING_SERVICE_QUERIES queries wait at once.
#[test]
fn the_table_and_the_waiting_queries_are_bounded() {
    let w = World::seeded(4);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    for i in 0..MAX_SERVICES + 10 {
        let s = format!("s{i}");
        let want = if i < MAX_SERVICES {
            ServiceAnswer::Published
        } else {
            ServiceAnswer::Full
        };
        assert_eq!(ask(&w, e0, 0, s.as_bytes(), Some(e1.name())), want, "{s}");
    }
    assert_eq!(table_len(e0), MAX_SERVICES);
    assert_eq!(ask(&w, e1, 0, b"s7", None), ServiceAnswer::Found(e1.name()));
    // queries nobody waits for: the next one is refused, until one is given up
    let qs: Vec<_> = (0..MAX_PENDING_SERVICE_QUERIES)
        .map(|_| e1.ask_service(0, b"s1", None).unwrap())
        .collect();
    assert!(matches!(
        e1.ask_service(0, b"s1", None),
        Err(Error::Resource(_))
    ));
    for q in qs {
        e1.forget_service_query(q);
    }
    // their answers come to no query: dropped and counted
    let stale = e1.statistics().stale_dropped;
    let all = stale + MAX_PENDING_SERVICE_QUERIES as u64;
    assert!(
        w.run_until(100 * MILLIS, || e1.statistics().stale_dropped >= all),
        "the late answers arrive"
    );
    assert_eq!(ask(&w, e1, 0, b"s1", None), ServiceAnswer::Found(e1.name()));
}

/// A message to forge: kind, category, channel, arguments, payload.
type Forged = (MsgKind, Category, u8, Vec<u32>, Vec<u8>);

/// Sends a service message from `from` to `to` as if `from` made it.
fn forge(
    from: &Endpoint,
    to: SocketAddr,
    kind: MsgKind,
    cat: Category,
    ch: u8,
    args: &[u32],
    p: &[u8],
) {
    let meta = MsgMeta {
        tag: TAG,
        ..MsgMeta::new(kind, cat, 0, args)
    };
    from.with(|s| s.send_message(s.clock.now(), to, ch, meta, p.to_vec()));
}

/// Malformed queries and answers: dropped and counted, nothing stored,
/// nothing answered, no handler runs, the exchange still works.
#[test]
fn hostile_service_messages_are_dropped_and_counted() {
    let w = World::seeded(5);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    let ran = Arc::new(std::sync::atomic::AtomicU64::new(0));
    for h in [0u8, 1] {
        let r = ran.clone();
        e0.set_handler(
            h,
            crate::am::handler(move |_| {
                r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }),
        );
    }
    let to = e0.addr();
    let name = e1.name().0;
    let with_name = |s: &[u8]| [&name[..], s].concat();
    let (q, a) = (MsgKind::ServiceQuery, MsgKind::ServiceAnswer);
    let (med, short) = (Category::Medium, Category::Short);
    let (rq, rp) = (CHANNEL_REQUEST, CHANNEL_REPLY);
    let mut bad_name = with_name(b"s");
    bad_name[0] = 9;
    let malformed: Vec<Forged> = vec![
        (q, med, rp, vec![1, LOOKUP], b"s".to_vec()), // wrong channel
        (q, short, rq, vec![1, LOOKUP], b"s".to_vec()), // wrong category
        (q, Category::Long, rq, vec![1, LOOKUP], b"s".to_vec()),
        (q, med, rq, vec![1], b"s".to_vec()), // one argument
        (q, med, rq, vec![1, LOOKUP, 0], b"s".to_vec()), // three
        (q, med, rq, vec![1, 7], b"s".to_vec()), // no such operation
        (q, med, rq, vec![1, LOOKUP], Vec::new()), // no service
        (q, med, rq, vec![1, LOOKUP], b"a b".to_vec()), // a bad service
        (q, med, rq, vec![1, LOOKUP], vec![b'x'; MAX_SERVICE + 1]),
        (q, med, rq, vec![1, PUBLISH], b"s".to_vec()), // no name
        (q, med, rq, vec![1, PUBLISH], name.to_vec()), // no service
        (q, med, rq, vec![1, PUBLISH], bad_name),      // not a name
        (q, med, rq, vec![1, PUBLISH], with_name(b"a\0")), // a bad service
        (a, short, rq, vec![1, MISSING, 0], Vec::new()), // wrong channel
        (a, short, rp, vec![1, MISSING], Vec::new()),  // two arguments
    ];
    let n = malformed.len() as u64;
    let corrupt = e0.statistics().corrupt_dropped;
    let e1_stale = e1.statistics().stale_dropped;
    for (k, c, ch, args, p) in malformed {
        forge(e1, to, k, c, ch, &args, &p);
    }
    assert!(
        w.run_until(10 * MILLIS, || e0.statistics().corrupt_dropped
            >= corrupt + n),
        "the malformed messages arrive"
    );
    assert_eq!(e0.statistics().corrupt_dropped, corrupt + n);
    // answers to no query of ours
    let stale = e0.statistics().stale_dropped;
    forge(e1, to, a, short, rp, &[77, MISSING, 0], b"");
    forge(e1, to, a, med, rp, &[78, OK, service_check(b"s")], &name);
    assert!(
        w.run_until(10 * MILLIS, || e0.statistics().stale_dropped >= stale + 2),
        "the stray answers arrive"
    );
    assert_eq!(table_len(e0), 0, "a malformed publish was stored");
    // (an answer to any of them, had one been sent, would have come by now
    // and been stale at e1, which asked nothing)
    w.run_for(10 * MILLIS);
    assert_eq!(
        e1.statistics().stale_dropped,
        e1_stale,
        "a malformed query was answered"
    );
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a handler ran"
    );
    assert_eq!(
        ask(&w, e1, 0, b"s", Some(e1.name())),
        ServiceAnswer::Published
    );
    assert_eq!(ask(&w, e0, 0, b"s", None), ServiceAnswer::Found(e1.name()));
}

/// Answers to a waiting look-up from a peer it was not sent to, with
/// another service's check, or with a status the question does not allow:
/// never taken; the owner's real answer is.
#[test]
fn a_forged_answer_never_gives_a_look_up_a_wrong_name() {
    let w = World::seeded(6);
    let eps = endpoints(&w, 3);
    let (e0, e1, e2) = (&eps[0], &eps[1], &eps[2]);
    assert_eq!(
        ask(&w, e2, 1, b"real", Some(e2.name())),
        ServiceAnswer::Published
    );
    // (every pair has its association: the forged answers leave at once)
    assert_eq!(ask(&w, e0, 2, b"x", None), ServiceAnswer::Missing);
    assert_eq!(ask(&w, e0, 1, b"x", None), ServiceAnswer::Missing);
    // a look-up by e0 at the owner e1, and a publish
    let look = e0.ask_service(1, b"real", None).unwrap();
    let publ = e0.ask_service(1, b"other", Some(e0.name())).unwrap();
    let (lid, pid) = (look.id, publ.id);
    let to = e0.addr();
    let real = service_check(b"real");
    let other = service_check(b"other");
    // (a name that is not the one published under "real")
    let wrong = e1.name().0;
    let answer_from = |from: &Endpoint, args: &[u32], p: &[u8]| {
        let cat = if p.is_empty() {
            Category::Short
        } else {
            Category::Medium
        };
        forge(
            from,
            to,
            MsgKind::ServiceAnswer,
            cat,
            CHANNEL_REPLY,
            args,
            p,
        )
    };
    // (sent at the instant of the queries: they arrive before the owner's
    // answers, a round trip later)
    // the wrong peer, right query and check
    answer_from(e2, &[lid, OK, real], &wrong);
    // the right peer, another service's check
    answer_from(e1, &[lid, OK, real ^ 1], &wrong);
    // the right peer and check, statuses that do not fit a look-up
    answer_from(e1, &[lid, TAKEN, real], b"");
    answer_from(e1, &[lid, OK, real], b"");
    // a found name to the publish
    answer_from(e1, &[pid, OK, other], &wrong);
    assert_eq!(answer(&w, e0, look), ServiceAnswer::Found(e2.name()));
    assert_eq!(answer(&w, e0, publ), ServiceAnswer::Published);
    // every forged answer was dropped, before the real ones came
    let st = e0.statistics();
    assert_eq!(st.stale_dropped + st.corrupt_dropped, 5, "{st:?}");
}

/// Random service messages (lengths, arguments, payloads, statuses) from a
/// mapped peer, a few seeds: no panic, the table stays within its bound,
/// and every name it holds is one that was validly published.
#[test]
fn random_service_messages_never_break_the_owner() {
    for seed in seeds(3) {
        let w = World::seeded(seed);
        let eps = endpoints(&w, 2);
        let (e0, e1) = (&eps[0], &eps[1]);
        let to = e0.addr();
        let mut rng = Rng::new(seed);
        let valid = e1.name().0;
        for i in 0..3000u32 {
            let kind = if rng.chance(0.5) {
                MsgKind::ServiceQuery
            } else {
                MsgKind::ServiceAnswer
            };
            let cat = Category::from_u8(rng.below(3) as u8).unwrap();
            let ch = if rng.chance(0.5) {
                CHANNEL_REQUEST
            } else {
                CHANNEL_REPLY
            };
            let nargs = rng.below(4) as usize;
            let args: Vec<u32> = (0..nargs)
                .map(|_| {
                    if rng.chance(0.5) {
                        rng.below(6) as u32
                    } else {
                        rng.next_u64() as u32
                    }
                })
                .collect();
            let len = rng.below(100) as usize;
            let mut p: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.chance(0.7) {
                        b'a' + rng.below(26) as u8
                    } else {
                        rng.next_u64() as u8
                    }
                })
                .collect();
            if rng.chance(0.3) && p.len() >= 32 {
                p[..32].copy_from_slice(&valid);
            }
            forge(e1, to, kind, cat, ch, &args, &p);
            if i % 64 == 0 {
                w.run_for(50 * MICROS);
            }
        }
        w.run_for(200 * MILLIS);
        assert!(table_len(e0) <= MAX_SERVICES);
        e0.with(|s| {
            for (k, n) in &s.services.table {
                assert!(valid_service(k));
                assert_eq!(*n, e1.name(), "a stored name is not the one published");
            }
        });
        assert_eq!(
            ask(&w, e1, 0, b"after-the-storm", None),
            ServiceAnswer::Missing
        );
    }
}

/// A peer floods look-ups and never takes the answers: what the owner
/// queues for it stays bounded, the rest is dropped and counted.
#[test]
fn a_flood_of_queries_does_not_grow_memory() {
    let w = World::seeded(7);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    let (a0, a1) = (e0.addr(), e1.addr());
    // answers to e1 (DATA on the reply channel) never arrive
    w.tap(move |_, to, d| !(to == a1 && is_reply(d)));
    let total = 3 * MAX_QUEUED_TO_PEER;
    for i in 0..total {
        let args = [i as u32, LOOKUP];
        forge(
            e1,
            a0,
            MsgKind::ServiceQuery,
            Category::Medium,
            CHANNEL_REQUEST,
            &args,
            b"s",
        );
    }
    assert!(
        w.run_until(1000 * MILLIS, || {
            let (unfinished, dropped) =
                e0.with(|s| (s.proto.unfinished_to(&a1), s.stats.stale_dropped));
            assert!(
                unfinished <= MAX_QUEUED_TO_PEER,
                "{unfinished} answers queued"
            );
            dropped as usize >= total - MAX_QUEUED_TO_PEER
        }),
        "every query arrives"
    );
}

/// An owner that is gone (its process killed): the protocol gives up on
/// the query exactly the peer timeout after it was sent, and the asker
/// sees Unreachable then, never a hang.
#[test]
fn a_gone_owner_is_unreachable() {
    let w = World::seeded(8);
    let mut c = cfg();
    c.proto.peer_timeout = 300 * MILLIS;
    let eps = endpoints_with(&w, 2, &c);
    assert_eq!(
        ask(&w, &eps[0], 1, b"s", Some(eps[1].name())),
        ServiceAnswer::Published
    );
    w.kill(1);
    let t0 = w.now();
    let q = eps[0].ask_service(1, b"s", None).unwrap();
    let bound = q.answer_within;
    assert_eq!(answer(&w, &eps[0], q), ServiceAnswer::Unreachable);
    let took = w.now().since(t0);
    assert!(took <= bound);
    assert_eq!(took, 300 * MILLIS, "Unreachable the peer timeout after");
}
