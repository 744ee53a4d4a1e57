//! Build steps beside rustc:
//! 1. compile the C variadic shim (src/ffi/c/shim.c) and link it whole, so
//!    its functions exist in libramp.so, and export them with a version script
//!    made from src/ffi/c/exports.txt (rustc's own script hides C symbols);
//! 2. give libramp.so its soname with the ABI version (libramp.so.0);
//! 3. put the soname beside the library in the target directory
//!    (`libramp.so.0 -> libramp.so`), so that a program linked in-tree with
//!    `-Ltarget/release -lramp` finds it at run time with
//!    `LD_LIBRARY_PATH=target/release`, as an installed one would;
//! 4. regenerate bindings/ramp_gen.h with cbindgen from src/ffi (and the
//!    error codes and the statistics struct, which live below it), which a
//!    test compares with the hand-curated include/ headers.

use std::env;
use std::fs;
use std::path::Path;

/// Bumped only when the ABI breaks; also RAMP_ABI_VERSION in include/ramp.h.
const ABI_VERSION: u32 = 0;

fn main() {
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap();
    let out = env::var("OUT_DIR").unwrap();
    for p in [
        "src/ffi/c/shim.c",
        "src/ffi/c/exports.txt",
        "include/am.h",
        "include/ramp.h",
        "include/amudp.h",
        "include/amudp_spmd.h",
        "include/amudp_const.h",
        "include/ramp_spmd.h",
        "src/ffi",
        "src/error.rs",
        "src/stats.rs",
        "cbindgen.toml",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }

    cc::Build::new()
        .file("src/ffi/c/shim.c")
        .include("include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .link_lib_modifier("+whole-archive")
        .compile("ramp_shim");

    let exports = fs::read_to_string(Path::new(&dir).join("src/ffi/c/exports.txt")).unwrap();
    let mut script = String::from("{\n  global:\n");
    for name in exports
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        script.push_str(&format!("    {name};\n"));
    }
    script.push_str("};\n");
    let map = Path::new(&out).join("shim_exports.map");
    fs::write(&map, script).unwrap();
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libramp.so.{ABI_VERSION}");

    soname_link(Path::new(&out));

    let config = cbindgen::Config::from_file(Path::new(&dir).join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");
    // Only src/ffi, the error codes (src/error.rs) and the statistics struct
    // (src/stats.rs, C's `ramp_stats_t`) are parsed: the C ABI's
    // declarations, not every public constant of the crate.
    let mut builder = cbindgen::Builder::new();
    let mut ffi_files: Vec<_> = fs::read_dir(Path::new(&dir).join("src/ffi"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        // mod.rs declares the other files as modules: cbindgen would read
        // them a second time through it (and write some items twice)
        .filter(|p| p.file_name().is_none_or(|n| n != "mod.rs"))
        .collect();
    ffi_files.push(Path::new(&dir).join("src/error.rs"));
    ffi_files.push(Path::new(&dir).join("src/stats.rs"));
    ffi_files.sort();
    for f in ffi_files {
        builder = builder.with_src(f);
    }
    let generated = builder
        .with_config(config)
        .generate()
        .expect("cbindgen could not parse src/ffi");
    let target = Path::new(&dir).join("bindings/ramp_gen.h");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    // Writes only when the text changed, so the tree stays clean otherwise.
    generated.write_to_file(&target);
}

/// Creates `libramp.so.ABI -> libramp.so` in the profile's directory
/// (`OUT_DIR` is `<target>/<profile>/build/ramp-<hash>/out`). The link may
/// dangle until rustc has written the library; a failure only warns.
fn soname_link(out: &Path) {
    let Some(profile_dir) = out.ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join(format!("libramp.so.{ABI_VERSION}"));
    if fs::read_link(&link).is_ok_and(|t| t == Path::new("libramp.so")) {
        return;
    }
    let _ = fs::remove_file(&link);
    #[cfg(unix)]
    if let Err(e) = std::os::unix::fs::symlink("libramp.so", &link) {
        println!("cargo:warning=cannot create {}: {e}", link.display());
    }
}
