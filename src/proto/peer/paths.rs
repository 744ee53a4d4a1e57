//! A peer's paths at work (`proto/path.rs` holds them): heartbeats that
//! confirm new paths and probe failed ones, their answers, the choice of
//! the path the association's packets take, and failover.

use super::*;
use crate::proto::path::PathState;
use crate::proto::path_events::{PathChange, PathEvent};

impl<A: Copy + PartialEq> Peer<A> {
    /// Sets the paths' timer to their next heartbeat (none due: stopped).
    #[inline]
    pub fn arm_paths(&mut self, now: Instant) {
        if self.assoc.paths.none_to_probe() {
            // (the usual case, tested inline: no call, no walk over the
            // paths, no look at the channels for `busy`)
            self.timers.stop(Timer::Paths);
            return;
        }
        self.arm_heartbeats(now);
    }

    /// `arm_paths` when a path awaits a heartbeat.
    #[inline(never)]
    fn arm_heartbeats(&mut self, _now: Instant) {
        let at = self.assoc.paths.next_heartbeat(self.busy());
        self.timers.set(Timer::Paths, at);
    }

    /// The paths' timer: the heartbeats due go, each with a fresh nonce,
    /// on its own path.
    pub(super) fn on_paths(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.timers.stop(Timer::Paths);
        if self.assoc.state != AssocState::Established {
            return;
        }
        let busy = self.busy();
        let vtag = self.assoc.peer_tag;
        let Ctx {
            cfg, out, nonces, ..
        } = cx;
        let failed = self.assoc.paths.due_suspects(
            now,
            cfg.path_probe,
            || nonces.next(),
            |path, nonce| {
                let start = out.start();
                wire::encode_heartbeat(&mut out.bytes, &cfg.integrity, vtag, false, nonce);
                out.push(path, start);
            },
        );
        self.assoc.paths.due_heartbeats(
            now,
            busy,
            || nonces.next(),
            |path, nonce| {
                let start = out.start();
                wire::encode_heartbeat(&mut out.bytes, &cfg.integrity, vtag, false, nonce);
                out.push(path, start);
            },
        );
        if failed != 0 {
            self.suspects_failed(now, failed, cx);
        }
        self.arm_paths(now);
    }

    /// The suspect paths in `failed` (bit i: path i) failed: each is told,
    /// and a partition when none is active now; if the association's
    /// packets took one, they move.
    fn suspects_failed(&mut self, now: Instant, failed: u32, cx: &mut Ctx<'_, A>) {
        let current = self.assoc.paths.find(&self.assoc.paths.current());
        for i in 0..32 {
            if failed & (1 << i) == 0 {
                continue;
            }
            if let Some(path) = self.assoc.paths.path_at(i) {
                self.tell_failed(path, true, cx);
            }
        }
        if current.is_some_and(|c| failed & (1 << (c % 32)) != 0) {
            self.failover(now, cx);
        }
    }

    /// A HEARTBEAT_ACK with `nonce` came in on `path`: true when it
    /// answers the heartbeat outstanding on that path (the peer is heard,
    /// and a path that was not active is from now); false (nothing
    /// changed) for any other.
    pub fn on_heartbeat_ack(
        &mut self,
        now: Instant,
        path: &Path<A>,
        nonce: u64,
        cx: &mut Ctx<'_, A>,
    ) -> bool {
        let probe = cx.cfg.path_probe;
        let before = self.assoc.paths.state_of(path);
        let partitioned = !self.assoc.paths.any_active();
        // (asked before the answer: it may make the current path active)
        let stalled = !self.assoc.paths.current_active();
        let Some(rejoined) = self.assoc.paths.heartbeat_answered(now, path, nonce, probe) else {
            return false;
        };
        if rejoined {
            // (an authentic answer on that very path: news)
            let change = match before {
                Some(PathState::Unconfirmed) => PathChange::Confirmed,
                _ => PathChange::Recovered,
            };
            self.tell(*path, change, cx);
            if partitioned {
                self.tell(*path, PathChange::Rejoined, cx);
            }
        }
        self.hear(now);
        self.tell_suspects(cx);
        let i = self.assoc.paths.find(path).unwrap_or(0);
        if stalled && self.assoc.paths.usable(i) {
            // the association's path was down or suspect (every path, or
            // with none to take over): traffic resumes on this one at once,
            // also when this one is it (not at its backed-off timeout)
            self.assoc.paths.switch_to(i);
            self.resume_on_new_path(now, cx);
        } else if rejoined && before != Some(PathState::Unconfirmed) && self.takes_over(i) {
            // a failed path answered its probe and is the best now (the
            // lowest round trip): the association's new packets take it
            // at once, those in flight finish on theirs (each packet keeps
            // its path, `lane`); not at the next moment with nothing in
            // flight, which a steady transfer may never have
            self.assoc.paths.switch_to(i);
            self.pump_both(now, cx);
        }
        self.arm_paths(now);
        true
    }

    /// Whether path `i` is the one `choose_path` would take now (and not
    /// the current one).
    fn takes_over(&self, i: usize) -> bool {
        let ring = self.same_host.is_some() && self.assoc.paths.usable(0);
        !ring && i != self.assoc.paths.current_index() && self.assoc.paths.best() == Some(i)
    }

    #[cfg_attr(not(feature = "testing"), allow(dead_code))] // (`Protocol::path_down`)
    /// The transport could not send on `path`: it fails at once; if the
    /// association's packets took it, they move to another active path.
    pub fn path_failed(&mut self, now: Instant, path: &Path<A>, cx: &mut Ctx<'_, A>) {
        let Some(i) = self.assoc.paths.find(path) else {
            return;
        };
        let was_current = self.assoc.paths.current() == *path;
        let had_active = self.assoc.paths.any_active();
        let was = self.assoc.paths.state_of(path);
        self.assoc.paths.fail(i, now, cx.cfg.path_probe);
        if was != self.assoc.paths.state_of(path) {
            self.tell_failed(*path, had_active, cx);
        }
        if was_current {
            self.failover(now, cx);
        } else {
            self.lane_failed(now, i, cx);
        }
        self.arm_paths(now);
    }

    /// The current path failed or is suspect: the best usable path takes
    /// over, and what was in flight goes again on it at once (its sequence
    /// numbers kept). With none usable, an active (suspect) one keeps
    /// them, the current one first. With none active (partitioned), the
    /// retransmissions go to the
    /// peer's name from ours (`Paths::name`), their backoff kept, and
    /// every failed path is probed: a peer that restarted keeps only its
    /// name (its other rails are new ports), and drops the heartbeats of
    /// an association it does not know, so only a packet of the
    /// association at its name tells that it restarted; kept on another
    /// path, they went to an address gone with the peer's previous
    /// process until the peer timeout.
    pub(super) fn failover(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        match self.assoc.paths.best() {
            Some(i) => {
                if self.assoc.paths.switch_to(i) {
                    self.resume_on_new_path(now, cx);
                }
            }
            None => match self.assoc.paths.fallback() {
                Some(i) => {
                    if self.assoc.paths.switch_to(i) {
                        self.resume_on_new_path(now, cx);
                    }
                }
                None => {
                    self.assoc.paths.switch_to(0);
                }
            },
        }
        self.arm_paths(now);
    }

    /// The association's packets take another path (or the same one
    /// again, answering): everything in flight goes again now, the
    /// retransmission timer unbacked.
    fn resume_on_new_path(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.rtt.on_progress();
        for ch in 0..NUM_CHANNELS {
            self.tx[ch].resend_all();
            self.timers.stop(Timer::Pause(ch));
        }
        self.pump_both(now, cx);
        for ch in 0..NUM_CHANNELS {
            let rto = self.tx[ch].retransmit_deadline();
            self.timers.set(Timer::Retransmit(ch), rto);
        }
    }

    /// Nothing in flight: the next packets take the best active path; a
    /// same-host peer's, the name's path while it is usable (its ring: a
    /// faster round trip measured on another rail is UDP's, not the
    /// ring's, and the ring's seal passes only through the ring).
    #[inline]
    pub(super) fn choose_path(&mut self) {
        if self.assoc.paths.single() {
            // the one path is current (and where answers go) already
            return;
        }
        let ring = self.same_host.is_some() && self.assoc.paths.usable(0);
        if let Some(i) = if ring {
            Some(0)
        } else {
            self.assoc.paths.best()
        } {
            self.assoc.paths.switch_to(i);
        }
    }

    /// `path` failed: news of it, and of a partition when none is active
    /// now and one was (`had_active`).
    pub(super) fn tell_failed(&mut self, path: Path<A>, had_active: bool, cx: &mut Ctx<'_, A>) {
        self.tell(path, PathChange::Failed, cx);
        if had_active && !self.assoc.paths.any_active() {
            self.tell(path, PathChange::Partitioned, cx);
        }
    }

    /// Tells the paths that became suspect, and those that answered
    /// since (`Paths::suspect_news`).
    #[inline]
    pub(super) fn tell_suspects(&mut self, cx: &mut Ctx<'_, A>) {
        let (newly, cleared) = self.assoc.paths.suspect_news();
        if newly | cleared != 0 {
            self.tell_suspect_news(newly, cleared, cx);
        }
    }

    #[inline(never)]
    fn tell_suspect_news(&mut self, newly: u32, cleared: u32, cx: &mut Ctx<'_, A>) {
        for i in 0..32 {
            let change = if newly & (1 << i) != 0 {
                PathChange::Suspect
            } else if cleared & (1 << i) != 0 {
                PathChange::Cleared
            } else {
                continue;
            };
            if let Some(path) = self.assoc.paths.path_at(i) {
                self.tell(path, change, cx);
            }
        }
    }

    fn tell(&self, path: Path<A>, change: PathChange, cx: &mut Ctx<'_, A>) {
        cx.path_events.push(PathEvent {
            peer: self.addr,
            path,
            change,
        });
    }
}
