// Links the shared library libmetaspace.so. Where it is: METASPACE_LIB_DIR, else the
// repository's release build (../../../build/release), else the system's library path.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=METASPACE_LIB_DIR");
    let dir = env::var_os("METASPACE_LIB_DIR").map(PathBuf::from).or_else(|| {
        let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
        let build = manifest.join("../../../build/release");
        build.join("libmetaspace.so").exists().then_some(build)
    });
    if let Some(dir) = dir {
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-search=native={}", dir.display());
        // Tests and examples run without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // The shared library brings libstdc++ itself: no -l stdc++ here.
    println!("cargo:rustc-link-lib=dylib=metaspace");
}
