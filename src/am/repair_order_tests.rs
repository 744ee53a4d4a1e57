//! No head-of-line blocking where no order is promised, on virtual time
//! (`repair_world_tests.rs`'s pair, 32 requests outstanding): replies
//! behind a lost reply and requests behind a lost request run before its
//! repair, each once; a request behind a lost put waits for it, its
//! handler seeing the put's bytes (ramp.h's order).

use super::*;

/// No head-of-line blocking on the reply channel (`proto/recv.rs`,
/// `include/am.h`'s order): with 32 requests outstanding, the replies
/// sent after a lost one run their handlers at the client before the lost
/// one is repaired, each once.
#[test]
fn replies_behind_a_lost_reply_run_before_its_repair() {
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), 1000);
        p.pipelined(0, 200, 32);
        p.arm(Lose::Reply(350));
        p.pipelined(200, 500, 32);
        assert!(p.lost(), "seed {seed}: the reply lost");
        assert_eq!(
            p.pongs.load(Ordering::SeqCst),
            500,
            "seed {seed}: each once"
        );
        let a = p.answered.lock();
        let repaired = a[350].unwrap();
        let ahead = (351..500).filter(|&k| a[k].unwrap() < repaired).count();
        eprintln!("seed {seed}: {ahead} replies sent after the lost one ran before its repair");
        assert!(
            ahead > 0,
            "seed {seed}: every later reply waited for the lost one"
        );
    }
}

/// No head-of-line blocking on the request channel either (a request
/// whole in one packet, nothing that keeps order before it
/// unacknowledged: `proto/recv.rs`): with 32 requests outstanding, the
/// requests sent after a lost one run their handlers at the server
/// before the lost one is repaired, each once.
#[test]
fn requests_behind_a_lost_request_run_before_its_repair() {
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), 1000);
        let ran: Arc<Mutex<Vec<u32>>> = Arc::default();
        let r = ran.clone();
        p.server.ep.set_handler(
            H_ECHO,
            handler(move |h| {
                r.lock().push(h.args[0]);
                reply(h.token, &Message::short(H_PONG, h.args)).unwrap()
            }),
        );
        p.pipelined(0, 200, 32);
        p.arm(Lose::Request(350));
        p.pipelined(200, 500, 32);
        assert!(p.lost(), "seed {seed}: the request lost");
        assert_eq!(p.pongs.load(Ordering::SeqCst), 500, "seed {seed}");
        let ran = ran.lock();
        let mut once = ran.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(
            (ran.len(), once.len()),
            (500, 500),
            "seed {seed}: each once"
        );
        let at = ran.iter().position(|&k| k == 350).unwrap();
        let ahead = ran[..at].iter().filter(|&&k| k > 350).count();
        eprintln!("seed {seed}: {ahead} requests sent after the lost one ran before its repair");
        assert!(
            ahead > 0,
            "seed {seed}: every later request waited for the lost one"
        );
    }
}

/// "Put, then tell with an AM" under loss (ramp.h's order): rounds of a
/// one-byte put into the server's region, then a request whose handler
/// reads that byte, 32 rounds in flight; puts are lost now and then. Every
/// handler sees its put: a request behind a lost put waits for its repair.
#[test]
fn a_request_behind_a_lost_put_sees_the_put() {
    use crate::am::state::region::REGION_WRITE;
    use crate::am::VecSegment;
    const H_CHECK: u8 = 12;
    const ROUNDS: u32 = 600;
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), ROUNDS as usize);
        let mem = VecSegment::new(ROUNDS as usize);
        let region = p
            .server
            .ep
            .register_region(mem.clone(), REGION_WRITE)
            .unwrap();
        let saw: Arc<Mutex<Vec<(u32, bool)>>> = Arc::default();
        let (s, m) = (saw.clone(), mem.clone());
        p.server.ep.set_handler(
            H_CHECK,
            handler(move |h| {
                s.lock()
                    .push((h.args[0], m.snapshot()[h.args[0] as usize] == 0xa5));
                reply(h.token, &Message::short(H_PONG, h.args)).unwrap()
            }),
        );
        let mut lost = 0;
        for k in 0..ROUNDS {
            if k % 50 == 25 {
                lost += u32::from(p.lost());
                p.arm(Lose::Put);
            }
            let pongs = p.pongs.clone();
            assert!(p.w.run_until(10_000 * MILLIS, || {
                k as u64 - pongs.load(Ordering::SeqCst) < 32
            }));
            p.client
                .ep
                .put(1, region, k as u64, &[0xa5], None, false)
                .unwrap();
            p.client
                .ep
                .request(1, &Message::short(H_CHECK, &[k]), false)
                .unwrap();
        }
        let pongs = p.pongs.clone();
        assert!(p.w.run_until(10_000 * MILLIS, || {
            pongs.load(Ordering::SeqCst) == ROUNDS as u64
        }));
        lost += u32::from(p.lost());
        let saw = saw.lock();
        assert_eq!(saw.len(), ROUNDS as usize, "seed {seed}: each once");
        let blind: Vec<u32> = saw.iter().filter(|s| !s.1).map(|s| s.0).collect();
        eprintln!("seed {seed}: {lost} puts lost, every handler saw its put");
        assert!(lost > 5, "seed {seed}: {lost} puts lost");
        assert!(
            blind.is_empty(),
            "seed {seed}: handlers before their put: {blind:?}"
        );
    }
}
