//! The set's receive: every transport read in one call (rings, rail 0,
//! the further rails), each datagram told with its path.

use std::io;
use std::net::SocketAddr;

use super::{fallback_from, rail_due, Near, Transports};
use crate::path::{Path, Rail};
use crate::time::Instant;

impl Transports {
    /// Receives what waits on every transport (see `Transport::recv_batch`);
    /// returns how many datagrams there were in all. `now`: the caller's
    /// time of this pump (no clock read here).
    #[inline]
    /// Each datagram is told with its path (its source, the rail it came
    /// in on; a ring's: rail 0) and whether it came through a ring whose
    /// sender proved our job (`RailSink`). The further rails are read
    /// when rail 0 is (its gap while rings carry the traffic is theirs);
    /// a further rail's receive that fails is that rail's trouble, not
    /// the endpoint's: it counts as finding nothing.
    #[cfg(test)]
    pub fn recv_batch(&mut self, now: Instant, each: &mut RailSink<'_>) -> io::Result<usize> {
        self.recv_batch_until(now, &mut |d, proven| {
            each(d, proven);
            false
        })
    }

    /// `recv_batch`, where `each` may ask to stop after a datagram (it
    /// returns true; `Transport::recv_batch_until`): rail 0 keeps what
    /// follows it in its batch for the next receive, if it can. Only
    /// rail 0's is asked: rings and further rails go on (a wish).
    #[inline]
    pub fn recv_batch_until(
        &mut self,
        now: Instant,
        each: &mut RailStopSink<'_>,
    ) -> io::Result<usize> {
        let (n, udp) = self.recv_name(now, each)?;
        if self.rails.is_empty() || !udp {
            return Ok(n);
        }
        let mut got = 0;
        let woke = self.rails_woke.replace(false);
        for (k, t) in self.rails.iter_mut().enumerate() {
            let rail = Rail(k as u8 + 1);
            let (polled, seen) = (self.rail_polled[k + 1], self.rail_seen[k + 1]);
            if !woke && !rail_due(polled, seen, now) {
                continue;
            }
            self.rail_polled[k + 1] = now;
            // only a ring may carry an express record
            let m = t
                .recv_batch(&mut |d| {
                    match d {
                        Some((b, _)) if crate::net::express::is_express(b) => each(None, false),
                        Some((b, remote)) => each(Some((b, Path { remote, rail })), false),
                        None => each(None, false),
                    };
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
        each: &mut RailStopSink<'_>,
    ) -> io::Result<(usize, bool)> {
        let Some(near) = &mut self.near else {
            // only a ring may carry an express record
            let m = self.fallback.recv_batch_until(&mut |d| match d {
                Some((b, _)) if crate::net::express::is_express(b) => each(None, false),
                d => each(on_name(d), false),
            })?;
            self.fallback_busy = m > 0;
            self.rail_received[0] += m as u64;
            return Ok((m, true));
        };
        let n = match near {
            Near::Lane(lane) => lane.recv_proven(&mut |d, p| {
                each(on_name(d), p);
            })?,
            Near::Rings(rings) => rings.recv_batch(&mut |d| {
                each(on_name(d), false);
            })?,
        };
        let near = near.rings_mut();
        if near.active() && !self.fallback_busy {
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
        let m = self.fallback.recv_batch_until(&mut |d| {
            if let Some((b, from)) = d {
                if from.ip().is_loopback() || from.ip() == ip {
                    from_host = Some(from);
                }
                if crate::net::express::is_express(b) {
                    // only a ring may carry an express record
                    return each(None, false);
                }
            }
            each(on_name(d), false)
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

/// A datagram of rail 0 (or a ring) with its path.
#[inline]
fn on_name(d: Option<(&[u8], SocketAddr)>) -> Option<(&[u8], Path<SocketAddr>)> {
    d.map(|(b, from)| (b, Path::from_name(from)))
}

/// `Transports::recv_batch`'s sink: each datagram (None: one that could
/// not be read whole) with its path, and whether it came through a ring
/// whose sender proved our job (`ProvenSink`).
#[cfg(test)]
pub type RailSink<'a> = dyn FnMut(Option<(&[u8], Path<SocketAddr>)>, bool) + 'a;

/// `RailSink` that may ask to stop after a datagram (it returns true):
/// `Transports::recv_batch_until`.
pub type RailStopSink<'a> = dyn FnMut(Option<(&[u8], Path<SocketAddr>)>, bool) -> bool + 'a;
