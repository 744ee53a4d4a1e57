//! The two message formats, and the helpers both clients use to build
//! and check messages (hex, the job-id hash, the errors for bad replies).
//!
//! Wire formats (as MPICH's `src/pmi/src/pmi_wire.c`, Hydra's proxy and
//! Slurm's `mpi/pmi2` plugin read and write them):
//!
//! * PMI-1: one line per message, `cmd=NAME key=value key=value\n`; tokens
//!   are separated by spaces, a value runs to the next space or newline.
//!   MPICH 4.1 and later escape a space or backslash inside a value with a
//!   backslash; Hydra 4.0 does not. Every value this client sends is made of
//!   characters that need no escaping (hex, decimal numbers, the kvs name).
//! * PMI-2: a 6-character decimal length (MPICH writes `%6u`, right
//!   aligned; Slurm writes `%-6d`, left aligned; both are read here), then
//!   that many bytes of `cmd=NAME;key=value;key=value;`. There is no escape
//!   for `;` that all servers accept, so values never contain one.

use std::io;

pub(crate) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The error for a reply that is not what `command` expects.
pub(crate) fn bad_reply(command: &str, reply: &str, why: &str) -> io::Error {
    invalid(format!(
        "PMI {command}: {why} (reply: {:?})",
        reply.trim_end()
    ))
}

/// A parsed message: its command and its other key-value pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Msg {
    pub cmd: String,
    pub pairs: Vec<(String, String)>,
    /// The text it was parsed from, for error messages.
    pub raw: String,
}

impl Msg {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Checks that this is the reply `want` to `command`, and that its `rc`
    /// (when present) is 0.
    pub(crate) fn expect(&self, command: &str, want: &str) -> io::Result<()> {
        if self.cmd != want {
            return Err(bad_reply(
                command,
                &self.raw,
                &format!("expected cmd={want}, got cmd={}", self.cmd),
            ));
        }
        if let Some(rc) = self.get("rc") {
            if rc.trim() != "0" {
                let why = self
                    .get("errmsg")
                    .or_else(|| self.get("msg"))
                    .unwrap_or("no message");
                return Err(bad_reply(
                    command,
                    &self.raw,
                    &format!("the process manager returned rc={rc} ({why})"),
                ));
            }
        }
        Ok(())
    }

    /// A required value.
    pub(crate) fn need(&self, command: &str, key: &str) -> io::Result<&str> {
        self.get(key)
            .ok_or_else(|| bad_reply(command, &self.raw, &format!("no {key}= in the reply")))
    }

    /// A required integer value.
    pub(crate) fn need_num(&self, command: &str, key: &str) -> io::Result<i64> {
        let v = self.need(command, key)?;
        v.trim()
            .parse()
            .map_err(|_| bad_reply(command, &self.raw, &format!("{key}={v:?} is not a number")))
    }
}

/// Parses a PMI-1 line: `cmd=NAME key=value ...` (backslash escapes in
/// values undone, as MPICH 4.1 writes them).
pub(crate) fn parse_v1(command: &str, line: &str) -> io::Result<Msg> {
    let mut toks = Vec::new();
    let mut cur = String::new();
    let mut in_tok = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_tok {
                    toks.push(std::mem::take(&mut cur));
                    in_tok = false;
                }
            }
            '\\' => {
                in_tok = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c => {
                in_tok = true;
                cur.push(c);
            }
        }
    }
    if in_tok {
        toks.push(cur);
    }
    let mut it = toks.into_iter();
    let first = it
        .next()
        .ok_or_else(|| bad_reply(command, line, "empty reply"))?;
    let cmd = first
        .strip_prefix("cmd=")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad_reply(command, line, "reply does not start with cmd="))?
        .to_string();
    let pairs = it
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (t, String::new()),
        })
        .collect();
    Ok(Msg {
        cmd,
        pairs,
        raw: line.to_string(),
    })
}

/// Parses a PMI-2 body: `cmd=NAME;key=value;...;`.
pub(crate) fn parse_v2(command: &str, body: &str) -> io::Result<Msg> {
    let mut parts = body.split(';').filter(|p| !p.is_empty());
    let first = parts
        .next()
        .ok_or_else(|| bad_reply(command, body, "empty reply"))?;
    let cmd = first
        .strip_prefix("cmd=")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad_reply(command, body, "reply does not start with cmd="))?
        .to_string();
    let mut pairs = Vec::new();
    for p in parts {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| bad_reply(command, body, &format!("token {p:?} has no '='")))?;
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(Msg {
        cmd,
        pairs,
        raw: body.to_string(),
    })
}

/// Whether a value can be sent as is in either format.
fn plain(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|c| c.is_ascii_graphic() && !matches!(c, b'\\' | b';' | b'='))
}

/// Formats a PMI-1 command line.
pub(crate) fn format_v1(cmd: &str, pairs: &[(&str, &str)]) -> io::Result<String> {
    let mut s = format!("cmd={cmd}");
    for (k, v) in pairs {
        if !plain(v) {
            return Err(invalid(format!(
                "PMI {cmd}: value {v:?} for {k} cannot be sent in a PMI-1 message"
            )));
        }
        s.push(' ');
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s.push('\n');
    Ok(s)
}

/// Formats a PMI-2 message, length included.
pub(crate) fn format_v2(cmd: &str, pairs: &[(&str, &str)]) -> io::Result<Vec<u8>> {
    let mut body = format!("cmd={cmd};");
    for (k, v) in pairs {
        if !plain(v) {
            return Err(invalid(format!(
                "PMI {cmd}: value {v:?} for {k} cannot be sent in a PMI-2 message"
            )));
        }
        body.push_str(k);
        body.push('=');
        body.push_str(v);
        body.push(';');
    }
    if body.len() > 999_999 {
        return Err(invalid(format!(
            "PMI {cmd}: message of {} bytes does not fit PMI-2's 6-digit length",
            body.len()
        )));
    }
    Ok(frame_v2(&body))
}

/// Prefixes a PMI-2 body with its length (`%6u`, as MPICH writes it).
pub(crate) fn frame_v2(body: &str) -> Vec<u8> {
    let mut out = format!("{:>6}", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Free text made safe for a PMI-2 value: no `;`, `=`, or control chars.
pub(crate) fn text_v2(msg: &str) -> String {
    let t: String = msg
        .chars()
        .take(200)
        .map(|c| match c {
            ';' | '=' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if t.trim().is_empty() {
        "abort".to_string()
    } else {
        t
    }
}

pub(crate) fn hex(data: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for &b in data {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    fn nib(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// FNV-1a, 64 bits: the job id from the kvs name / job id string.
pub(crate) fn hash64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_parse() {
        let m = parse_v1("get", "cmd=get_result rc=0 msg=success value=00ff").unwrap();
        assert_eq!(m.cmd, "get_result");
        assert_eq!(m.get("value"), Some("00ff"));
        m.expect("get", "get_result").unwrap();
        let m = parse_v1("x", "cmd=abc  k=a\\ b flag").unwrap();
        assert_eq!(m.get("k"), Some("a b"));
        assert_eq!(m.get("flag"), Some(""));
        assert!(parse_v1("x", "").is_err());
        assert!(parse_v1("x", "foo=bar").is_err());
        assert!(parse_v1("x", "cmd= a=b").is_err());
        let m = parse_v1(
            "get",
            "cmd=get_result rc=-1 msg=key_k_not_found value=unknown",
        )
        .unwrap();
        let e = m.expect("get", "get_result").unwrap_err().to_string();
        assert!(e.contains("rc=-1") && e.contains("key_k_not_found"), "{e}");
        let e = m.expect("get", "barrier_out").unwrap_err().to_string();
        assert!(e.contains("expected cmd=barrier_out"), "{e}");
    }

    #[test]
    fn v2_parse_and_format() {
        let m = parse_v2("kvs-get", "cmd=kvs-get-response;found=TRUE;value=ab;rc=0;").unwrap();
        assert_eq!(m.cmd, "kvs-get-response");
        assert_eq!(m.get("found"), Some("TRUE"));
        assert!(parse_v2("x", "cmd=a;novalue;").is_err());
        assert!(parse_v2("x", ";;").is_err());
        let f = format_v2("kvs-put", &[("key", "k"), ("value", "00")]).unwrap();
        assert_eq!(f, b"    27cmd=kvs-put;key=k;value=00;");
        assert!(format_v2("kvs-put", &[("key", "a;b")]).is_err());
        assert!(format_v1("put", &[("value", "a b")]).is_err());
        assert_eq!(format_v1("get_maxes", &[]).unwrap(), "cmd=get_maxes\n");
    }

    #[test]
    fn hex_roundtrip() {
        let d: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&d)).unwrap(), d);
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }
}
