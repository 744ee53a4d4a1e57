//! The layering of ARCHITECTURE.md, checked on the source: every module of
//! the crate may import (`crate::name`) only the modules below it. Arrows
//! point down: ffi -> am -> proto -> wire; am -> net -> sys.
//!
//! A new import that points up or sideways fails this test with the file and
//! line; a new top-level module must be given its place in `ALLOWED` first.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and what it may import. The binaries
/// (`src/bin`) sit above the library and use only its public API.
const ALLOWED: &[(&str, &[&str])] = &[
    // the ground floor and leaf utilities
    ("sys", &[]),
    ("rng", &[]),
    ("fxhash", &[]),
    ("error", &[]),
    ("stats", &[]),
    ("time", &["sys"]),
    // the packet MAC over pieces calls AWS-LC through `sys::gmac`; the CPU's CRC32C instruction
    ("wire", &["sys"]),
    ("fault", &["rng", "time"]),
    // the sans-IO protocol core: no socket, no clock, no AM notion
    ("proto", &["wire", "time", "rng", "fxhash", "stats"]),
    // the transaction log's files (a locked memory-mapped file); its
    // mutation tests draw from the seeded generator
    ("txlog", &["sys", "fxhash", "rng"]),
    // configuration: read once, handed down
    ("config", &["proto", "fault", "time", "error"]),
    // transports
    (
        "net",
        &["sys", "time", "fault", "config", "fxhash", "rng", "error"],
    ),
    // AM-2 semantics
    (
        "am",
        &[
            "proto", "net", "wire", "time", "config", "error", "fxhash", "rng", "sys", "fault",
            "stats", "txlog",
        ],
    ),
    // job start-up, over the AM layer
    (
        "spmd",
        &[
            "am", "config", "error", "sys", "time", "fxhash", "rng", "wire",
        ],
    ),
    // the simulator: a test tool over the protocol core
    (
        "sim",
        &["proto", "wire", "time", "rng", "fault", "fxhash", "stats"],
    ),
    // the C ABI: the top floor
    (
        "ffi",
        &[
            "am", "spmd", "config", "error", "wire", "time", "sys", "net", "proto", "fxhash",
            "stats", "txlog",
        ],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/am/x.rs` -> `am`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "bin" => None,
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

/// The crate modules named by `crate::x` paths in `code` (comments removed),
/// with the line each is first named on; `use crate::{a, b::c}` counts a and b.
fn imports(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut text = String::new();
    let mut line_of = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        for _ in 0..line.len() + 1 {
            line_of.push(n + 1);
        }
        text.push_str(line);
        text.push('\n');
    }
    let mut at = 0;
    while let Some(i) = text[at..].find("crate::") {
        let start = at + i + "crate::".len();
        at = start;
        // `super::crate::` does not exist; `$crate::` is a macro path: skip
        if text[..start - "crate::".len()].ends_with('$') {
            continue;
        }
        let rest = &text[start..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push((name, line_of[start]));
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((name, line_of[start]));
            }
        }
    }
    found
}

#[test]
fn every_import_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for f in &files {
        let Some(module) = module_of(&src, f) else {
            continue;
        };
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!(
                "{}: module `{module}` has no place in ALLOWED (tests/layering.rs)",
                f.display()
            ));
            continue;
        };
        for (name, line) in imports(&fs::read_to_string(f).unwrap()) {
            if name == module || may.contains(&name.as_str()) {
                continue;
            }
            wrong.push(format!(
                "{}:{line}: `{module}` imports `crate::{name}`, which is not below it",
                f.display()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_an_upward_import() {
    let code = "use crate::wire::Category;\n// crate::am in a comment\nuse crate::{am::Endpoint, net};\nlet x = crate::ffi::verbose();\n";
    let names: Vec<String> = imports(code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["wire", "am", "net", "ffi"]);
    assert_eq!(imports(code)[3].1, 4, "line numbers");
}
