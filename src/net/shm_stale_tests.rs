//! Files that versions before the memfd left in /dev/shm (`shm_peers.rs`,
//! `remove_stale_files`): removed only when regular, of this user, named
//! for this host's namespaces and stale (the owner's pid gone, or never
//! finished and old). A file's age is told from the instant the test's
//! files were written (the file system's stamp), not read from a clock:
//! exact at any speed.

use super::*;

/// What a version before the memfd left in /dev/shm: a header with the
/// magic and its owner's pid.
fn legacy_file(path: &std::path::Path, pid: u32) {
    let mut b = vec![0u8; HDR];
    b[H_MAGIC..H_MAGIC + 8].copy_from_slice(&MAGIC.to_le_bytes());
    b[H_PID..H_PID + 4].copy_from_slice(&pid.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

#[test]
fn stale_files_are_removed_only_when_regular_ours_and_of_this_namespace() {
    use std::time::{Duration, SystemTime};
    let dir = std::env::temp_dir().join(format!("ramp-stale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dead = {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    };
    let ours = |name: &str| dir.join(format!("{PREFIX}{}.{name}", HOST.1));
    let (stale, live, garbage_old, garbage_new) = (
        ours("stale"),
        ours("live"),
        ours("garbage-old"),
        ours("garbage-new"),
    );
    legacy_file(&stale, dead);
    legacy_file(&live, std::process::id());
    std::fs::write(&garbage_new, b"being made").unwrap();
    // the instant the files are judged at: when that one was written (the
    // file system's stamp), so that each file's age is exact at any speed
    let now = std::fs::metadata(&garbage_new).unwrap().modified().unwrap();
    std::fs::write(&garbage_old, b"half made").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&garbage_old)
        .unwrap()
        .set_modified(now - Duration::from_secs(60))
        .unwrap();
    // another pid namespace's file (a container sharing /dev/shm): its pid
    // is not one of ours to look up
    let foreign = dir.join(format!("{PREFIX}1.2.foreign"));
    legacy_file(&foreign, dead);
    // a link under our name to a stale-looking file elsewhere, and a FIFO
    let target = dir.join("elsewhere");
    legacy_file(&target, dead);
    let link = ours("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = ours("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // another user's (when we may give it away: as root)
    let theirs = ours("theirs");
    legacy_file(&theirs, dead);
    let given = std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_ok();

    let age = |t: SystemTime| now.duration_since(t).ok().map(|d| d.as_secs());
    let n = peers::remove_stale_files_in(&dir, &age);
    // (not root: the "other user's" file is ours, and stale)
    assert_eq!(
        n,
        if given { 2 } else { 3 },
        "the stale file and the old half-made one"
    );
    assert!(!stale.exists() && !garbage_old.exists());
    for kept in [&live, &garbage_new, &foreign, &target] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    assert!(link.symlink_metadata().is_ok(), "the link was removed");
    assert_eq!(std::fs::read(&target).unwrap()[..8], MAGIC.to_le_bytes());
    assert!(fifo.symlink_metadata().is_ok(), "the FIFO was removed");
    if given {
        assert!(theirs.exists(), "another user's file was removed");
    } else {
        eprintln!("(not root: no file of another user was tried)");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
