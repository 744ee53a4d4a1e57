//! ARCHITECTURE.md stays true and short, and the source stays in rooms a
//! reader can take in: the page is under 25 KB; every path it names exists;
//! every room of `src/` (and of `src/am/`) is listed in it; its wire
//! version and packet types are those of `src/wire/mod.rs`; no source file
//! is longer than 600 lines.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const MAX_BYTES: usize = 25 * 1024;
const MAX_LINES: usize = 600;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn page() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// Every `code span` of the page.
fn spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(code), Some(_)) = (parts.next(), parts.next()) {
            out.push(code.to_string());
        }
    }
    out
}

/// Every file below `dir`, recursively (no `target/`, no hidden folders).
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if p.is_dir() {
            files_below(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn looks_like_path(s: &str) -> bool {
    let exts = [".rs", ".md", ".sh", ".h", ".c", ".py", ".toml", ".txt"];
    !s.contains(' ')
        && !s.contains("::")
        && !s.starts_with('-')
        && (s.ends_with('/') || exts.iter().any(|e| s.ends_with(e)))
}

#[test]
fn the_page_is_short() {
    let n = page().len();
    assert!(
        n <= MAX_BYTES,
        "ARCHITECTURE.md is {n} bytes, more than {MAX_BYTES}: move detail to the module docs"
    );
}

/// Whether relative path `r` is `t`, or ends with `/t`; a `*` in `t`
/// stands for any characters but `/`.
fn names(r: &str, t: &str) -> bool {
    let tails = std::iter::once(r).chain(r.match_indices('/').map(|(i, _)| &r[i + 1..]));
    let m = |x: &str| match t.split_once('*') {
        None => x == t,
        Some((p, q)) => {
            x.len() >= p.len() + q.len()
                && x.starts_with(p)
                && x.ends_with(q)
                && !x[p.len()..x.len() - q.len()].contains('/')
        }
    };
    let mut tails = tails;
    tails.any(m)
}

#[test]
fn every_path_the_page_names_exists() {
    let root = root();
    let mut all = Vec::new();
    for d in [
        "src", "tests", "scripts", "include", "c-tests", "python", "benches", "examples",
        "bindings", "fuzz",
    ] {
        files_below(&root.join(d), &mut all);
    }
    // every file and every folder above one, relative to the root
    let mut rel: BTreeSet<String> = BTreeSet::new();
    for p in &all {
        let mut r = p.strip_prefix(&root).unwrap().to_path_buf();
        rel.insert(r.display().to_string());
        while r.pop() && !r.as_os_str().is_empty() {
            rel.insert(r.display().to_string());
        }
    }
    let mut missing = Vec::new();
    for s in spans(&page()).into_iter().filter(|s| looks_like_path(s)) {
        let t = s.trim_end_matches('/');
        if !rel.iter().any(|r| names(r, t)) {
            missing.push(s);
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_room_of_src_is_listed() {
    let text = page();
    let spans: BTreeSet<String> = spans(&text).into_iter().collect();
    let mut unlisted = Vec::new();
    for e in fs::read_dir(root().join("src")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let listed = if e.path().is_dir() {
            let d = format!("src/{name}/");
            spans.iter().any(|s| s.split(", ").any(|p| p == d))
        } else {
            let f = format!("src/{name}");
            spans.iter().any(|s| s.split(", ").any(|p| p == f))
        };
        if !listed {
            unlisted.push(name);
        }
    }
    for e in fs::read_dir(root().join("src/am")).unwrap().flatten() {
        if e.path().is_dir() {
            let room = format!("am/{}/", e.file_name().to_string_lossy());
            if !spans.contains(&room) {
                unlisted.push(room);
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "rooms of src/ missing from ARCHITECTURE.md's tables: {unlisted:?}"
    );
}

#[test]
fn the_wire_format_is_the_codes() {
    let wire = fs::read_to_string(root().join("src/wire/mod.rs")).unwrap();
    let version = wire
        .lines()
        .find_map(|l| l.trim().strip_prefix("pub const VERSION: u8 = "))
        .and_then(|v| v.trim_end_matches(';').parse::<u8>().ok())
        .expect("wire::VERSION");
    let text = page();
    assert!(
        text.contains(&format!("## The wire format (version {version})")),
        "ARCHITECTURE.md's wire format is not version {version}"
    );
    let body = wire
        .split("pub enum PacketType {")
        .nth(1)
        .and_then(|s| s.split('}').next())
        .expect("enum PacketType");
    let mut types = 0;
    for line in body.lines().map(str::trim) {
        let Some((name, value)) = line.trim_end_matches(',').split_once(" = ") else {
            continue;
        };
        types += 1;
        let row = format!("| `{name}` | {value} |");
        assert!(
            text.contains(&row),
            "ARCHITECTURE.md's packet table lacks {row:?}"
        );
    }
    assert!(types >= 14, "{types} packet types read from wire/mod.rs");
    let rows = text.lines().filter(|l| l.starts_with("| `")).count();
    assert!(rows >= types);
}

#[test]
fn no_source_file_is_longer_than_600_lines() {
    let mut all = Vec::new();
    files_below(&root().join("src"), &mut all);
    let mut long: Vec<(usize, String)> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let n = fs::read_to_string(p).unwrap().lines().count();
            (n, p.strip_prefix(root()).unwrap().display().to_string())
        })
        .filter(|(n, _)| *n > MAX_LINES)
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by idea): {long:?}"
    );
}
