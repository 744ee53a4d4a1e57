//! What shared memory offers beyond datagrams (`SharedMemory`): a
//! ring's identity and claim words, which a direct copy of a large put,
//! get or Xfer names and settles its fate by (`am/rma_direct.rs`,
//! `am/xfer_direct.rs`); region messages on the endpoint's socket
//! (`am/rma_shared.rs`; read with its other messages, `shm_setup.rs`); a
//! same-host datagram that came by UDP (a HELLO may wait); when what the
//! socket holds is read; a send with one look-up of the route; and the
//! express lane it offers (`shm_lane.rs`).

use super::*;

impl ShmTransport {
    /// The slot `from` writes, open, owned by `pid` holding `secret` (see
    /// `ring_from`).
    fn slot_from(&self, from: SocketAddr, pid: u32, secret: u64) -> Option<usize> {
        if secret == 0 || pid == 0 {
            return None;
        }
        let active = self.map.u64_at(H_ACTIVE).load(Acquire);
        (0..SLOTS).find(|&i| {
            let s = slot_off(i);
            active & (1 << i) != 0
                && self.slots[i].from == Some(from)
                && self.map.u32_at(s + S_STATE).load(Acquire) == OPEN
                && self.map.u32_at(s + S_OWNER).load(Acquire) == pid
                && self.map.u64_at(s + S_SECRET).load(Acquire) == secret
        })
    }

    /// `f` on claim word `k` of our slot in `to`'s ring and that ring's
    /// map (None when `to` is not reached by a ring).
    fn with_claim_word<R>(
        &self,
        to: SocketAddr,
        k: usize,
        f: impl FnOnce(&std::sync::atomic::AtomicU64, &SharedMap) -> R,
    ) -> Option<R> {
        let tx = self.tx.borrow();
        let Some(Route::Ring(r)) = tx.routes.get(&to) else {
            return None;
        };
        let ring = tx.rings[*r].as_ref()?;
        let word = ring
            .map
            .u64_at(slot_off(ring.slot) + S_CLAIMS + 8 * (k % CLAIMS));
        Some(f(word, &ring.map))
    }
}

impl SharedMemory for ShmTransport {
    fn send_reached(
        &mut self,
        now: Instant,
        to: SocketAddr,
        dgram: &[u8],
    ) -> Option<io::Result<()>> {
        // a known ring: one look-up
        if let Some(&Route::Ring(k)) = self.tx.get_mut().routes.get(&to) {
            return Some(self.push_ring(k, dgram));
        }
        if !self.reaches(to) {
            return None;
        }
        Some(self.send(now, to, dgram))
    }

    fn send_gathered_reached(
        &mut self,
        now: Instant,
        to: SocketAddr,
        parts: crate::net::Gathered<'_>,
        joined: &mut Vec<u8>,
    ) -> Option<io::Result<()>> {
        // a known ring: the pieces written straight into it
        if let Some(&Route::Ring(k)) = self.tx.get_mut().routes.get(&to) {
            return Some(self.push_ring_parts(k, &parts));
        }
        if !self.reaches(to) {
            return None;
        }
        Some(crate::net::capabilities::send_joined(
            self, now, to, parts, joined,
        ))
    }

    fn ring_to(&self, to: SocketAddr) -> Option<(u32, u64)> {
        let tx = self.tx.borrow();
        let Some(Route::Ring(k)) = tx.routes.get(&to) else {
            return None;
        };
        let ring = tx.rings[*k].as_ref()?;
        (ring.secret != 0).then_some((self.pid, ring.secret))
    }

    /// Only slots a datagram was read from (their sender's address known)
    /// and still open: the secret and the owner pid are in our file, which
    /// only processes of our user on this host can read.
    fn ring_from(&self, from: SocketAddr, pid: u32, secret: u64) -> bool {
        self.slot_from(from, pid, secret).is_some()
    }

    fn claim_to(&self, to: SocketAddr, k: usize, current: u64, new: u64) -> Option<bool> {
        self.with_claim_word(to, k, |word, _| {
            word.compare_exchange(current, new, AcqRel, Acquire).is_ok()
        })
    }

    fn claim_word_to(&self, to: SocketAddr, k: usize) -> Option<(u64, u32)> {
        self.with_claim_word(to, k, |word, map| {
            (word.load(Acquire), map.u32_at(H_PID).load(Relaxed))
        })
    }

    fn claim_from(
        &self,
        from: SocketAddr,
        (pid, secret): (u32, u64),
        k: usize,
        current: u64,
        new: u64,
    ) -> bool {
        let Some(i) = self.slot_from(from, pid, secret) else {
            return false;
        };
        let word = self.map.u64_at(slot_off(i) + S_CLAIMS + 8 * (k % CLAIMS));
        word.compare_exchange(current, new, AcqRel, Acquire).is_ok()
    }

    /// A HELLO from that peer may wait in our socket, unless it already
    /// writes into a ring of ours.
    fn fallback_from_host(&self, from: SocketAddr, now: Instant) {
        if !self.slots.iter().any(|s| s.from == Some(from)) {
            self.read_socket_for_setup(now);
        }
    }

    fn region_send(&self, to: SocketAddr, body: &[u8], fd: Option<RawFd>) -> bool {
        let me = self.local.to_string();
        let mut m = REGION.to_vec();
        m.push(me.len() as u8);
        m.extend_from_slice(me.as_bytes());
        m.extend_from_slice(body);
        if m.len() > SOCK_MSG {
            return false;
        }
        let Ok(a) = wake_addr(to) else {
            return false;
        };
        match fd {
            Some(fd) => send_with_fd(&self.wake, stem(to).as_bytes(), &m, fd).is_ok(),
            None => self.wake.send_to_addr(&m, &a).is_ok(),
        }
    }

    fn region_take(&self) -> (Vec<RegionMsg>, u64) {
        // read with the socket's other messages (`flush_due`, `fd`)
        let dropped = self.regions_dropped.replace(0);
        if self.regions.borrow().is_empty() {
            return (Vec::new(), dropped);
        }
        (std::mem::take(&mut *self.regions.borrow_mut()), dropped)
    }

    fn active(&self) -> bool {
        self.map.u64_at(H_ACTIVE).load(Relaxed) != 0
            || self.tx.borrow().rings.iter().any(Option::is_some)
    }

    /// The socket is read every `WAKE_CHECK` while busy (`flush_due`).
    fn next_look(&self) -> Option<Instant> {
        self.socket_waiting().then(|| self.next_wake_check.get())
    }

    /// The socket's look and the peers' check (`flush_due`).
    fn checks_due_at(&self) -> Instant {
        self.next_wake_check.get().min(self.next_check.get())
    }

    fn regions_waiting(&self) -> bool {
        !self.regions.borrow().is_empty()
    }

    fn into_express_lane(self: Box<Self>) -> Result<Box<dyn ExpressLane>, Box<dyn SharedMemory>> {
        Ok(self)
    }
}
