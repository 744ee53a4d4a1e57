//! Pull-style receive (`include/ramp.h`, section "pull-style receive"):
//! `ramp_Drain` fills a caller's array with the delivered messages instead
//! of calling their handlers; `ramp_DrainRelease` ends them early. The AM
//! layer's side, and the lifetime rules, are in `am/pull.rs`.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use super::ramp::message_parts;
use super::types::{eb_t, ep_t, handler_t};
use super::{boundary, bundle, ep_handle, guard_or, need, report, with_bundle, with_endpoint};
use crate::am::{self, LockWait, Message, Pulled};
use crate::error::{Error, Result, AM_ERR_RESOURCE};
use crate::wire::{Category, MAX_ARGS};

/// `ramp_msg_t.flags`: the message is a request (its handler may reply unless
/// it was returned).
pub const RAMP_MSG_REQUEST: u8 = 1;
/// `ramp_msg_t.flags`: a message of ours returned to handler 0.
pub const RAMP_MSG_RETURNED: u8 = 2;

/// One delivered message, as `ramp_Drain` reports it (112 bytes on LP64).
#[repr(C)]
pub struct ramp_msg_t {
    /// Live until this thread's next ramp_Drain or ramp_DrainRelease.
    pub token: *mut c_void,
    /// The endpoint that received the message.
    pub ep: ep_t,
    /// Medium: the library's buffer (writable); long: in the segment; else NULL.
    pub buf: *mut c_void,
    pub nbytes: usize,
    /// The first `nargs` are the message's; the others are 0.
    pub args: [i32; 16],
    /// The sender's index in the receiver's translation table (-1 if none).
    pub source_id: i32,
    /// Returned messages: the E* status (as handler 0 gets it); else 0.
    pub status: i32,
    /// Returned messages: the op_t opcode (as handler 0 gets it); else 0.
    pub opcode: i32,
    /// The handler index the message was sent to.
    pub handler: handler_t,
    /// A ramp_category_t value.
    pub category: u8,
    pub nargs: u8,
    /// RAMP_MSG_REQUEST, RAMP_MSG_RETURNED.
    pub flags: u8,
}

fn fill(m: &mut ramp_msg_t, p: &Pulled<'_>) {
    m.token = p.token as usize as *mut c_void;
    m.ep = ep_handle(p.endpoint);
    m.buf = p.addr as *mut c_void;
    m.nbytes = p.len;
    let n = p.args.len().min(MAX_ARGS);
    for (i, a) in m.args.iter_mut().enumerate() {
        *a = if i < n { p.args[i] as i32 } else { 0 };
    }
    m.source_id = p.source_id;
    let (status, opcode) = p.returned.map_or((0, 0), |(s, o)| (s as i32, o));
    m.status = status;
    m.opcode = opcode;
    m.handler = p.handler;
    m.category = p.category as u8;
    m.nargs = n as u8;
    m.flags = if p.is_request { RAMP_MSG_REQUEST } else { 0 }
        | if p.returned.is_some() {
            RAMP_MSG_RETURNED
        } else {
            0
        };
}

#[no_mangle]
pub unsafe extern "C" fn ramp_Drain(
    eb: eb_t,
    msgs: *mut ramp_msg_t,
    max: c_int,
    count: *mut c_int,
) -> c_int {
    boundary("ramp_Drain", || {
        need(count)?;
        // SAFETY: checked non-null; the caller passes a pointer to an int it owns.
        unsafe { count.write(0) };
        if max < 0 {
            return Err(Error::BadArg("max must not be negative"));
        }
        if max > 0 && msgs.is_null() {
            return Err(Error::BadArg("NULL message array"));
        }
        check_array(msgs, max)?;
        let b = bundle(eb)?;
        let mut out = Records::new(msgs, max);
        // SAFETY: `msgs` holds `max` records by contract, checked above.
        let r = b.drain(max as usize, |p| unsafe { out.put(p) });
        // SAFETY: checked non-null above.
        unsafe { count.write(out.written as c_int) };
        out.finish(r)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_DrainWait(
    eb: eb_t,
    msgs: *mut ramp_msg_t,
    max: c_int,
    count: *mut c_int,
    spin_us: c_int,
) -> c_int {
    // SAFETY: the caller's pointers, as ramp.h documents them.
    boundary("ramp_DrainWait", || unsafe {
        drain_wait(eb, msgs, max, count, spin_us)
    })
}

/// ramp_DrainWait's work (also ramp_DrainOn's).
///
/// # Safety
/// `count` must be NULL or point to an int; `msgs` NULL or hold `max` records.
unsafe fn drain_wait(
    eb: eb_t,
    msgs: *mut ramp_msg_t,
    max: c_int,
    count: *mut c_int,
    spin_us: c_int,
) -> Result<()> {
    need(count)?;
    // SAFETY: checked non-null; the caller passes a pointer to an int it owns.
    unsafe { count.write(0) };
    if max < 0 {
        return Err(Error::BadArg("max must not be negative"));
    }
    if !(0..=1_000_000).contains(&spin_us) {
        return Err(Error::BadArg(
            "spin_us must be 0..1000000 (at most a second)",
        ));
    }
    if max > 0 && msgs.is_null() {
        return Err(Error::BadArg("NULL message array"));
    }
    check_array(msgs, max)?;
    let spin = spin_us as u64 * crate::time::MICROS;
    let mut out = Records::new(msgs, max);
    let r = with_bundle(eb, |b| {
        // SAFETY: `msgs` holds `max` records by contract, checked above.
        // (One drain hands out at most `max` messages: drain_wait returns
        // after the first drain that hands out any.)
        b.drain_wait(max as usize, spin, |p| unsafe { out.put(p) })
    });
    // SAFETY: checked non-null above.
    unsafe { count.write(out.written as c_int) };
    out.finish(r)
}

/// Refuses an array of `max` records that is misaligned or wraps around
/// the address space (`max` >= 0, checked by the caller).
fn check_array(msgs: *mut ramp_msg_t, max: c_int) -> Result<()> {
    if max > 0 && !super::sane_array(msgs.cast_const(), max as usize) {
        return Err(Error::BadArg(
            "message array misaligned or wrapping around the address space",
        ));
    }
    Ok(())
}

/// The caller's array of `max` records, filled in order by a drain: the
/// index is checked against `max` before every write, in every build.
struct Records {
    msgs: *mut ramp_msg_t,
    max: usize,
    written: usize,
    /// Messages handed out past `max` (never: the drains take `max`), not
    /// written; the call then fails.
    lost: bool,
}

impl Records {
    fn new(msgs: *mut ramp_msg_t, max: c_int) -> Records {
        Records {
            msgs,
            max: max.max(0) as usize,
            written: 0,
            lost: false,
        }
    }

    /// Writes the next record, if the array has room for it.
    ///
    /// # Safety
    /// `msgs` must hold `max` writable records (when `max` > 0).
    unsafe fn put(&mut self, p: &Pulled<'_>) {
        if self.written >= self.max {
            self.lost = true;
            return;
        }
        // SAFETY: written < max (checked above) and the array holds `max`
        // aligned records (this function's contract, `check_array`).
        let m = unsafe { &mut *self.msgs.add(self.written) };
        fill(m, p);
        self.written += 1;
    }

    /// The drain's result, or an error when a message could not be written.
    fn finish<T>(self, r: Result<T>) -> Result<()> {
        r?;
        if self.lost {
            return Err(Error::Resource(
                "the drain handed out more messages than the array holds",
            ));
        }
        Ok(())
    }
}

/// A drain described once (`ramp_DrainOn`): `ramp_DrainWait`'s arguments in
/// one struct, for callers through a foreign-function interface, which pay
/// for each argument they convert and for each value they read back
/// (CPython's ctypes: about 30 ns each).
#[repr(C)]
pub struct ramp_drain_t {
    pub eb: eb_t,
    pub msgs: *mut ramp_msg_t,
    pub max: i32,
    /// Written by the call: how many messages were handed out.
    pub count: i32,
    pub spin_us: i32,
    /// 0: any thread may drain with this descriptor; else the
    /// `ramp_DrainThread()` of the only thread that may (any other's
    /// `ramp_DrainOn` returns `RAMP_DRAIN_NOT_MINE`, the descriptor untouched).
    pub thread: i32,
}

/// `ramp_DrainOn`'s answer to a thread other than its descriptor's `thread`:
/// nothing done (no drain, the descriptor not written). No error code is
/// this low.
pub const RAMP_DRAIN_NOT_MINE: c_int = -1000;

thread_local! {
    /// This thread's `ramp_DrainThread()` (0: not yet asked).
    static DRAIN_THREAD: Cell<i32> = const { Cell::new(0) };
}
/// The next thread's `ramp_DrainThread()`.
static NEXT_DRAIN_THREAD: AtomicI32 = AtomicI32::new(1);

/// The calling thread's id for `ramp_drain_t.thread`: above 0 and its own
/// for the process's life, or 0 once 2^31 - 1 threads have been given one.
fn drain_thread() -> i32 {
    DRAIN_THREAD.with(|c| {
        if c.get() == 0 {
            let next = NEXT_DRAIN_THREAD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                (v > 0).then(|| v.wrapping_add(1).max(0))
            });
            c.set(next.unwrap_or(0));
        }
        c.get()
    })
}

/// The calling thread's id, for `ramp_drain_t.thread`: greater than 0 and
/// never another thread's (0: none left; the field cannot be used).
#[no_mangle]
pub extern "C" fn ramp_DrainThread() -> c_int {
    guard_or("ramp_DrainThread", 0, drain_thread)
}

/// `ramp_DrainWait(d->eb, d->msgs, d->max, &d->count, d->spin_us)`, which
/// returns the count (0 or more) when it succeeds, else minus its error
/// code (the count still in `d->count`); `RAMP_DRAIN_NOT_MINE` to a thread
/// the descriptor's `thread` excludes.
#[no_mangle]
pub unsafe extern "C" fn ramp_DrainOn(d: *mut ramp_drain_t) -> c_int {
    // a panic: -AM_ERR_RESOURCE, as ramp_DrainWait's AM_ERR_RESOURCE
    guard_or("ramp_DrainOn", -AM_ERR_RESOURCE, || {
        if !d.is_null() {
            // SAFETY: non-null; the caller's descriptor, as ramp.h documents it
            // (its thread field read alone: another thread may be using the
            // descriptor meanwhile, writing only its count).
            let owner = unsafe { std::ptr::addr_of!((*d).thread).read() };
            if owner != 0 && owner != drain_thread() {
                return RAMP_DRAIN_NOT_MINE;
            }
        }
        // SAFETY: the caller's descriptor, as ramp.h documents it.
        match unsafe { drain_on(d) } {
            Ok(n) => n,
            Err(e) => {
                report("ramp_DrainOn", &e);
                -e.code() // AM error codes are positive
            }
        }
    })
}

/// ramp_DrainOn's work: the count handed out.
///
/// # Safety
/// `d` must be NULL or point to a `ramp_drain_t` whose `msgs` holds `max`
/// records (or is NULL).
unsafe fn drain_on(d: *mut ramp_drain_t) -> Result<c_int> {
    need(d)?;
    // SAFETY: checked non-null; the caller passes a ramp_drain_t it owns,
    // which nothing else touches during the call (its count is written
    // through a pointer derived from it, no reference held meanwhile).
    let (eb, msgs, max, spin_us) = unsafe { ((*d).eb, (*d).msgs, (*d).max, (*d).spin_us) };
    // SAFETY: `d` is valid (above), so its count field is a valid int;
    // msgs and max are the caller's, as for ramp_DrainWait.
    unsafe { drain_wait(eb, msgs, max, std::ptr::addr_of_mut!((*d).count), spin_us)? };
    // SAFETY: as above.
    Ok(unsafe { (*d).count })
}

#[no_mangle]
pub extern "C" fn ramp_DrainRelease() -> c_int {
    boundary("ramp_DrainRelease", || {
        am::release_drained();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_DrainEnd(token: *mut c_void) -> c_int {
    boundary("ramp_DrainEnd", || am::end_drained(token as usize as u64))
}

/// The token of message `index` of this thread's last drain.
fn drained_id(index: c_int) -> Result<am::TokenId> {
    usize::try_from(index)
        .ok()
        .and_then(am::drained_token)
        .ok_or(Error::BadArg("no such message in this thread's last drain"))
}

/// The short message of the fast calls, its arguments checked.
///
/// # Safety
/// `args` must hold `numargs` ints when non-NULL.
unsafe fn short_args(numargs: c_int, args: *const i32) -> Result<([u32; MAX_ARGS], usize)> {
    // SAFETY: as this function's contract; no payload.
    let (a, n, _) = unsafe { message_parts(Category::Short, std::ptr::null(), 0, numargs, args)? };
    Ok((a, n))
}

#[no_mangle]
pub unsafe extern "C" fn ramp_DrainReply(
    index: c_int,
    handler: handler_t,
    numargs: c_int,
    args: *const i32,
) -> c_int {
    boundary("ramp_DrainReply", || {
        // SAFETY: `args` holds `numargs` ints, as documented in ramp.h.
        let (a, n) = unsafe { short_args(numargs, args)? };
        let id = drained_id(index)?;
        am::reply(id, &Message::short(handler, &a[..n]))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_RequestShort(
    ep: ep_t,
    dest: u32,
    handler: handler_t,
    numargs: c_int,
    args: *const i32,
) -> c_int {
    boundary("ramp_RequestShort", || {
        // SAFETY: `args` holds `numargs` ints, as documented in ramp.h.
        let (a, n) = unsafe { short_args(numargs, args)? };
        with_endpoint(ep, |e| {
            e.request(dest, &Message::short(handler, &a[..n]), false)
        })
    })
}

/// `ramp_DrainReply` of one argument, passed by value (no array to fill and
/// convert: each argument a foreign-function interface converts costs it).
#[no_mangle]
pub extern "C" fn ramp_DrainReply1(index: c_int, handler: handler_t, a0: i32) -> c_int {
    boundary("ramp_DrainReply1", || {
        let id = drained_id(index)?;
        am::reply(id, &Message::short(handler, &[a0 as u32]))
    })
}

/// `ramp_DrainRelease` that never waits for an endpoint another thread holds
/// (running a handler there): `AM_ERR_IN_USE` then, nothing ended. For a
/// binding calling it without releasing a lock of its own that handlers
/// need (CPython's GIL): a thread waiting for the endpoint while the holder
/// waits for that lock would wait forever.
#[no_mangle]
pub extern "C" fn ramp_DrainTryRelease() -> c_int {
    boundary("ramp_DrainTryRelease", || {
        am::release_drained_with(LockWait::Refuse)
    })
}

/// `ramp_DrainEnd` that never waits (as `ramp_DrainTryRelease`).
#[no_mangle]
pub unsafe extern "C" fn ramp_DrainTryEnd(token: *mut c_void) -> c_int {
    boundary("ramp_DrainTryEnd", || {
        am::end_drained_with(token as usize as u64, LockWait::Refuse)
    })
}

/// `ramp_DrainReply1` that never waits (as `ramp_DrainTryRelease`; a reply
/// to the replying endpoint itself is always refused).
#[no_mangle]
pub extern "C" fn ramp_DrainTryReply1(index: c_int, handler: handler_t, a0: i32) -> c_int {
    boundary("ramp_DrainTryReply1", || {
        let id = drained_id(index)?;
        am::reply_with(id, &Message::short(handler, &[a0 as u32]), LockWait::Refuse)
    })
}

/// `ramp_RequestShort` of one argument, passed by value.
#[no_mangle]
pub extern "C" fn ramp_RequestShort1(ep: ep_t, dest: u32, handler: handler_t, a0: i32) -> c_int {
    boundary("ramp_RequestShort1", || {
        with_endpoint(ep, |e| {
            e.request(dest, &Message::short(handler, &[a0 as u32]), false)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_record_has_the_documented_layout() {
        // python/ramp/core.py reads it with struct "=QQQQ16i3i4B".
        assert_eq!(std::mem::size_of::<ramp_msg_t>(), 112);
        assert_eq!(std::mem::offset_of!(ramp_msg_t, args), 32);
        assert_eq!(std::mem::offset_of!(ramp_msg_t, source_id), 96);
        assert_eq!(std::mem::offset_of!(ramp_msg_t, handler), 108);
        assert_eq!(std::mem::offset_of!(ramp_msg_t, flags), 111);
    }

    #[test]
    fn records_are_written_only_inside_the_callers_array() {
        let p = Pulled {
            token: Default::default(),
            endpoint: 1,
            handler: 9,
            category: Category::Short,
            is_request: true,
            returned: None,
            source_id: 0,
            args: &[4, 5],
            addr: 0,
            len: 0,
        };
        let mut arr = [const { std::mem::MaybeUninit::<ramp_msg_t>::uninit() }; 3];
        let mut out = Records::new(arr.as_mut_ptr().cast(), 2);
        // SAFETY: the array holds 3 records, `Records` is told 2.
        unsafe {
            for _ in 0..3 {
                out.put(&p);
            }
        }
        assert_eq!(out.written, 2);
        assert!(
            out.finish(Ok(())).is_err(),
            "a message past max went unreported"
        );
        // SAFETY: the first two were written by `put`.
        let first = unsafe { arr[1].assume_init_ref() };
        assert_eq!((first.handler, first.nargs, first.args[1]), (9, 2, 5));
        // arrays that wrap or are misaligned are refused
        let odd = (arr.as_mut_ptr() as usize + 1) as *mut ramp_msg_t;
        assert!(check_array(odd, 1).is_err());
        assert!(check_array(usize::MAX as *mut ramp_msg_t, 0).is_ok());
        assert!(check_array(((usize::MAX - 200) & !7) as *mut ramp_msg_t, 2).is_err());
        assert!(check_array(arr.as_mut_ptr().cast(), 3).is_ok());
    }

    #[test]
    fn the_drain_descriptor_has_the_documented_layout() {
        // python/ramp/core.py writes eb at 0 and reads count at 20.
        assert_eq!(std::mem::size_of::<ramp_drain_t>(), 32);
        assert_eq!(std::mem::offset_of!(ramp_drain_t, msgs), 8);
        assert_eq!(std::mem::offset_of!(ramp_drain_t, max), 16);
        assert_eq!(std::mem::offset_of!(ramp_drain_t, count), 20);
        assert_eq!(std::mem::offset_of!(ramp_drain_t, spin_us), 24);
        assert_eq!(std::mem::offset_of!(ramp_drain_t, thread), 28);
    }

    #[test]
    fn a_descriptor_of_another_thread_is_refused_untouched() {
        let mine = ramp_DrainThread();
        let other = std::thread::spawn(|| ramp_DrainThread()).join().unwrap();
        assert!(mine > 0 && other > 0 && mine != other, "{mine} {other}");
        assert_eq!(ramp_DrainThread(), mine, "a thread keeps its id");
        // a bad descriptor (no bundle): refused before it is looked at, count
        // unwritten, when it is another thread's; its error for its own thread
        // and for any thread (0)
        let mut d = ramp_drain_t {
            eb: std::ptr::null_mut(),
            msgs: std::ptr::null_mut(),
            max: 0,
            count: -7,
            spin_us: 0,
            thread: other,
        };
        // SAFETY: a valid descriptor (no array: max 0).
        assert_eq!(unsafe { ramp_DrainOn(&mut d) }, RAMP_DRAIN_NOT_MINE);
        assert_eq!(d.count, -7, "a refused descriptor was written");
        for t in [mine, 0] {
            d.thread = t;
            // SAFETY: as above.
            let r = unsafe { ramp_DrainOn(&mut d) };
            assert!(r < 0 && r > RAMP_DRAIN_NOT_MINE, "thread {t}: {r}");
            assert_eq!(d.count, 0);
            d.count = -7;
        }
    }
}
