//! The system's PMIx client library (`libpmix.so.2`, Debian's libpmix2),
//! opened at run time with dlopen, so that libramp.so has no link-time
//! dependency on it; only the calls ramp's PMIx bootstrap needs.
//!
//! The C types are laid out as PMIx 4's `pmix_common.h` says (checked
//! against the installed headers: `pmix_proc_t` 260 bytes, rank at 256;
//! `pmix_value_t` 32 bytes, the union at 8; `pmix_info_t` 552 bytes, flags
//! at 512, value at 520), and unchanged since PMIx 2 (the v2 ABI of
//! `libpmix.so.2`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

const NSLEN: usize = 256;
const KEYLEN: usize = 512;
/// `PMIX_RANK_WILDCARD`: the whole namespace.
pub const RANK_WILDCARD: u32 = u32::MAX - 1;
const PMIX_BOOL: u16 = 1;
const PMIX_STRING: u16 = 3;
const PMIX_UINT32: u16 = 14;
const PMIX_GLOBAL: u8 = 3;
const PMIX_SUCCESS: c_int = 0;
/// `PMIX_ERR_NOT_FOUND`.
pub const ERR_NOT_FOUND: c_int = -46;

#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; NSLEN],
    rank: u32,
}

/// `pmix_value_t`: the type, then a 24-byte union (8-aligned).
#[repr(C)]
struct Value {
    kind: u16,
    data: [u64; 3],
}

#[repr(C)]
struct Info {
    key: [c_char; KEYLEN],
    flags: u32,
    value: Value,
}

const _: () = assert!(std::mem::size_of::<Proc>() == 260);
const _: () = assert!(std::mem::size_of::<Value>() == 32);
const _: () = assert!(std::mem::size_of::<Info>() == 552);

type OpCb = unsafe extern "C" fn(status: c_int, cbdata: *mut c_void);

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceNbFn =
    unsafe extern "C" fn(*const Proc, usize, *const Info, usize, OpCb, *mut c_void) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type DestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

struct Fns {
    init: InitFn,
    finalize: FinalizeFn,
    abort: AbortFn,
    put: PutFn,
    commit: CommitFn,
    fence_nb: FenceNbFn,
    get: GetFn,
    value_destruct: DestructFn,
    error_string: ErrorStringFn,
}

/// The loaded library and this process's identity, once initialised.
pub struct Pmix {
    f: Fns,
    me: Proc,
}

// SAFETY: the function pointers are plain addresses in a library that is
// never unloaded, and PMIx's client calls are thread-safe (it runs its own
// progress thread); `me` is plain data.
unsafe impl Send for Pmix {}

/// A PMIx error: the status and the library's text for it.
#[derive(Debug)]
pub struct PmixError {
    pub status: c_int,
    pub text: String,
}

impl std::fmt::Display for PmixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (PMIx status {})", self.text, self.status)
    }
}

/// The library names tried, in order.
pub const LIBRARIES: [&str; 2] = ["libpmix.so.2", "libpmix.so"];

fn sym(handle: *mut c_void, name: &str) -> Result<*mut c_void, String> {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: handle came from a successful dlopen and is never closed; c
    // is a NUL-terminated string that outlives the call.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        Err(format!("the PMIx library has no symbol {name}"))
    } else {
        Ok(p)
    }
}

impl Pmix {
    /// Opens the library and calls `PMIx_Init`. The error says whether the
    /// library was loaded (true: it was, and initialising failed) and why.
    pub fn open_and_init() -> Result<Pmix, (bool, String)> {
        let mut handle = std::ptr::null_mut();
        let mut why = String::new();
        for lib in LIBRARIES {
            let c = CString::new(lib).expect("no NUL");
            // SAFETY: dlopen with a NUL-terminated name; RTLD_GLOBAL because
            // the library's own plugins resolve its symbols. Running its
            // initialisers is what loading any shared library does.
            handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                break;
            }
            // SAFETY: dlerror returns NULL or a NUL-terminated string valid
            // until the next dl call in this thread; copied at once.
            let e = unsafe { libc::dlerror() };
            if !e.is_null() && why.is_empty() {
                // SAFETY: e is non-NULL and NUL-terminated (above).
                why = unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned();
            }
        }
        if handle.is_null() {
            return Err((false, why));
        }
        macro_rules! load {
            ($name:literal, $t:ty) => {{
                let p = sym(handle, $name).map_err(|e| (false, e))?;
                // SAFETY: the symbol is the PMIx function of that name,
                // whose C prototype (pmix.h, PMIx 2..5) the field's type
                // states; a function pointer has a data pointer's size.
                unsafe { std::mem::transmute::<*mut c_void, $t>(p) }
            }};
        }
        let f = Fns {
            init: load!("PMIx_Init", InitFn),
            finalize: load!("PMIx_Finalize", FinalizeFn),
            abort: load!("PMIx_Abort", AbortFn),
            put: load!("PMIx_Put", PutFn),
            commit: load!("PMIx_Commit", CommitFn),
            fence_nb: load!("PMIx_Fence_nb", FenceNbFn),
            get: load!("PMIx_Get", GetFn),
            value_destruct: load!("PMIx_Value_destruct", DestructFn),
            error_string: load!("PMIx_Error_string", ErrorStringFn),
        };
        let mut me = Proc {
            nspace: [0; NSLEN],
            rank: 0,
        };
        // SAFETY: me is a valid, writable pmix_proc_t; no info array.
        let rc = unsafe { (f.init)(&mut me, std::ptr::null_mut(), 0) };
        let p = Pmix { f, me };
        if rc != PMIX_SUCCESS {
            return Err((true, format!("PMIx_Init failed: {}", p.error(rc))));
        }
        Ok(p)
    }

    fn error(&self, status: c_int) -> PmixError {
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string
        // for any status.
        let p = unsafe { (self.f.error_string)(status) };
        let text = if p.is_null() {
            "unknown".to_string()
        } else {
            // SAFETY: non-NULL, NUL-terminated, static (above).
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        PmixError { status, text }
    }

    fn check(&self, rc: c_int) -> Result<(), PmixError> {
        if rc == PMIX_SUCCESS {
            Ok(())
        } else {
            Err(self.error(rc))
        }
    }

    pub fn rank(&self) -> u32 {
        self.me.rank
    }

    pub fn namespace(&self) -> String {
        let bytes: Vec<u8> = self
            .me
            .nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn proc_of(&self, rank: u32) -> Proc {
        Proc {
            nspace: self.me.nspace,
            rank,
        }
    }

    /// `PMIx_Get` of a value of `rank` (or [`RANK_WILDCARD`]); the value
    /// is handed to `read` and then released.
    fn get<T>(
        &self,
        rank: u32,
        key: &str,
        read: impl FnOnce(&Value) -> Option<T>,
    ) -> Result<Option<T>, PmixError> {
        let k = CString::new(key).expect("keys have no NUL");
        let p = self.proc_of(rank);
        let mut v: *mut Value = std::ptr::null_mut();
        // SAFETY: p and k outlive the call; v receives a value the library
        // allocates (malloc) or stays NULL.
        let rc = unsafe { (self.f.get)(&p, k.as_ptr(), std::ptr::null(), 0, &mut v) };
        self.check(rc)?;
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: v is the library's valid pmix_value_t until released.
        let out = read(unsafe { &*v });
        // SAFETY: releases what PMIx_Get allocated: the contents with
        // PMIx_Value_destruct, the struct itself with free (PMIX_VALUE_RELEASE).
        unsafe {
            (self.f.value_destruct)(v);
            libc::free(v.cast());
        }
        Ok(out)
    }

    /// The job size (`pmix.job.size` of the namespace).
    pub fn job_size(&self) -> Result<u32, PmixError> {
        self.get(RANK_WILDCARD, "pmix.job.size", |v| {
            (v.kind == PMIX_UINT32).then(|| v.data[0] as u32)
        })?
        .ok_or(PmixError {
            status: ERR_NOT_FOUND,
            text: "pmix.job.size is not a uint32".into(),
        })
    }

    /// The string `key` that `rank` put, if found.
    pub fn get_string(&self, rank: u32, key: &str) -> Result<String, PmixError> {
        let s = self.get(rank, key, |v| {
            if v.kind != PMIX_STRING || v.data[0] == 0 {
                return None;
            }
            // SAFETY: a PMIX_STRING value's union holds a NUL-terminated
            // char* owned by the value, alive until it is released.
            let c = unsafe { CStr::from_ptr(v.data[0] as usize as *const c_char) };
            Some(c.to_string_lossy().into_owned())
        })?;
        s.ok_or(PmixError {
            status: ERR_NOT_FOUND,
            text: format!("{key} of rank {rank} is not a string"),
        })
    }

    /// `PMIx_Put` (global scope) of a string.
    pub fn put_string(&self, key: &str, val: &str) -> Result<(), PmixError> {
        let k = CString::new(key).expect("keys have no NUL");
        let s = CString::new(val).expect("values have no NUL");
        let mut v = Value {
            kind: PMIX_STRING,
            data: [s.as_ptr() as usize as u64, 0, 0],
        };
        // SAFETY: k, s and v outlive the call; PMIx_Put copies the value.
        let rc = unsafe { (self.f.put)(PMIX_GLOBAL, k.as_ptr(), &mut v) };
        self.check(rc)
    }

    pub fn commit(&self) -> Result<(), PmixError> {
        // SAFETY: no arguments.
        let rc = unsafe { (self.f.commit)() };
        self.check(rc)
    }

    /// Starts a fence of the whole namespace (collecting the data put
    /// when `collect`); `done` becomes the status when it completes.
    pub fn fence_start(&self, collect: bool) -> Result<Fence, PmixError> {
        let all = self.proc_of(RANK_WILDCARD);
        let mut info = Box::new(Info {
            key: [0; KEYLEN],
            flags: 0,
            value: Value {
                kind: PMIX_BOOL,
                data: [1, 0, 0],
            },
        });
        for (i, b) in b"pmix.collect".iter().enumerate() {
            info.key[i] = *b as c_char;
        }
        let done = Arc::new(AtomicI32::new(PENDING));
        let cb = Arc::into_raw(done.clone()) as *mut c_void;
        let (ip, n) = if collect {
            (&*info as *const Info, 1)
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: all and info are copied or used only during the call (the
        // PMIx standard: arrays may be released once the call returns); cb
        // is one counted reference to `done`, released by fence_done.
        let rc = unsafe { (self.f.fence_nb)(&all, 1, ip, n, fence_done, cb) };
        if rc != PMIX_SUCCESS {
            // SAFETY: the callback will not run: take the reference back.
            drop(unsafe { Arc::from_raw(cb as *const AtomicI32) });
            return Err(self.error(rc));
        }
        Ok(Fence { done })
    }

    pub fn fence_result(&self, f: &Fence) -> Option<Result<(), PmixError>> {
        match f.done.load(Ordering::Acquire) {
            PENDING => None,
            rc => Some(self.check(rc)),
        }
    }

    pub fn abort(&self, code: i32, msg: &str) {
        let m = CString::new(msg.replace('\0', " ")).expect("no NUL");
        // SAFETY: m outlives the call; NULL procs: the whole namespace.
        unsafe {
            (self.f.abort)(code, m.as_ptr(), std::ptr::null_mut(), 0);
        }
    }

    pub fn finalize(&self) -> Result<(), PmixError> {
        self.check(self.finalizer().run())
    }

    /// `PMIx_Finalize` as a value another thread can call (the job-end
    /// notice watcher ends its process from its own thread).
    pub fn finalizer(&self) -> Finalizer {
        Finalizer {
            finalize: self.f.finalize,
        }
    }
}

/// `PMIx_Finalize` of a loaded library (never unloaded).
#[derive(Clone, Copy)]
pub struct Finalizer {
    finalize: FinalizeFn,
}

impl Finalizer {
    /// Calls `PMIx_Finalize`; its status (0: success).
    pub fn run(&self) -> c_int {
        // SAFETY: no info array; the library stays loaded for the process's
        // life, and PMIx's client calls are thread-safe.
        unsafe { (self.finalize)(std::ptr::null(), 0) }
    }
}

const PENDING: i32 = i32::MIN;

/// A fence under way.
pub struct Fence {
    done: Arc<AtomicI32>,
}

/// `pmix_op_cbfunc_t` of a fence: records the status.
extern "C" fn fence_done(status: c_int, cbdata: *mut c_void) {
    // SAFETY: cbdata is the reference fence_start leaked for this call,
    // taken back exactly once here.
    let done = unsafe { Arc::from_raw(cbdata as *const AtomicI32) };
    done.store(status, Ordering::Release);
}
