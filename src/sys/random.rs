//! The one source of the operating system's randomness: `getrandom(2)`.
//! Every secret ramp makes comes from here (endpoint secrets, ring slots'
//! secrets and proof nonces, job keys and tokens, ids that must not
//! repeat across jobs). A failure is an error its caller handles (it
//! refuses what needed the secret), never a zero or guessable value in
//! its place.

use std::io;

/// Fills `buf` with random bytes from the kernel (`getrandom`, waiting at
/// start-up until the kernel's pool is initialised; an interrupted call
/// is retried). An error when the kernel cannot give them: `buf` then
/// holds nothing usable.
pub fn fill(buf: &mut [u8]) -> io::Result<()> {
    #[cfg(test)]
    if failing::on_this_thread() {
        return Err(io::Error::other("getrandom made to fail by a test"));
    }
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: the kernel writes at most `rest.len()` bytes at the start
        // of `rest`, a slice we hold mutably for the call.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            // never for a non-empty buffer; no endless loop if it were
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got += n as usize;
    }
    Ok(())
}

/// 64 random bits (`fill`).
pub fn random_u64() -> io::Result<u64> {
    let mut b = [0u8; 8];
    fill(&mut b)?;
    Ok(u64::from_ne_bytes(b))
}

/// `N` random bytes (`fill`).
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    fill(&mut b)?;
    Ok(b)
}

/// Tests only: makes `fill` fail on the calling thread while a
/// `FailingRandomness` lives, so that a test can show what a caller does
/// when the kernel gives no randomness (other threads, other tests, are
/// not affected).
#[cfg(test)]
pub(crate) mod failing {
    use std::cell::Cell;

    thread_local! {
        static FAIL: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn on_this_thread() -> bool {
        FAIL.with(Cell::get)
    }

    /// While it lives, `fill` fails on this thread.
    pub(crate) struct FailingRandomness(());

    impl FailingRandomness {
        pub(crate) fn start() -> FailingRandomness {
            FAIL.with(|f| f.set(true));
            FailingRandomness(())
        }
    }

    impl Drop for FailingRandomness {
        fn drop(&mut self) {
            FAIL.with(|f| f.set(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_whole_buffers_and_fails_only_where_made_to() {
        let mut a = [0u8; 300];
        fill(&mut a).unwrap();
        // 300 zero bytes by chance: never
        assert!(a.iter().any(|&b| b != 0));
        assert_ne!(random_u64().unwrap(), random_u64().unwrap());
        fill(&mut []).unwrap();
        {
            let _f = failing::FailingRandomness::start();
            assert!(fill(&mut a).is_err());
            assert!(random_u64().is_err());
            assert!(random_bytes::<32>().is_err());
            // another thread is not affected
            let other = std::thread::spawn(|| random_u64().is_ok()).join().unwrap();
            assert!(other);
        }
        assert!(random_u64().is_ok());
    }
}
