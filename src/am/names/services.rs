//! Published endpoint names at the AM layer: the table of services an
//! endpoint keeps for others, and the queries that publish a name under a
//! service or look one up at the endpoint that keeps it (its "owner"). The
//! SPMD layer (`spmd/names.rs`) picks the owner among the job's ranks and
//! asks again until a name appears; this file only moves one question and
//! its answer, as `names.rs` does for handler names.
//!
//! The exchange runs no user handler and takes no credit:
//! - `ServiceQuery` (wire kind 12) on the request channel: medium, two
//!   arguments (the asker's query id, the operation: `LOOKUP` or
//!   `PUBLISH`), the AM tag of the asker's translation entry; payload: the
//!   service (`LOOKUP`), or the 32-byte endpoint name then the service
//!   (`PUBLISH`);
//! - `ServiceAnswer` (wire kind 13) on the reply channel: three arguments
//!   (the query id, a status, the check of the service asked:
//!   [`service_check`]); medium with the 32-byte name when a look-up found
//!   one (`OK`), else short without payload. Statuses: `OK` (found, or
//!   stored), `MISSING` (a look-up: nothing yet), `TAKEN` (a publish: the
//!   service has a name already), `FULL` (a publish: the table is full),
//!   `REFUSED` (the asker is not mapped here, or its tag is not ours).
//!
//! Rules: a service is published once; a second publish, by anyone, is
//! `TAKEN` and the first name stays. Every field from the network is
//! checked (channel, category, argument count, operation, service length
//! and characters, the name being one ramp makes, the status fitting the
//! operation asked); anything else is dropped and counted
//! (`corrupt_dropped`). An answer is taken only from the address the query
//! went to, for a query of ours still waiting, with the check of the
//! service asked; else it is dropped and counted (`stale_dropped`), so no
//! answer can give a look-up another service's name. Memory: at most
//! `MAX_SERVICES` names are kept (then `FULL`); at most `MAX_PENDING`
//! queries wait at once (then `Resource`); an owner keeps nothing for a
//! query it answered, and answers only while fewer than
//! `MAX_QUEUED_TO_PEER` messages to the asker are unfinished (a flood of
//! queries whose answers are never taken is dropped and counted in
//! `stale_dropped`).

use std::net::SocketAddr;

use super::handler_names::MAX_QUEUED_TO_PEER;
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::name::EndpointName;
use crate::am::handler::tables::tag_accepts;
use crate::am::state::services::{Pending, ServiceAnswer};
use crate::error::{Error, Result};
use crate::time::{Instant, MILLIS};
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Longest service string, in bytes.
pub const MAX_SERVICE: usize = 48;
/// Queries waiting for their answer at once (threads, nested handlers).
pub const MAX_PENDING_SERVICE_QUERIES: usize = 64;

const LOOKUP: u32 = 0;
const PUBLISH: u32 = 1;

const OK: u32 = 0;
const MISSING: u32 = 1;
const TAKEN: u32 = 2;
const FULL: u32 = 3;
const REFUSED: u32 = 4;

/// Whether `s` is a service string: 1..=48 of `A-Z a-z 0-9 . _ -`.
pub fn valid_service(s: &[u8]) -> bool {
    (1..=MAX_SERVICE).contains(&s.len())
        && s.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// FNV-1a, 64 bits, of the service string: the same in every process and
/// every version (the SPMD layer picks a service's owner rank with it).
pub fn service_hash(service: &[u8]) -> u64 {
    service.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The check an answer carries: 32 bits of the service's hash.
pub fn service_check(service: &[u8]) -> u32 {
    let h = service_hash(service);
    (h ^ (h >> 32)) as u32
}

/// A query sent with [`Endpoint::ask_service`]: take its answer with
/// [`Endpoint::take_service_answer`], or give it up with
/// [`Endpoint::forget_service_query`].
#[derive(Debug)]
pub struct ServiceQuery {
    id: u32,
    /// How long its answer may take before the asker gives up: the peer
    /// timeout plus a second (the protocol gives up on an owner that does
    /// not acknowledge within the peer timeout; one that acknowledges and
    /// never polls is not noticed otherwise).
    pub answer_within: crate::time::Nanos,
}

/// A query's payload: (service, the name to publish).
fn parse_query(op: u32, payload: &[u8]) -> Option<(&[u8], Option<EndpointName>)> {
    match op {
        LOOKUP => valid_service(payload).then_some((payload, None)),
        PUBLISH if payload.len() > 32 => {
            let (n, service) = payload.split_at(32);
            let name = EndpointName(n.try_into().ok()?);
            (valid_service(service) && name.to_addr().is_some()).then_some((service, Some(name)))
        }
        _ => None,
    }
}

/// An answer's fields, for a look-up (`publish` false) or a publish.
fn parse_answer(
    publish: bool,
    status: u32,
    category: Category,
    payload: &[u8],
) -> Option<ServiceAnswer> {
    let short = category == Category::Short && payload.is_empty();
    Some(match (publish, status) {
        (false, OK) if category == Category::Medium && payload.len() == 32 => {
            let n = EndpointName(payload.try_into().ok()?);
            n.to_addr()?;
            ServiceAnswer::Found(n)
        }
        (false, MISSING) if short => ServiceAnswer::Missing,
        (true, OK) if short => ServiceAnswer::Published,
        (true, TAKEN) if short => ServiceAnswer::Taken,
        (true, FULL) if short => ServiceAnswer::Full,
        (_, REFUSED) if short => ServiceAnswer::Refused,
        _ => return None,
    })
}

/// An answer on the wire: (status, payload).
fn encode_answer(a: ServiceAnswer) -> (u32, Vec<u8>) {
    match a {
        ServiceAnswer::Found(n) => (OK, n.0.to_vec()),
        ServiceAnswer::Published => (OK, Vec::new()),
        ServiceAnswer::Missing => (MISSING, Vec::new()),
        ServiceAnswer::Taken => (TAKEN, Vec::new()),
        ServiceAnswer::Full => (FULL, Vec::new()),
        ServiceAnswer::Refused | ServiceAnswer::Unreachable => (REFUSED, Vec::new()),
    }
}

impl Endpoint {
    /// Sends one query about `service` to the endpoint at translation index
    /// `dest`: a look-up, or (with `publish`) "store this name". When
    /// `dest` is this endpoint, its own table answers at once. `BadArg` for
    /// a bad service, an unmapped index or a name that is no endpoint's;
    /// `NotInit` before AM_SetExpectedResources; `Resource` with too many
    /// queries waiting.
    pub fn ask_service(
        &self,
        dest: u32,
        service: &[u8],
        publish: Option<EndpointName>,
    ) -> Result<ServiceQuery> {
        if !valid_service(service) {
            return Err(Error::BadArg(
                "a service is 1..48 characters of A-Z a-z 0-9 . _ -",
            ));
        }
        if publish.is_some_and(|n| n.to_addr().is_none()) {
            return Err(Error::BadArg("the name to publish is no endpoint's name"));
        }
        self.with(|st| {
            if st.depth.is_none() {
                return Err(Error::NotInit(
                    "AM_SetExpectedResources has not been called",
                ));
            }
            let e = st
                .table
                .mapped_entry(dest)
                .ok_or(Error::BadArg("destination index is not mapped"))?;
            let (addr, tag) = (e.addr, e.tag);
            if st.services.pending.len() >= MAX_PENDING_SERVICE_QUERIES {
                return Err(Error::Resource("too many name queries at once"));
            }
            let id = st.services.next_qid;
            st.services.next_qid = id.wrapping_add(1);
            let local = addr == self.addr();
            let answer = local.then(|| st.services.serve(service, publish));
            st.services.pending.insert(
                id,
                Pending {
                    addr,
                    publish: publish.is_some(),
                    check: service_check(service),
                    answer,
                },
            );
            if !local {
                let (op, mut payload) = match publish {
                    None => (LOOKUP, Vec::with_capacity(service.len())),
                    Some(n) => (PUBLISH, n.0.to_vec()),
                };
                payload.extend_from_slice(service);
                let meta = MsgMeta {
                    tag,
                    ..MsgMeta::new(MsgKind::ServiceQuery, Category::Medium, 0, &[id, op])
                };
                let now = st.clock.now();
                st.send_message(now, addr, CHANNEL_REQUEST, meta, payload);
            }
            let bound = st.proto.config().peer_timeout.saturating_add(1000 * MILLIS);
            Ok(ServiceQuery {
                id,
                answer_within: bound,
            })
        })
    }

    /// The answer to `q` once it came (the query is then done), else None.
    /// Takes what earlier polls delivered; polls nothing itself.
    pub fn take_service_answer(&self, q: &ServiceQuery) -> Option<ServiceAnswer> {
        self.with(|st| {
            let a = st.services.pending.get(&q.id)?.answer?;
            st.services.pending.remove(&q.id);
            Some(a)
        })
    }

    /// Gives up `q`: a late answer to it is dropped and counted.
    pub fn forget_service_query(&self, q: ServiceQuery) {
        self.with(|st| st.services.pending.remove(&q.id));
    }
}

impl EpState {
    /// A `ServiceQuery` or `ServiceAnswer` from `from` (`names.rs` hands
    /// them over).
    pub(in crate::am) fn service_delivered(
        &mut self,
        from: SocketAddr,
        channel: u8,
        meta: &MsgMeta,
        payload: &[u8],
        now: Instant,
    ) {
        match (meta.kind, channel) {
            (MsgKind::ServiceQuery, CHANNEL_REQUEST)
                if meta.category == Category::Medium && meta.nargs == 2 =>
            {
                let Some((service, publish)) = parse_query(meta.args[1], payload) else {
                    self.stats.corrupt_dropped += 1;
                    return;
                };
                if self.proto.unfinished_to(&from) >= MAX_QUEUED_TO_PEER {
                    // a flood the peer does not take the answers of: dropped
                    self.stats.stale_dropped += 1;
                    return;
                }
                let mapped = self.table.index_of(&from).is_some();
                let answer = if !mapped || !tag_accepts(self.tag, meta.tag) {
                    ServiceAnswer::Refused
                } else {
                    self.services.serve(service, publish)
                };
                let (status, body) = encode_answer(answer);
                let category = if body.is_empty() {
                    Category::Short
                } else {
                    Category::Medium
                };
                let args = [meta.args[0], status, service_check(service)];
                let reply = MsgMeta::new(MsgKind::ServiceAnswer, category, 0, &args);
                self.send_message(now, from, CHANNEL_REPLY, reply, body);
            }
            (MsgKind::ServiceAnswer, CHANNEL_REPLY) if meta.nargs == 3 => {
                let [qid, status, check] = [meta.args[0], meta.args[1], meta.args[2]];
                let Some(p) = self
                    .services
                    .pending
                    .get_mut(&qid)
                    .filter(|p| p.addr == from && p.answer.is_none() && p.check == check)
                else {
                    self.stats.stale_dropped += 1;
                    return;
                };
                match parse_answer(p.publish, status, meta.category, payload) {
                    Some(a) => p.answer = Some(a),
                    None => self.stats.corrupt_dropped += 1,
                }
            }
            _ => self.stats.corrupt_dropped += 1,
        }
    }

    /// A query of ours the protocol gave up on (the owner is gone).
    pub(in crate::am) fn service_failed(&mut self, to: SocketAddr, meta: &MsgMeta) {
        if meta.kind != MsgKind::ServiceQuery {
            return;
        }
        if let Some(p) = self.services.pending.get_mut(&meta.args[0]) {
            if p.addr == to && p.answer.is_none() {
                p.answer = Some(ServiceAnswer::Unreachable);
            }
        }
    }
}

#[cfg(test)]
mod tests;
