//! The ground floor: every call into the operating system that std does not
//! offer safely (interface addresses, the raw clock, poll, recvmmsg and sendmmsg,
//! signals, inherited descriptors, AWS-LC's GCM context for a MAC over pieces and a GHASH of ramp's own where it is faster (`ghash.rs`: 256-bit VPCLMULQDQ), the CPU's CRC32C instruction, bulk copies that avoid glibc's slow `rep movsb` on AMD (`copy.rs`), shared-memory mappings (memfd) and passing their descriptors (SCM_RIGHTS), copies to and from another process (Cross Memory Attach), the PMIx library opened with dlopen, the kernel's randomness (`random.rs`: the crate's only source of it), a locked
//! memory-mapped file), as thin safe functions; and the endpoint's re-entrant
//! lock, whose release is a plain store (`relock.rs`). With `ffi/` it is the only
//! module allowed `unsafe` (the crate root denies it elsewhere); each block
//! says why it is sound in a `SAFETY:` comment. It imports nothing of ramp's.

mod clock;
mod cma;
mod copy;
mod crc;
mod fdpass;
mod ghash;
pub(crate) mod gmac;
mod ifaddrs;
mod mmap;
pub(crate) mod pmix;
mod poll;
mod process;
pub(crate) mod random;
mod relock;
mod shm;
mod shm_region;
mod socket;
mod udp_path;

pub(crate) use clock::{clock_counter, monotonic_nanos, secs_since, unix_nanos};
pub(crate) use cma::{read_from_process, write_to_process};
pub(crate) use copy::{copy_bytes, copy_raw, extend_bytes};
pub(crate) use crc::{
    copy_sum, copy_summed, crc32c_append_long, crc32c_append_summed, crc32c_extend, crc32c_short,
    extend_sum, SUM_BLOCK,
};
#[cfg(test)]
pub(crate) use fdpass::memfd_unsealed;
pub(crate) use fdpass::{euid, memfd, recv_with_fd, send_with_fd, size_sealed};
pub(crate) use ifaddrs::{interface_addresses, IfAddr};
pub(crate) use mmap::MappedFile;
pub(crate) use poll::{poll_fds, wait_readable, wait_readable_ns};
pub(crate) use process::{adopt_inherited_socket, at_exit, kill};
pub(crate) use relock::{ReGuard, ReLock};
pub(crate) use shm::{pid_alive, SharedMap};
pub(crate) use shm_region::{OwnedRegion, PeerRegion, MAX_REGION};
pub(crate) use socket::{is_path_error, BatchReceiver, BatchSender, Gathered, Refused};
pub(crate) use udp_path::{enable_gro, path_datagram, probe_gso, set_fragmenting};
