//! How the world runs: whose turn it is (a node's clock call, `turn`),
//! which nodes have work at the present instant (`has_work`, `run_ready`),
//! when time moves and to where (`next_deadline`, `advance`), the test's
//! scheduled actions, kills (also by a handler: `crash_here`); and a
//! node's view of virtual time (`NodeClock`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::state::{Program, Shared, World};
use crate::am::{self, Bundle};
use crate::clock::VirtualTime;
use crate::time::{Instant, Nanos, MICROS};

/// How far a busy loop's yield moves time when nothing at all is due
/// anywhere (about a poll's cost: a program polling for something that
/// will never come still sees time pass).
pub(super) const IDLE_STEP: Nanos = MICROS;
/// Turns at one instant after which the world calls it a livelock.
pub(super) const MAX_TURNS_AT_ONE_INSTANT: u64 = 2_000_000;

/// The payload of the unwinding by which a handler kills its own node.
pub(super) struct Killed;

/// Kills the node whose handler calls it, at this very point, as `kill -9`
/// would: nothing after it runs (the world catches the unwinding).
pub fn crash_here() -> ! {
    std::panic::resume_unwind(Box::new(Killed))
}

/// One node's view of virtual time.
pub(super) struct NodeClock {
    pub(super) world: Weak<Shared>,
    pub(super) node: usize,
    /// The time last read (what the clock says once the world is gone).
    pub(super) last: AtomicU64,
}

impl VirtualTime for NodeClock {
    fn now(&self) -> Instant {
        match self.world.upgrade() {
            Some(w) => {
                let t = w.state().now;
                self.last.store(t.0, Ordering::Relaxed);
                t
            }
            None => Instant(self.last.load(Ordering::Relaxed)),
        }
    }

    fn wait(&self, until: Instant) {
        if let Some(w) = self.world.upgrade() {
            turn(&w, self.node, Turn::Wait(until));
        }
    }

    fn sleep(&self, until: Instant) {
        if let Some(w) = self.world.upgrade() {
            turn(&w, self.node, Turn::Sleep(until));
        }
    }

    fn yield_now(&self) {
        if let Some(w) = self.world.upgrade() {
            turn(&w, self.node, Turn::Yield);
        }
    }

    fn unix_nanos(&self) -> u64 {
        // a fixed date (2026-01-01) plus the virtual time
        1_767_225_600_000_000_000 + self.now().0
    }
}

pub(super) fn kill(w: &Arc<Shared>, i: usize) {
    let Some(bundle) = take_node(w, i) else {
        return;
    };
    let _ = am::free_bundle(&bundle);
    drop(bundle);
    let hooks = w.state().on_kill.clone();
    let world = World { shared: w.clone() };
    for h in hooks {
        h(&world, i);
    }
}

/// Takes node `i` out of the world (dead from now on): its bundle.
pub(super) fn take_node(w: &Arc<Shared>, i: usize) -> Option<Arc<Bundle>> {
    {
        let mut st = w.state();
        let s = &mut st.nodes[i];
        let b = s.bundle.take()?;
        let addrs = std::mem::take(&mut s.addrs);
        // its inboxes go (only those still its own: a restart may hold one)
        for (addr, owner) in addrs {
            if st.net.owns_addr(addr, owner) {
                st.net.unbind(addr);
            }
        }
        Some(b)
    }
}

/// Whether node `i` has something to do now (the world's lock not held:
/// this asks its endpoints); `caller`: its own code asks, which runs
/// whatever its program is.
pub(super) fn has_work(w: &Arc<Shared>, i: usize, caller: bool) -> bool {
    let (bundle, program, now) = {
        let st = w.state();
        let s = &st.nodes[i];
        let Some(b) = s.bundle.clone() else {
            return false;
        };
        (b, s.program, st.now)
    };
    let polls = caller || program == Program::Polls;
    if !polls && !bundle.has_progress_thread() {
        return false;
    }
    bundle.endpoints().iter().any(|e| {
        e.readable() || (polls && e.has_events()) || e.next_deadline().is_some_and(|d| d <= now)
    })
}

/// The earliest deadline after now of the nodes not on the stack (and of
/// those on it, whose deadlines their own code serves when it runs again).
pub(super) fn next_deadline(w: &Arc<Shared>) -> Option<Instant> {
    let (now, nodes): (Instant, Vec<(Arc<Bundle>, Instant)>) = {
        let st = w.state();
        let nodes = st
            .nodes
            .iter()
            .filter_map(|s| s.bundle.clone().map(|b| (b, s.asleep_until)))
            .collect();
        (st.now, nodes)
    };
    let mut next: Option<Instant> = None;
    for (b, asleep_until) in nodes {
        for e in b.endpoints().iter() {
            if let Some(d) = e.next_deadline() {
                let d = d.max(asleep_until);
                if d > now {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
        }
        if asleep_until > now {
            next = Some(next.map_or(asleep_until, |n| n.min(asleep_until)));
        }
    }
    next
}

/// Runs the scheduled actions that are due, in order; true when any ran.
pub(super) fn run_actions(w: &Arc<Shared>) -> bool {
    let mut ran = false;
    loop {
        let due = {
            let mut st = w.state();
            let now = st.now;
            let first = st
                .actions
                .iter()
                .enumerate()
                .filter(|(_, a)| a.0 <= now)
                .min_by_key(|(_, a)| (a.0, a.1))
                .map(|(k, _)| k);
            first.map(|k| st.actions.swap_remove(k).2)
        };
        let Some(f) = due else {
            return ran;
        };
        ran = true;
        f(&World { shared: w.clone() });
    }
}

/// Polls every node that has something to do now, in order; true when
/// any was polled (or a scheduled action ran).
pub(super) fn run_ready(w: &Arc<Shared>) -> bool {
    let mut worked = run_actions(w);
    let n = w.state().nodes.len();
    for i in 0..n {
        let (bundle, program) = {
            let st = w.state();
            let s = &st.nodes[i];
            match &s.bundle {
                Some(b) if s.stack == 0 && s.asleep_until <= st.now => (b.clone(), s.program),
                _ => continue,
            }
        };
        if !has_work(w, i, false) {
            continue;
        }
        worked = true;
        w.state().nodes[i].stack += 1;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match program {
            // `Bundle::poll` without its closing yield (the world is the
            // loop): a yield of the node's own code, a handler polling
            // inside, is a turn of the world
            Program::Polls => {
                for e in bundle.endpoints().iter() {
                    let _ = e.poll();
                }
            }
            Program::Computes => {
                am::progress_pass(&bundle);
            }
        }));
        w.state().nodes[i].stack -= 1;
        if r.is_ok() {
            for e in bundle.endpoints().iter() {
                e.check_invariants();
            }
        }
        // (a killed node's endpoint goes with the last of its handles)
        drop(bundle);
        if let Err(p) = r {
            if p.is::<Killed>() {
                kill(w, i);
            } else {
                std::panic::resume_unwind(p);
            }
        }
    }
    let mut st = w.state();
    st.turns += 1;
    assert!(
        st.turns < MAX_TURNS_AT_ONE_INSTANT,
        "simulated world: a livelock at {} ns (seed {})",
        st.now.0,
        w.seed
    );
    worked
}

/// Nothing is due at the present instant: time moves to the next arrival
/// or deadline (at most to `until`), and what arrives then is delivered.
pub(super) fn advance(w: &Arc<Shared>, until: Option<Instant>) {
    let deadline = next_deadline(w);
    let mut st = w.state();
    let now = st.now;
    // (datagrams sent without delay arrive at once)
    if st.net.deliver(now) {
        return;
    }
    let action = st.actions.iter().map(|a| a.0).min();
    let next = [st.net.next_arrival(), deadline, until, action]
        .into_iter()
        .flatten()
        .filter(|&t| t > now)
        .min()
        .unwrap_or(now.plus(IDLE_STEP));
    if super::tracing() {
        eprintln!(
            "sim: {} -> {} (arrival {:?}, deadline {:?}, until {:?})",
            now.0,
            next.0,
            st.net.next_arrival(),
            deadline,
            until
        );
    }
    st.now = next;
    st.turns = 0;
    st.net.deliver(next);
}

/// What a clock call of a node asks for.
#[derive(Clone, Copy)]
pub(super) enum Turn {
    /// A busy loop's turn (`yield_now`).
    Yield,
    /// Nothing to do before the instant, unless a datagram or a message
    /// comes for the node (`wait_readable`).
    Wait(Instant),
    /// Nothing to do before the instant, whatever comes (`sleep`).
    Sleep(Instant),
}

/// A clock call of node `caller` (see `Turn`).
pub(super) fn turn(w: &Arc<Shared>, caller: usize, how: Turn) {
    // a yield right after its own poll moved datagrams: it runs on
    let busy = {
        let mut st = w.state();
        let s = &mut st.nodes[caller];
        s.stack += 1;
        let busy = s.activity != s.seen;
        s.seen = s.activity;
        busy
    };
    let until = match how {
        Turn::Yield => None,
        Turn::Wait(u) | Turn::Sleep(u) => Some(u),
    };
    loop {
        let worked = run_ready(w) || (busy && until.is_none());
        let ready = has_work(w, caller, true);
        let (now, dead, asleep) = {
            let st = w.state();
            let s = &st.nodes[caller];
            (st.now, s.bundle.is_none(), s.asleep_until)
        };
        match how {
            _ if dead => break,
            // descheduled (`World::deschedule`): its call returns when its
            // process runs again, whatever came meanwhile
            _ if now < asleep => {}
            Turn::Yield if worked || ready => break,
            Turn::Wait(u) if now >= u || ready => break,
            Turn::Sleep(u) if now >= u => break,
            _ => {}
        }
        advance(w, until.map(|u| u.max(asleep)));
        if until.is_none() && now >= asleep {
            break;
        }
    }
    let bundle = {
        let mut st = w.state();
        st.nodes[caller].stack -= 1;
        st.nodes[caller].bundle.clone()
    };
    let Some(bundle) = bundle else {
        // (a scheduled action killed it while this call of it waited)
        crash_here();
    };
    for e in bundle.endpoints().iter().cloned().collect::<Vec<_>>() {
        e.check_invariants();
    }
}
