//! The C ABI of the SPMD layer (`include/ramp_spmd.h`).
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::types::{eb_t, ep_t};
use super::{boundary, eb_handle, ep_handle, guard, guard_noreturn, guard_or, need, out};
use crate::error::{Error, AM_ERR_NOT_INIT, AM_OK};
use crate::spmd::{self, Role};

pub type ramp_spawnfn_t =
    Option<unsafe extern "C" fn(c_int, c_int, *mut *mut c_char, *mut *mut c_char) -> c_int>;
pub type ramp_exitcallback_t = Option<unsafe extern "C" fn(c_int)>;

extern "C" {
    /// The application may replace how a process ends (C shim; default _exit).
    static ramp_SPMDkillmyprocess: Option<unsafe extern "C" fn(c_int)>;
    /// Prefix of ramp_FatalErr messages (C shim); workers are "Node <rank>".
    static mut ramp_ProcessLabel: *const c_char;
}

/// Strings handed out to C stay alive for the life of the process.
static KEPT: Lazy<Mutex<HashMap<String, CString>>> = Lazy::new(Default::default);

fn keep(s: String) -> *const c_char {
    let mut k = KEPT.lock();
    let c = k
        .entry(s.clone())
        .or_insert_with(|| CString::new(s.replace('\0', " ")).unwrap_or_default());
    c.as_ptr()
}

/// Flushes C stdio and ends the process through the application's pointer.
fn kill_through_c(code: i32) {
    // SAFETY: fflush(NULL) flushes every C output stream; the pointer is the
    // shim's exported variable, read once (the application may have set it
    // before; it is a plain function pointer).
    unsafe {
        libc::fflush(std::ptr::null_mut());
        if let Some(f) = ramp_SPMDkillmyprocess {
            f(code);
        }
    }
}

/// The program's arguments, as Rust strings (empty when either is NULL).
///
/// # Safety
/// `argc` and `argv` must be NULL or main's argc/argv (or copies of them):
/// `*argv` holds `*argc` NULL or NUL-terminated strings.
unsafe fn args_of(argc: *mut c_int, argv: *mut *mut *mut c_char) -> Vec<String> {
    if argc.is_null()
        || argv.is_null()
        || !super::sane_array(argc.cast_const(), 1)
        || !super::sane_array(argv.cast_const(), 1)
    {
        return Vec::new();
    }
    // SAFETY: both non-null and aligned (checked above); the caller passes
    // main's argc/argv (or copies).
    let (n, v) = unsafe { (*argc, *argv) };
    let n = n.max(0) as usize;
    if v.is_null() || !super::sane_array(v.cast_const(), n) {
        return Vec::new();
    }
    (0..n)
        .filter_map(|i| {
            // SAFETY: argv holds argc entries (i < argc).
            let p = unsafe { *v.add(i) };
            // SAFETY: a non-null entry is a NUL-terminated string.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        })
        .collect()
}

#[no_mangle]
pub unsafe extern "C" fn ramp_SPMDStartup(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    nproc: c_int,
    networkdepth: c_int,
    spawnfn: ramp_spawnfn_t,
    networkpid: *mut u64,
    eb: *mut eb_t,
    ep: *mut ep_t,
) -> c_int {
    boundary("ramp_SPMDStartup", || {
        if spmd::started() {
            return Err(Error::Resource("ramp_SPMDStartup was already called"));
        }
        if networkdepth < 0 || networkdepth > crate::am::MAX_NETWORK_DEPTH as c_int {
            return Err(Error::BadArg("network depth must be between 0 and 1024"));
        }
        if nproc < 0 {
            return Err(Error::BadArg("negative number of processes"));
        }
        let role = spmd::detect_role().map_err(|e| {
            eprintln!("ramp: SPMD start-up: {e}");
            Error::Resource("cannot join the job's launcher")
        })?;
        match role {
            Role::Worker(boot) => {
                need(eb)?;
                need(ep)?;
                if !networkpid.is_null() {
                    need(networkpid)?;
                }
                let (b, e, pid) = spmd::start_worker(boot, networkdepth as u32)?;
                // its handles are the C ABI's from now on
                super::registry::init()?;
                super::registry::adopt_bundle(&b);
                super::registry::adopt_endpoint(&e);
                spmd::set_kill_hook(Some(Box::new(kill_through_c)));
                let label = keep(format!("Node {}", spmd::rank().unwrap_or(0)));
                // SAFETY: the shim's exported pointer, written once during
                // start-up before the application uses it; `label` lives for
                // the life of the process.
                unsafe { ramp_ProcessLabel = label };
                std::env::remove_var(crate::config::SPMD_MASTER);
                // (the job's secret is not for the worker's own children)
                std::env::remove_var(crate::config::SPMD_TOKEN);
                // SAFETY: checked non-null and aligned above; networkpid
                // may be NULL.
                unsafe {
                    out(eb, eb_handle(b.id))?;
                    out(ep, ep_handle(e.id))?;
                    if !networkpid.is_null() {
                        out(networkpid, pid)?;
                    }
                }
                Ok(())
            }
            Role::Master => {
                // SAFETY: argc/argv are main's, by contract.
                let mut args = unsafe { args_of(argc, argv) };
                let (letter, func) = spawner_of(spawnfn);
                spmd::run_master_form(&mut args, nproc as usize, networkdepth as u32, letter, func)
            }
        }
    })
}

extern "C" {
    /// 'L', 'S', 'C' for the library's spawners under either name, else 0
    /// (C shim: it sees both names' addresses).
    fn ramp_internal_spawner_letter(f: ramp_spawnfn_t) -> c_char;
}

/// The spawner a start-up's spawn function stands for: one of the library's
/// (by its letter), or the program's own, called by the master with the
/// workers' command and environment (AMUDP's contract: it starts `nproc`
/// processes running argv with extra_env added; non-zero is success).
fn spawner_of(spawnfn: ramp_spawnfn_t) -> (Option<char>, Option<spmd::Spawner>) {
    let Some(f) = spawnfn else {
        return (None, None);
    };
    // SAFETY: the shim's function compares the pointer with its spawners'
    // addresses; it does not call it.
    match unsafe { ramp_internal_spawner_letter(Some(f)) } as u8 {
        b'L' => return (Some('L'), None),
        b'S' => return (Some('S'), None),
        b'C' => return (Some('C'), None),
        _ => {}
    }
    let call = move |job: &spmd::ExternalJob| -> std::io::Result<Vec<std::process::Child>> {
        let cstr = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
        let argv: Vec<CString> = job.argv.iter().map(|a| cstr(a)).collect();
        let env: Vec<CString> = job
            .env
            .iter()
            .map(|(k, v)| cstr(&format!("{k}={v}")))
            .collect();
        let mut argv_p: Vec<*mut c_char> = argv.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv_p.push(std::ptr::null_mut());
        let mut env_p: Vec<*mut c_char> = env.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        env_p.push(std::ptr::null_mut());
        // SAFETY: the program's spawn function of AMUDP's prototype; argv
        // and extra_env are NULL-terminated arrays of NUL-terminated strings
        // that live (`argv`, `env`) until it returns.
        let ok = unsafe {
            f(
                job.nproc as c_int,
                job.argv.len() as c_int,
                argv_p.as_mut_ptr(),
                env_p.as_mut_ptr(),
            )
        };
        if ok == 0 {
            return Err(std::io::Error::other(
                "the program's spawn function returned 0 (failure)",
            ));
        }
        Ok(Vec::new())
    };
    (
        None,
        Some(spmd::Spawner::External(std::sync::Arc::new(call))),
    )
}

#[no_mangle]
pub extern "C" fn ramp_SPMDExit(exitcode: c_int) -> c_int {
    // The process is ending (the launcher may already know its exit code):
    // after a panic, returning to the application would be worse than ending.
    guard_noreturn("ramp_SPMDExit", || {
        if !spmd::started() {
            return AM_ERR_NOT_INIT;
        }
        boundary("ramp_SPMDExit", || spmd::exit(exitcode).map(|_| ()))
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDSetExitCallback(fp: ramp_exitcallback_t) -> c_int {
    guard("ramp_SPMDSetExitCallback", || {
        spmd::set_exit_callback(fp.map(|f| {
            // SAFETY: the application's callback of prototype void(int).
            Box::new(move |code: i32| unsafe { f(code) }) as Box<dyn Fn(i32) + Send + Sync>
        }));
        AM_OK
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDIsWorker(_argv: *mut *mut c_char) -> c_int {
    // A yes/no answer: 0 (not known to be a worker) after a panic.
    guard_or("ramp_SPMDIsWorker", 0, || {
        (spmd::started() || spmd::is_worker_env()) as c_int
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDNumProcs() -> c_int {
    // -1, the contract's "no answer", after a panic.
    guard_or("ramp_SPMDNumProcs", -1, || match spmd::size() {
        Some(s) => s as c_int,
        None => {
            eprintln!("ramp: ramp_SPMDNumProcs called before ramp_SPMDStartup");
            -1
        }
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDMyProc() -> c_int {
    // -1, the contract's "no answer", after a panic.
    guard_or("ramp_SPMDMyProc", -1, || match spmd::rank() {
        Some(r) => r as c_int,
        None => {
            eprintln!("ramp: ramp_SPMDMyProc called before ramp_SPMDStartup");
            -1
        }
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDBarrier() -> c_int {
    boundary("ramp_SPMDBarrier", || {
        // SAFETY: fflush(NULL) flushes every C output stream.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        spmd::barrier()
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_SPMDAllGather(
    source: *mut c_void,
    dest: *mut c_void,
    len: usize,
) -> c_int {
    boundary("ramp_SPMDAllGather", || {
        if source.is_null() || dest.is_null() || len == 0 {
            return Err(Error::BadArg("NULL buffer or zero length"));
        }
        // (not started: the all-gather below refuses)
        let procs = spmd::size().unwrap_or(1);
        let dest_len = len
            .checked_mul(procs)
            .filter(|&d| super::sane_range(dest as usize, d))
            .ok_or(Error::BadArg("destination wraps around the address space"))?;
        if !super::sane_range(source as usize, len) {
            return Err(Error::BadArg("source wraps around the address space"));
        }
        // SAFETY: non-null, not wrapping (checked above); `source` holds
        // `len` bytes by contract.
        let data = unsafe { std::slice::from_raw_parts(source as *const u8, len) }.to_vec();
        let all = spmd::allgather(&data)?;
        if all.len() != dest_len {
            return Err(Error::Resource(
                "the all-gather's result is not len bytes from every rank",
            ));
        }
        // SAFETY: `dest` holds len * nprocs bytes by contract, not wrapping
        // (checked above); `all` is exactly that long (checked above).
        unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), dest as *mut u8, all.len()) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_SPMDgetenvMaster(keyname: *const c_char) -> *const c_char {
    guard("ramp_SPMDgetenvMaster", || {
        if keyname.is_null() {
            return std::ptr::null();
        }
        // SAFETY: non-null, and a NUL-terminated string by contract.
        let k = unsafe { CStr::from_ptr(keyname) }
            .to_string_lossy()
            .into_owned();
        match spmd::getenv_master(&k) {
            Some(v) => keep(v),
            None => std::ptr::null(),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_check_env_prefix(prefix: *const c_char) -> *const c_char {
    guard("ramp_check_env_prefix", || {
        if prefix.is_null() {
            return std::ptr::null();
        }
        // SAFETY: non-null, and a NUL-terminated string by contract.
        let p = unsafe { CStr::from_ptr(prefix) }
            .to_string_lossy()
            .into_owned();
        match spmd::env_entry_with_prefix(&p) {
            Some(kv) => keep(kv),
            None => std::ptr::null(),
        }
    })
}

/// A spawner called directly: reports it and returns 0 (failure, in the
/// spawner contract: non-zero is success; 0 after a panic too).
fn not_for_calling(name: &str) -> c_int {
    eprintln!("ramp: {name} is passed to ramp_SPMDStartup, not called directly");
    0
}

#[no_mangle]
pub extern "C" fn ramp_SPMDLocalSpawn(
    _n: c_int,
    _argc: c_int,
    _argv: *mut *mut c_char,
    _env: *mut *mut c_char,
) -> c_int {
    guard_or("ramp_SPMDLocalSpawn", 0, || {
        not_for_calling("ramp_SPMDLocalSpawn")
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDSshSpawn(
    _n: c_int,
    _argc: c_int,
    _argv: *mut *mut c_char,
    _env: *mut *mut c_char,
) -> c_int {
    guard_or("ramp_SPMDSshSpawn", 0, || {
        not_for_calling("ramp_SPMDSshSpawn")
    })
}

#[no_mangle]
pub extern "C" fn ramp_SPMDCustomSpawn(
    _n: c_int,
    _argc: c_int,
    _argv: *mut *mut c_char,
    _env: *mut *mut c_char,
) -> c_int {
    guard_or("ramp_SPMDCustomSpawn", 0, || {
        not_for_calling("ramp_SPMDCustomSpawn")
    })
}
