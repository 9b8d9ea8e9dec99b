// Links the shared library libmetaspace.so, found by, in this order:
//   1. METASPACE_LIB_DIR: the directory holding libmetaspace.so (a build tree, e.g. build/release);
//   2. pkg-config: the metaspace.pc that `cmake --install` puts in <prefix>/lib/pkgconfig
//      (PKG_CONFIG_PATH for a prefix pkg-config does not search; PKG_CONFIG names the program).
// Neither: the build fails and says how to give either. The directory is also written into the
// binaries' rpath (tests run without LD_LIBRARY_PATH) and passed to dependent crates as
// DEP_METASPACE_LIB_DIR (and the headers, where known, as DEP_METASPACE_INCLUDE).
// pkg-config is run as a command: no crate needed, so the crate builds offline.
use std::env;
use std::path::PathBuf;
use std::process::Command;

const HINT: &str = "\
metaspace-sys: cannot find libmetaspace. Either
  - set METASPACE_LIB_DIR to the directory holding libmetaspace.so (e.g. the repository's
    build/release after `cmake --preset release && cmake --build --preset release`), or
  - install the library (`cmake --install build/release --prefix PREFIX`) and let pkg-config find
    metaspace.pc: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig (not needed for /usr or /usr/local).";

struct Found {
    lib_dirs: Vec<PathBuf>,
    libs: Vec<String>,
    include: Option<PathBuf>,
    how: String,
}

fn from_env_dir() -> Option<Found> {
    let dir = PathBuf::from(env::var_os("METASPACE_LIB_DIR")?);
    if !dir.join("libmetaspace.so").exists() {
        panic!("metaspace-sys: METASPACE_LIB_DIR={} holds no libmetaspace.so\n\n{}",
               dir.display(), HINT);
    }
    let dir = dir.canonicalize().unwrap_or(dir);
    // A build tree of the repository: the headers are in its source tree.
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let include = manifest.join("../../../include");
    let include = include.join("metaspace/metaspace.h").exists()
        .then(|| include.canonicalize().unwrap_or(include));
    Some(Found { how: format!("METASPACE_LIB_DIR={}", dir.display()), lib_dirs: vec![dir],
                 libs: vec!["metaspace".into()], include })
}

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&program).args(args).arg("metaspace").output()
        .map_err(|e| format!("{} not runnable: {}", program, e))?;
    if !out.status.success() {
        return Err(format!("`{} {} metaspace` failed: {}", program, args.join(" "),
                           String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_pkg_config() -> Result<Found, String> {
    let version = pkg_config(&["--modversion"])?;
    let wanted = format!("{}.{}.", env::var("CARGO_PKG_VERSION_MAJOR").unwrap(),
                         env::var("CARGO_PKG_VERSION_MINOR").unwrap());
    if !version.starts_with(&wanted) {
        panic!("metaspace-sys {} describes libmetaspace {}x; pkg-config found {} \
                (while the major version is 0, each minor version has its own ABI)\n\n{}",
               env::var("CARGO_PKG_VERSION").unwrap(), wanted, version, HINT);
    }
    let mut found = Found { lib_dirs: vec![], libs: vec![], include: None,
                            how: format!("pkg-config (metaspace {})", version) };
    for flag in pkg_config(&["--libs"])?.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            let dir = PathBuf::from(dir);
            found.lib_dirs.push(dir.canonicalize().unwrap_or(dir));
        } else if let Some(lib) = flag.strip_prefix("-l") {
            found.libs.push(lib.to_string());
        }
    }
    for flag in pkg_config(&["--cflags"])?.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            let dir = PathBuf::from(dir);
            found.include.get_or_insert(dir.canonicalize().unwrap_or(dir));
        }
    }
    if !found.libs.iter().any(|l| l == "metaspace") {
        found.libs.push("metaspace".into());
    }
    Ok(found)
}

fn main() {
    for var in ["METASPACE_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR",
                "PKG_CONFIG_SYSROOT_DIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    let found = match from_env_dir() {
        Some(found) => found,
        None => from_pkg_config().unwrap_or_else(|why| panic!("{}\n\n({})", HINT, why)),
    };
    for dir in &found.lib_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // The shared library brings libstdc++ itself: no -l stdc++ here.
    for lib in &found.libs {
        println!("cargo:rustc-link-lib=dylib={}", lib);
    }
    if let Some(dir) = found.lib_dirs.first() {
        println!("cargo:lib_dir={}", dir.display());
        println!("cargo:rustc-env=METASPACE_SYS_LIB_DIR={}", dir.display());
    }
    if let Some(include) = &found.include {
        println!("cargo:include={}", include.display());
    }
    println!("cargo:rustc-env=METASPACE_SYS_FOUND_BY={}", found.how);
}
