//! Source checks that keep two promises of the C boundary, by reading the
//! crate's own files:
//!
//! 1. every `extern "C" fn` defined under `src/ffi` is exactly one call of
//!    the panic guard (`guard`, `guard_or`, `guard_noreturn` or `boundary`),
//!    so nothing runs outside `catch_unwind` and no panic reaches C;
//! 2. every `unsafe { .. }` block and `unsafe impl` under `src/sys` and
//!    `src/ffi` has a `// SAFETY:` comment just above it (or on its line),
//!    and every `unsafe fn` a `# Safety` section in its doc comment. The
//!    exported `unsafe extern "C" fn`s are exempt: their contract is the
//!    C header that declares them.
//!
//! Both scanners run on a copy of the text in which comments, strings and
//! character literals are blanked out (same length), so that words inside
//! them neither count nor confuse brace matching. Each has a test that
//! shows it able to fail.

use std::path::{Path, PathBuf};

/// The guard functions an `extern "C" fn` body may consist of.
const GUARDS: &[&str] = &["guard", "guard_or", "guard_noreturn", "boundary"];

/// `src` with comments, string literals and char literals replaced by spaces
/// (newlines kept), byte for byte.
fn mask(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut m = b.to_vec();
    let blank = |m: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut m[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let end = b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut m, i, end);
            i = end;
        } else if c == b'/' && next == Some(b'*') {
            let (mut j, mut depth) = (i + 2, 1);
            while j < b.len() && depth > 0 {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut m, i, j);
            i = j;
        } else if c == b'r'
            && (i == 0 || !ident(b[i - 1]) || b[i - 1] == b'b')
            && matches!(next, Some(b'"') | Some(b'#'))
        {
            // Raw string r"..." or r#"..."#: ends at a quote and as many #.
            let hashes = b[i + 1..].iter().take_while(|&&x| x == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut m, i, end);
            i = end;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut m, i, j + 1);
            i = j + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}', a multi-byte char), or a
            // lifetime / label (left alone).
            let end = if next == Some(b'\\') {
                // The closing quote comes after the escaped character.
                b.get(i + 3..)
                    .and_then(|t| t.iter().position(|&x| x == b'\''))
                    .map(|p| i + 3 + p + 1)
            } else {
                let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(e) => {
                    blank(&mut m, i, e);
                    i = e;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    m
}

/// The index of the bracket closing the one at `open` (in masked text).
fn matching(m: &[u8], open: usize) -> Option<usize> {
    let (o, c) = (
        m[open],
        match m[open] {
            b'(' => b')',
            b'{' => b'}',
            b'[' => b']',
            _ => return None,
        },
    );
    let mut depth = 0usize;
    for (j, &x) in m.iter().enumerate().skip(open) {
        if x == o {
            depth += 1;
        } else if x == c {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

fn skip_ws(m: &[u8], mut i: usize) -> usize {
    while i < m.len() && m[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Names of the `extern "C" fn`s defined in `src` whose body is not exactly
/// one call of a guard.
fn unguarded_exports(src: &str) -> Vec<String> {
    let m = mask(src);
    let text = src.as_bytes();
    let mut bad = Vec::new();
    let needle = b"extern \"C\" fn ";
    let mut from = 0;
    while let Some(p) = text[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
    {
        from = p + needle.len();
        // Inside a comment or a string: blanked in the mask.
        if &m[p..p + 6] != b"extern" {
            continue;
        }
        let name_start = skip_ws(&m, from);
        let mut name_end = name_start;
        while name_end < m.len() && is_ident(m[name_end]) {
            name_end += 1;
        }
        if name_end == name_start {
            continue; // a function pointer type: `extern "C" fn(..)`
        }
        let name = src[name_start..name_end].to_string();
        // Generic parameters are not allowed on extern "C" exports, so the
        // parameter list follows the name.
        let open = skip_ws(&m, name_end);
        let Some(close) = (m.get(open) == Some(&b'('))
            .then(|| matching(&m, open))
            .flatten()
        else {
            bad.push(name);
            continue;
        };
        // The body, or `;` for a declaration.
        let Some(q) = m[close..]
            .iter()
            .position(|&x| x == b'{' || x == b';')
            .map(|q| close + q)
        else {
            continue;
        };
        if m[q] == b';' {
            continue;
        }
        let Some(end) = matching(&m, q) else {
            bad.push(name);
            continue;
        };
        if !is_one_guard_call(&m[q + 1..end]) {
            bad.push(name);
        }
    }
    bad
}

/// True when `body` (masked) is `GUARD( .. )` and nothing else.
fn is_one_guard_call(body: &[u8]) -> bool {
    let s = skip_ws(body, 0);
    let mut e = s;
    while e < body.len() && is_ident(body[e]) {
        e += 1;
    }
    let word = std::str::from_utf8(&body[s..e]).unwrap_or("");
    if !GUARDS.contains(&word) {
        return false;
    }
    let open = skip_ws(body, e);
    if body.get(open) != Some(&b'(') {
        return false;
    }
    match matching(body, open) {
        Some(close) => body[close + 1..].iter().all(u8::is_ascii_whitespace),
        None => false,
    }
}

/// `file:line: text` for every unsafe block, impl or fn in `src` without
/// its justification just above.
fn undocumented_unsafe(file: &str, src: &str) -> Vec<String> {
    let masked = String::from_utf8(mask(src)).expect("masking keeps UTF-8 at ASCII bytes");
    let lines: Vec<&str> = src.lines().collect();
    let code: Vec<&str> = masked.lines().collect();
    let mut bad = Vec::new();
    for (n, c) in code.iter().enumerate() {
        let (mut block_or_impl, mut function) = (false, false);
        let mut rest = *c;
        while let Some(k) = rest.find("unsafe") {
            let before_ok = !rest[..k].ends_with(|ch: char| ch.is_alphanumeric() || ch == '_');
            let after = &rest[k + "unsafe".len()..];
            rest = after;
            if !before_ok || after.starts_with(|ch: char| ch.is_alphanumeric() || ch == '_') {
                continue;
            }
            let next = after.trim_start();
            if next.starts_with('{') || next.starts_with("impl ") {
                block_or_impl = true;
            } else if next.starts_with("fn ") {
                function = true;
            }
            // Otherwise `unsafe extern "C" fn` (an export, or a pointer type).
        }
        if !block_or_impl && !function {
            continue;
        }
        let above = justification_above(&lines, &code, n);
        let ok_block = lines[n].contains("SAFETY:") || above.contains("SAFETY:");
        let ok_fn = above.contains("# Safety");
        if (block_or_impl && !ok_block) || (function && !ok_fn) {
            bad.push(format!("{file}:{}: {}", n + 1, lines[n].trim()));
        }
    }
    bad
}

/// The comment lines (and attributes) directly above line `n`, or above the
/// first line of the statement `n` continues (up to 5 lines of code that do
/// not end a statement or open / close a block).
fn justification_above(lines: &[&str], code: &[&str], n: usize) -> String {
    let ends_statement = |c: &str| {
        let t = c.trim_end();
        t.is_empty() || t.ends_with(';') || t.ends_with('{') || t.ends_with('}')
    };
    let is_comment_or_attr = |i: usize| {
        let t = lines[i].trim_start();
        t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') || t.starts_with("#[")
    };
    let mut i = n;
    let mut continued = 0;
    while i > 0 && !is_comment_or_attr(i - 1) && !ends_statement(code[i - 1]) && continued < 5 {
        i -= 1;
        continued += 1;
    }
    let mut text = String::new();
    while i > 0 && is_comment_or_attr(i - 1) {
        i -= 1;
        text.push_str(lines[i]);
        text.push('\n');
    }
    text
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources(under: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join(under), &mut files);
    assert!(!files.is_empty(), "no Rust files under {under}");
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable source");
            let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            (rel, text)
        })
        .collect()
}

#[test]
fn every_export_is_guarded() {
    let mut bad = Vec::new();
    let mut exports = 0;
    for (file, text) in sources("src/ffi") {
        exports += text.matches("#[no_mangle]").count();
        for name in unguarded_exports(&text) {
            bad.push(format!("{file}: {name}"));
        }
    }
    assert!(exports >= 59, "found only {exports} #[no_mangle] items");
    assert!(
        bad.is_empty(),
        "extern \"C\" fns whose body is not one call of guard / guard_or / \
         guard_noreturn / boundary (a panic could reach C):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn every_unsafe_is_justified() {
    let mut bad = Vec::new();
    for dir in ["src/sys", "src/ffi"] {
        for (file, text) in sources(dir) {
            bad.extend(undocumented_unsafe(&file, &text));
        }
    }
    assert!(
        bad.is_empty(),
        "unsafe without a `// SAFETY:` comment just above (or `# Safety` doc \
         for an unsafe fn):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn guard_check_can_fail() {
    let src = r#"
// extern "C" fn in_a_comment() { 0 }
const S: &str = "extern \"C\" fn in_a_string() { 0 }";
type F = unsafe extern "C" fn(c_int) -> c_int;
extern "C" {
    fn declared(x: c_int) -> c_int;
}
#[no_mangle]
pub extern "C" fn good(x: c_int) -> c_int {
    // a comment first is fine; braces in strings do not count: "}"
    guard_or("good", -1, || { if x > 0 { 1 } else { '}' as c_int } })
}
#[no_mangle]
pub unsafe extern "C" fn good2(p: *const c_char) -> *const c_char {
    guard("good2", || p)
}
#[no_mangle]
pub extern "C" fn bare() -> c_int {
    0
}
#[no_mangle]
pub extern "C" fn before(x: c_int) -> c_int {
    let y = x + 1;
    boundary("before", || Ok(()))
}
#[no_mangle]
pub extern "C" fn after() -> c_int {
    guard("after", || 0);
    1
}
#[no_mangle]
pub extern "C" fn other_helper() -> c_int {
    guarded("other_helper", || 0)
}
"#;
    assert_eq!(
        unguarded_exports(src),
        ["bare", "before", "after", "other_helper"]
    );
}

#[test]
fn safety_check_can_fail() {
    let src = r#"
fn f(p: *const u8) -> u8 {
    // SAFETY: p is valid.
    let a = unsafe { *p };
    let b = unsafe { *p };
    // SAFETY: p is valid; the statement spans lines.
    let c = g(
        unsafe { *p },
    );
    let s = "unsafe { in a string }";
    // unsafe { in a comment }
    a + b + c
}
/// Reads.
///
/// # Safety
/// p must be valid.
#[inline]
unsafe fn documented(p: *const u8) -> u8 {
    0
}
/// Reads.
unsafe fn undocumented(p: *const u8) -> u8 {
    0
}
// SAFETY: T is plain data.
unsafe impl Send for T {}
unsafe impl Sync for T {}
pub unsafe extern "C" fn exported(p: *const u8) {}
"#;
    let bad = undocumented_unsafe("x.rs", src);
    assert_eq!(
        bad,
        [
            "x.rs:5: let b = unsafe { *p };",
            "x.rs:23: unsafe fn undocumented(p: *const u8) -> u8 {",
            "x.rs:28: unsafe impl Sync for T {}",
        ]
    );
}
