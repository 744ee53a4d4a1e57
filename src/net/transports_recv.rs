//! Receiving (`Transports`): every transport drained, each datagram told
//! with its path; a UDP transport's batch may be stopped by the sink and
//! kept for the next receive (`Transport::recv_holding`, `udp_hold.rs`).

use std::io;
use std::net::SocketAddr;

#[cfg(test)]
use super::RailSink;
use super::{fallback_from, on_name, rail_due, Near, Transports};
use crate::net::express;
use crate::path::{Path, Rail};
use crate::time::Instant;

/// `RailSink` that may stop a UDP transport's batch: each datagram also
/// told whether it may; it returns where it stopped (`HoldingSink`).
pub type HoldingRailSink<'a> =
    dyn FnMut(Option<(&[u8], Path<SocketAddr>)>, bool, bool) -> Option<usize> + 'a;

impl Transports {
    /// Whether a transport holds datagrams a sink stopped at
    /// (`Transport::holds`): the next receive takes them without a
    /// system call; the endpoint must not sleep before it.
    pub fn holds(&self) -> bool {
        self.fallback.holds() || self.rails.iter().any(|t| t.holds())
    }

    /// Receives what waits on every transport (see `Transport::recv_batch`);
    /// returns how many datagrams there were in all. `now`: the caller's
    /// time of this pump (no clock read here).
    /// Each datagram is told with its path (its source, the rail it came
    /// in on; a ring's: rail 0) and whether it came through a ring whose
    /// sender proved our job (`RailSink`). The further rails are read
    /// when rail 0 is (its gap while rings carry the traffic is theirs);
    /// a further rail's receive that fails is that rail's trouble, not
    /// the endpoint's: it counts as finding nothing.
    #[cfg(test)]
    pub fn recv_batch(&mut self, now: Instant, each: &mut RailSink<'_>) -> io::Result<usize> {
        self.recv_holding(now, &mut |d, proven, _| {
            each(d, proven);
            None
        })
    }

    /// `recv_batch`, whose `each` may stop a UDP transport's batch where
    /// it is told it may (`Transport::recv_holding`; never a ring's): a
    /// transport that holds what it left is read at the next receive,
    /// gap or not (`holds`).
    #[inline]
    pub fn recv_holding(
        &mut self,
        now: Instant,
        each: &mut HoldingRailSink<'_>,
    ) -> io::Result<usize> {
        let (n, udp) = self.recv_name(now, each)?;
        if self.rails.is_empty() || !(udp || self.rails.iter().any(|t| t.holds())) {
            return Ok(n);
        }
        let mut got = 0;
        let woke = self.rails_woke.replace(false);
        for (k, t) in self.rails.iter_mut().enumerate() {
            let rail = Rail(k as u8 + 1);
            let (polled, seen) = (self.rail_polled[k + 1], self.rail_seen[k + 1]);
            if !woke && !rail_due(polled, seen, now) && !t.holds() {
                continue;
            }
            self.rail_polled[k + 1] = now;
            // only a ring may carry an express record
            let m = t
                .recv_holding(&mut |d, may| match d {
                    Some((b, _)) if express::is_express(b) => each(None, false, false),
                    Some((b, remote)) => each(Some((b, Path { remote, rail })), false, may),
                    None => each(None, false, false),
                })
                .unwrap_or(0);
            self.rail_received[k + 1] += m as u64;
            if m > 0 {
                self.rail_seen[k + 1] = now;
            }
            got += m;
        }
        if got > 0 {
            // (a burst on a rail is drained at once, as on rail 0)
            self.fallback_busy = true;
            self.fallback_seen = now;
        }
        Ok(n + got)
    }

    /// `recv_batch` of shared memory and rail 0 (the name), and whether
    /// rail 0 was read (not in its gap).
    #[inline]
    fn recv_name(
        &mut self,
        now: Instant,
        each: &mut HoldingRailSink<'_>,
    ) -> io::Result<(usize, bool)> {
        let Some(near) = &mut self.near else {
            // only a ring may carry an express record
            let m = self.fallback.recv_holding(&mut |d, may| match d {
                Some((b, _)) if express::is_express(b) => each(None, false, false),
                d => each(on_name(d), false, may),
            })?;
            self.fallback_busy = m > 0;
            self.rail_received[0] += m as u64;
            return Ok((m, true));
        };
        let n = match near {
            Near::Lane(lane) => lane.recv_proven(&mut |d, p| {
                each(on_name(d), p, false);
            })?,
            Near::Rings(rings) => rings.recv_batch(&mut |d| {
                each(on_name(d), false, false);
            })?,
        };
        let near = near.rings_mut();
        if near.active() && !self.fallback_busy && !self.fallback.holds() {
            // A pump that took datagrams from a ring goes on to handle them
            // (and send the answers) without a system call in between:
            // the fallback waits for the next pump, or at most
            // `FALLBACK_GAP_BUSY` while every pump finds ring traffic.
            if now < fallback_from(self.polled.get(), self.fallback_seen, now, n > 0) {
                return Ok((n, false));
            }
            self.polled.set(now);
        }
        // a datagram from this host by UDP: its sender may be asking
        // shared memory for a ring (its HELLO)
        let ip = self.fallback.local_addr().ip();
        let mut from_host = None;
        let m = self.fallback.recv_holding(&mut |d, may| {
            if let Some((b, from)) = d {
                if from.ip().is_loopback() || from.ip() == ip {
                    from_host = Some(from);
                }
                if express::is_express(b) {
                    // only a ring may carry an express record
                    return each(None, false, false);
                }
            }
            each(on_name(d), false, may)
        })?;
        self.rail_received[0] += m as u64;
        if let Some(from) = from_host {
            near.fallback_from_host(from, now);
        }
        // a burst on the fallback is drained at once, gap or not
        self.fallback_busy = m > 0;
        if m > 0 {
            self.fallback_seen = now;
        }
        Ok((n + m, true))
    }
}
