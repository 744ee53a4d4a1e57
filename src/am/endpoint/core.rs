//! An endpoint: its state (transports, protocol, tables, handlers, segment,
//! credits, statistics) and the calls that set it up and read it. Its
//! parts' types live below it (`state/`, `queue/`, `handler/`); the paths
//! that move messages live above it (`messages/`: `request.rs`,
//! `reply.rs`, `loopback.rs`, `driver.rs`, `drain.rs`, `dispatch.rs`,
//! `returned.rs`), as do remote memory, transactions and the rest.
//!
//! Locking: the state sits in a re-entrant lock (`sys/relock.rs`: its
//! release a plain store, no locked instruction) around a RefCell. A thread
//! holds the mutex while it polls or sends; the RefCell is borrowed only for
//! short stretches and never while a handler runs, so a handler may call back
//! into the endpoint (reply, request, interrogate its token).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::host::Host;
use crate::am::handler::args::{HandlerFn, SegmentMemory};
use crate::am::handler::name::EndpointName;
use crate::am::handler::tables::TAG_NONE;
use crate::am::handler::tables::{HandlerTable, TranslationTable};
use crate::am::state::outstanding::Outstanding;
use crate::clock::Clock;
use crate::config::Config;
use crate::config::MAX_NETWORK_DEPTH;
use crate::error::{Error, Result};
use crate::net::Transports;
use crate::proto::Protocol;
use crate::stats::Statistics;
use crate::sys::{ReGuard, ReLock};
use crate::time::Instant;
use crate::wire::mac::MacKey;

static NEXT_ENDPOINT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct EpState {
    /// The endpoint's clock (its bundle's): every time read here comes
    /// from it.
    pub(in crate::am) clock: Clock,
    pub(in crate::am) proto: Protocol<SocketAddr>,
    pub(in crate::am) transports: Transports,
    pub(in crate::am) tag: u64,
    pub(in crate::am) table: TranslationTable,
    pub(in crate::am) handlers: HandlerTable,
    /// Handler names, the cache of peers' names, lookups (`names.rs`).
    pub(in crate::am) names: crate::am::state::handler_names::Names,
    /// Names published here by others, our queries about them (`services.rs`).
    pub(in crate::am) services: crate::am::state::services::Services,
    pub(in crate::am) segment: Option<Arc<dyn SegmentMemory>>,
    /// Counts the segments set: a long message placed into one
    /// (`placement.rs`) runs only while it is still the segment.
    pub(in crate::am) seg_gen: u32,
    /// Network depth once `set_expected_resources` ran.
    pub(in crate::am) depth: Option<u32>,
    /// The next transaction id, 64 bits (`take_txn_id`).
    pub(in crate::am) next_txn: u64,
    /// Requests waiting for their reply, by transaction id.
    pub(in crate::am) outstanding: crate::am::state::txn_map::TxnMap<Outstanding>,
    pub(in crate::am) stats: Statistics,
    /// When the network was last moved (a request skips its poll right after one).
    pub(in crate::am) last_pump: Instant,
    /// Long messages whose handler ran on bytes placed as they arrived
    /// (`placement.rs`), not copied in at dispatch.
    pub(in crate::am) placed_runs: u64,
    pub(in crate::am) dispatch_nesting: u32,
    /// Request handlers started and not yet answered (`started.rs`).
    pub(in crate::am) open_requests: u32,
    recv_depth_env: Option<usize>,
    pub(in crate::am) verbose: bool,
    /// Regions and remote memory operations (`rma/`).
    pub(in crate::am) rma: crate::am::state::rma::RmaState,
    /// AM messages drained in order, waiting for a poll (`queue/`).
    pub(in crate::am) incoming: crate::am::queue::incoming::Incoming,
    /// Kept transactions, as initiator and as target (`txn.rs`).
    pub(in crate::am) txn: crate::am::state::txn::Txns,
    /// The protocol's secret (a transaction log keeps it: `txn_log.rs`).
    pub(in crate::am) secret: [u8; 32],
    /// The express lane over shared-memory rings (`express.rs`).
    pub(in crate::am) express: crate::am::state::express::ExpressState,
    /// The record the fast poll took last (`express_poll.rs`).
    pub(in crate::am) express_rx: crate::net::express::TakenRecord,
    /// Requests held back to leave together (`request.rs`).
    pub(in crate::am) batch: crate::am::state::batch::Batch,
}

impl Drop for EpState {
    /// Requests held for a batch leave before the endpoint closes.
    fn drop(&mut self) {
        let now = self.clock.now();
        self.send_all_held(now);
    }
}

pub struct Endpoint {
    pub id: u64,
    /// The clock of the endpoint's bundle (`Bundle::clock`), its host's.
    pub(crate) clock: Clock,
    /// Its bundle's host: where transports are opened (`txn_log.rs`).
    pub(in crate::am) host: Host,
    name: EndpointName,
    addr: SocketAddr,
    /// The address a transaction log gave back (`txn_log.rs`): the
    /// endpoint's address and name from then on.
    pub(in crate::am) logged: std::sync::OnceLock<SocketAddr>,
    pub(in crate::am) state: ReLock<RefCell<EpState>>,
    /// The bundle holding this endpoint (`bundle/bundle.rs` keeps it);
    /// None once the endpoint is freed.
    bundle: Mutex<Option<Weak<dyn Holder>>>,
}

/// The bundle holding an endpoint, as the endpoint sees it: a call that
/// waits (for a credit, an answer, a completion) polls the whole bundle,
/// since what it waits for may depend on another endpoint of it, and
/// sleeps until one of its endpoints has something.
pub(crate) trait Holder: Send + Sync {
    /// AM_Poll of the bundle.
    fn poll(&self) -> Result<()>;
    /// Sleeps in the kernel until a datagram reaches an endpoint of the
    /// bundle, a protocol timer is due, or `max_ms` pass.
    fn wait_for_activity(&self, max_ms: u64);
    /// Lets go of endpoint `ep_id` (it is freed); false when it does not
    /// hold it.
    fn remove(&self, ep_id: u64) -> bool;
}

pub(in crate::am) type Guard<'a> = ReGuard<'a, RefCell<EpState>>;

/// Whether a call waits for an endpoint another thread holds (a thread runs
/// handlers with its endpoint held: `dispatch.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockWait {
    /// Waits (every AM-2 call).
    Wait,
    /// Refuses with `Error::InUse`, having done nothing: for a caller that
    /// holds a lock of its own which handlers need (CPython's GIL), which
    /// would otherwise wait for a thread that waits for it.
    Refuse,
}

/// The protocol's configuration, with the packet MAC key of the job key
/// `RAMP_AUTH` chooses (`Config::mac_job_key`: `spmd` sets a key received
/// under PMI before it opens its endpoint), unless the caller gave one.
fn proto_config(cfg: &Config) -> crate::proto::ProtoConfig {
    let mut p = cfg.proto.clone();
    p.same_host_flight = crate::net::RING_FLIGHT as u64;
    if p.mac.is_none() {
        // `open` refused an endpoint whose key is required but missing
        if let Ok(Some(k)) = cfg.mac_job_key() {
            let key = MacKey::from_job_key(k.expose());
            if cfg.verbose {
                eprintln!(
                    "ramp: packets carry a MAC (job key fingerprint {})",
                    key.fingerprint()
                );
            }
            p.mac = Some(key);
        }
    }
    p
}

/// 32 bytes of the OS's randomness (`sys::random`): the protocol's secret
/// (its verification tags and cookie key derive from it). Without them
/// no endpoint opens: a guessable secret would make its tags guessable.
fn endpoint_secret(cfg: &Config) -> Result<[u8; 32]> {
    crate::sys::random::random_bytes().map_err(|e| {
        if cfg.verbose {
            eprintln!("ramp: cannot open an endpoint: no randomness for its secret: {e}");
        }
        Error::Resource("cannot open an endpoint: the OS gave no randomness for its secret")
    })
}

impl Endpoint {
    /// This endpoint's state, waiting for it or not as `wait` says.
    #[inline]
    pub(in crate::am) fn lock_state(&self, wait: LockWait) -> Result<Guard<'_>> {
        match wait {
            LockWait::Wait => Ok(self.state.lock()),
            LockWait::Refuse => self.state.try_lock().ok_or(Error::InUse(
                "the endpoint is held by another thread (running a handler there)",
            )),
        }
    }

    /// Opens an endpoint on `host`'s network (the configured transports of
    /// a real process), keeping time by its clock.
    pub(crate) fn open(cfg: &Config, host: &Host) -> Result<Arc<Endpoint>> {
        if let Err(e) = cfg.mac_job_key() {
            eprintln!("ramp: cannot open an endpoint: {e}");
            return Err(Error::Resource(
                "a job key is required (RAMP_AUTH=on) but missing",
            ));
        }
        let transports = host.open_transports(cfg, None).map_err(|e| {
            eprintln!("ramp: cannot open an endpoint: {e}");
            Error::Resource("cannot open the endpoint's socket")
        })?;
        Endpoint::over(cfg, transports, host.clone())
    }

    /// An endpoint on the given transports; its name is their address.
    /// Fails only when no secret can be made for it (`endpoint_secret`;
    /// a simulated host makes its own, `Host::secret`).
    pub(crate) fn over(cfg: &Config, transports: Transports, host: Host) -> Result<Arc<Endpoint>> {
        let addr = transports.local_addr();
        let secret = match &host.secret {
            Some(make) => make(),
            None => endpoint_secret(cfg)?,
        };
        let mut proto = Protocol::new(proto_config(cfg), &secret);
        // the rails the protocol's paths leave from (the name's first)
        proto.set_local_rails(&transports.rail_addrs());
        // express records carry no MAC: under a job key each ring's ends
        // prove once that they are of the same job (`net/shm_proof.rs`)
        let mut transports = transports;
        transports.set_express_prover(crate::am::state::express::prover(
            proto.config().mac.as_ref(),
        ));
        // an association's packets leave through sockets connected to
        // their peers (the peer takes the port as ours once the packet's
        // MAC proves it; without a MAC, once we announced it from our
        // name: `proto/alias.rs`)
        transports.set_connectable(cfg.udp_connect.then_some(crate::net::Connectable {
            tag_of: crate::wire::association_vtag,
            announce: proto.config().mac.is_none(),
        }));
        let express = crate::am::state::express::ExpressState::new(cfg.shm_express);
        let incarnation = crate::am::state::txn::incarnation_of(&secret);
        let st = EpState {
            clock: host.clock.clone(),
            proto,
            transports,
            tag: TAG_NONE,
            table: TranslationTable::owned_by(addr),
            handlers: HandlerTable::default(),
            names: Default::default(),
            services: Default::default(),
            segment: None,
            seg_gen: 0,
            depth: None,
            next_txn: 1,
            outstanding: Default::default(),
            stats: Statistics::initial(),
            last_pump: Instant::ZERO,
            placed_runs: 0,
            dispatch_nesting: 0,
            open_requests: 0,
            recv_depth_env: cfg.recv_depth,
            verbose: cfg.verbose,
            rma: crate::am::state::rma::RmaState::staging(cfg.xfer_staging),
            incoming: Default::default(),
            txn: crate::am::state::txn::Txns::new(incarnation),
            secret,
            express,
            express_rx: Default::default(),
            batch: crate::am::state::batch::Batch {
                max: cfg.request_batch,
                ..Default::default()
            },
        };
        Ok(Arc::new(Endpoint {
            id: NEXT_ENDPOINT_ID.fetch_add(1, Ordering::Relaxed),
            clock: host.clock.clone(),
            host,
            name: EndpointName::from_addr(addr),
            addr,
            state: ReLock::new(RefCell::new(st)),
            bundle: Mutex::new(None),
            logged: std::sync::OnceLock::new(),
        }))
    }

    /// The bundle holding this endpoint; None once it is freed.
    pub(crate) fn holder(&self) -> Option<Arc<dyn Holder>> {
        self.bundle.lock().as_ref()?.upgrade()
    }

    /// Whether `h` holds this endpoint.
    pub(crate) fn is_held_by(&self, h: &Weak<dyn Holder>) -> bool {
        self.bundle.lock().as_ref().is_some_and(|b| b.ptr_eq(h))
    }

    /// Sets the bundle holding this endpoint (None: freed).
    pub(crate) fn set_holder(&self, h: Option<Weak<dyn Holder>>) {
        *self.bundle.lock() = h;
    }

    pub fn name(&self) -> EndpointName {
        match self.logged.get() {
            None => self.name,
            Some(a) => EndpointName::from_addr(*a),
        }
    }

    #[inline]
    pub fn addr(&self) -> SocketAddr {
        match self.logged.get() {
            None => self.addr,
            Some(a) => *a,
        }
    }

    pub(in crate::am) fn with<R>(&self, f: impl FnOnce(&mut EpState) -> R) -> R {
        let g = self.state.lock();
        let mut st = g.borrow_mut();
        f(&mut st)
    }

    /// Like `with`, unless another thread holds the endpoint (None then).
    pub(in crate::am) fn try_with<R>(&self, f: impl FnOnce(&mut EpState) -> R) -> Option<R> {
        let g = self.state.try_lock()?;
        let mut st = g.try_borrow_mut().ok()?;
        Some(f(&mut st))
    }

    pub fn tag(&self) -> u64 {
        self.with(|s| s.tag)
    }

    pub fn set_tag(&self, tag: u64) {
        self.with(|s| {
            s.tag = tag;
            // peers' mappings were handed out under the old tag: they ask
            // again, and are checked against the new one (`rma_shared.rs`)
            s.rma.reshare_regions();
        })
    }

    fn before_resources(s: &EpState) -> Result<()> {
        if s.depth.is_some() {
            Err(Error::Resource(
                "the translation table is fixed after AM_SetExpectedResources",
            ))
        } else {
            Ok(())
        }
    }

    pub fn map(&self, index: i64, name: EndpointName, tag: u64) -> Result<()> {
        self.with(|s| {
            s.table.get(index)?;
            Self::before_resources(s)?;
            s.table.map(index, name, tag)
        })
    }

    pub fn map_any(&self, name: EndpointName, tag: u64) -> Result<u32> {
        self.with(|s| {
            Self::before_resources(s)?;
            s.table.map_any(name, tag)
        })
    }

    pub fn unmap(&self, index: i64) -> Result<()> {
        self.with(|s| {
            s.table.get(index)?;
            Self::before_resources(s)?;
            // The last entry for an address: its protocol state goes too
            // (unless messages to it are unfinished; see `Protocol::forget`).
            if let Some(addr) = s.table.unmap(index)? {
                s.proto.forget(&addr);
            }
            Ok(())
        })
    }

    pub fn num_translations(&self) -> usize {
        self.with(|s| s.table.len())
    }

    pub fn set_num_translations(&self, n: i64) -> Result<()> {
        self.with(|s| {
            let target = if n < 0 {
                n
            } else {
                n.max(crate::am::handler::tables::INIT_TRANSLATIONS as i64)
            };
            if target == s.table.len() as i64 {
                return Ok(());
            }
            Self::before_resources(s)?;
            s.table.set_len(n)
        })
    }

    /// Ok(Some((name, tag))) when mapped, Ok(None) when not.
    pub fn translation(&self, index: i64) -> Result<Option<(EndpointName, u64)>> {
        self.with(|s| Ok(s.table.get(index)?.map(|t| (t.name, t.tag))))
    }

    pub fn set_translation_tag(&self, index: i64, tag: u64) -> Result<()> {
        self.with(|s| {
            s.table.get(index)?;
            match s.table.get_mut(index as u32) {
                Some(t) => {
                    t.tag = tag;
                    Ok(())
                }
                None => Err(Error::Resource("translation entry not mapped")),
            }
        })
    }

    /// Fixes the table and sets the network depth (credits per peer);
    /// asks the table's same-host peers for their rings, so that the
    /// first messages find them ready (`Transports::ask_rings`).
    pub fn set_expected_resources(&self, _n_endpoints: i32, depth: i32) -> Result<()> {
        self.with(|s| {
            if depth < 1 || depth as u32 > MAX_NETWORK_DEPTH {
                return Err(Error::BadArg("network depth must be in 1..1024"));
            }
            if s.depth.is_some() {
                return Err(Error::Resource("AM_SetExpectedResources already called"));
            }
            let depth = depth as u32;
            let peers = s.table.mapped().saturating_sub(1).clamp(1, 4);
            let recv = s.recv_depth_env.unwrap_or(2 * depth as usize * peers);
            s.proto.set_recv_depth(recv);
            s.depth = Some(depth);
            // the table is complete: same-host peers' rings set up now
            s.transports.ask_rings(&s.table.peers());
            Ok(())
        })
    }

    pub fn network_depth(&self) -> Option<u32> {
        self.with(|s| s.depth)
    }

    pub fn set_handler(&self, h: u8, f: HandlerFn) {
        self.with(|s| s.handlers.set(h, f))
    }

    pub fn set_handler_any(&self, f: HandlerFn) -> Result<u8> {
        self.with(|s| s.handlers.set_any(f))
    }

    pub fn set_segment(&self, seg: Option<Arc<dyn SegmentMemory>>) {
        self.with(|s| {
            s.segment = seg;
            s.seg_gen = s.seg_gen.wrapping_add(1);
            // an allocated segment replaced is freed (`xfer_shared.rs`)
            s.rma.own_segment.revoke();
        })
    }

    /// (base address, length) of the segment; (0, 0) when there is none.
    pub fn segment(&self) -> (usize, usize) {
        self.with(|s| s.segment.as_ref().map_or((0, 0), |m| (m.base(), m.len())))
    }

    /// Each rail's figures, rail 0 (the name) first.
    pub fn rail_statistics(&self) -> Vec<RailStatistics> {
        self.with(|s| {
            let [sent, received, down] = s.transports.rail_counts();
            let addrs = s.transports.rail_addrs();
            addrs
                .into_iter()
                .enumerate()
                .map(|(k, addr)| RailStatistics {
                    addr,
                    datagrams_sent: sent[k],
                    datagrams_received: received[k],
                    paths_down: down[k],
                })
                .collect()
        })
    }

    pub fn statistics(&self) -> Statistics {
        self.with(|s| {
            let mut st = s.stats;
            st.aggregate(s.proto.stats());
            st
        })
    }

    pub fn reset_statistics(&self) {
        self.with(|s| {
            s.stats = Statistics::initial();
            s.proto.reset_stats();
        })
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.with(|s| s.depth.is_some())
    }
}

/// One rail's figures (`Endpoint::rail_statistics`): its address, the
/// datagrams sent and received on it (a shared-memory ring's are no
/// rail's), and the news of broken paths it told (a send refused for its
/// path: no route, the interface down, a firewall).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RailStatistics {
    pub addr: std::net::SocketAddr,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub paths_down: u64,
}
