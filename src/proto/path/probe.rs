//! Heartbeats on an association's paths: a new path's confirming ones,
//! a failed path's probes (every `ProtoConfig::path_probe`, backing off
//! to `PROBE_MAX`), their answers (a path that answers is active again),
//! and a path's failure.

use super::*;

/// HEARTBEATs an unconfirmed path gets while the peer has nothing to say
/// (then it waits for traffic: an idle association stays quiet).
const CONFIRM_TRIES: u32 = 4;

#[cfg_attr(not(feature = "testing"), allow(dead_code))] // (`path_down`)
impl<A: Copy + PartialEq> Paths<A> {
    /// Path `i` failed at `now` (send error). A failed path's send failed
    /// (its probe): its link is down here and nothing went on the wire, so
    /// its probes do not back off: the first after the link's return goes
    /// within `probe` of it. (Backed off to `PROBE_MAX` while the link was
    /// down, it went up to 1 s later: 0.6 s after a 3 s outage, on real
    /// links 0.55-1.95 s to the rail carrying again.)
    pub fn fail(&mut self, i: usize, now: Instant, probe: Nanos) {
        let p = &mut self.list[i];
        match p.state {
            PathState::Active | PathState::Unconfirmed => {
                p.fail(now, probe);
                self.recount();
            }
            PathState::Failed | PathState::Probing => {
                p.hb = None;
                p.interval = probe;
                p.next_probe = p.next_probe.min(now.plus(probe));
            }
        }
    }

    /// The heartbeats due at `now`: each path whose probe or confirming
    /// heartbeat is due (`busy`: the peer has something to say; else only
    /// unconfirmed paths' first tries), with the nonce each gets
    /// (`nonce()`), recorded as its one outstanding heartbeat.
    pub fn due_heartbeats(
        &mut self,
        now: Instant,
        busy: bool,
        mut nonce: impl FnMut() -> u64,
        mut send: impl FnMut(Path<A>, u64),
    ) {
        let cap = self.probe_cap();
        for i in 0..self.list.len() {
            if let Some(at) = self.idle_due(i, busy) {
                if at <= now && self.idle_heartbeat(i, now) {
                    let n = nonce();
                    self.list[i].hb = Some((n, now));
                    send(self.list[i].path, n);
                }
                continue;
            }
            let p = &mut self.list[i];
            let wanted = match p.state {
                PathState::Unconfirmed => busy || p.tries < CONFIRM_TRIES,
                PathState::Failed | PathState::Probing => busy,
                PathState::Active => false,
            };
            if !wanted || p.next_probe > now {
                continue;
            }
            let n = nonce();
            p.hb = Some((n, now));
            p.tries += 1;
            if p.state == PathState::Failed {
                p.state = PathState::Probing;
            }
            p.next_probe = now.plus(p.interval.min(cap));
            p.interval = (p.interval * 2).min(PROBE_MAX);
            send(p.path, n);
        }
    }

    /// A heartbeat on the current path (liveness) with `nonce`.
    pub fn heartbeat_current(&mut self, now: Instant, nonce: u64) {
        self.list[self.current].hb = Some((nonce, now));
    }

    /// When the next heartbeat of `due_heartbeats` is due (`busy` as there).
    pub fn next_heartbeat(&self, busy: bool) -> Option<Instant> {
        let idle = (0..self.list.len()).filter_map(|i| self.idle_due(i, busy));
        self.list
            .iter()
            .filter(|p| match p.state {
                PathState::Unconfirmed => busy || p.tries < CONFIRM_TRIES,
                PathState::Failed | PathState::Probing => busy,
                PathState::Active => false,
            })
            .map(|p| p.next_probe)
            .chain(idle)
            .chain(self.next_suspect())
            .min()
    }

    /// A HEARTBEAT_ACK came in on `path` echoing `nonce`: Some(was it
    /// inactive) when it answers the heartbeat outstanding on that very
    /// path (the path is active from now, its congestion controller
    /// restarted if it was not); None (nothing changed) for any other:
    /// an old or forged nonce, or another path's.
    pub fn heartbeat_answered(
        &mut self,
        now: Instant,
        path: &Path<A>,
        nonce: u64,
        probe: Nanos,
    ) -> Option<bool> {
        let i = self.find(path)?;
        let (on, datagram, flight) = self.fresh;
        let p = &mut self.list[i];
        let (n, sent) = p.hb?;
        if n != nonce {
            return None;
        }
        p.hb = None;
        let r = now.since(sent);
        p.hb_srtt = Some(p.hb_srtt.map_or(r, |s| (7 * s + r) / 8));
        p.errors = 0;
        p.tries = 0;
        p.interval = probe;
        let was_inactive = p.state != PathState::Active;
        if was_inactive {
            p.state = PathState::Active;
            p.cc = Congestion::new(on, datagram, flight);
            p.rtt = p.rtt.fresh();
        }
        // (a small packet's round trip: the path's least, as the
        // handshake's is the first path's)
        p.cc.on_handshake_rtt(now, r);
        self.answered(now, i);
        Some(was_inactive)
    }
}

impl<A> OnePath<A> {
    pub(super) fn fail(&mut self, now: Instant, probe: Nanos) {
        self.state = PathState::Failed;
        self.suspect = false;
        self.alive = None;
        self.failures += 1;
        self.errors = 0;
        self.hb = None;
        self.tries = 0;
        self.interval = probe;
        self.next_probe = now.plus(probe);
    }
}
