//! `scripts/copy-spy.sh` (the preloaded `scripts/copy-spy.c`), the tool that
//! counts the memcpy calls at glibc's slow distance on AMD (`sys/copy.rs`):
//! run over a real C program that makes one long copy 16 bytes past a page,
//! one 256 past and one short one, it reports exactly the first as slow.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_spy_counts_long_copies_1_to_63_past_a_page_by_call_site() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("copy-spy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("copies.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n#include <string.h>\n\
         int main(void) { char *b = aligned_alloc(4096, 1 << 20); memset(b, 1, 1 << 20);\n\
         memcpy(b + 65536 + 16, b, 8192);\n\
         memcpy(b + 2 * 65536 + 256, b, 8192);\n\
         memcpy(b + 3 * 65536 + 16, b, 100);\n\
         return b[65536 + 21] == 1 ? 0 : 1; }\n",
    )
    .unwrap();
    let exe = dir.join("copies");
    let cc = std::env::var("CC").unwrap_or("cc".into());
    // (no builtin memcpy: the calls must reach the preloaded one)
    let o = Command::new(&cc)
        .args(["-O0", "-fno-builtin", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("cc runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("bash")
        .arg(root.join("scripts/copy-spy.sh"))
        .arg(&exe)
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("copy-spy: pid"))
        .collect();
    assert_eq!(lines.len(), 2, "two call sites of long copies: {err}");
    assert!(lines[0].ends_with("slow 1 (8192 bytes) of 1"), "{err}");
    assert!(lines[1].ends_with("slow 0 (0 bytes) of 1"), "{err}");
    // no command: usage, exit 2
    let o = Command::new("bash")
        .arg(root.join("scripts/copy-spy.sh"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}
