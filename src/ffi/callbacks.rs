//! AMUDP's handler callbacks (`AMUDP_SetHandlerCallbacks`, `include/amudp.h`):
//! per endpoint, a function run before each of its C handlers and one run
//! after, given the message's category and whether it is a request, as
//! AMUDP runs them (GASNet's trace and debug builds install them). Handler
//! 0 for a returned message runs without them (AMUDP's too).
#![allow(non_snake_case, non_camel_case_types)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use once_cell::sync::Lazy;
use parking_lot::RwLock;

use super::types::{ep_t, ramp_category_t};
use super::{boundary, endpoint};
use crate::am::Category;

/// AMUDP's name of the message category.
pub type amudp_category_t = ramp_category_t;

/// Run before a handler: category, is-request, handler index, token,
/// payload (NULL for a short message) and its length, argument count and
/// arguments.
pub type AMUDP_preHandlerCallback_t = Option<
    unsafe extern "C" fn(
        amudp_category_t,
        c_int,
        c_int,
        *mut c_void,
        *mut c_void,
        usize,
        c_int,
        *mut u32,
    ),
>;
/// Run after a handler returns: category, is-request.
pub type AMUDP_postHandlerCallback_t = Option<unsafe extern "C" fn(amudp_category_t, c_int)>;

#[derive(Clone, Copy)]
struct Hooks {
    pre: AMUDP_preHandlerCallback_t,
    post: AMUDP_postHandlerCallback_t,
}

/// Whether any endpoint has hooks: handlers check only this flag otherwise.
static ANY: AtomicBool = AtomicBool::new(false);
/// Hooks by endpoint id.
static HOOKS: Lazy<RwLock<HashMap<u64, Hooks>>> = Lazy::new(Default::default);

/// What a C handler's trampoline needs to run the hooks of its message.
pub(crate) struct Armed {
    hooks: Hooks,
    cat: ramp_category_t,
    is_req: c_int,
    handler: c_int,
}

/// The hooks for the message whose handler holds `token`, if its endpoint
/// has any.
pub(crate) fn armed(token: u64) -> Option<Armed> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    let (ep, cat, is_req, handler) = crate::am::token::with(token, |t| {
        (t.endpoint.id, t.category, t.is_request, t.handler)
    })?;
    let hooks = *HOOKS.read().get(&ep)?;
    let cat = match cat {
        Category::Short => ramp_category_t::ramp_Short,
        Category::Medium => ramp_category_t::ramp_Medium,
        Category::Long => ramp_category_t::ramp_Long,
    };
    Some(Armed {
        hooks,
        cat,
        is_req: is_req as c_int,
        handler: handler as c_int,
    })
}

impl Armed {
    /// Runs the pre-handler hook.
    ///
    /// # Safety
    /// `buf` holds `n` bytes (or is NULL with `n` 0) and `args` holds
    /// `nargs` values, all valid while the handler runs.
    pub(crate) unsafe fn pre(
        &self,
        token: *mut c_void,
        buf: *mut c_void,
        n: usize,
        args: &mut [i32],
    ) {
        if let Some(f) = self.hooks.pre {
            // SAFETY: the application's callback of AMUDP's prototype; the
            // pointers are valid for the call (the caller's contract).
            unsafe {
                f(
                    self.cat,
                    self.is_req,
                    self.handler,
                    token,
                    buf,
                    n,
                    args.len() as c_int,
                    args.as_mut_ptr().cast(),
                )
            }
        }
    }

    /// Runs the post-handler hook.
    pub(crate) fn post(&self) {
        if let Some(f) = self.hooks.post {
            // SAFETY: the application's callback of AMUDP's prototype.
            unsafe { f(self.cat, self.is_req) }
        }
    }
}

/// AMUDP_SetHandlerCallbacks: installs (or, with both NULL, removes) the
/// endpoint's hooks.
#[no_mangle]
pub extern "C" fn ramp_amudp_SetHandlerCallbacks(
    ep: ep_t,
    preHandlerCallback: AMUDP_preHandlerCallback_t,
    postHandlerCallback: AMUDP_postHandlerCallback_t,
) -> c_int {
    boundary("AMUDP_SetHandlerCallbacks", || {
        let e = endpoint(ep)?;
        let mut h = HOOKS.write();
        if preHandlerCallback.is_none() && postHandlerCallback.is_none() {
            h.remove(&e.id);
        } else {
            h.insert(
                e.id,
                Hooks {
                    pre: preHandlerCallback,
                    post: postHandlerCallback,
                },
            );
        }
        ANY.store(!h.is_empty(), Ordering::Release);
        Ok(())
    })
}
