//! A simulated world of whole endpoints: simulated processes (nodes), each
//! a bundle with its endpoint (AM layer, protocol, transports: the real
//! code), on virtual time and a simulated network (`network.rs`), in one
//! thread, deterministic for a seed.
//!
//! A node's clock is virtual (`clock::VirtualTime`): time moves only when
//! nothing is left to do at the present instant. A test drives the nodes
//! by calling their API, as a program would; whenever that call waits
//! (`Clock::wait_readable`: until a datagram comes or a deadline;
//! `Clock::sleep`: the time given, whatever comes) or polls
//! (`Clock::yield_now`, at the end of every `Bundle::poll`), the world runs
//! the other nodes that have something to do now (a datagram in their
//! inbox, a timer due, a message to handle): each is polled as a program
//! in a poll loop would (`Program::Polls`, the default), or, one that
//! computes, only by its progress thread if it has one
//! (`Program::Computes`). When nothing is due anywhere, time jumps to the
//! next arrival or deadline. A node whose code is on the stack (the
//! caller, or one the world is polling) is never polled again from inside
//! it; a handler the world runs that polls or waits itself (nested) lets
//! the rest of the world run meanwhile, as its process would.
//! A handler that runs for long blocks what is below it on the stack: a
//! test whose target's handler runs long drives the world from the top
//! (`World::run_until`), not from inside the initiator's calls.
//!
//! Faults: the network's (loss, duplication, corruption, reordering,
//! delay, from the seed), links cut, a node descheduled (it is not run
//! until a given instant; what arrives waits in its inbox), and a node
//! killed as by `kill -9` (its datagrams vanish, nothing of it runs again;
//! its transaction log stays on disk) and restarted (from its log, or on
//! its host without one: `restart`). A handler can kill its own node in the
//! middle of running (`crash_here`). The test sees every datagram sent
//! (`tap`, which may drop it) and may hold some back in the network until
//! it releases them (`hold`, `release`).
//!
//! A failing test prints its seed; `RAMP_SIM_SEED=n` replays it (`seeds`).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;

use super::hosts::{host_of, HostBlock};
use super::network::Network;
use super::scheduler::{advance, kill, run_ready, Killed, NodeClock};
pub(super) use super::state::World;
use super::state::{Program, Shared, Slot, State};
use super::transport::bind_transport;
use crate::am::{self, Bundle, BundleMode, Endpoint};
use crate::clock::Clock;
use crate::config::{Config, TransportChoice};
use crate::fault::{FaultConfig, FaultInjector};
use crate::net::{ShmTransport, Transports};
use crate::rng::Rng;
use crate::time::{Instant, Nanos};

/// Where virtual time starts (a second: nothing is "before the start").
const START: Instant = Instant(1_000_000_000);

/// The seeds a seeded test runs: `RAMP_SIM_SEED` alone when set (the
/// replay of a failure), else 1..=n.
pub fn seeds(n: u64) -> Vec<u64> {
    match std::env::var(crate::config::SIM_SEED)
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        Some(s) => vec![s],
        None => (1..=n).collect(),
    }
}

/// A simulated process: its bundle and endpoint.
pub struct Node {
    pub index: usize,
    pub bundle: Arc<Bundle>,
    pub ep: Arc<Endpoint>,
}

impl World {
    /// A world whose network does what `faults` says (`sim::lan()` for a
    /// clean one), seeded by `faults.seed`.
    pub fn new(faults: FaultConfig) -> World {
        am::init().expect("the AM layer initializes");
        let seed = faults.seed;
        let mut rng = Rng::new(seed);
        let net_rng = Rng::new(rng.next_u64());
        World {
            shared: Arc::new(Shared {
                seed,
                hosts: HostBlock::claim(),
                st: Mutex::new(State {
                    now: START,
                    net: Network::new(FaultInjector::with_rng(faults, net_rng)),
                    nodes: Vec::new(),
                    next_owner: 1,
                    rng,
                    turns: 0,
                    actions: Vec::new(),
                    next_action: 0,
                    on_kill: Vec::new(),
                }),
            }),
        }
    }

    /// A clean LAN (`sim::lan()`) seeded by `seed`.
    pub fn seeded(seed: u64) -> World {
        World::new(FaultConfig {
            seed,
            ..super::lan()
        })
    }

    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    pub fn now(&self) -> Instant {
        self.shared.state().now
    }

    /// What the network did so far.
    pub fn stats(&self) -> super::SimStats {
        self.shared.state().net.stats.clone()
    }

    /// A new node (a simulated host and process): a bundle and one
    /// endpoint configured by `cfg`, at a port of a host of its own.
    /// (`cfg.transport` = `Shm`: shared-memory rings to the nodes of this
    /// process that have them too, before the simulated network; any
    /// other: the simulated network alone.) One restarted from its
    /// transaction log moves to the logged address when it opens the log.
    pub fn node(&self, cfg: &Config) -> Node {
        self.node_on(cfg, None, 1)
    }

    /// A new process on the host of node `i`, which is dead: a new node
    /// whose endpoints take that host's ports in the same order, so that
    /// its first endpoint has the address node `i`'s had (a process
    /// restarted without a log; one with a log comes back at its logged
    /// address when it opens it, from `node`).
    pub fn restart(&self, i: usize, cfg: &Config) -> Node {
        assert!(!self.alive(i), "node {i} is alive: kill it first");
        let (host, rails) = {
            let st = self.shared.state();
            (st.nodes[i].host, st.nodes[i].rails)
        };
        self.node_on(cfg, Some(host), rails)
    }

    pub(super) fn node_on(&self, cfg: &Config, host: Option<Ipv4Addr>, rails: usize) -> Node {
        let index = {
            let mut st = self.shared.state();
            let host = host.unwrap_or_else(|| host_of(self.shared.hosts.b, st.nodes.len()));
            st.nodes.push(Slot {
                bundle: None,
                host,
                addrs: Vec::new(),
                rails,
                stack: 0,
                asleep_until: Instant::ZERO,
                program: Program::Polls,
                activity: 0,
                seen: 0,
            });
            st.nodes.len() - 1
        };
        let clock = Clock::Virtual(Arc::new(NodeClock {
            world: Arc::downgrade(&self.shared),
            node: index,
            last: AtomicU64::new(START.0),
        }));
        let w = Arc::downgrade(&self.shared);
        let c = clock.clone();
        let network: am::OpenTransports = Arc::new(move |cfg: &Config, at| {
            let w = w
                .upgrade()
                .ok_or_else(|| std::io::Error::other("the world ended"))?;
            let (t, further) = {
                let mut st = w.state();
                let slot = &st.nodes[index];
                let addr = at.unwrap_or_else(|| {
                    SocketAddr::new(slot.host.into(), 7000 + slot.addrs.len() as u16)
                });
                let host = slot.host;
                let t = bind_transport(&w, &mut st, index, addr)?;
                // further rails: the same port at the host's rail k
                // address (`world_rails.rs`), each rail its own network
                let mut further = Vec::new();
                for k in 1..rails {
                    let ip = super::hosts::rail_ip(host, k);
                    st.net.set_rail(host.into(), 0);
                    st.net.set_rail(ip.into(), k as u8);
                    let a = SocketAddr::new(ip.into(), addr.port());
                    further.push(bind_transport(&w, &mut st, index, a)?);
                }
                (t, further)
            };
            let mut set = Transports::new(Box::new(t));
            for t in further {
                set.add_rail(Box::new(t));
            }
            if cfg.transport == TransportChoice::Shm {
                let addr = set.local_addr();
                let shm = ShmTransport::open_with(addr, c.clone())?;
                set.prefer(Box::new(shm.with_peer_timeout(cfg.proto.peer_timeout)));
            }
            Ok(set)
        });
        let w = Arc::downgrade(&self.shared);
        let secret: am::MakeSecret = Arc::new(move || {
            let mut s = [0u8; 32];
            if let Some(w) = w.upgrade() {
                let mut st = w.state();
                for c in s.chunks_exact_mut(8) {
                    c.copy_from_slice(&st.rng.next_u64().to_le_bytes());
                }
            }
            s
        });
        let host = am::Host {
            clock,
            network: Some(network),
            secret: Some(secret),
        };
        let bundle = am::allocate_bundle_on(BundleMode::Seq, host).expect("a bundle");
        let ep = am::allocate_endpoint_with(&bundle, cfg).expect("an endpoint");
        self.shared.state().nodes[index].bundle = Some(bundle.clone());
        Node { index, bundle, ep }
    }

    /// Shows the test every datagram sent from now on, (from, to, bytes),
    /// before the network's faults; one for which `f` says false is lost.
    pub fn tap(&self, f: impl FnMut(SocketAddr, SocketAddr, &[u8]) -> bool + Send + 'static) {
        self.shared.state().net.tap = Some(Box::new(f));
    }

    /// Holds back every datagram sent from now on for which `f(from, to,
    /// bytes)` says true (one the tap keeps), in the network, until the
    /// test releases it (`release`): a queue on the way under the test's
    /// control. (A protocol's copies of a held datagram are held too when
    /// `f` says so.)
    pub fn hold(&self, f: impl FnMut(SocketAddr, SocketAddr, &[u8]) -> bool + Send + 'static) {
        self.shared.state().net.hold = Some(Box::new(f));
    }

    /// How many datagrams are held.
    pub fn held(&self) -> usize {
        self.shared.state().net.held.len()
    }

    /// Sends on the `n` oldest datagrams held (fewer when fewer are), as if
    /// sent now; how many.
    pub fn release(&self, n: usize) -> usize {
        let mut st = self.shared.state();
        let now = st.now;
        st.net.release(now, n)
    }

    /// Stops holding and sends on every datagram held.
    pub fn release_all(&self) {
        let mut st = self.shared.state();
        st.net.hold = None;
        let now = st.now;
        st.net.release(now, usize::MAX);
    }

    /// Adds a bottleneck link (`sim::Bottleneck`) for the datagrams
    /// `carries(from, to)` says, before the faults; returns its index.
    pub fn bottleneck(
        &self,
        b: super::Bottleneck,
        carries: impl Fn(SocketAddr, SocketAddr) -> bool + Send + 'static,
    ) -> usize {
        self.shared.state().net.links.add(b, Box::new(carries))
    }

    /// Bottleneck `i`'s counters now.
    pub fn link_stats(&self, i: usize) -> super::BottleneckStats {
        self.shared.state().net.links.get(i).stats
    }

    /// Sends `bytes` from `from` to `to` now, as a host that is no node
    /// of the world would (a hostile one, forging what it likes): through
    /// the tap and the network's faults, as any datagram.
    pub fn send_datagram(&self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let mut st = self.shared.state();
        let now = st.now;
        st.net.transmit(now, from, to, bytes);
    }

    /// Sets what node `i`'s program does between its calls.
    pub fn set_program(&self, i: usize, p: Program) {
        self.shared.state().nodes[i].program = p;
    }

    /// Node `i` does not run until `d` from now (a process off the CPU):
    /// its datagrams wait in its inbox, its timers wait, and a call of its
    /// program (the test's) that reaches the clock returns only then.
    pub fn deschedule(&self, i: usize, d: Nanos) {
        let mut st = self.shared.state();
        let until = st.now.plus(d);
        let s = &mut st.nodes[i];
        s.asleep_until = s.asleep_until.max(until);
    }

    /// Cuts the link between the hosts of nodes `a` and `b` (both ways),
    /// or mends it.
    pub fn set_cut(&self, a: usize, b: usize, cut: bool) {
        let mut st = self.shared.state();
        let (x, y) = (st.nodes[a].host, st.nodes[b].host);
        st.net.set_cut(x.into(), y.into(), cut);
    }

    /// Another endpoint of node `i`, in its bundle, at another port of its
    /// host.
    pub fn endpoint(&self, i: usize, cfg: &Config) -> Arc<Endpoint> {
        let b = self.shared.state().nodes[i]
            .bundle
            .clone()
            .expect("a live node");
        am::allocate_endpoint_with(&b, cfg).expect("an endpoint")
    }

    /// Kills node `i` as `kill -9` would: nothing of it runs again, its
    /// address takes nothing more, what it had in flight still arrives.
    /// A node killed while its own call waits (the test's program, in a
    /// call of its API: a scheduled action kills it) does not come back
    /// from that call: it unwinds to `run_program`.
    pub fn kill(&self, i: usize) {
        kill(&self.shared, i);
    }

    /// Runs `f`, the program of node `i` (calls of its API): None when
    /// the node was killed meanwhile (by `kill` while a call of it
    /// waited, or `crash_here` in a handler its own call ran), the node
    /// then dead; other panics go on.
    pub fn run_program<R>(&self, i: usize, f: impl FnOnce() -> R) -> Option<R> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(r) => Some(r),
            Err(p) if p.is::<Killed>() => {
                kill(&self.shared, i);
                None
            }
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// Calls `f(world, node)` after every kill (by `kill` or `crash_here`):
    /// a supervisor that restarts a process at once.
    pub fn on_kill(&self, f: impl Fn(&World, usize) + Send + Sync + 'static) {
        self.shared.state().on_kill.push(Arc::new(f));
    }

    /// The name of node `i`'s endpoint (None once it is dead).
    pub fn node_name(&self, i: usize) -> am::EndpointName {
        let b = self.shared.state().nodes[i]
            .bundle
            .clone()
            .expect("a live node");
        let ep = b.endpoints()[0].clone();
        ep.name()
    }

    /// Whether node `i` is alive.
    pub fn alive(&self, i: usize) -> bool {
        self.shared.state().nodes[i].bundle.is_some()
    }

    /// The address of node `i`'s first endpoint now.
    pub fn addr(&self, i: usize) -> SocketAddr {
        let b = self.shared.state().nodes[i]
            .bundle
            .clone()
            .expect("a live node");
        let ep = b.endpoints()[0].clone();
        ep.addr()
    }

    /// Runs `f` when virtual time reaches `at` (at once if it has), before
    /// any node runs then: a kill, a restart, a cut link, at a moment of
    /// the test's choosing while its own calls wait.
    pub fn at(&self, at: Instant, f: impl FnOnce(&World) + Send + 'static) {
        let mut st = self.shared.state();
        let order = st.next_action;
        st.next_action += 1;
        st.actions.push((at, order, Box::new(f)));
    }

    /// Runs the world for `d` of virtual time.
    pub fn run_for(&self, d: Nanos) {
        let end = self.now().plus(d);
        self.run_until_at(end, || false);
    }

    /// Runs the world until `cond` holds (true) or `limit` of virtual time
    /// has passed (false).
    pub fn run_until(&self, limit: Nanos, cond: impl FnMut() -> bool) -> bool {
        let end = self.now().plus(limit);
        self.run_until_at(end, cond)
    }

    fn run_until_at(&self, end: Instant, mut cond: impl FnMut() -> bool) -> bool {
        loop {
            if cond() {
                return true;
            }
            if self.now() >= end {
                return false;
            }
            if !run_ready(&self.shared) {
                advance(&self.shared, Some(end));
            }
        }
    }
}
