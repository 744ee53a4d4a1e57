//! The README's table of `RAMP_*` variables and `ramp::config::VARIABLES`
//! list the same names: a variable added to the code must be documented, and
//! a documented one must exist.
//!
//! A table row is any Markdown table line whose first cell is a `RAMP_*`
//! name in backticks: `` | `RAMP_WINDOW` | packets in flight ... | ``.

use std::collections::BTreeSet;

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Names in the first cell of the README's table rows, in order.
fn readme_table_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let row = line.trim().strip_prefix('|')?;
            let cell = row.split('|').next()?.trim();
            let name = cell.strip_prefix('`')?.strip_suffix('`')?;
            let is_var = name.starts_with("RAMP_")
                && name.len() > "RAMP_".len()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            is_var.then(|| name.to_string())
        })
        .collect()
}

/// The row to paste into the README for a variable it lacks (Markdown
/// escapes for `*`, `_` and `|` in the meaning).
fn row_for(name: &str, meaning: &str) -> String {
    let mut m = String::new();
    for c in meaning.chars() {
        if matches!(c, '*' | '_' | '|' | '\\') {
            m.push('\\');
        }
        m.push(c);
    }
    format!("| `{name}` | {m} |")
}

#[test]
fn readme_table_lists_exactly_the_config_variables() {
    let text = readme();
    let documented = readme_table_names(&text);
    assert!(
        !documented.is_empty(),
        "README.md has no table rows starting with a `RAMP_*` name"
    );

    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = documented.iter().filter(|n| !seen.insert(*n)).collect();
    assert!(
        twice.is_empty(),
        "README.md lists these variables more than once: {twice:?}"
    );

    let code: BTreeSet<&str> = ramp::config::VARIABLES.iter().map(|v| v.name).collect();
    assert_eq!(
        code.len(),
        ramp::config::VARIABLES.len(),
        "ramp::config::VARIABLES names a variable twice"
    );
    let doc: BTreeSet<&str> = documented.iter().map(String::as_str).collect();

    let missing: Vec<String> = ramp::config::VARIABLES
        .iter()
        .filter(|v| !doc.contains(v.name))
        .map(|v| row_for(v.name, v.meaning))
        .collect();
    let extra: Vec<&str> = doc.difference(&code).copied().collect();

    let mut msg = String::new();
    if !missing.is_empty() {
        msg.push_str(
            "variables in ramp::config::VARIABLES (src/config/variables.rs) missing from README.md's \
             table; add these rows:\n",
        );
        for r in &missing {
            msg.push_str(r);
            msg.push('\n');
        }
    }
    if !extra.is_empty() {
        msg.push_str(&format!(
            "variables in README.md's table that ramp::config::VARIABLES does not have \
             (remove them from the README, or add them to src/config/variables.rs): {extra:?}\n"
        ));
    }
    assert!(msg.is_empty(), "{msg}");
}

/// Rust sources under `src/` that spell a variable's name as a string,
/// outside `src/config.rs`, `src/config/` and unit tests: `path:line: text`.
fn names_outside_config(dir: &std::path::Path, out: &mut Vec<String>) {
    const NAMES: &[&str] = &[
        "\"RAMP_",
        "\"NETWORKDEPTH",
        "\"AMUDP_NETWORKDEPTH",
        "\"SPAWNFN",
        "\"AMUDP_SPAWNFN",
        "\"ROUTE_OUTPUT",
    ];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            names_outside_config(&path, out);
            continue;
        }
        // config.rs, its own files (src/config/: the table of variables,
        // unit tests), and unit-test files (`tests.rs`, compiled only under
        // cfg(test))
        if path.extension().is_none_or(|e| e != "rs")
            || path.ends_with("src/config.rs")
            || path.parent().is_some_and(|p| p.ends_with("src/config"))
            || path.file_name().is_some_and(|f| f == "tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let l = line.trim_start();
            if !l.starts_with("//") && NAMES.iter().any(|n| l.contains(n)) {
                out.push(format!("{}:{}: {}", path.display(), i + 1, l));
            }
        }
    }
}

#[test]
fn variables_are_named_and_read_only_in_config() {
    let src = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut found = Vec::new();
    names_outside_config(src, &mut found);
    assert!(
        found.is_empty(),
        "read RAMP_* variables through ramp::config (a Var in VARIABLES, a constant \
         for a name used elsewhere), not by name here:\n{}",
        found.join("\n")
    );
}

#[test]
fn table_parser_finds_rows_and_ignores_other_text() {
    let text = "\
| variable | meaning |
|---|---|
| `RAMP_A` | one |
|`RAMP_B_2`|two|
The `RAMP_C` variable in prose is not a row.
| `ramp_lower` | not a variable |
| `RAMP_` | empty name |
| `RAMP_VERSION_MAJOR` MACRO | not a bare name |
";
    assert_eq!(readme_table_names(text), vec!["RAMP_A", "RAMP_B_2"]);
    assert_eq!(row_for("RAMP_X", "2*a|b_c"), "| `RAMP_X` | 2\\*a\\|b\\_c |");
}

/// The README's table of AMUDP's names lists every entry of
/// `ramp::config::AMUDP_VARIABLES` with what ramp does with it.
#[test]
fn readme_lists_every_amudp_variable() {
    let text = readme();
    let mut missing = Vec::new();
    for v in ramp::config::AMUDP_VARIABLES {
        let row = row_for_amudp(v.suffix, v.ramp);
        if !text.lines().any(|l| l.trim() == row) {
            missing.push(row);
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's table of AMUDP and GASNet names lacks these rows (paste them):\n{}",
        missing.join("\n")
    );
}

fn row_for_amudp(suffix: &str, ramp: &str) -> String {
    let r = row_for("X", ramp);
    let meaning = r.trim_start_matches("| `X` | ");
    format!("| `GASNET_{suffix}`, `AMUDP_{suffix}` | {meaning}")
}
