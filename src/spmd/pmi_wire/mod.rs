//! What the PMI-1 and PMI-2 clients share: the connection to the process
//! manager (read without blocking, the caller's `progress` between attempts;
//! `conn`), the two message formats (`format`), and the all-gather over a
//! key-value space (`allgather`).

mod allgather;
mod conn;
mod format;

pub(crate) use allgather::{kvs_allgather, kvs_share_job_key, Kvs, MAX_CHUNK_HEX};
pub(crate) use conn::{connect_env, env_num, idle, Conn, Stream};
pub(crate) use format::{
    bad_reply, format_v1, format_v2, frame_v2, hash64, hex, invalid, parse_v1, parse_v2, text_v2,
    Msg,
};
