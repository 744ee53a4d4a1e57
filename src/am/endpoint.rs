//! An endpoint: its transport and protocol state, tables, segment, credits,
//! and the request/reply/dispatch paths of AM-2.
//!
//! Locking: the state sits in a re-entrant mutex around a RefCell. A thread
//! holds the mutex while it polls or sends; the RefCell is borrowed only for
//! short stretches and never while a handler runs, so a handler may call back
//! into the endpoint (reply, request, interrogate its token).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard};

use super::handler::{opcode, Data, HandlerArgs, HandlerFn, SegmentMemory};
use super::name::EndpointName;
use super::stats::Statistics;
use super::tables::{HandlerTable, TranslationTable};
use super::token::{self, LiveToken, TokenId, TokenInfo};
use super::{MAX_LONG, MAX_MEDIUM, MAX_NETWORK_DEPTH};
use crate::config::Config;
use crate::error::{Error, Result, ReturnStatus};
use crate::fxhash::FxHashMap;
use crate::net::{self, Transport};
use crate::proto::{Event, FailReason, Protocol};
use crate::rng::Rng;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST, MAX_ARGS};

/// Special tag values.
pub const TAG_NONE: u64 = 0;
pub const TAG_ALL: u64 = 1;

/// Handlers may poll from inside handlers; beyond this nesting, a nested poll
/// only moves packets and leaves messages queued.
const MAX_DISPATCH_NESTING: u32 = 8;

/// A request polls before sending, unless the endpoint was polled this
/// recently (in a poll loop the extra empty receive only adds latency).
const RECENT_POLL: u64 = 20 * crate::time::MICROS;

static NEXT_ENDPOINT_ID: AtomicU64 = AtomicU64::new(1);

struct Outstanding {
    index: u32,
    sent: Instant,
}

pub(crate) struct EpState {
    proto: Protocol<SocketAddr>,
    /// The buffer the protocol writes each datagram to send into.
    tx_buf: Vec<u8>,
    transport: Box<dyn Transport>,
    tag: u64,
    table: TranslationTable,
    handlers: HandlerTable,
    segment: Option<Arc<dyn SegmentMemory>>,
    /// Network depth once `set_expected_resources` ran.
    depth: Option<u32>,
    next_txn: u32,
    outstanding: FxHashMap<u32, Outstanding>,
    stats: Statistics,
    /// When the network was last moved (a request skips its poll right after one).
    last_pump: Instant,
    dispatch_nesting: u32,
    recv_depth_env: Option<usize>,
    verbose: bool,
}

pub struct Endpoint {
    pub id: u64,
    name: EndpointName,
    addr: SocketAddr,
    state: ReentrantMutex<RefCell<EpState>>,
    /// Id of the bundle holding this endpoint.
    pub(crate) bundle: Mutex<u64>,
}

type Guard<'a> = ReentrantMutexGuard<'a, RefCell<EpState>>;

/// A handler call prepared under the borrow, run after it is released.
struct Work {
    f: Option<HandlerFn>,
    info: TokenInfo,
    args: [u32; MAX_ARGS],
    nargs: usize,
    data: WorkData,
    auto_reply_to: Option<SocketAddr>,
}

enum WorkData {
    None,
    Medium(Vec<u8>),
    Long { addr: usize, len: usize },
    Returned { status: ReturnStatus, opcode: i32 },
}

/// Checks the argument limits of a message before anything changes.
pub fn check_message(cat: Category, nargs: usize, len: usize) -> Result<()> {
    if nargs > MAX_ARGS {
        return Err(Error::BadArg("more than 16 handler arguments"));
    }
    match cat {
        Category::Short if len != 0 => Err(Error::BadArg("short messages carry no payload")),
        Category::Medium if len > MAX_MEDIUM => {
            Err(Error::BadArg("medium payload larger than AM_MaxMedium()"))
        }
        Category::Long if len > MAX_LONG => {
            Err(Error::BadArg("long payload larger than AM_MaxLong()"))
        }
        _ => Ok(()),
    }
}

fn unique_id() -> u32 {
    let t = Instant::now().as_nanos()
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
    let mut r = Rng::new(
        t ^ ((std::process::id() as u64) << 32) ^ NEXT_ENDPOINT_ID.load(Ordering::Relaxed),
    );
    (r.next_u64() as u32) | 1
}

impl Endpoint {
    /// Opens an endpoint on the configured transport.
    pub fn open(cfg: &Config, bundle: u64) -> Result<Arc<Endpoint>> {
        let transport = net::open(cfg).map_err(|e| {
            eprintln!("ramp: cannot open an endpoint: {e}");
            Error::Resource("cannot open the endpoint's socket")
        })?;
        let addr = transport.local_addr();
        let proto = Protocol::new(cfg.proto.clone(), unique_id());
        let st = EpState {
            proto,
            tx_buf: Vec::new(),
            transport,
            tag: TAG_NONE,
            table: TranslationTable::default(),
            handlers: HandlerTable::default(),
            segment: None,
            depth: None,
            next_txn: 1,
            outstanding: FxHashMap::default(),
            stats: Statistics::initial(),
            last_pump: Instant::ZERO,
            dispatch_nesting: 0,
            recv_depth_env: cfg.recv_depth,
            verbose: cfg.verbose,
        };
        Ok(Arc::new(Endpoint {
            id: NEXT_ENDPOINT_ID.fetch_add(1, Ordering::Relaxed),
            name: EndpointName::from_addr(addr),
            addr,
            state: ReentrantMutex::new(RefCell::new(st)),
            bundle: Mutex::new(bundle),
        }))
    }

    pub fn name(&self) -> EndpointName {
        self.name
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn with<R>(&self, f: impl FnOnce(&mut EpState) -> R) -> R {
        let g = self.state.lock();
        let mut st = g.borrow_mut();
        f(&mut st)
    }

    pub fn tag(&self) -> u64 {
        self.with(|s| s.tag)
    }

    pub fn set_tag(&self, tag: u64) {
        self.with(|s| s.tag = tag)
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
            s.table.unmap(index)
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
                n.max(super::tables::INIT_TRANSLATIONS as i64)
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

    /// Fixes the table and sets the network depth (credits per peer).
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
        self.with(|s| s.segment = seg)
    }

    /// (base address, length) of the segment; (0, 0) when there is none.
    pub fn segment(&self) -> (usize, usize) {
        self.with(|s| s.segment.as_ref().map_or((0, 0), |m| (m.base(), m.len())))
    }

    pub fn statistics(&self) -> Statistics {
        self.with(|s| {
            let mut st = s.stats.clone();
            st.merge_proto(s.proto.stats());
            st
        })
    }

    pub fn reset_statistics(&self) {
        self.with(|s| {
            s.stats = Statistics::initial();
            s.proto.reset_stats();
        })
    }

    /// The descriptor that becomes readable when a datagram arrives.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.with(|s| s.transport.fd())
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.with(|s| s.depth.is_some())
    }

    /// Whether messages wait to be handled.
    pub(crate) fn has_events(&self) -> bool {
        self.with(|s| s.proto.has_events())
    }

    /// The next time the protocol or the transport needs a call.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.with(|s| {
            let a = s.proto.next_timeout();
            let b = s.transport.flush_due(Instant::now());
            match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            }
        })
    }

    /// Moves packets (receive, timers, transmit) without running handlers.
    pub(crate) fn progress(&self) -> Result<()> {
        self.with(|s| {
            if s.depth.is_some() {
                s.pump_network(Instant::now())
            } else {
                Ok(())
            }
        })
    }

    /// AM_Poll for this endpoint: moves packets, then runs handlers for up to
    /// max(10, depth) waiting messages.
    pub fn poll(self: &Arc<Self>) -> Result<()> {
        let g = self.state.lock();
        self.poll_locked(&g)
    }

    fn poll_locked(self: &Arc<Self>, g: &Guard<'_>) -> Result<()> {
        let now = Instant::now();
        let limit = {
            let mut st = g.borrow_mut();
            let Some(depth) = st.depth else {
                return Ok(());
            };
            st.pump_network(now)?;
            if st.dispatch_nesting >= MAX_DISPATCH_NESTING {
                return Ok(());
            }
            (depth as usize).max(10)
        };
        self.dispatch(g, limit, now)
    }

    fn dispatch(self: &Arc<Self>, g: &Guard<'_>, limit: usize, now: Instant) -> Result<()> {
        g.borrow_mut().dispatch_nesting += 1;
        for _ in 0..limit {
            let work = {
                let mut st = g.borrow_mut();
                let Some(ev) = st.proto.poll_event() else {
                    break;
                };
                st.prepare(self, ev, now)
            };
            if let Some(w) = work {
                self.run(g, w, now);
            }
        }
        let mut st = g.borrow_mut();
        st.dispatch_nesting -= 1;
        st.flush(now);
        Ok(())
    }

    /// Runs one handler with a live token; sends the automatic reply when a
    /// request handler did not reply.
    fn run(self: &Arc<Self>, g: &Guard<'_>, w: Work, now: Instant) {
        let Work {
            f,
            info,
            args,
            nargs,
            data,
            auto_reply_to,
        } = w;
        let txn = info.txn;
        let live = LiveToken::push(info);
        let id = live.id();
        let mut medium;
        let data = match data {
            WorkData::None => Data::None,
            WorkData::Medium(v) => {
                medium = v;
                Data::Medium(&mut medium[..])
            }
            WorkData::Long { addr, len } => Data::Long { addr, len },
            WorkData::Returned { status, opcode } => Data::Returned { status, opcode },
        };
        let mut ha = HandlerArgs {
            token: id,
            args: &args[..nargs],
            data,
        };
        match &f {
            Some(f) => f(&mut ha),
            None => default_returned_handler(&ha),
        }
        let replied = live.finish().is_some_and(|t| t.replied);
        if let Some(to) = auto_reply_to {
            if !replied {
                let mut st = g.borrow_mut();
                let meta = MsgMeta {
                    txn,
                    ..MsgMeta::new(MsgKind::AutoReply, Category::Short, 0, &[])
                };
                st.proto.send(now, to, CHANNEL_REPLY, meta, Vec::new());
                st.flush(now);
            }
        }
    }

    /// Sends a request to translation index `dest`. Polls first; waits (by
    /// polling) for a credit unless `nonblocking`, which returns `InUse`
    /// instead. Inside a handler it never waits: what cannot go out yet is
    /// queued. A request to this endpoint itself runs its handler now.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        self: &Arc<Self>,
        dest: u32,
        handler: u8,
        cat: Category,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
        nonblocking: bool,
    ) -> Result<()> {
        check_message(cat, args.len(), payload.len())?;
        let nested = token::in_handler();
        let mut first = true;
        let mut idle_rounds = 0u32;
        loop {
            {
                let g = self.state.lock();
                let addr = {
                    let st = g.borrow();
                    if st.depth.is_none() {
                        return Err(Error::NotInit(
                            "AM_SetExpectedResources has not been called",
                        ));
                    }
                    st.table
                        .mapped_entry(dest)
                        .ok_or(Error::BadArg("destination index is not mapped"))?
                        .addr
                };
                if addr == self.addr {
                    return self.deliver_loopback(
                        &g,
                        dest,
                        true,
                        handler,
                        cat,
                        args,
                        payload,
                        dest_offset,
                    );
                }
                let mut now = Instant::now();
                // AM-2: a request polls before it sends (the whole bundle),
                // unless this endpoint was polled a moment ago.
                if first && !nested && now.since(g.borrow().last_pump) >= RECENT_POLL {
                    drop(g);
                    self.poll_bundle()?;
                    first = false;
                    continue;
                }
                first = false;
                let mut st = g.borrow_mut();
                let depth = st.depth.unwrap_or(1);
                let e = st
                    .table
                    .get_mut(dest)
                    .ok_or(Error::BadArg("destination index is not mapped"))?;
                if e.outstanding < depth || nested {
                    e.outstanding += 1;
                    let tag = e.tag;
                    now = now.max(st.last_pump);
                    st.send_request(
                        now,
                        dest,
                        addr,
                        tag,
                        handler,
                        cat,
                        args,
                        payload,
                        dest_offset,
                    );
                    return Ok(());
                }
            }
            if nonblocking {
                return Err(Error::InUse("no send credit free for this destination"));
            }
            // Wait for a credit by polling the whole bundle: the answer may
            // depend on another endpoint of it. The endpoint's lock is not
            // held meanwhile, so other threads (AM_PAR) may use it.
            self.poll_bundle()?;
            idle_rounds += 1;
            if idle_rounds > 1000 {
                if let Some(b) = self.owning_bundle() {
                    b.wait_for_activity(10);
                }
            }
        }
    }

    fn owning_bundle(&self) -> Option<Arc<super::Bundle>> {
        super::bundle(*self.bundle.lock())
    }

    /// AM_Poll of the bundle this endpoint belongs to.
    fn poll_bundle(self: &Arc<Self>) -> Result<()> {
        match self.owning_bundle() {
            Some(b) => b.poll(),
            None => self.poll(),
        }
    }

    /// Delivers a message from this endpoint to itself, synchronously.
    #[allow(clippy::too_many_arguments)]
    fn deliver_loopback(
        self: &Arc<Self>,
        g: &Guard<'_>,
        index: u32,
        is_request: bool,
        handler: u8,
        cat: Category,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
    ) -> Result<()> {
        let work = {
            let mut st = g.borrow_mut();
            let entry_tag = st.table.mapped_entry(index).map_or(TAG_NONE, |e| e.tag);
            let mut data = WorkData::None;
            if cat == Category::Long {
                let seg = st.segment.clone().ok_or(Error::BadArg(
                    "loopback transfer: the endpoint has no segment",
                ))?;
                let end = dest_offset.checked_add(payload.len() as u64);
                if end.is_none_or(|e| e > seg.len() as u64) {
                    return Err(Error::BadArg(
                        "loopback transfer past the end of the segment",
                    ));
                }
                seg.write(dest_offset as usize, payload);
                data = WorkData::Long {
                    addr: seg.base() + dest_offset as usize,
                    len: payload.len(),
                };
            } else if cat == Category::Medium {
                data = WorkData::Medium(payload.to_vec());
            }
            let c = cat.index();
            if is_request {
                st.stats.requests_sent[c] += 1;
                st.stats.requests_received[c] += 1;
                st.stats.request_data_bytes_sent[c] += payload.len() as u64;
            } else {
                st.stats.replies_sent[c] += 1;
                st.stats.replies_received[c] += 1;
                st.stats.reply_data_bytes_sent[c] += payload.len() as u64;
            }
            let refusal = if !tag_accepts(st.tag, entry_tag) {
                Some(ReturnStatus::BadTag)
            } else if handler == 0 || st.handlers.get(handler).is_none() {
                Some(ReturnStatus::BadHandler)
            } else {
                None
            };
            let mut info = TokenInfo {
                id: 0,
                endpoint: self.clone(),
                source_addr: self.addr,
                source_id: index as i32,
                tag: entry_tag,
                handler,
                category: cat,
                nargs: args.len() as u8,
                is_request,
                returned: false,
                loopback: true,
                txn: 0,
                replied: false,
            };
            let mut a = [0u32; MAX_ARGS];
            a[..args.len()].copy_from_slice(args);
            match refusal {
                None => Work {
                    f: st.handlers.get(handler).cloned(),
                    info,
                    args: a,
                    nargs: args.len(),
                    data,
                    auto_reply_to: None,
                },
                Some(status) => {
                    st.stats.returned_messages += 1;
                    info.returned = true;
                    Work {
                        f: st.handlers.get(0).cloned(),
                        info,
                        args: a,
                        nargs: args.len(),
                        data: WorkData::Returned {
                            status,
                            opcode: opcode(cat, is_request),
                        },
                        auto_reply_to: None,
                    }
                }
            }
        };
        self.run(g, work, Instant::now());
        Ok(())
    }
}

/// Sends the reply for the request whose handler holds `token`.
pub fn reply(
    token: TokenId,
    handler: u8,
    cat: Category,
    args: &[u32],
    payload: &[u8],
    dest_offset: u64,
) -> Result<()> {
    check_message(cat, args.len(), payload.len())?;
    // The usual reply goes out while the token is at hand (no copy of its
    // endpoint handle); one to this endpoint itself runs its handler, which
    // needs the token list, so it goes out after.
    let loopback = token::with_mut(token, |t| {
        if t.returned {
            return Err(Error::Resource("a returned message cannot be replied to"));
        }
        if !t.is_request {
            return Err(Error::Resource("only request handlers may reply"));
        }
        if t.replied {
            return Err(Error::Resource("this request was already replied to"));
        }
        t.replied = true;
        if t.loopback {
            return Ok(Some((t.endpoint.clone(), t.source_id)));
        }
        let g = t.endpoint.state.lock();
        let mut st = g.borrow_mut();
        let tag = st
            .table
            .mapped_entry(t.source_id.max(0) as u32)
            .map_or(TAG_NONE, |e| e.tag);
        let mut meta = MsgMeta::new(MsgKind::User, cat, handler, args);
        meta.txn = t.txn;
        meta.tag = tag;
        meta.dest_offset = dest_offset;
        let now = Instant::now();
        st.proto
            .send(now, t.source_addr, CHANNEL_REPLY, meta, payload.to_vec());
        st.flush(now);
        let c = cat.index();
        st.stats.replies_sent[c] += 1;
        st.stats.reply_data_bytes_sent[c] += payload.len() as u64;
        Ok(None)
    })
    .ok_or(Error::BadArg("not the token of a running handler"))??;
    match loopback {
        None => Ok(()),
        Some((ep, source_id)) => {
            let g = ep.state.lock();
            ep.deliver_loopback(
                &g,
                source_id as u32,
                false,
                handler,
                cat,
                args,
                payload,
                dest_offset,
            )
        }
    }
}

fn tag_accepts(own: u64, msg: u64) -> bool {
    match own {
        TAG_NONE => false,
        TAG_ALL => true,
        t => t == msg,
    }
}

/// AM-2's default handler 0: report the returned message and abort.
fn default_returned_handler(ha: &HandlerArgs<'_>) {
    let (status, op) = match ha.data {
        Data::Returned { status, opcode } => (status.name(), opcode),
        _ => ("?", 0),
    };
    let detail = token::with(ha.token, |t| {
        format!(
            "to {} handler {} tag {:#x} args {:?}",
            t.source(),
            t.handler,
            t.tag,
            ha.args
        )
    });
    eprintln!(
        "*** FATAL ERROR (ramp): a message was returned with {status} (opcode {op}) {} and no handler 0 is installed (AM_SetHandler(ep, 0, fn) installs one)",
        detail.unwrap_or_default()
    );
    std::process::abort();
}

impl EpState {
    /// Receives every waiting datagram, runs due timers, transmits.
    fn pump_network(&mut self, now: Instant) -> Result<()> {
        let proto = &mut self.proto;
        for _ in 0..64 {
            let r = self.transport.recv_batch(&mut |d| match d {
                Some((bytes, from)) => proto.handle_datagram(now, from, bytes),
                None => proto.count_malformed(),
            });
            match r {
                // One datagram (or none): a ping-pong, not a burst; asking
                // again would put an empty receive on the critical path.
                Ok(n) if n < 2 => break,
                Ok(_) => {}
                Err(e) => {
                    if self.verbose {
                        eprintln!("ramp: receive failed: {e}");
                    }
                    return Err(Error::Resource("the endpoint's socket failed"));
                }
            }
        }
        self.last_pump = now;
        self.transport.flush_due(now);
        self.proto.handle_timeout(now);
        self.flush(now);
        Ok(())
    }

    /// Hands every datagram the protocol produced to the transport.
    #[inline]
    fn flush(&mut self, now: Instant) {
        if self.proto.has_transmits() {
            self.transmit(now);
        }
    }

    fn transmit(&mut self, now: Instant) {
        while let Some(to) = self.proto.poll_transmit(&mut self.tx_buf) {
            if let Err(e) = self.transport.send(now, to, &self.tx_buf) {
                // The datagram is lost; the protocol's timers resend it.
                if self.verbose {
                    eprintln!("ramp: send to {to} failed: {e}");
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn send_request(
        &mut self,
        now: Instant,
        dest: u32,
        addr: SocketAddr,
        tag: u64,
        handler: u8,
        cat: Category,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
    ) {
        let txn = self.next_txn;
        self.next_txn = self.next_txn.wrapping_add(1).max(1);
        let mut meta = MsgMeta::new(MsgKind::User, cat, handler, args);
        meta.txn = txn;
        meta.tag = tag;
        meta.dest_offset = dest_offset;
        self.proto
            .send(now, addr, CHANNEL_REQUEST, meta, payload.to_vec());
        self.flush(now);
        // The bookkeeping waits until the datagram is out (off the round
        // trip's critical path): the reply is taken by a poll, which needs
        // this endpoint's lock, held until this returns.
        self.outstanding.insert(
            txn,
            Outstanding {
                index: dest,
                sent: now,
            },
        );
        let c = cat.index();
        self.stats.requests_sent[c] += 1;
        self.stats.request_data_bytes_sent[c] += payload.len() as u64;
    }

    /// A request's reply (or its refusal) came: its credit is free again.
    fn complete(&mut self, txn: u32, cat: Category, now: Instant) {
        match self.outstanding.remove(&txn) {
            Some(o) => {
                if let Some(e) = self.table.get_mut(o.index) {
                    e.outstanding = e.outstanding.saturating_sub(1);
                }
                let lat = now.since(o.sent);
                self.stats.record_latency(lat);
            }
            None => self.stats.replies_squashed[cat.index()] += 1,
        }
    }

    fn send_returned(
        &mut self,
        now: Instant,
        to: SocketAddr,
        mut meta: MsgMeta,
        status: ReturnStatus,
        was_request: bool,
    ) {
        meta.kind = MsgKind::Returned;
        meta.status = status as u8;
        meta.returned_request = was_request;

        self.proto.send(now, to, CHANNEL_REPLY, meta, Vec::new());
        self.flush(now);
    }

    /// Why an arriving user message must be refused, if it must.
    /// `source` is the sender's index in the translation table.
    fn refusal(
        &self,
        source: Option<u32>,
        meta: &MsgMeta,
        len: usize,
        is_request: bool,
    ) -> Option<ReturnStatus> {
        if is_request && source.is_none() {
            return Some(ReturnStatus::BadEndpoint);
        }
        if !tag_accepts(self.tag, meta.tag) {
            return Some(ReturnStatus::BadTag);
        }
        if meta.handler == 0 || self.handlers.get(meta.handler).is_none() {
            return Some(ReturnStatus::BadHandler);
        }
        match meta.category {
            Category::Short if len != 0 => Some(ReturnStatus::BadLength),
            Category::Medium if len > MAX_MEDIUM => Some(ReturnStatus::BadLength),
            Category::Long => match &self.segment {
                None => Some(ReturnStatus::BadSegOff),
                Some(s) if s.is_empty() || s.base() == 0 => Some(ReturnStatus::BadSegOff),
                Some(s) => {
                    let end = meta.dest_offset.checked_add(len as u64);
                    if len > MAX_LONG || end.is_none_or(|e| e > s.len() as u64) {
                        Some(ReturnStatus::BadLength)
                    } else {
                        None
                    }
                }
            },
            _ => None,
        }
    }

    /// Turns one protocol event into the handler call it asks for, after
    /// the checks; refusals are sent back here.
    fn prepare(&mut self, ep: &Arc<Endpoint>, ev: Event<SocketAddr>, now: Instant) -> Option<Work> {
        match ev {
            Event::Delivered {
                from,
                channel,
                meta,
                payload,
            } => {
                let is_request = channel == CHANNEL_REQUEST;
                let c = meta.category.index();
                if !is_request {
                    match meta.kind {
                        MsgKind::AutoReply => {
                            self.complete(meta.txn, meta.category, now);
                            return None;
                        }
                        MsgKind::Returned => {
                            if meta.returned_request {
                                self.complete(meta.txn, meta.category, now);
                            }
                            let status =
                                ReturnStatus::from_u8(meta.status).unwrap_or(ReturnStatus::BadArgs);
                            return Some(self.returned_work(
                                ep,
                                from,
                                &meta,
                                status,
                                meta.returned_request,
                            ));
                        }
                        MsgKind::User => {
                            self.stats.replies_received[c] += 1;
                            self.complete(meta.txn, meta.category, now);
                        }
                    }
                } else {
                    if meta.kind != MsgKind::User {
                        // Only user messages travel on the request channel.
                        self.stats.corrupt_dropped += 1;
                        return None;
                    }
                    self.stats.requests_received[c] += 1;
                }
                let source = self.table.index_of(&from);
                if let Some(status) = self.refusal(source, &meta, payload.len(), is_request) {
                    self.send_returned(now, from, meta, status, is_request);
                    return None;
                }
                let data = match meta.category {
                    Category::Short => WorkData::None,
                    Category::Medium => WorkData::Medium(payload),
                    Category::Long => {
                        let seg = self.segment.as_ref().unwrap();
                        seg.write(meta.dest_offset as usize, &payload);
                        WorkData::Long {
                            addr: seg.base() + meta.dest_offset as usize,
                            len: payload.len(),
                        }
                    }
                };
                let source_id = source.map_or(-1, |i| i as i32);
                Some(Work {
                    f: self.handlers.get(meta.handler).cloned(),
                    info: TokenInfo {
                        id: 0,
                        endpoint: ep.clone(),
                        source_addr: from,
                        source_id,
                        tag: meta.tag,
                        handler: meta.handler,
                        category: meta.category,
                        nargs: meta.nargs,
                        is_request,
                        returned: false,
                        loopback: false,
                        txn: meta.txn,
                        replied: false,
                    },
                    args: meta.args,
                    nargs: meta.nargs as usize,
                    data,
                    auto_reply_to: if is_request { Some(from) } else { None },
                })
            }
            Event::Failed {
                to,
                channel,
                meta,
                reason,
                ..
            } => {
                let status = returned_status(reason);
                let is_request = channel == CHANNEL_REQUEST;
                if is_request {
                    self.complete(meta.txn, meta.category, now);
                } else if meta.kind != MsgKind::User {
                    // An automatic reply or a returned message could not be
                    // delivered: the peer is gone; nothing waits for it here.
                    self.stats.returned_messages += 1;
                    if self.verbose {
                        eprintln!(
                            "ramp: a {:?} message to {to} was given up ({})",
                            meta.kind,
                            status.name()
                        );
                    }
                    return None;
                }
                Some(self.returned_work(ep, to, &meta, status, is_request))
            }
        }
    }

    fn returned_work(
        &mut self,
        ep: &Arc<Endpoint>,
        peer: SocketAddr,
        meta: &MsgMeta,
        status: ReturnStatus,
        is_request: bool,
    ) -> Work {
        self.stats.returned_messages += 1;
        Work {
            f: self.handlers.get(0).cloned(),
            info: TokenInfo {
                id: 0,
                endpoint: ep.clone(),
                source_addr: peer,
                source_id: self.table.index_of(&peer).map_or(-1, |i| i as i32),
                tag: meta.tag,
                handler: meta.handler,
                category: meta.category,
                nargs: meta.nargs,
                is_request,
                returned: true,
                loopback: false,
                txn: meta.txn,
                replied: false,
            },
            args: meta.args,
            nargs: meta.nargs as usize,
            data: WorkData::Returned {
                status,
                opcode: opcode(meta.category, is_request),
            },
            auto_reply_to: None,
        }
    }
}

/// The status a message given up by the protocol is returned with.
fn returned_status(reason: FailReason) -> ReturnStatus {
    match reason {
        FailReason::PeerUnreachable => ReturnStatus::Unreachable,
        FailReason::Refused => ReturnStatus::Congestion,
        FailReason::TooLong => ReturnStatus::BadLength,
    }
}
