//! The one error enum inside ramp, and its mapping to AM-2 return codes.
//! Also the status codes handed to handler 0 for returned messages.

use std::fmt;

/// AM-2 function return codes (stable integers, never reused).
pub const AM_OK: i32 = 0;
pub const AM_ERR_NOT_INIT: i32 = 1;
pub const AM_ERR_BAD_ARG: i32 = 2;
pub const AM_ERR_RESOURCE: i32 = 3;
pub const AM_ERR_NOT_SENT: i32 = 4;
pub const AM_ERR_IN_USE: i32 = 5;

/// Every way a ramp call can fail. Each carries a short reason for verbose errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The layer or the endpoint is not initialised (`AM_ERR_NOT_INIT`).
    NotInit(&'static str),
    /// An argument is invalid; nothing was changed (`AM_ERR_BAD_ARG`).
    BadArg(&'static str),
    /// A resource is exhausted, or the call is made in the wrong state (`AM_ERR_RESOURCE`).
    Resource(&'static str),
    /// A message could not be sent (`AM_ERR_NOT_SENT`).
    NotSent(&'static str),
    /// The resource is busy right now; try again (`AM_ERR_IN_USE`).
    InUse(&'static str),
}

impl Error {
    /// The AM-2 return code for this error.
    pub fn code(&self) -> i32 {
        match self {
            Error::NotInit(_) => AM_ERR_NOT_INIT,
            Error::BadArg(_) => AM_ERR_BAD_ARG,
            Error::Resource(_) => AM_ERR_RESOURCE,
            Error::NotSent(_) => AM_ERR_NOT_SENT,
            Error::InUse(_) => AM_ERR_IN_USE,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Error::NotInit(r)
            | Error::BadArg(r)
            | Error::Resource(r)
            | Error::NotSent(r)
            | Error::InUse(r) => r,
        }
    }
}

/// Name of an AM return code, for messages.
pub fn code_name(code: i32) -> &'static str {
    match code {
        AM_OK => "AM_OK",
        AM_ERR_NOT_INIT => "AM_ERR_NOT_INIT",
        AM_ERR_BAD_ARG => "AM_ERR_BAD_ARG",
        AM_ERR_RESOURCE => "AM_ERR_RESOURCE",
        AM_ERR_NOT_SENT => "AM_ERR_NOT_SENT",
        AM_ERR_IN_USE => "AM_ERR_IN_USE",
        _ => "AM_ERR_UNKNOWN",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", code_name(self.code()), self.reason())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Why a message came back to its sender's handler 0 (AM-2 status codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReturnStatus {
    BadArgs = 1,
    BadEntry = 2,
    BadTag = 3,
    BadHandler = 4,
    BadSegOff = 5,
    BadLength = 6,
    BadEndpoint = 7,
    Congestion = 8,
    Unreachable = 9,
    ReplyRejected = 10,
}

impl ReturnStatus {
    pub fn from_u8(v: u8) -> Option<ReturnStatus> {
        use ReturnStatus::*;
        Some(match v {
            1 => BadArgs,
            2 => BadEntry,
            3 => BadTag,
            4 => BadHandler,
            5 => BadSegOff,
            6 => BadLength,
            7 => BadEndpoint,
            8 => Congestion,
            9 => Unreachable,
            10 => ReplyRejected,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use ReturnStatus::*;
        match self {
            BadArgs => "EBADARGS",
            BadEntry => "EBADENTRY",
            BadTag => "EBADTAG",
            BadHandler => "EBADHANDLER",
            BadSegOff => "EBADSEGOFF",
            BadLength => "EBADLENGTH",
            BadEndpoint => "EBADENDPOINT",
            Congestion => "ECONGESTION",
            Unreachable => "EUNREACHABLE",
            ReplyRejected => "EREPLYREJECTED",
        }
    }
}
