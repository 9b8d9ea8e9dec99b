// The safe API against the real shared library.
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use metaspace::{
    ArchiveBuilder, ArchivePolicy, Error, ErrorCode, LoaderKind, Metaspace, Reclaim,
    ReportOptions, Settings, Space,
};

fn vm_size() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

#[test]
fn versions_agree() {
    assert_eq!(metaspace::library_version(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn allocate_write_free_and_the_stats_identity() -> Result<(), Error> {
    let ms = Metaspace::new(&Settings::new().options("granule=16k")?.count_allocations(true))?;
    let loader = ms.loader(LoaderKind::Standard)?;
    let mut blocks = Vec::new();
    for n in [8usize, 64, 600, 4096] {
        let p = loader.allocate(n)?;
        assert_eq!(p.as_ptr() as usize % 8, 0);
        unsafe { p.as_ptr().write_bytes(0x5a, n) };
        blocks.push((p, n));
    }
    let klass = loader.allocate_in(Space::Class, 600)?;
    assert!(ms.is_class_space(klass.as_ptr()));
    assert!(!ms.is_class_space(blocks[0].0.as_ptr()));
    assert_eq!(ms.decode_class(ms.encode_class(klass.as_ptr())), klass.as_ptr());
    assert!(ms.class_space_base() <= klass.as_ptr() as usize);
    assert_eq!(ms.class_shift(), 3);
    assert!(ms.narrow_class_bits() > 0);
    unsafe { loader.deallocate(blocks[1].0, blocks[1].1)? };
    let st = ms.stats()?;
    assert_eq!(st.commit_granule_bytes, 16 << 10);
    assert_eq!(st.loaders, 1);
    let t = st.total;
    assert_eq!(t.committed_bytes, t.used_bytes + t.free_in_chunks_bytes + t.free_chunks_bytes
               + t.free_blocks_bytes + t.fence_bytes + t.overhead_bytes);
    let ls = loader.stats()?;
    assert_eq!(ls.allocations, 5);
    assert_eq!(ls.kind, LoaderKind::Standard as i32);
    let u = ms.usage()?;
    assert_eq!(u.total.committed_bytes, st.total.committed_bytes);
    assert!(format!("{:?}", st).contains("commit_granule_bytes: 16384"));
    ms.verify()?;
    loader.destroy()?;
    assert_eq!(ms.stats()?.loaders, 0);
    Ok(())
}

#[test]
fn errors_carry_the_code_and_the_library_text() {
    let ms = Metaspace::with_defaults().unwrap();
    let loader = ms.loader(LoaderKind::Standard).unwrap();
    let e = loader.allocate(0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let e = loader.allocate(64 << 20).unwrap_err();
    assert_eq!(e.code(), ErrorCode::TooLarge);
    assert_eq!(e.code().raw(), metaspace::sys::MS_ERR_TOO_LARGE);
    assert!(e.to_string().ends_with("(MS_ERR_TOO_LARGE)"), "{}", e);
    let mut local = 0u64;
    let e = unsafe {
        loader.deallocate(std::ptr::NonNull::from(&mut local).cast(), 8).unwrap_err()
    };
    assert_eq!(e.code(), ErrorCode::NotOwned);
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("MS_ERR_NOT_OWNED"));

    let e = Settings::new().options("granule=16k,colour=blue").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.text().contains("'colour'"), "{}", e);
    let e = Metaspace::new(&Settings::new().commit_granule_bytes(3 << 10)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);

    let ms = Metaspace::from_options("max_committed=1m").unwrap();
    let loader = ms.loader(LoaderKind::Standard).unwrap();
    let e = (0..64).map(|_| loader.allocate(64 << 10)).find_map(Result::err).unwrap();
    assert_eq!(e.code(), ErrorCode::Limit);
    assert!(e.text().contains("cap"), "{}", e);

    let ms = Metaspace::new(&Settings::new().class_space_bytes(4 << 20)).unwrap();
    let loader = ms.loader(LoaderKind::Standard).unwrap();
    let e = (0..8).map(|_| loader.allocate_in(Space::Class, 1 << 20)).find_map(Result::err);
    assert_eq!(e.unwrap().code(), ErrorCode::ClassSpaceFull);

    let ms = Metaspace::new(&Settings::new().checked(true)).unwrap();
    let loader = ms.loader(LoaderKind::Standard).unwrap();
    let p = loader.allocate(64).unwrap();
    unsafe {
        loader.deallocate(p, 64).unwrap();
        assert_eq!(loader.deallocate(p, 64).unwrap_err().code(), ErrorCode::DoubleFree);
    }
    let q = loader.allocate(64).unwrap();
    unsafe { q.as_ptr().write_bytes(1, 80) }; // over the fence behind the block
    assert_eq!(ms.verify().unwrap_err().code(), ErrorCode::Overwrite);
    assert_eq!(loader.destroy().unwrap_err().code(), ErrorCode::Overwrite);
}

#[test]
fn error_codes_round_trip_and_name_the_c_constants() {
    for raw in 1..=18 {
        let code = ErrorCode::from_raw(raw).unwrap();
        assert_eq!(code.raw(), raw);
        assert!(code.name().starts_with("MS_ERR_"));
        assert_ne!(code, ErrorCode::Other(raw));
    }
    assert_eq!(ErrorCode::from_raw(0), None);
    assert_eq!(ErrorCode::from_raw(99), Some(ErrorCode::Other(99)));
    assert_eq!(ErrorCode::Destroyed.name(), "MS_ERR_DESTROYED");
    assert_eq!(ErrorCode::ArchiveChanged.raw(), metaspace::sys::MS_ERR_ARCHIVE_CHANGED);
}

#[test]
fn dropping_a_loader_returns_its_memory() -> Result<(), Error> {
    let ms = Metaspace::new(&Settings::new().reclaim(Reclaim::Aggressive))?;
    let before = ms.usage()?.total.committed_bytes;
    {
        let loader = ms.loader(LoaderKind::Standard)?;
        for _ in 0..256 {
            loader.allocate(4096)?;
        }
        assert!(ms.usage()?.total.committed_bytes >= before + (1 << 20));
        assert_eq!(ms.stats()?.loaders, 1);
    }
    assert_eq!(ms.stats()?.loaders, 0);
    assert!(ms.usage()?.total.committed_bytes < before + (64 << 10));
    Ok(())
}

#[test]
fn dropping_metaspaces_returns_their_address_space() -> Result<(), Error> {
    let before = vm_size();
    let spaces = (0..50).map(|_| Metaspace::with_defaults()).collect::<Result<Vec<_>, _>>()?;
    let loaders = spaces.iter().map(|ms| ms.loader(LoaderKind::Micro))
        .collect::<Result<Vec<_>, _>>()?;
    for l in &loaders {
        l.allocate(64)?;
    }
    let reserved = spaces[0].stats()?.total.reserved_bytes;
    assert!(vm_size() - before >= 50 * reserved);
    drop(loaders);
    drop(spaces);
    assert!(vm_size().saturating_sub(before) < reserved, "{} -> {}", before, vm_size());
    Ok(())
}

#[test]
fn a_shared_loader_serves_many_threads_at_once() -> Result<(), Error> {
    let ms = Metaspace::with_defaults()?;
    let loader = ms.shared_loader(LoaderKind::Standard)?;
    let blocks: Vec<Vec<usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|t| {
            let loader = &loader;
            s.spawn(move || {
                (0..1000).map(|i| {
                    let p = loader.allocate(16 + 8 * (i % 8)).unwrap();
                    unsafe { p.as_ptr().write_bytes(t as u8, 16) };
                    p.as_ptr() as usize
                }).collect::<Vec<_>>()
            })
        }).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: HashSet<usize> = blocks.iter().flatten().copied().collect();
    assert_eq!(all.len(), 4000);
    for (t, list) in blocks.iter().enumerate() {
        for &p in list {
            assert_eq!(unsafe { *(p as *const u8) }, t as u8);
        }
    }
    assert_eq!(ms.stats()?.loaders, 1);
    ms.verify()?;
    loader.destroy()
}

#[test]
fn the_gc_callback_is_called_when_committed_memory_crosses_the_threshold() -> Result<(), Error> {
    let ms = Metaspace::with_defaults()?;
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicUsize::new(0));
    let (c, s) = (calls.clone(), seen.clone());
    let threshold = ms.usage()?.total.committed_bytes + (256 << 10);
    ms.set_gc_threshold(threshold, Some(move |committed: usize| {
        c.fetch_add(1, Ordering::SeqCst);
        s.store(committed, Ordering::SeqCst);
    }));
    let loader = ms.loader(LoaderKind::Standard)?;
    for _ in 0..16 {
        loader.allocate(64 << 10)?;
    }
    assert!(calls.load(Ordering::SeqCst) >= 1);
    assert!(seen.load(Ordering::SeqCst) >= threshold);
    assert!(ms.gc_done() > 0);
    ms.set_gc_threshold(0, None::<fn(usize)>);
    let before = calls.load(Ordering::SeqCst);
    for _ in 0..16 {
        loader.allocate(64 << 10)?;
    }
    assert_eq!(calls.load(Ordering::SeqCst), before);
    Ok(())
}

#[test]
fn reports_come_back_as_strings() -> Result<(), Error> {
    let ms = Metaspace::with_defaults()?;
    let loader = ms.loader(LoaderKind::Micro)?;
    loader.allocate(100)?;
    let text = ms.report(&ReportOptions { per_loader: true, scale: Some(b'K'),
                                          ..Default::default() })?;
    assert!(text.contains("Total usage"), "{}", text);
    let json = ms.report_json(&Default::default())?;
    assert!(json.trim_start().starts_with('{') && json.contains("\"libmetaspace.report\""));
    let e = ms.report(&ReportOptions { scale: Some(b'X'), ..Default::default() }).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let defaults = ReportOptions::default();
    assert!(defaults.per_kind && defaults.free_lists && !defaults.per_loader);
    Ok(())
}

#[test]
fn an_archive_written_by_the_builder_is_mapped() -> Result<(), Error> {
    let settings = Settings::new().class_alignment_bytes(64);
    let path = std::env::temp_dir().join(format!("metaspace-safe-{}.msa", std::process::id()));
    {
        let mut b = ArchiveBuilder::new(&settings, 0)?;
        let k = b.allocate(Space::Class, 128)?;
        let m = b.allocate(Space::NonClass, 32)?;
        unsafe {
            *(k.as_ptr() as *mut usize) = m.as_ptr() as usize;
            *(k.as_ptr() as *mut usize).add(2) = 4242;
        }
        b.mark_pointer(k.as_ptr())?;
        let narrow = b.encode_class(k.as_ptr())?;
        unsafe { *(m.as_ptr() as *mut u32) = narrow };
        b.mark_narrow_class(m.as_ptr())?;
        b.set_root("k", k.as_ptr())?;
        b.write(&path)?;
    }
    let ms = Metaspace::new(&settings.clone().archive_path(&path)?
                            .archive_policy(ArchivePolicy::Require))?;
    ms.archive_status()?;
    let k = ms.archive_root("k").expect("root k");
    assert!(ms.is_archived(k.as_ptr()));
    unsafe {
        assert_eq!(*(k.as_ptr() as *const usize).add(2), 4242);
        let m = *(k.as_ptr() as *const usize) as *const u8;
        assert!(ms.is_archived(m));
        assert_eq!(ms.decode_class(*(m as *const u32)), k.as_ptr());
    }
    assert_eq!(ms.stats()?.archive.mapped, 1);
    assert!(ms.archive_root("none").is_none());
    drop(ms);
    std::fs::write(&path, b"not an archive").unwrap();
    let ms = Metaspace::new(&settings.clone().archive_path(&path)?)?;
    assert_eq!(ms.archive_status().unwrap_err().code(), ErrorCode::ArchiveFormat);
    let e = Metaspace::new(&settings.archive_path(&path)?.archive_policy(ArchivePolicy::Require))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ArchiveFormat);
    let _ = std::fs::remove_file(&path);
    Ok(())
}

#[test]
fn a_cloned_settings_value_owns_its_archive_path() -> Result<(), Error> {
    let path = std::env::temp_dir().join(format!("metaspace-clone-{}.msa", std::process::id()));
    let original = Settings::new().archive_path(&path)?;
    let clone = original.clone();
    drop(original);
    let raw = clone.to_raw();
    let text = unsafe { std::ffi::CStr::from_ptr(raw.archive_path) };
    assert_eq!(text.to_str().unwrap(), path.to_str().unwrap());
    Ok(())
}
