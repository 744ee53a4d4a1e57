//! Shared memory, setting a path up (`shm.rs`): the abstract Unix socket
//! named after an endpoint's UDP address, the HELLO and the answer with the
//! file's descriptor (same user only), the mapping of a peer's file and the
//! claim of a slot in it, region messages kept for `region_take`.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr as UnixAddr;
use std::sync::atomic::Ordering::*;

use super::*;

/// This host, network namespace (two may bind the same address) and pid
/// namespace (liveness checks compare pids): the boot id and the two
/// namespaces' inodes.
pub(super) static HOST: Lazy<(String, String)> = Lazy::new(|| {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let ns = |n: &str| -> String {
        std::fs::read_link(format!("/proc/self/ns/{n}"))
            .map(|p| {
                p.to_string_lossy()
                    .chars()
                    .filter(char::is_ascii_digit)
                    .collect()
            })
            .unwrap_or_default()
    };
    (boot, format!("{}.{}", ns("net"), ns("pid")))
});

pub(super) fn stem(addr: SocketAddr) -> String {
    let a: String = addr
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{PREFIX}{}.{a}", HOST.1)
}

pub(super) fn wake_addr(addr: SocketAddr) -> io::Result<UnixAddr> {
    UnixAddr::from_abstract_name(stem(addr).as_bytes())
}

impl ShmTransport {
    /// Asks the endpoint at `to` for its file (an error: no endpoint of
    /// this host has that address, or its socket is full).
    pub(super) fn ask(&self, to: SocketAddr) -> io::Result<()> {
        self.wake.send_to_addr(HELLO, &wake_addr(to)?).map(|_| ())
    }

    /// Reads the socket: answers HELLOs of this user's processes with our
    /// file, maps the files of peers we asked. Returns whether anything came.
    pub(super) fn read_socket(&self) -> bool {
        self.read_socket_at_most(WAKE_BUDGET)
    }

    /// `read_socket`, taking at most `budget` messages.
    pub(super) fn read_socket_at_most(&self, budget: usize) -> bool {
        let mut b = [0u8; SOCK_MSG];
        let mut any = false;
        for _ in 0..budget {
            let Ok(m) = recv_with_fd(&self.wake, &mut b) else {
                break;
            };
            any = true;
            let ours = m.uid == Some(euid()) && !m.from.is_empty();
            if ours && b[..m.len] == HELLO[..] {
                // a full socket on their side: they ask again
                let _ = send_with_fd(&self.wake, &m.from, GIVE, self.file.as_raw_fd());
            } else if ours && b[..m.len] == GIVE[..] {
                if let Some(fd) = m.fd {
                    self.adopt(&m.from, fd);
                }
            } else if ours && m.len > REGION.len() && b[..REGION.len()] == REGION[..] {
                self.region_in(&m.from, &b[REGION.len()..m.len], m.fd);
            } // a wake-up byte, or not ours: nothing (a descriptor is closed)
        }
        any
    }

    /// Keeps a region message whose sender is the endpoint it names.
    /// Anything else is dropped (its descriptor closed) and counted
    /// (`region_take`: the endpoint's `corrupt_dropped`); an asker whose ask
    /// is dropped stays on the put/get path and asks again later.
    pub(super) fn region_in(&self, from: &[u8], msg: &[u8], fd: Option<OwnedFd>) {
        let drop_it = || self.regions_dropped.set(self.regions_dropped.get() + 1);
        let n = msg[0] as usize;
        let Some(text) = msg.get(1..1 + n) else {
            return drop_it();
        };
        let Some(addr) = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<SocketAddr>().ok())
        else {
            return drop_it();
        };
        let mut q = self.regions.borrow_mut();
        if stem(addr).as_bytes() != from || q.len() >= REGION_QUEUE {
            return drop_it();
        }
        q.push(RegionMsg {
            from: addr,
            body: msg[1 + n..].to_vec(),
            fd,
        });
    }

    /// Reads the socket if the last look while setting up a path is
    /// `setup_gap` old.
    pub(super) fn read_socket_for_setup(&self, now: Instant) {
        if now >= self.next_setup_check.get() {
            // a HELLO or an answer: a flood of other messages to our
            // socket costs a few system calls here, the rest waits
            let found = self.read_socket_at_most(SETUP_BUDGET);
            let gap = if found {
                SETUP_CHECK
            } else {
                (self.setup_gap.get() * 2).min(WAKE_CHECK)
            };
            self.setup_gap.set(gap);
            self.next_setup_check.set(now.plus(gap));
        }
    }

    /// Takes the file the socket named `from` sent, if we asked that peer.
    pub(super) fn adopt(&self, from: &[u8], fd: OwnedFd) {
        let mut tx = self.tx.borrow_mut();
        let Some(to) = tx.routes.iter().find_map(|(a, r)| {
            (matches!(r, Route::Asked { .. }) && stem(*a).as_bytes() == from).then_some(*a)
        }) else {
            return;
        };
        let Some(ring) = self.connect(to, File::from(fd)) else {
            return; // asked again later
        };
        let k = match tx.rings.iter().position(Option::is_none) {
            Some(k) => {
                tx.rings[k] = Some(ring);
                k
            }
            None => {
                tx.rings.push(Some(ring));
                tx.rings.len() - 1
            }
        };
        tx.routes.insert(to, Route::Ring(k));
        tx.express_last = None;
    }

    /// Maps `file`, which the endpoint at `to` sent, and claims a slot in it.
    pub(super) fn connect(&self, to: SocketAddr, file: File) -> Option<TxRing> {
        if !size_sealed(&file) {
            return None; // could shrink under us: a fault on access
        }
        let map = SharedMap::of_file(&file, FILE_LEN).ok()?;
        if map.u64_at(H_MAGIC).load(Acquire) != MAGIC
            || map.u64_at(H_LAYOUT).load(Relaxed) != LAYOUT
            || get_text(&map, H_ADDR) != to.to_string()
            || get_text(&map, H_BOOT) != HOST.0
        {
            return None;
        }
        if !owner_alive(&map) {
            return None;
        }
        // the slot's secret (its generation, which a ring pid and a proof
        // name), drawn before the claim: without one, no ring (asked again
        // later; UDP meanwhile), never a zero or guessable secret (a zero,
        // which the receiver refuses, is drawn again the next time)
        let secret = crate::sys::random::random_u64().ok().filter(|&s| s != 0)?;
        let slot = (0..SLOTS).find(|&i| {
            map.u32_at(slot_off(i) + S_OWNER)
                .compare_exchange(0, self.pid, AcqRel, Relaxed)
                .is_ok()
        })?;
        let s = slot_off(slot);
        put_text(&map, s + S_FROM, &self.local.to_string());
        map.u64_at(s + S_SECRET).store(secret, Relaxed);
        let prover = self.prover.as_ref();
        proof::write_sender(&map, slot, (to, self.local), self.pid, secret, prover);
        let express_ok = proof::check_receiver(&map, prover);
        // a fresh ring from 0; what an earlier sender left there is no record
        map.u64_at(s + S_HEAD).store(0, Relaxed);
        for k in 0..CLAIMS {
            map.u64_at(s + S_CLAIMS + 8 * k).store(0, Relaxed);
        }
        map.u32_at(s + SLOT_HDR).store(0, Relaxed);
        map.u32_at(s + S_STATE).store(OPEN, Release);
        map.u64_at(H_ACTIVE).fetch_or(1 << slot, AcqRel);
        Some(TxRing {
            map,
            slot,
            secret,
            tail: 0,
            head: 0,
            express_end: 0,
            seen_head: 0,
            stuck_since: None,
            wake: wake_addr(to).ok()?,
            express_ok,
            held_words: [(0, 0); tx_ring::HELD_WORDS],
            held_n: 0,
            held_count: 0,
            staged: Box::new([[0; tx_ring::MAX_HELD]; tx_ring::HOLD_MAX]),
            held_at: [(0, 0); tx_ring::HOLD_MAX],
            stale: tx_ring::Stale::clear(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh, link};
    use super::*;
    use crate::sys::random::failing::FailingRandomness;

    /// Whether any slot of `rx`'s file is claimed.
    fn any_claimed(rx: &ShmTransport) -> bool {
        (0..SLOTS).any(|i| rx.map.u32_at(slot_off(i) + S_OWNER).load(Acquire) != 0)
    }

    #[test]
    fn no_ring_without_a_random_slot_secret_and_one_once_there_is() {
        let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
        let rx = ShmTransport::open(a1).unwrap();
        let tx = ShmTransport::open(a2).unwrap();
        {
            // the descriptor comes, but no secret can be drawn for the slot
            let _f = FailingRandomness::start();
            assert!(!link(&tx, &rx, a1));
        }
        assert!(!tx.reaches(a1), "a ring without a secret");
        assert!(!any_claimed(&rx), "a slot claimed without a secret");
        assert!(tx.ring_to(a1).is_none());
        // asked again with randomness: a ring, its secret in the slot
        tx.ask(a1).unwrap();
        rx.read_socket();
        tx.read_socket();
        assert!(tx.reaches(a1));
        let (pid, secret) = tx.ring_to(a1).unwrap();
        assert_ne!(secret, 0);
        assert!(rx.map.u64_at(slot_off(0) + S_SECRET).load(Acquire) == secret);
        assert_eq!(rx.map.u32_at(slot_off(0) + S_OWNER).load(Acquire), pid);
    }
}
