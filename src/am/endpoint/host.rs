//! The host a bundle's endpoints run on: the clock they keep time by and
//! the network they open their transports on. A real process has the
//! system's clock and sockets (`Host::default()`); the simulator gives a
//! simulated process virtual time and a simulated network (`sim::World`),
//! so that whole endpoints, AM layer included, run there unchanged.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::net::Transports;

/// Opens an endpoint's transports on a simulated network: at `addr`, or
/// at an address of its choice (None).
pub(crate) type OpenTransports =
    Arc<dyn Fn(&Config, Option<SocketAddr>) -> io::Result<Transports> + Send + Sync>;

/// Makes an endpoint's 32-byte secret from a simulation's seed.
pub(crate) type MakeSecret = Arc<dyn Fn() -> [u8; 32] + Send + Sync>;

/// A bundle's clock and network (cheap to clone).
#[derive(Clone, Default)]
pub(crate) struct Host {
    pub(crate) clock: Clock,
    /// None: the configured transports (`net::open`).
    pub(crate) network: Option<OpenTransports>,
    /// None: the operating system's randomness; the simulator's seeded
    /// secrets make a run repeat exactly.
    pub(crate) secret: Option<MakeSecret>,
}

impl Host {
    /// The transports of a new endpoint: at `addr` (one a transaction log
    /// gave back), or wherever the configuration says (None).
    pub(crate) fn open_transports(
        &self,
        cfg: &Config,
        addr: Option<SocketAddr>,
    ) -> io::Result<Transports> {
        match (&self.network, addr) {
            (Some(open), _) => open(cfg, addr),
            (None, Some(a)) => crate::net::open_at(cfg, a, &self.clock),
            (None, None) => crate::net::open(cfg, &self.clock),
        }
    }
}
