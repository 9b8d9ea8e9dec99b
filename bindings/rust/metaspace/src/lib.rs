pub use metaspace_sys as sys;
