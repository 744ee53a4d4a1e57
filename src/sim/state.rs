//! The world's shared state: its nodes (`Slot`, each running a
//! `Program`), the present instant, the network, what the test scheduled,
//! all behind one lock (`Shared`), and the handle to it (`World`, whose
//! methods are `world.rs`'s); dropping the last handle frees every node
//! and prints the seed of a failing test.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::hosts::HostBlock;
use super::network::Network;
use crate::am::{self, Bundle};
use crate::rng::Rng;
use crate::time::Instant;

/// What a node's program does between its calls to ramp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// It polls (AM_Poll in a loop, or sleeps in AM_WaitSema): the world
    /// polls it whenever it has something to do.
    Polls,
    /// It computes: only its progress thread, if on, moves its packets.
    Computes,
}

/// The world (see `world.rs`'s module doc): a handle, cloned freely. When the
/// last handle goes, every node ends; when the thread is panicking then (a
/// test failed), the seed is printed.
#[derive(Clone)]
pub struct World {
    pub(super) shared: Arc<Shared>,
}

pub(super) struct Slot {
    pub(super) bundle: Option<Arc<Bundle>>,
    /// Its host: its endpoints' addresses are ports of it.
    pub(super) host: Ipv4Addr,
    /// The addresses its endpoints hold, each with the transport that owns
    /// it (one a transaction log gave back among them).
    pub(super) addrs: Vec<(SocketAddr, u64)>,
    /// How many rails its endpoints have (`World::node_with_rails`).
    pub(super) rails: usize,
    /// Its code is running (a call of its clock, or the world polling it).
    pub(super) stack: u32,
    pub(super) asleep_until: Instant,
    pub(super) program: Program,
    /// Datagrams it sent or took, and that count at its last clock call:
    /// a yield after a poll that moved some does not move time.
    pub(super) activity: u64,
    pub(super) seen: u64,
}

pub(crate) struct State {
    pub(crate) now: Instant,
    pub(crate) net: Network,
    pub(super) nodes: Vec<Slot>,
    pub(super) next_owner: u64,
    /// Secrets of the nodes' endpoints.
    pub(super) rng: Rng,
    /// Turns since time last moved.
    pub(super) turns: u64,
    /// What the test scheduled (`World::at`), by instant and order.
    pub(super) actions: Vec<(Instant, u64, Action)>,
    pub(super) next_action: u64,
    /// Called after every kill (`World::on_kill`).
    pub(super) on_kill: Vec<KillHook>,
}

type KillHook = Arc<dyn Fn(&World, usize) + Send + Sync>;

type Action = Box<dyn FnOnce(&World) + Send>;

impl State {
    /// Node `i` sent or took a datagram.
    pub(crate) fn active(&mut self, i: usize) {
        self.nodes[i].activity += 1;
    }
}

pub(crate) struct Shared {
    pub(super) seed: u64,
    /// The block of host addresses this world holds (`host_of`).
    pub(super) hosts: HostBlock,
    pub(super) st: Mutex<State>,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "simulated world: seed {s} (replay: RAMP_SIM_SEED={s})",
                s = self.seed
            );
        }
        let st = self.st.get_mut();
        st.actions.clear();
        st.on_kill.clear();
        for s in st.nodes.iter_mut() {
            if let Some(b) = s.bundle.take() {
                let _ = am::free_bundle(&b);
            }
        }
    }
}
