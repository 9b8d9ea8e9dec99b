// One walk through the C API from Rust, against the real shared library.
use metaspace_sys::*;
use std::ffi::{CStr, CString};
use std::mem::{size_of, MaybeUninit};
use std::os::raw::{c_char, c_void};

unsafe extern "C" fn append(user: *mut c_void, text: *const c_char, len: usize) {
    let out = &mut *(user as *mut Vec<u8>);
    out.extend_from_slice(std::slice::from_raw_parts(text as *const u8, len));
}

#[test]
fn create_allocate_report_destroy() {
    unsafe {
        let version = CStr::from_ptr(ms_version()).to_str().unwrap();
        assert_eq!(version, env!("CARGO_PKG_VERSION"));

        let mut s = MaybeUninit::<ms_settings_t>::uninit();
        assert_eq!(ms_settings_init_sized(s.as_mut_ptr(), size_of::<ms_settings_t>()), MS_OK);
        let mut s = s.assume_init();
        assert_eq!(s.size, size_of::<ms_settings_t>());
        let opts = CString::new("granule=16k,reclaim=aggressive").unwrap();
        assert_eq!(ms_settings_parse(&mut s, opts.as_ptr()), MS_OK);
        let bad = CString::new("colour=blue").unwrap();
        assert_eq!(ms_settings_parse(&mut s, bad.as_ptr()), MS_ERR_INVALID_ARGUMENT);
        assert!(CStr::from_ptr(ms_last_error_text()).to_str().unwrap().contains("'colour'"));

        let ms = ms_create(&s);
        assert!(!ms.is_null());
        let l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
        assert!(!l.is_null());
        let p = ms_alloc(l, MS_SPACE_NONCLASS, 64) as *mut u8;
        assert!(!p.is_null());
        std::ptr::write_bytes(p, 0x5a, 64);
        let k = ms_alloc(l, MS_SPACE_CLASS, 600);
        assert_eq!(ms_is_class_space(ms, k), 1);
        assert_eq!(ms_decode_class(ms, ms_encode_class(ms, k)), k);
        assert_eq!(ms_deallocate(l, p as *mut c_void, 64), MS_OK);
        // A foreign handle over non-zero memory is refused, not served.
        let mut fake = [0usize; 64];
        fake[0] = fake.as_ptr() as usize;
        fake[1] = fake[0] + 512;
        assert!(ms_alloc(fake.as_mut_ptr() as *mut ms_loader_t, MS_SPACE_NONCLASS, 16).is_null());
        assert_eq!(ms_last_error(), MS_ERR_INVALID_ARGUMENT);

        let mut st = ms_stats_t::default();
        assert_eq!(ms_get_stats_sized(ms, &mut st, size_of::<ms_stats_t>()), MS_OK);
        assert_eq!(st.loaders, 1);
        assert_eq!(st.commit_granule_bytes, 16 * 1024);
        assert_eq!(st.allocations_counted, 0, "not counted by default");
        let mut report = Vec::<u8>::new();
        assert_eq!(
            ms_print_report_cb(ms, Some(append), &mut report as *mut _ as *mut c_void,
                               std::ptr::null()),
            MS_OK
        );
        assert!(String::from_utf8(report).unwrap().contains("Total usage"));
        assert_eq!(ms_loader_destroy(l), MS_OK);
        assert_eq!(ms_verify(ms), MS_OK);
        ms_destroy(ms);
    }
}

// An archive written through the dump API and mapped: roots, full and narrow pointers, stats.
#[test]
fn dump_and_map_an_archive() {
    unsafe {
        let mut s = MaybeUninit::<ms_settings_t>::uninit();
        assert_eq!(ms_settings_init_sized(s.as_mut_ptr(), size_of::<ms_settings_t>()), MS_OK);
        let mut s = s.assume_init();
        s.class_alignment_bytes = 64;
        assert_eq!(s.archive_relocation, MS_ARCHIVE_RELOCATE_AUTO);
        let b = ms_archive_begin(&s, 0);
        assert!(!b.is_null());
        let k = ms_archive_allocate(b, MS_SPACE_CLASS, 128) as *mut usize;
        let m = ms_archive_allocate(b, MS_SPACE_NONCLASS, 32) as *mut usize;
        *k = m as usize;
        *k.add(2) = 4242;
        assert_eq!(ms_archive_mark_pointer(b, k as *mut c_void), MS_OK);
        *m = k as usize;
        assert_eq!(ms_archive_mark_pointer(b, m as *mut c_void), MS_OK);
        let narrow = m.add(1) as *mut u32;
        *narrow = ms_archive_encode_class(b, k as *const c_void);
        assert_eq!(ms_archive_mark_narrow_class(b, narrow as *mut c_void), MS_OK);
        let root = CString::new("k").unwrap();
        assert_eq!(ms_archive_set_root(b, root.as_ptr(), k as *const c_void), MS_OK);
        let path = std::env::temp_dir().join(format!("metaspace-sys-{}.msa", std::process::id()));
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(ms_archive_write(b, cpath.as_ptr()), MS_OK);
        ms_archive_discard(b);

        s.archive_path = cpath.as_ptr();
        s.archive_policy = MS_ARCHIVE_REQUIRE;
        let ms = ms_create(&s);
        assert!(!ms.is_null(), "{:?}", CStr::from_ptr(ms_last_error_text()));
        let mut reason: *const c_char = std::ptr::null();
        assert_eq!(ms_archive_status(ms, &mut reason), MS_OK);
        let k = ms_archive_root(ms, root.as_ptr()) as *const usize;
        assert!(!k.is_null());
        assert_eq!(ms_is_archived(ms, k as *const c_void), 1);
        assert_eq!(*k.add(2), 4242);
        let m = *k as *const usize;
        assert_eq!(ms_is_archived(ms, m as *const c_void), 1);
        assert_eq!(*m, k as usize);
        assert_eq!(ms_decode_class(ms, *(m.add(1) as *const u32)), k as *mut c_void);
        let mut st = ms_stats_t::default();
        assert_eq!(ms_get_stats_sized(ms, &mut st, size_of::<ms_stats_t>()), MS_OK);
        assert_eq!(st.archive.mapped, 1);
        assert_eq!(st.archive.relocated, 0);
        assert_eq!(st.archive.pointers, 2);
        assert_eq!(st.archive.narrow_pointers, 1);
        assert_eq!(st.archive.roots, 1);
        assert!(st.archive.relocation_reason.is_null());
        ms_destroy(ms);
        let _ = std::fs::remove_file(&path);
    }
}
