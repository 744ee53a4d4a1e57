//! The layering of ARCHITECTURE.md, checked on the source: every module of
//! the crate may import (`crate::name`) only the modules below it. Arrows
//! point down: ffi -> am -> proto -> wire; am -> net -> sys.
//!
//! A new import that points up or sideways fails this test with the file and
//! line; a new top-level module must be given its place in `ALLOWED` first.
//!
//! Inside `src/am/` the same rule holds between its rooms (`AM_ROOMS`), and
//! no files import each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
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
    // a path (local rail, remote address): chosen by proto, routed by net
    ("path", &[]),
    ("time", &["sys"]),
    // the clock an endpoint owns: the only clock reads and waits above sys
    ("clock", &["sys", "time"]),
    // the packet MAC over pieces calls AWS-LC through `sys::gmac`; the CPU's CRC32C instruction
    ("wire", &["sys"]),
    ("fault", &["rng", "time"]),
    // the sans-IO protocol core: no socket, no clock, no AM notion
    ("proto", &["wire", "time", "rng", "fxhash", "stats", "path"]),
    // the transaction log's files (a locked memory-mapped file); its
    // mutation tests draw from the seeded generator
    ("txlog", &["sys", "fxhash", "rng"]),
    // configuration: read once, handed down
    ("config", &["proto", "fault", "time", "error"]),
    // the performability model: the protocol's timer rules and wire sizes,
    // no I/O
    ("perf", &["proto", "wire", "fault", "config"]),
    // transports
    (
        "net",
        &[
            "sys", "time", "clock", "fault", "config", "fxhash", "rng", "error", "path",
        ],
    ),
    // AM-2 semantics
    (
        "am",
        &[
            "proto", "net", "wire", "time", "clock", "config", "error", "fxhash", "rng", "sys",
            "fault", "stats", "txlog", "path",
        ],
    ),
    // job start-up, over the AM layer
    (
        "spmd",
        &[
            "am", "config", "error", "sys", "time", "clock", "fxhash", "rng", "wire",
        ],
    ),
    // the simulators: test tools over the protocol core (`SimNet`) and
    // over whole endpoints (`World`: the AM layer on virtual time)
    (
        "sim",
        &[
            "am", "net", "clock", "config", "proto", "wire", "time", "rng", "fault", "fxhash",
            "stats",
        ],
    ),
    // the C ABI: the top floor
    (
        "ffi",
        &[
            "am", "spmd", "config", "error", "wire", "time", "clock", "sys", "net", "proto",
            "fxhash", "stats", "txlog",
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

/// A file of tests only (`tests.rs`, `*_tests.rs`, or under a `tests/`).
fn is_test_file(f: &Path) -> bool {
    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || f.components().any(|c| c.as_os_str() == "tests")
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
        let test_file = is_test_file(f);
        for (name, line) in imports(&fs::read_to_string(f).unwrap()) {
            if name == module || may.contains(&name.as_str()) {
                continue;
            }
            // a test of a layer may run it in the simulated world
            if test_file && name == "sim" {
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

/// What reads a clock or waits on one by itself. Above `sys`, time is
/// given, never read: the clock an endpoint owns (`src/clock.rs`) is the
/// one way to the time and to waits, so that the simulator can run whole
/// endpoints on virtual time.
const CLOCK_READS: &[&str] = &[
    "Instant::now(",
    "monotonic_nanos(",
    "SystemTime::now(",
    "UNIX_EPOCH",
    "thread::sleep(",
    "clock_gettime(",
    ".elapsed()",
];

/// Files that still read the wall clock themselves, each with its reason;
/// this list only shrinks.
const CLOCK_NOT_YET: &[(&str, &str)] = &[(
    "wire/codec_tests.rs",
    "an ignored measurement of the send path, not a test: belongs in benches/",
)];

/// Whether `file` may read the clock itself: `sys/` (the OS calls),
/// `clock.rs` (the clock), the binaries (benchmarks measure wall time).
fn may_read_clock(src: &Path, file: &Path) -> bool {
    let rel = file
        .strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    rel.starts_with("sys/")
        || rel == "clock.rs"
        || rel.starts_with("bin/")
        || CLOCK_NOT_YET.iter().any(|(f, _)| *f == rel)
}

/// The modules whose endpoint owns a clock: there even the real clock's
/// own reading (`clock::real_now`, for code only real processes run) is
/// a read past the endpoint's clock.
const ENDPOINT_CLOCKED: &[&str] = &["am/", "net/", "proto/", "wire/", "txlog/"];

/// The lines of `code` (comments removed) that read a clock; `clocked`:
/// code under an endpoint's clock.
fn clock_reads(code: &str, clocked: bool) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let code_part = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let what = CLOCK_READS
            .iter()
            .find(|w| code_part.contains(*w))
            .or_else(|| (clocked && code_part.contains("real_now(")).then_some(&"real_now("));
        if let Some(what) = what {
            found.push((n + 1, what.to_string()));
        }
    }
    found
}

#[test]
fn time_is_read_only_through_the_endpoints_clock() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for f in &files {
        if may_read_clock(&src, f) {
            continue;
        }
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let clocked = ENDPOINT_CLOCKED.iter().any(|m| rel.starts_with(m));
        for (line, what) in clock_reads(&fs::read_to_string(f).unwrap(), clocked) {
            wrong.push(format!(
                "{}:{line}: `{what}` reads the clock: use the endpoint's (`crate::clock::Clock`)",
                f.display()
            ));
        }
    }
    for (f, why) in CLOCK_NOT_YET {
        assert!(
            src.join(f).exists(),
            "CLOCK_NOT_YET names {f} ({why}), which is gone"
        );
    }
    assert!(
        wrong.is_empty(),
        "clock reads outside sys/ and clock.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_a_clock_read() {
    let code = "let t = Instant::now(); // Instant::now() again\n// std::thread::sleep(d)\nstd::thread::sleep(d);\nlet x = t.elapsed();\n";
    let lines: Vec<usize> = clock_reads(code, false)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(lines, [1, 3, 4]);
    let real = "let t = crate::clock::real_now();\n";
    assert!(clock_reads(real, false).is_empty());
    assert_eq!(clock_reads(real, true).len(), 1);
}

/// The rooms of `src/am/`, from the ground up, each with what it holds. A
/// file of a room may import (`crate::am::room::file`, or `super::file`
/// within its room) its own room and the rooms below it only; never the
/// AM layer's face (`crate::am::Name`: `am/mod.rs` re-exports the rooms to
/// the rest of the crate, above them all). Tests drive whole endpoints:
/// a test file may import any room and the face.
const AM_ROOMS: &[(&str, &str)] = &[
    (
        "handler",
        "what a program hands the layer: handlers, messages, names, tables",
    ),
    ("queue", "the queue of incoming AM messages"),
    (
        "state",
        "the subsystems' state, plain data that knows no endpoint",
    ),
    (
        "endpoint",
        "`EpState` and the `Endpoint` that locks it; the host",
    ),
    ("txn", "transactions: initiator, target, probes, log"),
    (
        "messages",
        "requests, replies, tokens, the driver, the draining, dispatch",
    ),
    (
        "rma",
        "remote memory: puts, gets, direct and shared transfers",
    ),
    ("express", "the express lane"),
    ("names", "handler names and published endpoint names"),
    (
        "bundle",
        "bundles, their progress thread, pull-style receive; the Rust API's lifetimes",
    ),
];

/// What a file of `src/am/` names inside the AM layer (comments removed):
/// (the room or `""` for the face, the file or `""`, line) for each
/// `crate::am::x` path, and `("super::super", "", line)` for each
/// `super::super::` (a room's files name other rooms by `crate::am::`).
fn am_imports(code: &str) -> Vec<(String, String, usize)> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut at = 0;
        while let Some(i) = line[at..].find("crate::am::") {
            let start = at + i + "crate::am::".len();
            at = start;
            // `crate::am::{a, b::c}` names each of a and b
            let paths: Vec<&str> = match line[start..].strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![&line[start..]],
            };
            for path in paths {
                let first = word(path);
                let rest = &path[first.len()..];
                let file = rest.strip_prefix("::").map(word).unwrap_or_default();
                if AM_ROOMS.iter().any(|(r, _)| *r == first) {
                    found.push((first, file, n + 1));
                } else if !first.is_empty() && first != "tests" && first != "world_tests" {
                    found.push((String::new(), first, n + 1));
                }
            }
        }
        if line.contains("super::super::") {
            found.push(("super::super".to_string(), String::new(), n + 1));
        }
    }
    found
}

/// The files of `f`'s own folder that `code` (`f`'s) names as `super::file`.
fn super_imports(f: &Path, code: &str, to: &mut BTreeSet<PathBuf>) {
    let dir = f.parent().unwrap();
    for line in code.lines() {
        let line = line.split("//").next().unwrap();
        let mut at = 0;
        while let Some(i) = line[at..].find("super::") {
            let start = at + i + "super::".len();
            at = start;
            if line[..start - "super::".len()].ends_with("super::") {
                continue;
            }
            let name: String = line[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let g = dir.join(format!("{name}.rs"));
            if g.exists() && g != f {
                to.insert(g);
            }
        }
    }
}

/// The circles of `arrows` (file -> the files it imports): a depth-first
/// walk that meets a file still on its path.
fn circles(arrows: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<String> {
    fn walk(
        f: &PathBuf,
        arrows: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        path: &mut Vec<PathBuf>,
        done: &mut BTreeSet<PathBuf>,
        circles: &mut Vec<String>,
    ) {
        if done.contains(f) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == f) {
            let names: Vec<String> = path[i..].iter().map(|p| p.display().to_string()).collect();
            circles.push(format!("{} -> {}", names.join(" -> "), f.display()));
            return;
        }
        path.push(f.clone());
        for g in arrows.get(f).into_iter().flatten() {
            walk(g, arrows, path, done, circles);
        }
        path.pop();
        done.insert(f.clone());
    }
    let mut done = BTreeSet::new();
    let mut circles = Vec::new();
    for f in arrows.keys() {
        walk(f, arrows, &mut Vec::new(), &mut done, &mut circles);
    }
    circles
}

/// The file a room's module path names: `src/am/<room>/<file>.rs`.
fn am_file(am: &Path, room: &str, file: &str) -> Option<PathBuf> {
    let f = am.join(room).join(format!("{file}.rs"));
    f.exists().then_some(f)
}

#[test]
fn the_am_rooms_import_only_their_own_and_those_below() {
    let am = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("am");
    let floor = |r: &str| AM_ROOMS.iter().position(|(x, _)| *x == r);
    let mut files = Vec::new();
    rust_files(&am, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    // file -> the files it imports (tests left out), for the circles
    let mut arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&am).unwrap();
        if rel.components().count() < 2 {
            continue; // the face (`mod.rs`) and the tests beside it
        }
        let room = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let Some(own) = floor(room) else {
            wrong.push(format!(
                "{}: room `{room}` has no place in AM_ROOMS (tests/layering.rs)",
                f.display()
            ));
            continue;
        };
        if is_test_file(f) {
            continue;
        }
        let code = fs::read_to_string(f).unwrap();
        let to = arrows.entry(f.clone()).or_default();
        for (target, file, line) in am_imports(&code) {
            match floor(&target) {
                Some(t) if t <= own => {
                    if let Some(g) = am_file(&am, &target, &file) {
                        to.insert(g);
                    }
                }
                Some(_) => wrong.push(format!(
                    "{}:{line}: room `{room}` imports `crate::am::{target}`, which is above it",
                    f.display()
                )),
                None if target.is_empty() => wrong.push(format!(
                    "{}:{line}: room `{room}` imports `crate::am::{file}` through the face \
                     (`am/mod.rs`): name the room and file it is defined in",
                    f.display()
                )),
                None => wrong.push(format!(
                    "{}:{line}: `super::super::` out of room `{room}`: name the room \
                     (`crate::am::room::file`)",
                    f.display()
                )),
            }
        }
        // `super::file` inside the room
        super_imports(f, &code, to);
    }
    for c in circles(&arrows) {
        wrong.push(format!(
            "files of src/am/ import each other in a circle: {c}"
        ));
    }
    assert!(
        wrong.is_empty(),
        "imports against the rooms of src/am/:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_the_am_rooms() {
    let code = "use crate::am::state::rma::RmaState;\n// crate::am::bundle in a comment\nuse crate::am::{Endpoint, queue::incoming};\nlet x = super::super::token::with(1);\n";
    let found = am_imports(code);
    let rooms: Vec<&str> = found.iter().map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(rooms, ["state", "", "queue", "super::super"]);
    assert_eq!(found[0].1, "rma");
    assert_eq!(found[1].1, "Endpoint");
    assert_eq!(found[2].1, "incoming");
    assert_eq!(found[3].2, 4, "line numbers");
}

/// The simulator's files (`src/sim/`, its face `mod.rs` and the tests
/// left out) import each other (`super::file`) in no circle: arrows point
/// down, world -> scheduler, transport -> state -> network.
#[test]
fn the_simulators_files_import_each_other_in_no_circle() {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join("sim");
    let mut files = Vec::new();
    rust_files(&sim, &mut files);
    let mut arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for f in files {
        if f.ends_with("mod.rs") || is_test_file(&f) {
            continue;
        }
        let code = fs::read_to_string(&f).unwrap();
        let to = arrows.entry(f.clone()).or_default();
        super_imports(&f, &code, to);
    }
    assert!(arrows.len() >= 5, "the simulator's files read: {arrows:?}");
    let found = circles(&arrows);
    assert!(
        found.is_empty(),
        "files of src/sim/ import each other in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_a_circle() {
    let (a, b, c) = (
        PathBuf::from("a.rs"),
        PathBuf::from("b.rs"),
        PathBuf::from("c.rs"),
    );
    let mut arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    arrows.entry(a.clone()).or_default().insert(b.clone());
    arrows.entry(b.clone()).or_default().insert(c.clone());
    assert!(circles(&arrows).is_empty(), "a -> b -> c");
    arrows.entry(c).or_default().insert(a);
    assert_eq!(circles(&arrows), ["a.rs -> b.rs -> c.rs -> a.rs"]);
}
