//! Associations (after SCTP, RFC 9260): the state a peer's association is
//! in and the paths it owns (`path.rs`), the endpoint's secrets
//! (verification tags, cookies), and the token bucket that bounds
//! unsolicited answers.
//!
//! The handshake, as `Protocol` and `Peer` run it:
//!
//! ```text
//! initiator (Peer created by send)          responder (no state)
//!   INIT vtag 0 {init_tag a} ------------->
//!                                           cookie = {r, a, H(addr), t} + MAC
//!       <------------- INIT_ACK vtag a {resp_tag r, cookie}
//!   COOKIE_ECHO vtag r {cookie} ---------->  MAC, addr, age checked:
//!                                            Peer created, Established (r, a)
//!       <------------- COOKIE_ACK vtag a     (its DATA may follow at once)
//!   Established: DATA vtag r ------------->
//! ```
//!
//! A COOKIE_ECHO whose cookie's MAC fails (the responder restarted since
//! its INIT_ACK: another secret) gets `UNKNOWN_COOKIE vtag a {r}`; the
//! initiator echoing exactly (a, r) starts again with a fresh tag.
//!
//! Every later packet carries the receiver's tag (`vtag`): DATA/ACK/NACK
//! from `addr` count only if their vtag is our tag of the association with
//! `addr`. Tags are 64-bit outputs of a keyed PRF (BLAKE3) of the
//! endpoint's secret, so seeing some of them tells nothing of the others.

use std::hash::{Hash, Hasher};

use super::path::Paths;
use crate::time::{Instant, Nanos};
use crate::wire::{Integrity, COOKIE_LEN};

/// Where a peer's association stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssocState {
    /// None: a send starts the handshake.
    Closed,
    /// INIT sent (with `local_tag`), waiting for the INIT_ACK.
    CookieWait,
    /// COOKIE_ECHO sent; the COOKIE_ACK, or the first packet with our
    /// tag, establishes.
    CookieEchoed,
    Established,
    /// Idle for the idle timeout: SHUTDOWN sent, waiting for the
    /// SHUTDOWN_ACK (then both ends free it). DATA from the peer (it had
    /// something to say) takes it back to `Established`; ours waits.
    ShutdownSent,
}

/// One peer's association.
#[derive(Debug)]
pub struct Assoc<A> {
    pub state: AssocState,
    /// The ways its packets go to the peer (one today: from our name to
    /// the peer's address).
    pub paths: Paths<A>,
    /// Our tag: what the peer's packets carry as `vtag`.
    pub local_tag: u64,
    /// The peer's tag: what our packets to it carry.
    pub peer_tag: u64,
    /// When it was established (local time): a cookie made before cannot
    /// restart it (a late or duplicated COOKIE_ECHO).
    pub since: Instant,
    /// The cookie to echo again while the COOKIE_ACK is missing.
    pub cookie: Option<Box<[u8; COOKIE_LEN]>>,
    /// INITs or COOKIE_ECHOs sent again without an answer.
    pub tries: u32,
    /// When the first INIT went (its answer times a round trip).
    pub init_sent: Instant,
    /// How our DATA, ACK, NACK are sealed and the peer's are opened: CRC32C,
    /// or with a job key the association's key per direction, set once
    /// both tags are known (`keyed`).
    pub tx: Integrity,
    pub rx: Integrity,
    /// The last SHUTDOWN nonce we sent, and the first of the current
    /// shutdown (its answer echoes one of them).
    pub shutdown_sent: u64,
    pub shutdown_from: u64,
    /// The highest SHUTDOWN nonce the peer sent: a SHUTDOWN counts once
    /// (a replayed one is dropped), busy or not.
    pub shutdown_seen: u64,
}

impl<A: Copy + PartialEq> Assoc<A> {
    /// No association yet with the peer at `peer` (`Closed`), its path
    /// from our name to that address (with a congestion controller that
    /// limits nothing: the peer gives it its path's, `Peer::fresh_assoc`).
    pub fn to(peer: A) -> Self {
        Assoc {
            state: AssocState::Closed,
            paths: Paths::to(
                peer,
                super::congestion::Congestion::new(false, 0, 0),
                super::rtt::RttEstimator::new(0, 0, 0),
                0,
            ),
            local_tag: 0,
            peer_tag: 0,
            since: Instant::ZERO,
            cookie: None,
            tries: 0,
            init_sent: Instant::ZERO,
            tx: Integrity::Crc32c,
            rx: Integrity::Crc32c,
            shutdown_sent: 0,
            shutdown_from: 0,
            shutdown_seen: 0,
        }
    }
}

impl<A> Assoc<A> {
    /// Sets the keys of the tags `local_tag`, `peer_tag` under the
    /// endpoint's integrity (derived once here, not per packet).
    pub fn keyed(&mut self, integ: &Integrity) {
        (self.tx, self.rx) = integ.for_association(self.local_tag, self.peer_tag);
    }

    /// Whether DATA may be sent: only once established, when the peer
    /// surely has the association (DATA sent right after the COOKIE_ECHO
    /// could overtake it and be dropped, costing a retransmission on a
    /// clean network; first contact costs half a round trip more instead).
    #[inline]
    pub fn can_send(&self) -> bool {
        self.state == AssocState::Established
    }

    /// Whether a DATA/ACK/NACK carrying `vtag` belongs to this association
    /// (after COOKIE_ECHO, a packet with our tag confirms it as the
    /// COOKIE_ACK would: the peer sends only once established).
    #[inline]
    pub fn accepts(&self, vtag: u64) -> bool {
        vtag == self.local_tag
            && matches!(
                self.state,
                AssocState::Established | AssocState::CookieEchoed | AssocState::ShutdownSent
            )
    }

    /// Whether an ABORT carrying `vtag` ends it: our own tag (the peer ends
    /// it), or, once established, the peer's tag reflected by a peer that
    /// has no association with us (it restarted or lost it). Before
    /// establishment a reflected tag is the answer to DATA that overtook
    /// our COOKIE_ECHO, and is ignored.
    pub fn aborted_by(&self, vtag: u64) -> bool {
        match self.state {
            AssocState::Closed => false,
            AssocState::CookieWait | AssocState::CookieEchoed => vtag == self.local_tag,
            AssocState::Established | AssocState::ShutdownSent => {
                vtag == self.local_tag || vtag == self.peer_tag
            }
        }
    }

    /// Whether a SHUTDOWN_ACK (`vtag`, `nonce`) answers our SHUTDOWN: our
    /// tag, or the tag our SHUTDOWN carried reflected by a peer that had
    /// freed the association already (its first answer was lost), and the
    /// nonce of one of this shutdown's SHUTDOWNs.
    pub fn shut_by(&self, vtag: u64, nonce: u64) -> bool {
        self.state == AssocState::ShutdownSent
            && (vtag == self.local_tag || vtag == self.peer_tag)
            && nonce >= self.shutdown_from
            && nonce <= self.shutdown_sent
    }
}

/// Our tags of associations that ended (closed, aborted, dead, shut down,
/// freed) in the last cookie lifetime: a cookie naming one of them is
/// refused, so that a COOKIE_ECHO replayed after the end cannot create the
/// association again. Bounded: beyond `CLOSED_TAGS_MAX` the oldest entry
/// goes, and every cookie made up to its end is refused from then on.
#[derive(Debug, Default)]
pub struct ClosedTags {
    at: crate::fxhash::FxHashMap<u64, ()>,
    order: std::collections::VecDeque<(Instant, u64)>,
    /// Cookies made at or before it are refused (an entry was dropped).
    refuse_until: Option<Instant>,
    /// The protocol's latest time (set by each of its entry points).
    pub now: Instant,
}

/// At most this many ended tags are remembered (~40 bytes each).
pub const CLOSED_TAGS_MAX: usize = 16384;

impl ClosedTags {
    /// The association with our tag `tag` ended now.
    pub fn record(&mut self, tag: u64, lifetime: Nanos) {
        if tag == 0 {
            return;
        }
        let now = self.now;
        while let Some(&(t, old)) = self.order.front() {
            if now.since(t) <= lifetime && self.order.len() < CLOSED_TAGS_MAX {
                break;
            }
            self.order.pop_front();
            self.at.remove(&old);
            if now.since(t) <= lifetime {
                // dropped while its cookies may still be valid
                self.refuse_until = Some(self.refuse_until.map_or(t, |r| r.max(t)));
            }
        }
        if self.at.insert(tag, ()).is_none() {
            self.order.push_back((now, tag));
        }
    }

    /// Whether a cookie for our tag `tag`, made at `created`, is refused.
    pub fn refuses(&self, tag: u64, created: Instant) -> bool {
        self.refuse_until.is_some_and(|r| created <= r) || self.at.contains_key(&tag)
    }

    /// Tags remembered.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn len(&self) -> usize {
        self.order.len()
    }

    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn memory_bytes(&self) -> usize {
        self.at.capacity() * 9 * 8 / 7 + self.order.capacity() * 16
    }
}

/// What a valid cookie says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieTags {
    pub resp_tag: u64,
    pub init_tag: u64,
    pub created: Instant,
}

/// Why a cookie is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieError {
    /// Its MAC does not match: not ours, or altered.
    Forged,
    /// Made for another address.
    WrongAddress,
    /// Older than the lifetime (or from the future).
    Expired,
}

/// The endpoint's secrets, from 32 random bytes given to `Protocol::new`.
pub struct Secrets {
    cookie_key: [u8; 32],
    addr_key: [u8; 32],
    tag_key: [u8; 32],
    tags_made: u64,
}

/// Feeds a `Hash` implementation into a keyed BLAKE3.
struct KeyedHasher(blake3::Hasher);

impl Hasher for KeyedHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let h = self.0.finalize();
        u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]))
    }
}

const MAC_LEN: usize = 16;
const COOKIE_FIELDS: usize = COOKIE_LEN - MAC_LEN;

impl Secrets {
    pub fn new(secret: &[u8; 32]) -> Secrets {
        Secrets {
            cookie_key: blake3::derive_key("ramp 2026 association cookie MAC", secret),
            addr_key: blake3::derive_key("ramp 2026 association address digest", secret),
            tag_key: blake3::derive_key("ramp 2026 association verification tags", secret),
            tags_made: 0,
        }
    }

    /// A fresh verification tag: non-zero, unpredictable without the secret.
    pub fn next_tag(&mut self) -> u64 {
        loop {
            self.tags_made += 1;
            let h = blake3::keyed_hash(&self.tag_key, &self.tags_made.to_le_bytes());
            let t = u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]));
            if t != 0 {
                return t;
            }
        }
    }

    /// A keyed digest of a peer's address (its `Hash`).
    pub fn addr_digest<A: Hash>(&self, addr: &A) -> u64 {
        let mut h = KeyedHasher(blake3::Hasher::new_keyed(&self.addr_key));
        addr.hash(&mut h);
        h.finish()
    }

    fn mac(&self, fields: &[u8]) -> [u8; MAC_LEN] {
        let h = blake3::keyed_hash(&self.cookie_key, fields);
        let mut m = [0u8; MAC_LEN];
        m.copy_from_slice(&h.as_bytes()[..MAC_LEN]);
        m
    }

    /// The cookie of an INIT_ACK: {resp_tag, init_tag, digest of `addr`,
    /// `now`} (big-endian u64s) and a 128-bit MAC over them.
    pub fn make_cookie<A: Hash>(
        &self,
        resp_tag: u64,
        init_tag: u64,
        addr: &A,
        now: Instant,
    ) -> [u8; COOKIE_LEN] {
        let mut c = [0u8; COOKIE_LEN];
        c[0..8].copy_from_slice(&resp_tag.to_be_bytes());
        c[8..16].copy_from_slice(&init_tag.to_be_bytes());
        c[16..24].copy_from_slice(&self.addr_digest(addr).to_be_bytes());
        c[24..32].copy_from_slice(&now.0.to_be_bytes());
        let mac = self.mac(&c[..COOKIE_FIELDS]);
        c[COOKIE_FIELDS..].copy_from_slice(&mac);
        c
    }

    /// Checks a cookie echoed from `addr` at `now`.
    pub fn open_cookie<A: Hash>(
        &self,
        c: &[u8; COOKIE_LEN],
        addr: &A,
        now: Instant,
        lifetime: Nanos,
    ) -> Result<CookieTags, CookieError> {
        let mac = self.mac(&c[..COOKIE_FIELDS]);
        // Constant time: every byte is compared.
        let diff = mac
            .iter()
            .zip(&c[COOKIE_FIELDS..])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        if diff != 0 {
            return Err(CookieError::Forged);
        }
        let field = |i: usize| u64::from_be_bytes(c[i..i + 8].try_into().unwrap_or([0; 8]));
        if field(16) != self.addr_digest(addr) {
            return Err(CookieError::WrongAddress);
        }
        let created = Instant(field(24));
        if created > now || now.since(created) > lifetime {
            return Err(CookieError::Expired);
        }
        Ok(CookieTags {
            resp_tag: field(0),
            init_tag: field(8),
            created,
        })
    }
}

/// The initiator's tag a cookie names, read without checking it: what an
/// endpoint that cannot open the cookie (another secret made it) answers
/// to (`Protocol::unknown_cookie`).
pub fn cookie_init_tag(c: &[u8; COOKIE_LEN]) -> u64 {
    u64::from_be_bytes(c[8..16].try_into().unwrap_or([0; 8]))
}

/// A token bucket: `rate` tokens per second, at most `burst` saved.
#[derive(Debug)]
pub struct TokenBucket {
    tokens: u64,
    /// The time up to which tokens have been added.
    filled_to: Instant,
}

impl TokenBucket {
    pub fn new(burst: u64) -> TokenBucket {
        TokenBucket {
            tokens: burst,
            filled_to: Instant::ZERO,
        }
    }

    /// Takes one token if there is one.
    pub fn take(&mut self, now: Instant, rate: u64, burst: u64) -> bool {
        const NS: u128 = 1_000_000_000;
        let elapsed = now.since(self.filled_to) as u128;
        let add = elapsed * rate as u128 / NS;
        if add > 0 {
            let room = burst.saturating_sub(self.tokens) as u128;
            if add >= room {
                self.tokens = burst;
                self.filled_to = now;
            } else {
                self.tokens += add as u64;
                // keep the fraction of a token not yet earned
                let used = (add * NS / rate as u128) as u64;
                self.filled_to = self.filled_to.plus(used);
            }
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MILLIS;

    #[test]
    fn cookie_refused_when_forged_elsewhere_or_old() {
        let s = Secrets::new(&[7; 32]);
        let t0 = Instant(5 * MILLIS);
        let c = s.make_cookie(11, 22, &1000u32, t0);
        let life = 60_000 * MILLIS;
        let ok = s.open_cookie(&c, &1000u32, t0.plus(MILLIS), life).unwrap();
        assert_eq!((ok.resp_tag, ok.init_tag, ok.created), (11, 22, t0));
        assert_eq!(
            s.open_cookie(&c, &1001u32, t0, life),
            Err(CookieError::WrongAddress)
        );
        assert_eq!(
            s.open_cookie(&c, &1000u32, t0.plus(life + 1), life),
            Err(CookieError::Expired)
        );
        for bit in 0..COOKIE_LEN * 8 {
            let mut b = c;
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                s.open_cookie(&b, &1000u32, t0, life),
                Err(CookieError::Forged),
                "bit {bit}"
            );
        }
        let other = Secrets::new(&[8; 32]);
        assert_eq!(
            other.open_cookie(&c, &1000u32, t0, life),
            Err(CookieError::Forged)
        );
    }

    #[test]
    fn tags_are_non_zero_distinct_and_secret_dependent() {
        let mut a = Secrets::new(&[1; 32]);
        let mut b = Secrets::new(&[2; 32]);
        let ta: Vec<u64> = (0..100).map(|_| a.next_tag()).collect();
        let tb: Vec<u64> = (0..100).map(|_| b.next_tag()).collect();
        assert!(ta.iter().all(|&t| t != 0));
        let mut u = ta.clone();
        u.sort_unstable();
        u.dedup();
        assert_eq!(u.len(), 100);
        assert!(ta.iter().all(|t| !tb.contains(t)));
    }

    #[test]
    fn closed_tags_refuse_their_cookies_for_a_lifetime_within_a_bound() {
        let life = 60_000 * MILLIS;
        let mut c = ClosedTags {
            now: Instant(100 * MILLIS),
            ..Default::default()
        };
        c.record(7, life);
        assert!(c.refuses(7, Instant(MILLIS)));
        assert!(!c.refuses(8, Instant(MILLIS)));
        // after a lifetime the entry goes (every cookie that named it has expired)
        c.now = c.now.plus(life + 1);
        c.record(9, life);
        assert_eq!(c.len(), 1);
        assert!(!c.refuses(7, c.now));
        // full: the oldest goes, and cookies made by its end are refused
        for t in 0..CLOSED_TAGS_MAX as u64 {
            c.now = c.now.plus(1);
            c.record(1000 + t, life);
        }
        assert_eq!(c.len(), CLOSED_TAGS_MAX);
        assert!(
            c.refuses(9, Instant(0)),
            "dropped, covered by the watermark"
        );
        assert!(!c.refuses(9, c.now), "a cookie made later is fine");
        assert!(c.refuses(1000 + CLOSED_TAGS_MAX as u64 - 1, c.now));
    }

    #[test]
    fn token_bucket_rate_and_burst() {
        let mut b = TokenBucket::new(4);
        let t = Instant(1_000_000_000);
        let taken = (0..10).filter(|_| b.take(t, 1000, 4)).count();
        assert_eq!(taken, 4, "the burst");
        // 1000/s: one more per millisecond, fractions kept
        assert!(!b.take(t.plus(MILLIS / 2), 1000, 4));
        assert!(b.take(t.plus(MILLIS), 1000, 4));
        assert!(!b.take(t.plus(MILLIS), 1000, 4));
        let taken = (0..10)
            .filter(|_| b.take(t.plus(100 * MILLIS), 1000, 4))
            .count();
        assert_eq!(taken, 4, "never more than the burst saved");
    }
}
