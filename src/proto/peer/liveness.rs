//! Whether a peer is alive: the silence that counts while we have
//! something to say, HEARTBEATs after a quarter of the peer timeout, death
//! after all of it, and a dead peer's slot freed after its linger.

use super::*;

impl<A: Copy + PartialEq> Peer<A> {
    /// A message is queued: the silence that can kill the peer counts from
    /// now if it had nothing to say before (`was_busy`).
    pub fn arm_live(&mut self, now: Instant, was_busy: bool, cfg: &ProtoConfig) {
        if !was_busy {
            self.heard = self.heard.max(now);
            let at = now.plus(cfg.heartbeat_interval());
            if self.timers.get(Timer::Live).is_none_or(|t| t > at) {
                self.timers.set(Timer::Live, Some(at));
            }
            // failed paths are probed while there is something to say
            self.arm_paths(now);
        }
    }

    /// The liveness timer: declare the peer dead after `peer_timeout` of
    /// silence while busy, send a HEARTBEAT after a quarter of it, and say
    /// (true) when a dead peer's slot may be freed.
    pub(super) fn on_live(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        let cfg = cx.cfg;
        let hb = cfg.heartbeat_interval();
        if let Some(since) = self.dead {
            let until = since.plus(cfg.dead_linger());
            if self.assoc.state == AssocState::Closed && !self.busy() && now >= until {
                return true;
            }
            self.timers.set(Timer::Live, Some(until.max(now.plus(hb))));
            return false;
        }
        if !self.busy() {
            self.timers.stop(Timer::Live);
            return false;
        }
        let deadline = self.heard.plus(cfg.peer_timeout);
        if now >= deadline {
            self.die(now, cx);
            return false;
        }
        let silent = now.since(self.heard);
        if self.assoc.state == AssocState::Established
            && silent >= hb
            && now.since(self.last_heartbeat) >= hb
        {
            self.last_heartbeat = now;
            let start = cx.out.start();
            let nonce = cx.nonces.next();
            self.assoc.paths.heartbeat_current(now, nonce);
            wire::encode_heartbeat(
                &mut cx.out.bytes,
                &cx.cfg.integrity,
                self.assoc.peer_tag,
                false,
                nonce,
            );
            cx.out.push(self.path(), start);
        }
        let hb_at = self.heard.max(self.last_heartbeat).plus(hb);
        let hb_at = if hb_at > now { hb_at } else { now.plus(hb) };
        self.timers.set(Timer::Live, Some(deadline.min(hb_at)));
        false
    }

    /// Silent for the peer timeout: every unfinished message fails, the
    /// association ends, and new messages fail at once until a new one
    /// succeeds. What the channels hold is freed.
    pub fn die(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        cx.out.peers_died += 1;
        self.close(cx);
        for t in &mut self.tx {
            *t = Default::default();
        }
        self.dead = Some(now);
        self.timers
            .set(Timer::Live, Some(now.plus(cx.cfg.dead_linger())));
    }
}
