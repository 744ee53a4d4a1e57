//! An endpoint's table of names published by others, and its own queries
//! waiting for their answers (`names/services.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::am::handler::name::EndpointName;
use crate::fxhash::FxHashMap;

/// Names an endpoint keeps for others.
pub const MAX_SERVICES: usize = 4096;

/// How a query ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceAnswer {
    /// A look-up: the name published under the service.
    Found(EndpointName),
    /// A look-up: nothing is published under the service (yet).
    Missing,
    /// A publish: the name is stored.
    Published,
    /// A publish: the service has a name already (the first one stays).
    Taken,
    /// A publish: the owner's table is full.
    Full,
    /// The owner does not take queries from us (not mapped, another tag).
    Refused,
    /// The protocol gave up on the query: the owner is gone.
    Unreachable,
}

pub(in crate::am) struct Pending {
    pub(in crate::am) addr: SocketAddr,
    pub(in crate::am) publish: bool,
    pub(in crate::am) check: u32,
    pub(in crate::am) answer: Option<ServiceAnswer>,
}

/// An endpoint's table of published names, and its queries waiting.
#[derive(Default)]
pub(crate) struct Services {
    /// Keys come from peers: the standard (keyed) hash, not Fx.
    pub(in crate::am) table: HashMap<Box<[u8]>, EndpointName>,
    pub(in crate::am) pending: FxHashMap<u32, Pending>,
    pub(in crate::am) next_qid: u32,
}

impl Services {
    /// What the owner answers to a query (the asker was accepted).
    pub(in crate::am) fn serve(
        &mut self,
        service: &[u8],
        publish: Option<EndpointName>,
    ) -> ServiceAnswer {
        match publish {
            None => match self.table.get(service) {
                Some(&n) => ServiceAnswer::Found(n),
                None => ServiceAnswer::Missing,
            },
            Some(_) if self.table.contains_key(service) => ServiceAnswer::Taken,
            Some(_) if self.table.len() >= MAX_SERVICES => ServiceAnswer::Full,
            Some(n) => {
                self.table.insert(service.into(), n);
                ServiceAnswer::Published
            }
        }
    }
}
