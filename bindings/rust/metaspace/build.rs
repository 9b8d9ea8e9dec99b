// metaspace-sys found libmetaspace.so (METASPACE_LIB_DIR or pkg-config) and passes its directory
// on (`links = "metaspace"`): written into this crate's rpath too, so that its tests, doctests
// and examples run without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_METASPACE_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_METASPACE_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
