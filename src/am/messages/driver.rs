//! The I/O driver: moves datagrams between the transports and the protocol
//! (receive, timers, transmit) and hands the protocol what to send. With
//! `dispatch.rs`, the only place that calls the protocol's I/O side.

use std::net::SocketAddr;
use std::os::fd::RawFd;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::error::{Error, Result};
use crate::time::Instant;
use crate::wire::MsgMeta;

impl Endpoint {
    /// The descriptors that become readable when a datagram arrives.
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        self.with(|s| {
            // (what woke it is read by the next poll, a full one)
            s.express.full_by = Instant::ZERO;
            s.transports.fds().collect()
        })
    }

    /// Whether messages wait to be handled.
    pub(crate) fn has_events(&self) -> bool {
        self.with(|s| s.has_pending())
    }

    /// Before a sleep in the kernel: sends the requests held for a batch
    /// (`batch.rs`), and tells the next time the protocol or a transport
    /// needs a call.
    pub(crate) fn before_sleep(&self) -> Option<Instant> {
        self.with(|s| {
            let now = s.clock.now();
            s.send_all_held(now);
            let a = s.proto.next_timeout();
            let b = s.transports.flush_due(now);
            [a, b, s.txn.due].into_iter().flatten().min()
        })
    }

    /// The next time this endpoint needs a call, asked without doing
    /// anything (the simulator's question): the protocol's timers, a held
    /// last fragment's expiry, held requests (at once), kept transactions'
    /// probes, the transports' next look at what waits for them
    /// (`Transports::next_look`).
    #[cfg(feature = "testing")]
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.try_with(|s| {
            let held = s.batch.to.map(|_| {
                if s.batch.tail {
                    s.batch.since.plus(super::batch::TAIL_HOLD)
                } else {
                    s.batch.since
                }
            });
            let look = s.transports.next_look(s.clock.now());
            [s.proto.next_timeout(), held, s.txn.due, look]
                .into_iter()
                .flatten()
                .min()
        })
        .flatten()
    }

    /// Whether a receive now would find a datagram (the simulator's
    /// question: which endpoints have work).
    #[cfg(feature = "testing")]
    pub(crate) fn readable(&self) -> bool {
        self.try_with(|s| s.transports.readable(s.clock.now()))
            .unwrap_or(false)
    }

    /// Moves packets (receive, timers, transmit) without running handlers.
    pub(crate) fn progress(&self) -> Result<()> {
        self.with(|s| {
            if s.depth.is_some() {
                s.pump_network(s.clock.now())
            } else {
                Ok(())
            }
        })
    }
}

impl EpState {
    /// Receives every waiting datagram, runs due timers, transmits.
    pub(in crate::am) fn pump_network(&mut self, now: Instant) -> Result<()> {
        // requests held for a batch leave first, before their timers are
        // looked at (a request held while the program computed must not
        // be sent twice)
        self.send_held(now);
        let (proto, incoming, outstanding, express, counts) = (
            &mut self.proto,
            &mut self.incoming,
            &mut self.outstanding,
            &mut self.express,
            &mut self.stats,
        );
        // long messages' bytes go straight into the segment (`placement.rs`)
        let mut placer = super::placement::Placer {
            // (field by field, not `admit_parts()`: the protocol is borrowed)
            parts: super::returned::AdmitParts {
                tag: self.tag,
                handlers: &self.handlers,
                segment: &self.segment,
            },
            table: &self.table,
            gen: self.seg_gen,
            quiet: self.dispatch_nesting == 0 && incoming.is_quiet(),
        };
        // A long message placed whole waits for its handler: the datagrams
        // after it in the batch wait for the next pump, after the dispatch
        // (`placed_ahead`), and are placed in their turn, not gathered
        // into a buffer and copied again (one copy a byte, as AMUDP's
        // recvfrom, memcpy, handler).
        let mut paused = false;
        for _ in 0..64 {
            let r = self.transports.recv_batch_until(now, &mut |d, proven| {
                let before = proto.events().len();
                match d {
                    // (only a ring brings one: `Transports` drops the others)
                    Some((bytes, path)) if crate::net::express::is_express(bytes) => {
                        placer.quiet = false;
                        express.arrived(proto, incoming, outstanding, counts, path.remote, bytes)
                    }
                    // a ring whose sender proved our job: no trailer to check
                    Some((bytes, path)) if proven => {
                        proto.handle_ring_datagram(now, path.remote, bytes, &mut placer)
                    }
                    // the path it came on: its source and our rail
                    Some((bytes, path)) => {
                        proto.handle_datagram_placing(now, path, bytes, &mut placer)
                    }
                    None => proto.count_malformed(),
                }
                paused |= placed_ahead(proto, before);
                paused
            });
            match r {
                // One datagram (or none): a ping-pong, not a burst; asking
                // again would put an empty receive on the critical path.
                Ok(n) if n < 2 || paused => break,
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
        self.express.fast_streak = 0;
        self.express.quick_polls = 0;
        self.express.full_at = now;
        self.transports.flush_due(now);
        // paths found to carry smaller datagrams (UDP: EMSGSIZE), or
        // broken (a send's path error: never the endpoint's)
        let proto = &mut self.proto;
        self.transports.path_news(&mut |n| match n {
            crate::net::PathNews::Datagram { path, size } => proto.path_datagram(path, size),
            crate::net::PathNews::Down { path, .. } => proto.path_down(now, path),
        });
        // refused express requests, lost rings' express requests
        self.express_after_receive(now);
        // peers' asks for our allocated regions, their files for ours
        self.serve_regions(now);
        self.proto.handle_timeout(now);
        // paths failed, back, partitioned (`RAMP_VERBOSE`)
        self.tell_path_news();
        self.announce_aliases(now);
        // remote memory is performed now, AM messages queued in order
        self.drain_events(now);
        // kept transactions: probes, bounds, resumes (`txn.rs`)
        if self.txn.due.is_some_and(|d| now >= d) {
            self.txn_refresh(now);
        }
        self.flush(now);
        // the fast poll's empty looks skip the next full poll until then
        self.express.full_by = self.transports.quiet_until(now);
        Ok(())
    }

    /// Without a packet MAC, the ports of our connected sockets are
    /// announced to their peers from our name, and used once taken
    /// (`proto/alias.rs`, `net/udp_conns.rs`).
    fn announce_aliases(&mut self, now: Instant) {
        while let Some((to, port, tag)) = self.proto.take_accepted_alias() {
            self.transports.alias_accepted(to, port, tag);
        }
        let proto = &mut self.proto;
        self.transports.aliases_to_announce(now, &mut |to, port| {
            proto.announce_alias(&to, port);
        });
    }

    /// Gives the protocol a message for `to` on `channel` and transmits,
    /// at once, or, from a handler, when the dispatch that runs it ends:
    /// the replies of a whole batch of requests leave together (one
    /// `sendmmsg`), each carrying the ACKs of what came before it.
    pub(in crate::am) fn send_message(
        &mut self,
        now: Instant,
        to: SocketAddr,
        channel: u8,
        meta: MsgMeta,
        payload: impl Into<crate::proto::Payload>,
    ) {
        // only a long request's last fragment waits for the next one:
        // a held one leaves with this (`batch.rs`)
        self.tail_due();
        // through a ring whose receiver proved our job: no trailer to make
        // (`Protocol::set_same_host`; dropped rings: `express_after_receive`)
        if self.transports.has_shared_memory() {
            let proven = self.transports.express_open(to);
            self.proto.set_same_host(to, proven);
        }
        self.proto.send(now, to, channel, meta, payload);
        if self.dispatch_nesting == 0 {
            self.flush(now);
        }
    }

    /// Hands every datagram the protocol produced to the transports.
    #[inline]
    pub(in crate::am) fn flush(&mut self, now: Instant) {
        if self.proto.has_transmits() {
            self.transmit(now);
        }
    }

    fn transmit(&mut self, now: Instant) {
        if self.batch.to.is_some() {
            // (`batch.rs`)
            return self.drain_holding(now);
        }
        self.drain_transmits(now);
    }

    /// Everything the protocol queued, to the transports.
    #[inline]
    pub(in crate::am) fn drain_transmits(&mut self, now: Instant) {
        let (transports, verbose) = (&mut self.transports, self.verbose);
        self.proto
            .drain_transmits::<{ crate::net::SEND_BATCH }>(|batch| {
                send_batch(transports, verbose, now, batch)
            });
    }

    /// The same, but the last datagram stays when it is a bundle of small
    /// packets to `keep` (`batch.rs`); true when it stayed.
    pub(in crate::am) fn drain_transmits_keeping(
        &mut self,
        now: Instant,
        keep: SocketAddr,
    ) -> bool {
        let (transports, verbose) = (&mut self.transports, self.verbose);
        self.proto
            .drain_transmits_keeping::<{ crate::net::SEND_BATCH }>(keep, |batch| {
                send_batch(transports, verbose, now, batch)
            })
    }
}

#[inline]
fn send_batch(
    transports: &mut crate::net::Transports,
    verbose: bool,
    now: Instant,
    batch: &[crate::net::Outgoing<'_>],
) {
    if let Err(e) = transports.send_batch(now, batch) {
        // The rest of the batch is lost; the protocol's timers resend it.
        if verbose {
            eprintln!("ramp: send to {} failed: {e}", batch[0].0);
        }
    }
}

/// Whether the datagram just handled completed a long message placed in
/// the segment (`placement.rs`): its event is the last, queued by it (the
/// queue was `before` long). Another placed behind it before its handler
/// runs would overwrite what the handler is to see; so the receive stops
/// there, and the rest of its batch waits for the next pump.
#[inline]
fn placed_ahead(proto: &crate::proto::Protocol<SocketAddr>, before: usize) -> bool {
    let events = proto.events();
    events.len() > before
        && matches!(
            events.back(),
            Some(crate::proto::Event::Delivered { meta, .. }) if meta.placed.is_some()
        )
}

impl Endpoint {
    /// Checks what must hold of the endpoint between calls, its protocol's
    /// state included (`Protocol::check_invariants`); panics naming the
    /// first that fails. The simulator runs it after every node's turn.
    #[cfg(feature = "testing")]
    pub(crate) fn check_invariants(&self) {
        self.try_with(|s| {
            s.proto.check_invariants();
            // a translation entry's credits lent are its requests waiting
            // for their answers
            let mut lent: crate::fxhash::FxHashMap<u32, u32> = Default::default();
            for o in s.outstanding.values() {
                *lent.entry(o.index).or_default() += 1;
            }
            for k in 0..s.table.len() as u32 {
                let have = s.table.mapped_entry(k).map_or(0, |e| e.outstanding);
                let waiting = lent.get(&k).copied().unwrap_or(0);
                assert_eq!(
                    have,
                    waiting,
                    "endpoint {}: translation {k} lent {have} credits, {waiting} requests wait",
                    self.addr()
                );
            }
        });
    }
}
