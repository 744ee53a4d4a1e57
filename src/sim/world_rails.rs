//! Nodes of a `World` with several addresses (rails, issue 38): rail 0 at
//! the node's host address, rail k at the host's rail-k address
//! (`rail_ip`), the same port; every rail its own network (a rail's
//! address reaches only the same rail's), as two subnets on two links.
//! A rail's link can be cut silently between two nodes (`set_rail_cut`:
//! everything lost, no error) or its interface set down at a node
//! (`set_rail_down`: its sends fail with ENETDOWN, the path's news, and
//! nothing reaches it), as `scripts/netns.sh rail K down` does.

use std::net::IpAddr;

use super::hosts::rail_ip;
use super::world::{Node, World};
use crate::config::Config;

impl World {
    /// A new node as `node`'s, whose endpoints have `rails` rails (at
    /// least 1; `Transports::add_rail` refuses more than `MAX_RAILS`):
    /// they list the others in their handshakes, and the protocol
    /// confirms a path from each rail to the peer's same rail.
    pub fn node_with_rails(&self, cfg: &Config, rails: usize) -> Node {
        assert!(rails >= 1, "at least one rail");
        self.node_on(cfg, None, rails)
    }

    /// Node `i`'s rail-`k` address (its host's: every endpoint of it has
    /// a port there).
    pub fn rail_ip(&self, i: usize, k: usize) -> IpAddr {
        rail_ip(self.shared.state().nodes[i].host, k).into()
    }

    /// Cuts rail `k`'s link between nodes `a` and `b` (both ways, without
    /// a word), or mends it.
    pub fn set_rail_cut(&self, a: usize, b: usize, k: usize, cut: bool) {
        let (x, y) = (self.rail_ip(a, k), self.rail_ip(b, k));
        self.shared.state().net.set_cut(x, y, cut);
    }

    /// Sets node `i`'s rail-`k` interface down (or up): its sends on that
    /// rail fail (ENETDOWN: `PathNews::Down`, the path fails at once),
    /// nothing reaches its address there.
    pub fn set_rail_down(&self, i: usize, k: usize, down: bool) {
        let ip = self.rail_ip(i, k);
        self.shared.state().net.set_down(ip, down);
    }
}
