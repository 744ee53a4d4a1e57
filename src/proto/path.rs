//! An association's paths (after SCTP multihoming): the ways its packets
//! may go to the peer, each a local rail and a remote address
//! (`crate::path::Path`). Every packet the protocol queues names the path
//! it takes (`Outbox`), and the transports route by it; the layer above
//! hands paths on without looking at them.
//!
//! The paths are every pair of one of our rails (`Protocol::set_local_rails`)
//! and one of the peer's addresses: its name and the others it listed in
//! the handshake (INIT or INIT_ACK, under the cookie and the MAC). The
//! handshake's own path (rail 0 to the peer's name) is `Active` from the
//! start; any other carries data only after a HEARTBEAT with a fresh
//! random nonce, sent on it, came back on it (`Unconfirmed` until then:
//! no data to an address that did not answer). After `PATH_MAX_RETRANS`
//! consecutive retransmission timeouts a path is suspect (`suspect.rs`,
//! after SCTP's Potentially Failed state): its traffic moves to another
//! at once, and it is `Failed` only when its own heartbeat goes
//! unanswered while the peer answers elsewhere (or the peer stays silent
//! on every path for `PATH_MAX_RETRANS` heartbeats): a receiver off the
//! CPU fails no path. The transport's word that a path is unreachable
//! (`Protocol::path_down`) fails it at once. Failed paths are probed (`Probing`) every `ProtoConfig::path_probe`,
//! doubling to `PROBE_MAX` (`PROBE_MAX / 2` while no path is active: a
//! partitioned peer's traffic resumes within about half a second of a
//! link's return), and an answered probe makes one `Active` again with a
//! fresh congestion controller.
//!
//! Scheduling, the minimum (striping comes later): the association's
//! packets take one path, `current`: the best `Active` one (the lowest
//! smoothed round trip, the current one on a tie), chosen again when
//! nothing is in flight, when the current one fails, and when a path
//! answers while the current one is not active. A failover resends what
//! was in flight at once on the new path (the same sequence numbers: the
//! receiver keeps one per channel, not per path, so delivery stays exactly
//! once). With every path failed the current one keeps its
//! retransmissions (backed off) and all are probed: messages wait, and
//! only the peer timeout (nothing heard on any path) returns them.
//!
//! Each path has its congestion controller (`congestion.rs`) and the
//! largest datagram it carries whole (`datagram`, for the association:
//! the least of its paths' as told by `Protocol::path_datagram`). The
//! paths outlive an association to the same address (a new association
//! over the same route finds the network as it was): the peer hands them
//! on (`Peer::fresh_assoc`); a new handshake sets the peer's other
//! addresses afresh.

mod clock;
mod probe;
mod rate;
mod stripe;
mod suspect;
pub use rate::DeliveryRate;

use super::congestion::Congestion;
use super::rtt::RttEstimator;
use crate::path::{Path, Rail, MAX_RAILS};
use crate::time::{Instant, Nanos, MILLIS};

/// Consecutive retransmission timeouts that make a path suspect (its
/// traffic moves to another: `suspect.rs`), and unanswered heartbeats of
/// a suspect path, the peer silent everywhere, that fail it. SCTP's
/// Path.Max.Retrans is 5 with an RTO of at least 1 s; ours starts at a
/// few milliseconds and doubles, so 3 timeouts (about 7 RTOs of silence,
/// tens of milliseconds on a LAN) move traffic well before the peer
/// timeout, while one or two lost retransmissions (a burst of loss)
/// do not move traffic off a good path.
pub const PATH_MAX_RETRANS: u32 = 3;

/// The longest interval between probes of a failed path.
pub const PROBE_MAX: Nanos = 1000 * MILLIS;

/// Where a path stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathState {
    /// Not yet confirmed by a heartbeat: carries no data.
    Unconfirmed,
    /// Confirmed and not failed: may carry data.
    Active,
    /// Failed (timeouts or a send error); its next probe not yet sent.
    Failed,
    /// Failed, a probe outstanding.
    Probing,
}

/// One path as `Protocol::paths_of` tells it.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq)]
pub struct PathReport<A> {
    pub rail: Rail,
    pub remote: A,
    pub state: PathState,
    /// Active but suspect (`suspect.rs`): its timeouts moved its traffic
    /// to another path, its heartbeat will tell.
    pub suspect: bool,
    /// Whether the association's packets take it now.
    pub current: bool,
    /// Smoothed round trip (its congestion controller's, else its
    /// heartbeats'), when measured.
    pub srtt: Option<Nanos>,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Pacing rate, bytes per second, when pacing.
    pub pacing_rate: Option<u64>,
    /// Measured delivery rate while busy (`rate.rs`), bytes per second,
    /// when measured (the association has several paths and this one
    /// carried data).
    pub delivery_rate: Option<u64>,
    /// Bytes of datagrams sent on it, and bytes of DATA acknowledged while
    /// it carried them.
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    /// Consecutive timeouts on it now, and all the times it failed.
    pub errors: u32,
    pub failures: u32,
}

/// Fresh heartbeat nonces: unpredictable without the endpoint's secret.
pub struct Nonces {
    key: [u8; 32],
    made: u64,
}

impl Nonces {
    pub fn new(secret: &[u8; 32]) -> Nonces {
        Nonces {
            key: blake3::derive_key("ramp 2026 path heartbeat nonces", secret),
            made: 0,
        }
    }

    pub fn next(&mut self) -> u64 {
        self.made += 1;
        let h = blake3::keyed_hash(&self.key, &self.made.to_le_bytes());
        u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]))
    }
}

/// One path of an association and its state.
#[derive(Clone, Debug)]
pub struct OnePath<A> {
    pub path: Path<A>,
    pub state: PathState,
    pub cc: Congestion,
    /// Smoothed round trip of its heartbeats.
    pub hb_srtt: Option<Nanos>,
    pub errors: u32,
    pub failures: u32,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    /// The nonce of the one heartbeat outstanding on it, and when it went:
    /// only its answer, on this path, counts.
    pub hb: Option<(u64, Instant)>,
    /// When its next probe or confirming heartbeat goes, and the interval
    /// after it.
    pub next_probe: Instant,
    pub interval: Nanos,
    pub tries: u32,
    /// Suspect (`suspect.rs`): active, but carries no new data until its
    /// heartbeat is answered; and when the peer first answered elsewhere
    /// (new data acknowledged, another path's heartbeat) since its
    /// heartbeat went.
    pub suspect: bool,
    pub alive: Option<Instant>,
    /// When DATA last went on it (`stripe.rs`: idle heartbeats), and when
    /// the peer last answered on it (`suspect.rs`: evidence).
    pub last_data: Instant,
    pub heard: Instant,
    /// What it delivers while busy (`rate.rs`; measured with two or more
    /// paths: striping's shares).
    pub rate: DeliveryRate,
    /// Its own round-trip estimate and timeouts (`clock.rs`).
    pub rtt: RttEstimator,
}

/// The paths of one association, and the one its packets take now.
#[derive(Clone, Debug)]
pub struct Paths<A> {
    /// Never empty; `list[0]` is rail 0 to the peer's name.
    list: Vec<OnePath<A>>,
    current: usize,
    /// A path whose answers (ACKs) go back on the path the last packet
    /// came in on, when that path is active.
    answer: Option<usize>,
    /// A new path's congestion controller, as it starts.
    fresh: (bool, usize, u64),
    /// The largest datagram the association's paths carry whole.
    pub datagram: usize,
    /// Whether any path is suspect (`suspect.rs`: hearing the peer costs
    /// nothing without one).
    suspects: bool,
    /// Bit i: path i's suspicion was told (`PathChange::Suspect`), its
    /// end not yet (`Paths::suspect_news`).
    told_suspect: u32,
}

#[cfg_attr(not(feature = "testing"), allow(dead_code))] // (`path_down`, `paths_of`)
impl<A: Copy + PartialEq> Paths<A> {
    /// An association's first path: from the endpoint's name to `peer`,
    /// active, with the congestion controller `cc` and the round-trip
    /// estimate `rtt` (each path's starts as it: `clock.rs`), carrying
    /// datagrams of up to `datagram` bytes.
    pub fn to(peer: A, cc: Congestion, rtt: RttEstimator, datagram: usize) -> Paths<A> {
        let first = OnePath::new(Path::from_name(peer), cc.clone(), rtt, PathState::Active);
        Paths {
            list: vec![first],
            current: 0,
            answer: None,
            fresh: cc.settings(),
            datagram,
            suspects: false,
            told_suspect: 0,
        }
    }

    /// The path a packet of the association takes now.
    #[inline]
    pub fn current(&self) -> Path<A> {
        self.list[self.current].path
    }

    /// The path to the peer's name from ours (rail 0): the handshake's,
    /// whatever the current path, so that the peer knows the association
    /// by our name (a handshake from another rail would make it a peer of
    /// that address), and reaches the peer's name even when the address it
    /// listed before a restart is gone.
    #[inline]
    pub fn name(&self) -> Path<A> {
        self.list[0].path
    }

    /// A new association starts on the name's path (`name`): the current
    /// path may be an address of the peer's previous life.
    pub fn back_to_name(&mut self) {
        self.current = 0;
        self.answer = None;
    }

    /// Where an answer (ACK, NACK) goes: back on the path the last packet
    /// came in on when it is active, else the current path.
    #[inline]
    pub fn answer(&self) -> Path<A> {
        self.list[self.answer_index()].path
    }

    /// The index of `answer`'s path.
    #[inline]
    pub fn answer_index(&self) -> usize {
        self.answer.unwrap_or(self.current)
    }

    /// The current path's congestion controller.
    #[inline]
    pub fn cc(&self) -> &Congestion {
        &self.list[self.current].cc
    }

    #[inline]
    pub fn cc_mut(&mut self) -> &mut Congestion {
        &mut self.list[self.current].cc
    }

    /// Every path of the association.
    pub fn all(&self) -> impl Iterator<Item = &OnePath<A>> + '_ {
        self.list.iter()
    }

    /// The index of `path`, if it is one of ours.
    pub fn find(&self, path: &Path<A>) -> Option<usize> {
        self.list.iter().position(|p| p.path == *path)
    }

    /// The state of `path`, if it is one of ours.
    pub fn state_of(&self, path: &Path<A>) -> Option<PathState> {
        self.find(path).map(|i| self.list[i].state)
    }

    /// Whether `remote` is one of the peer's addresses.
    pub fn lists(&self, remote: &A) -> bool {
        self.list.iter().any(|p| p.path.remote == *remote)
    }

    /// Whether the association has one path only (the name's: one rail,
    /// no other address listed), the usual case: nothing to choose
    /// between, and answers go on it whatever came in where.
    #[inline]
    pub fn single(&self) -> bool {
        self.list.len() == 1
    }

    /// Whether no path awaits a confirming heartbeat or a probe: one
    /// path, active (`next_heartbeat` is None, whoever asks). Tested
    /// without a walk over the paths: every message queued after an idle
    /// spell asks (`Peer::arm_paths`).
    #[inline]
    pub fn none_to_probe(&self) -> bool {
        self.single() && self.list[0].state == PathState::Active
    }

    /// A packet of the association came in on `path`: answers go back on
    /// it while it is active.
    #[inline]
    pub fn arrived(&mut self, path: &Path<A>) {
        // (one path: an answer takes it, whatever `answer` says; no
        // address compared per packet)
        if self.single() || self.list[self.answer.unwrap_or(self.current)].path == *path {
            return;
        }
        self.answer = self
            .find(path)
            .filter(|&i| self.list[i].state == PathState::Active);
    }

    /// The paths are every pair of our `rails` (rail i: `Rail(i)`, at
    /// least rail 0) and the peer's name or one of `others` (its listed
    /// addresses, at most `MAX_RAILS` - 1 kept). Paths kept keep their
    /// state; new ones are unconfirmed, their first heartbeat due at
    /// `now`; paths to addresses no longer listed go (the first never).
    pub fn set_paths(&mut self, now: Instant, rails: usize, others: &[A], probe: Nanos) {
        let name = self.list[0].path.remote;
        let mut remotes: Vec<A> = vec![name];
        for &a in others {
            if remotes.len() < MAX_RAILS && !remotes.contains(&a) {
                remotes.push(a);
            }
        }
        let rails = rails.clamp(1, MAX_RAILS);
        let keep =
            |p: &OnePath<A>| (p.path.rail.0 as usize) < rails && remotes.contains(&p.path.remote);
        let cur = self.list[self.current].path;
        let first = self.list[0].path;
        self.list.retain(|p| p.path == first || keep(p));
        for r in 0..rails {
            for &remote in &remotes {
                let path = Path {
                    remote,
                    rail: Rail(r as u8),
                };
                if self.find(&path).is_none() {
                    let rtt = self.list[0].rtt.fresh();
                    let mut p = OnePath::new(path, self.fresh_cc(), rtt, PathState::Unconfirmed);
                    p.next_probe = now;
                    p.interval = probe;
                    self.list.push(p);
                }
            }
        }
        self.current = self.find(&cur).unwrap_or(0);
        self.answer = None;
        self.recount();
        // (paths moved: what was told stands for the suspects kept)
        self.told_suspect = self.suspect_mask();
    }

    /// The best usable path (active, not suspect): the lowest smoothed
    /// round trip, the current one on a tie (or when none has one); None
    /// when none is usable.
    pub fn best(&self) -> Option<usize> {
        if let [only] = &self.list[..] {
            // (the usual case, asked whenever nothing is in flight)
            return (only.state == PathState::Active).then_some(0);
        }
        let key = |i: usize| {
            (
                self.list[i].srtt().unwrap_or(Nanos::MAX),
                i != self.current,
                i,
            )
        };
        (0..self.list.len())
            .filter(|&i| self.usable(i))
            .min_by_key(|&i| key(i))
    }

    /// A new (or recovered) path's congestion controller, as it starts.
    fn fresh_cc(&self) -> Congestion {
        let (on, datagram, flight) = self.fresh;
        Congestion::new(on, datagram, flight)
    }

    /// Moves the association to path `i`; true when it changed.
    pub fn switch_to(&mut self, i: usize) -> bool {
        let changed = i != self.current;
        self.current = i;
        self.answer = None;
        changed
    }

    /// The current path made progress at `now` (new data acknowledged;
    /// `flight` bytes left in flight).
    #[inline]
    pub fn progress(&mut self, now: Instant, acked: u64, flight: u64) {
        let several = self.list.len() > 1;
        let busy = flight >= self.datagram as u64;
        let p = &mut self.list[self.current];
        p.errors = 0;
        p.rtt.on_progress();
        p.bytes_acked += acked;
        if several {
            let stall = p.srtt().unwrap_or(Nanos::MAX);
            p.rate.delivered(now, p.bytes_acked, busy, stall);
        }
    }

    /// `bytes` of DATA (in flight) went on the current path at `now`
    /// (`idle`: with nothing in flight before them).
    #[inline]
    pub fn data_at(&mut self, now: Instant, bytes: u64, idle: bool) {
        let p = &mut self.list[self.current];
        p.bytes_sent += bytes;
        p.last_data = now;
        if idle {
            p.rate.restart();
        }
    }

    /// Whether the current path is usable (active, not suspect).
    #[inline]
    pub fn current_active(&self) -> bool {
        self.usable(self.current)
    }

    pub fn report(&self) -> Vec<PathReport<A>> {
        self.list
            .iter()
            .enumerate()
            .map(|(i, p)| PathReport {
                rail: p.path.rail,
                remote: p.path.remote,
                state: p.state,
                suspect: p.suspect && p.state == PathState::Active,
                current: i == self.current,
                srtt: p.srtt(),
                cwnd: p.cc.cwnd(),
                pacing_rate: p.cc.pacing_rate(),
                delivery_rate: Some(p.rate.get()).filter(|&r| r > 0),
                bytes_sent: p.bytes_sent,
                bytes_acked: p.bytes_acked,
                errors: p.errors,
                failures: p.failures,
            })
            .collect()
    }
}

impl<A> OnePath<A> {
    fn new(path: Path<A>, cc: Congestion, rtt: RttEstimator, state: PathState) -> OnePath<A> {
        OnePath {
            path,
            state,
            cc,
            rtt,
            hb_srtt: None,
            errors: 0,
            failures: 0,
            bytes_sent: 0,
            bytes_acked: 0,
            hb: None,
            next_probe: Instant::ZERO,
            interval: 100 * MILLIS,
            tries: 0,
            suspect: false,
            alive: None,
            last_data: Instant::ZERO,
            heard: Instant::ZERO,
            rate: DeliveryRate::default(),
        }
    }

    /// Its smoothed round trip: its congestion controller's (data), else
    /// its heartbeats'.
    pub fn srtt(&self) -> Option<Nanos> {
        self.cc.srtt().or(self.hb_srtt)
    }
}
