//! The express lane's proof of a job (`am/express.rs`): express records
//! carry no MAC, so under a job key each end of a ring proves once, by the
//! key's keyed hash (`ExpressProver`, `wire::mac::MacKey::proof`), that it
//! belongs to the same job as the other:
//!
//! - the receiver, in its file's header, over its address, pid and a
//!   random nonce: a sender takes the lane to it only if this verifies
//!   under its own key (or neither has a key), so a sender never writes
//!   records the receiver would drop;
//! - the sender, in its slot's header when it claims the slot (before the
//!   slot opens), over both addresses, its pid and the slot's secret (the
//!   slot's generation): the receiver checks it once, at the first look at
//!   the slot, and drops (and counts) every express record of a slot whose
//!   proof did not verify under its key (or that claims a key it lacks).
//!
//! A process of another job of this user (a leftover of an earlier job,
//! another job on the host) that reaches our address can write into a
//! ring of ours but cannot make a proof: its records run no handler.
//! Without a key on both ends: no proof, the lane as before. The protocol's
//! datagrams in the same ring carry their own MAC and are not affected.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::*;

use super::{get_text, slot_off, ExpressProver, SharedMap};

// receiver's file header
const H_NONCE: usize = 512;
const H_KEYED: usize = 520;
const H_PROOF: usize = 576;
/// `H_KEYED`: a key, but no proof (no nonce could be made).
const UNPROVEN: u32 = 2;
// sender's slot header
const S_KEYED: usize = 128;
const S_PROOF: usize = 160;
const _: () = assert!(S_PROOF + 32 <= super::S_HEAD && H_PROOF + 32 <= super::HDR);
const _: () = assert!(H_NONCE >= super::H_ACTIVE + 64 && S_KEYED >= super::S_FROM + super::TEXT);

/// `label`, then each field after its length.
fn context(label: &[u8], fields: &[&[u8]]) -> Vec<u8> {
    let mut c = label.to_vec();
    for f in fields {
        c.push(f.len() as u8);
        c.extend_from_slice(f);
    }
    c
}

fn receiver_context(addr: &str, pid: u32, nonce: u64) -> Vec<u8> {
    context(
        b"receiver v1",
        &[addr.as_bytes(), &pid.to_le_bytes(), &nonce.to_le_bytes()],
    )
}

fn sender_context(to: &str, from: &str, pid: u32, secret: u64) -> Vec<u8> {
    context(
        b"sender v1",
        &[
            to.as_bytes(),
            from.as_bytes(),
            &pid.to_le_bytes(),
            &secret.to_le_bytes(),
        ],
    )
}

/// Constant time in the contents.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn read32(m: &SharedMap, off: usize) -> [u8; 32] {
    let mut b = [0u8; 32];
    m.read(off, &mut b);
    b
}

/// The receiver: writes its proof into its own file's header (`map`,
/// whose address and pid are written already), or says it has no key.
/// Without a random nonce (the kernel gave none) it proves nothing: it
/// says it has a key but no proof (`UNPROVEN`), which no sender accepts
/// (none takes the express lane to it; the protocol's datagrams still
/// come through the rings).
pub(super) fn write_receiver(map: &SharedMap, prover: Option<&ExpressProver>) {
    let Some(p) = prover else {
        map.u32_at(H_KEYED).store(0, Release);
        return;
    };
    let Ok(nonce) = crate::sys::random::random_u64() else {
        map.write(H_PROOF, &[0; 32]);
        map.u32_at(H_KEYED).store(UNPROVEN, Release);
        return;
    };
    let pid = map.u32_at(super::H_PID).load(Relaxed);
    let proof = p(&receiver_context(&get_text(map, super::H_ADDR), pid, nonce));
    map.u64_at(H_NONCE).store(nonce, Relaxed);
    map.write(H_PROOF, &proof);
    map.u32_at(H_KEYED).store(1, Release);
}

/// The sender: whether the receiver whose file is `map` belongs to our
/// job (its proof verifies under our key; or neither has one).
pub(super) fn check_receiver(map: &SharedMap, prover: Option<&ExpressProver>) -> bool {
    let keyed = map.u32_at(H_KEYED).load(Acquire);
    let Some(p) = prover else {
        return keyed == 0;
    };
    if keyed != 1 {
        return false;
    }
    let nonce = map.u64_at(H_NONCE).load(Relaxed);
    let pid = map.u32_at(super::H_PID).load(Relaxed);
    let want = p(&receiver_context(&get_text(map, super::H_ADDR), pid, nonce));
    same(&want, &read32(map, H_PROOF))
}

/// The sender: writes its proof into slot `slot` of the receiver's file
/// `map` it just claimed (before it opens the slot).
pub(super) fn write_sender(
    map: &SharedMap,
    slot: usize,
    (to, from): (SocketAddr, SocketAddr),
    pid: u32,
    secret: u64,
    prover: Option<&ExpressProver>,
) {
    let s = slot_off(slot);
    match prover {
        None => {
            map.write(s + S_PROOF, &[0; 32]);
            map.u32_at(s + S_KEYED).store(0, Relaxed);
        }
        Some(p) => {
            let ctx = sender_context(&to.to_string(), &from.to_string(), pid, secret);
            map.write(s + S_PROOF, &p(&ctx));
            map.u32_at(s + S_KEYED).store(1, Relaxed);
        }
    }
}

/// The receiver (`local`): whether the sender `from` of slot `slot` of
/// our file `map` (open: its header read after the state's acquire)
/// belongs to our job.
pub(super) fn check_sender(
    map: &SharedMap,
    slot: usize,
    (local, from): (SocketAddr, SocketAddr),
    prover: Option<&ExpressProver>,
) -> bool {
    let s = slot_off(slot);
    let keyed = map.u32_at(s + S_KEYED).load(Relaxed);
    let Some(p) = prover else {
        return keyed == 0;
    };
    if keyed != 1 {
        return false;
    }
    let pid = map.u32_at(s + super::S_OWNER).load(Relaxed);
    let secret = map.u64_at(s + super::S_SECRET).load(Relaxed);
    let ctx = sender_context(&local.to_string(), &from.to_string(), pid, secret);
    same(&p(&ctx), &read32(map, s + S_PROOF))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh, link, prover};
    use super::super::ShmTransport;
    use super::*;
    use crate::net::{ExpressLane, Transport};
    use crate::sys::random::failing::FailingRandomness;
    use crate::time::Instant;

    #[test]
    fn a_receiver_without_a_random_nonce_proves_nothing_and_gets_no_express_records() {
        for fail in [false, true] {
            let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
            let mut rx = ShmTransport::open(a1).unwrap();
            {
                let _f = fail.then(FailingRandomness::start);
                rx.set_express_prover(prover(1));
            }
            let keyed = rx.map.u32_at(H_KEYED).load(Acquire);
            assert_eq!(keyed, if fail { UNPROVEN } else { 1 });
            if fail {
                assert_eq!(rx.map.u64_at(H_NONCE).load(Acquire), 0);
            }
            // a sender of the same job, and one without a key
            let mut tx = ShmTransport::open(a2).unwrap();
            tx.set_express_prover(prover(1));
            assert!(link(&tx, &rx, a1));
            assert_eq!(tx.express_open(a1), !fail, "fail {fail}");
            assert!(!check_receiver(&rx.map, None));
            // the protocol's datagrams still go through the ring
            tx.send(Instant::ZERO, a1, b"RAdatagram").unwrap();
            let mut got = Vec::new();
            rx.recv_batch(&mut |d| got.push(d.unwrap().0.to_vec()))
                .unwrap();
            assert_eq!(got, vec![b"RAdatagram".to_vec()]);
        }
    }
}
