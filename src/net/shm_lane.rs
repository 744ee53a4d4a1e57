//! Shared memory's express lane (`ExpressLane`; the records in
//! `express.rs`, their layer above in `am/express.rs`): a short AM request
//! or reply written whole into an open ring whose receiver proved our job
//! (`shm_proof.rs`), never spilled to UDP; held back a few at a time for
//! one ring (`shm_ring.rs`'s `TxRing::hold`); taken at a ring's head by
//! the fast poll; lost with a dropped ring (`take_dropped`).

use super::*;

impl ShmTransport {
    /// The ring an express record to `to` would go into: open, its
    /// receiver's proof verified (the last one found is remembered: no
    /// hash look-up per record to the same peer).
    /// (The remembered ring inline, the look-up in a function of its own.)
    #[inline(always)]
    fn express_ring(&mut self, to: SocketAddr) -> Option<usize> {
        let tx = self.tx.get_mut();
        let k = match tx.express_last {
            Some((a, k)) if a == to => k,
            _ => self.express_ring_look_up(to)?,
        };
        let tx = self.tx.get_mut();
        tx.rings
            .get(k)?
            .as_ref()
            .filter(|r| r.express_ok)
            .map(|_| k)
    }

    /// The ring to `to` by its route, remembered for `express_ring`.
    #[inline(never)]
    fn express_ring_look_up(&mut self, to: SocketAddr) -> Option<usize> {
        let tx = self.tx.get_mut();
        let Some(&Route::Ring(k)) = tx.routes.get(&to) else {
            return None;
        };
        tx.express_last = Some((to, k));
        Some(k)
    }
}

impl ExpressLane for ShmTransport {
    fn express_open(&mut self, to: SocketAddr) -> bool {
        self.express_ring(to).is_some()
    }

    fn express_send(&mut self, to: SocketAddr, rec: &[u8], hold: bool) -> bool {
        let Some(k) = self.express_ring(to) else {
            return false;
        };
        let tx = self.tx.get_mut();
        if hold
            && tx.held_in.is_none_or(|h| h == k)
            && tx.rings[k].as_mut().is_some_and(|r| r.hold(rec))
        {
            tx.held_in = Some(k);
            return true;
        }
        self.release_held();
        let Some(ring) = self.tx.get_mut().rings[k].as_mut() else {
            return false;
        };
        if !ring.push(rec) {
            return false;
        }
        ring.express_end = ring.tail;
        ring.wake(&self.wake);
        true
    }

    #[cfg(test)]
    fn express_send_unproven(&mut self, to: SocketAddr, rec: &[u8]) -> bool {
        let tx = self.tx.get_mut();
        let Some(&Route::Ring(k)) = tx.routes.get(&to) else {
            return false;
        };
        let Some(ring) = tx.rings[k].as_mut() else {
            return false;
        };
        let ok = ring.express_ok;
        ring.express_ok = true;
        let sent = self.express_send(to, rec, false);
        if let Some(r) = self.tx.get_mut().rings[k].as_mut() {
            r.express_ok = ok;
        }
        sent
    }

    fn set_express_prover(&mut self, prover: Option<ExpressProver>) {
        proof::write_receiver(&self.map, prover.as_ref());
        self.prover = prover;
    }

    fn take_express_refused(&mut self) -> u64 {
        std::mem::take(&mut self.express_refused)
    }

    fn take_dropped(&mut self) -> Option<SocketAddr> {
        self.tx.get_mut().dropped.pop()
    }

    /// Held records leave before anything else goes into a ring, at the
    /// next receive (`recv_batch`, `express_take`), and when the layer
    /// above calls this (before a sleep, at the close, at exit).
    #[inline]
    fn release_held(&mut self) {
        if self.tx.get_mut().held_in.is_some() {
            self.write_held();
        }
    }

    fn recv_proven(&mut self, each: &mut ProvenSink<'_>) -> io::Result<usize> {
        self.recv_rings(each)
    }

    fn express_take(
        &mut self,
        rec: &mut crate::net::express::TakenRecord,
    ) -> crate::net::express::ExpressTake {
        self.release_held();
        self.take_express(rec)
    }
}
