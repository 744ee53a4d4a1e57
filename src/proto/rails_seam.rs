//! STAND-INS, for the transport side of rails (issue 38, branch h-rnet) to
//! build before the protocol side (h-rproto: paths per association, the
//! handshake listing addresses, heartbeats, failover) is merged. Each is
//! the thinnest thing with the signature the AM layer calls; at the merge
//! this file goes and the real ones take their place (where h-rproto's
//! `handle_datagram_placing` and `path_datagram` take a `Path`, the two
//! `_on` calls in `am/messages/driver.rs` become those).

use super::{PeerAddr, Placement, Protocol};
use crate::path::{Path, Rail};
use crate::time::Instant;

impl<A: PeerAddr> Protocol<A> {
    /// Stand-in: the endpoint's rails' addresses, rail 0's (the name)
    /// first, told at open and after a transaction log's restart. Not
    /// kept: today's protocol has one path per peer.
    pub fn set_local_rails(&mut self, rails: &[A]) {
        let _ = rails;
    }

    /// Stand-in for `handle_datagram_placing` of a datagram that came in
    /// on `path` (its source, our rail): today's protocol knows the
    /// source alone.
    #[inline]
    pub fn handle_datagram_on(
        &mut self,
        now: Instant,
        path: Path<A>,
        dgram: &[u8],
        place: &mut dyn Placement<A>,
    ) {
        self.handle_datagram_placing(now, path.remote, dgram, place)
    }

    /// Stand-in for `path_datagram` of a `Path`: today's protocol keeps
    /// one size per peer, its path from rail 0.
    pub fn path_datagram_on(&mut self, path: Path<A>, size: usize) {
        if path.rail == Rail::NAME {
            self.path_datagram(path.remote, size);
        }
    }

    /// Stand-in: a send on `path` failed with a path error (no route, the
    /// interface down, a firewall). Ignored: today's protocol notices a
    /// broken path by its timers (the datagram is lost).
    pub fn path_down(&mut self, now: Instant, path: Path<A>) {
        let _ = (now, path);
    }
}
