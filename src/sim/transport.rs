//! `SimTransport`, the `Transport` an endpoint of the world sends and
//! receives through: what it sends goes into the world's network
//! (`network.rs`), what it takes comes from its inbox there.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::{Arc, Weak};

use super::state::{Shared, State};
use crate::net::{DatagramSink, PathNews, Transport, RECV_BATCH};
use crate::time::Instant;

/// An endpoint's transport on the simulated network: what it sends goes
/// through the world's faults; what it receives waits in its inbox.
pub struct SimTransport {
    pub(crate) world: Weak<Shared>,
    pub(crate) local: SocketAddr,
    pub(crate) id: u64,
    /// The node it belongs to (its datagrams count as the node's work).
    pub(crate) node: usize,
    /// Sends refused since the last `path_news` (its interface down):
    /// the paths to tell broken (ENETDOWN), each once.
    pub(crate) refused: Vec<SocketAddr>,
}

impl Transport for SimTransport {
    fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        if let Some(w) = self.world.upgrade() {
            let mut st = w.state();
            // a killed process sends nothing
            if st.net.is_down(self.local.ip()) {
                // (as a socket on a link that is down: the path's news)
                if !self.refused.contains(&to) {
                    self.refused.push(to);
                }
            } else if st.net.owns(self.local, self.id) {
                st.net.transmit(now, self.local, to, dgram);
                st.active(self.node);
            }
        }
        Ok(())
    }

    fn path_news(&mut self, each: &mut dyn FnMut(PathNews)) {
        for to in self.refused.drain(..) {
            each(PathNews::Down {
                path: to.into(), // (from rail 0: `Transports` puts in its rail)
                errno: libc::ENETDOWN,
            });
        }
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        let Some(w) = self.world.upgrade() else {
            return Ok(0);
        };
        // taken out first: the world's lock is not held while the
        // endpoint handles them
        let got = {
            let mut st = w.state();
            let got = st.net.take(self.local, self.id, RECV_BATCH);
            if !got.is_empty() {
                st.active(self.node);
            }
            got
        };
        for (from, d) in &got {
            each(Some((d, *from)));
        }
        Ok(got.len())
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn fd(&self) -> RawFd {
        -1
    }

    fn readable(&self) -> bool {
        self.world.upgrade().is_some_and(|w| {
            let st = w.state();
            st.net.owns(self.local, self.id) && st.net.waiting(self.local)
        })
    }
}

/// A transport of node `index` bound at `addr` in the world's network.
pub(super) fn bind_transport(
    w: &Arc<Shared>,
    st: &mut State,
    index: usize,
    addr: SocketAddr,
) -> std::io::Result<SimTransport> {
    let owner = st.next_owner;
    st.net.bind(addr, owner)?;
    st.next_owner += 1;
    st.nodes[index].addrs.push((addr, owner));
    Ok(SimTransport {
        world: Arc::downgrade(w),
        local: addr,
        id: owner,
        node: index,
        refused: Vec::new(),
    })
}
