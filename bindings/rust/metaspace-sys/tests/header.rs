// The crate against the C headers, so that the two cannot drift: every function, enum constant,
// #define, type and struct field of every header under include/metaspace/ (the C++ wrapper
// metaspace.hpp aside; names starting with ms__/MS__ are private) must be in src/lib.rs with the
// same value, parameter count and layout. Layouts are compared with a C program compiled from
// the header (offsetof and sizeof of every field). The exported symbols of the linked library
// are checked too. No parser crate: the headers are plain C, tokenized here.
use std::collections::{BTreeMap, BTreeSet};
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use metaspace_sys::*;

fn include_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("METASPACE_INCLUDE_DIR") {
        return PathBuf::from(dir);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../include");
    assert!(dir.join("metaspace").is_dir(),
            "headers not found at {} (set METASPACE_INCLUDE_DIR)", dir.display());
    dir
}

fn headers() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(include_dir().join("metaspace")).unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().map_or(false, |e| e == "h"))
        .collect();
    out.sort();
    assert!(!out.is_empty());
    out
}

fn private(name: &str) -> bool {
    name.starts_with("ms__") || name.starts_with("MS__")
}

fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            let end = after.find("*/").expect("unterminated comment");
            out.push(' ');
            // keep the line count (not needed for parsing, but keeps directives on their lines)
            out.extend(after[..end].chars().filter(|&c| c == '\n'));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix("//") {
            rest = &after[after.find('\n').unwrap_or(after.len())..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.replace("\\\n", " ")
}

#[derive(Default, Debug)]
struct Header {
    functions: BTreeMap<String, usize>,    // name -> parameter count
    macro_functions: BTreeSet<String>,     // function-like #defines
    constants: BTreeMap<String, Option<i128>>,
    types: BTreeSet<String>,
    structs: BTreeMap<String, Vec<String>>, // typedef name -> fields in order
}

fn int_literal(text: &str) -> Option<i128> {
    // The literal inside e.g. `1u`, `((uintptr_t)0x800000000)`, `-1`.
    let t = text.trim();
    let negative = t.trim_start_matches('(').starts_with('-');
    let start = t.find(|c: char| c.is_ascii_digit())?;
    let lit: String = t[start..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    let lit = lit.trim_end_matches(|c| matches!(c, 'u' | 'U' | 'l' | 'L'));
    let v = if let Some(hex) = lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
        i128::from_str_radix(hex, 16).ok()?
    } else {
        lit.parse().ok()?
    };
    Some(if negative { -v } else { v })
}

fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == '"' {
            let start = i;
            i += 1;
            while chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(chars[start..i].iter().collect());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars().next().map_or(false, |c| c.is_alphabetic() || c == '_')
}

/// The tokens between the bracket at `open` and its match; returns (inner, index after match).
fn group(toks: &[String], open: usize) -> (&[String], usize) {
    let (o, c) = match toks[open].as_str() {
        "(" => ("(", ")"),
        "{" => ("{", "}"),
        "[" => ("[", "]"),
        t => panic!("not a bracket: {}", t),
    };
    let mut depth = 0;
    for j in open..toks.len() {
        if toks[j] == o {
            depth += 1;
        } else if toks[j] == c {
            depth -= 1;
            if depth == 0 {
                return (&toks[open + 1..j], j + 1);
            }
        }
    }
    panic!("unbalanced {}", o);
}

/// Splits at top-level occurrences of `sep`.
fn split<'a>(toks: &'a [String], sep: &str) -> Vec<&'a [String]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (j, t) in toks.iter().enumerate() {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            s if s == sep && depth == 0 => {
                out.push(&toks[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out.into_iter().filter(|p| !p.is_empty()).collect()
}

fn declarator_name(decl: &[String]) -> String {
    // `size_t used_bytes [ 2 ]`, `size_t commits` (after a comma split), `ms_x_t* name`
    let end = decl.iter().position(|t| t == "[").unwrap_or(decl.len());
    decl[..end].iter().rev().find(|t| is_ident(t)).unwrap().clone()
}

fn parse_header(path: &Path, h: &mut Header) {
    let text = strip_comments(&std::fs::read_to_string(path).unwrap());
    // Preprocess as a C compiler would for C: `#ifdef __cplusplus` parts dropped, every other
    // conditional's branches all kept (each defines the same names); #defines collected.
    let mut code = String::new();
    let mut stack: Vec<(bool, bool)> = Vec::new(); // (is __cplusplus test, active)
    for line in text.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim();
            let word: String = d.chars().take_while(|c| c.is_alphabetic()).collect();
            let arg = d[word.len()..].trim();
            match word.as_str() {
                "ifdef" | "ifndef" | "if" => {
                    let cxx = arg == "__cplusplus";
                    stack.push((cxx, !(cxx && word == "ifdef")));
                }
                "else" | "elif" => {
                    let top = stack.last_mut().unwrap();
                    if top.0 {
                        top.1 = !top.1;
                    }
                }
                "endif" => {
                    stack.pop();
                }
                "define" if stack.iter().all(|s| s.1) => {
                    let name: String = arg.chars().take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    let rest = &arg[name.len()..];
                    if private(&name) {
                    } else if rest.starts_with('(') {
                        h.macro_functions.insert(name);
                    } else if !rest.trim().is_empty() {
                        h.constants.insert(name, int_literal(rest));
                    } // an empty #define is an include guard
                }
                _ => {}
            }
            continue;
        }
        if stack.iter().all(|s| s.1) {
            code.push_str(line);
            code.push('\n');
        }
    }
    let toks = tokens(&code);
    let mut i = 0;
    let mut depth = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        if depth == 0 && t == "typedef" {
            let semi = i + toks[i..].iter().position(|t| t == ";").unwrap();
            let brace = toks[i..semi].iter().position(|t| t == "{").map(|p| p + i);
            let (kind, body, after) = match brace {
                Some(b) => {
                    let (inner, after) = group(&toks, b);
                    (toks[i + 1].clone(), Some(inner), after)
                }
                None => (toks[i + 1].clone(), None, i + 1),
            };
            let end = after + toks[after..].iter().position(|t| t == ";").unwrap();
            // The typedef's name: the last identifier before `;`, or `(*name)` for a function
            // pointer type.
            let decl = &toks[after..end];
            let name = match decl.iter().position(|t| t == "*") {
                Some(star) if decl.get(star.wrapping_sub(1)).map_or(false, |t| t == "(") =>
                    decl[star + 1].clone(),
                _ => decl.iter().rev().find(|t| is_ident(t)).unwrap().clone(),
            };
            if !private(&name) {
                h.types.insert(name.clone());
                match (kind.as_str(), body) {
                    ("enum", Some(body)) => {
                        let mut next = 0i128;
                        for item in split(body, ",") {
                            let value = match item.iter().position(|t| t == "=") {
                                Some(eq) => int_literal(&item[eq + 1..].concat()).unwrap(),
                                None => next,
                            };
                            h.constants.insert(item[0].clone(), Some(value));
                            next = value + 1;
                        }
                    }
                    ("struct", Some(body)) => {
                        let mut fields = Vec::new();
                        for decl in split(body, ";") {
                            // `size_t commits, uncommits`: the type belongs to the first only.
                            for d in split(decl, ",") {
                                fields.push(declarator_name(d));
                            }
                        }
                        h.structs.insert(name, fields);
                    }
                    _ => {}
                }
            }
            i = end + 1;
            continue;
        }
        match t {
            "{" => depth += 1,
            "}" => depth -= 1,
            _ if depth == 0 && t.starts_with("ms_") && !private(t)
                && toks.get(i + 1).map_or(false, |n| n == "(") => {
                let (params, after) = group(&toks, i + 1);
                let follows = toks.get(after).map(String::as_str);
                if matches!(follows, Some("MS__NOEXCEPT") | Some(";") | Some("{")) {
                    let n = if params.is_empty() || (params.len() == 1 && params[0] == "void") {
                        0
                    } else {
                        split(params, ",").len()
                    };
                    h.functions.insert(t.to_string(), n);
                }
                i = after;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

fn header() -> Header {
    let mut h = Header::default();
    for path in headers() {
        parse_header(&path, &mut h);
    }
    h
}

#[derive(Default, Debug)]
struct Crate {
    functions: BTreeMap<String, usize>,
    constants: BTreeMap<String, String>,
    types: BTreeSet<String>,
}

fn parse_crate() -> Crate {
    let text = strip_comments(&std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap());
    let toks = tokens(&text);
    let mut c = Crate::default();
    for i in 0..toks.len() {
        match toks[i].as_str() {
            "fn" if toks[i + 2] == "(" => {
                let (params, _) = group(&toks, i + 2);
                // One `name :` per parameter (paths use `::`, two tokens ':' in a row).
                let mut n = 0;
                let mut depth = 0;
                for j in 0..params.len() {
                    match params[j].as_str() {
                        "(" | "<" => depth += 1,
                        ")" | ">" => depth -= 1,
                        ":" if depth == 0 && params.get(j + 1).map_or(true, |t| t != ":")
                            && (j == 0 || params[j - 1] != ":") => n += 1,
                        _ => {}
                    }
                }
                c.functions.insert(toks[i + 1].clone(), n);
            }
            "const" if toks[i.saturating_sub(1)] == "pub" => {
                let eq = i + toks[i..].iter().position(|t| t == "=").unwrap();
                let semi = eq + toks[eq..].iter().position(|t| t == ";").unwrap();
                c.constants.insert(toks[i + 1].clone(), toks[eq + 1..semi].concat());
            }
            "struct" | "type" if toks[i.saturating_sub(1)] == "pub" => {
                c.types.insert(toks[i + 1].clone());
            }
            _ => {}
        }
    }
    c
}

#[test]
fn the_header_parser_finds_what_is_known_to_be_there() {
    // Guards the test itself: a parser that finds nothing would pass everything below.
    let h = header();
    assert_eq!(h.constants["MS_ERR_LIMIT"], Some(3));
    assert_eq!(h.constants["MS_ERR_ARCHIVE_CHANGED"], Some(18));
    assert_eq!(h.constants["MS_LOADER_SHARED"], Some(1));
    assert_eq!(h.constants["MS_ARCHIVE_DEFAULT_BASE"], Some(0x800000000));
    assert_eq!(h.functions["ms_set_gc_threshold"], 4);
    assert_eq!(h.functions["ms_version"], 0);
    assert_eq!(h.functions["ms_allocate"], 3);
    assert!(h.macro_functions.contains("ms_get_stats"));
    assert!(h.types.contains("ms_gc_callback_t") && h.types.contains("ms_metaspace_t"));
    assert_eq!(h.structs["ms_stats_t"][5..8], ["commit_granule_bytes", "commits", "uncommits"]);
    assert_eq!(h.structs["ms_loader_stats_t"].last().unwrap(), "allocations_counted");
    assert!(!h.functions.keys().chain(h.constants.keys()).any(|n| private(n)));
    assert!(h.functions.len() >= 48 && h.constants.len() >= 40, "{:?}", h);
}

#[test]
fn every_function_of_the_header_is_declared_with_its_parameters() {
    let (h, c) = (header(), parse_crate());
    let mut missing = Vec::new();
    for (name, n) in &h.functions {
        match c.functions.get(name) {
            None => missing.push(name.clone()),
            Some(m) if m != n => missing.push(format!("{} ({} parameters, header {})", name, m, n)),
            _ => {}
        }
    }
    for name in &h.macro_functions {
        if !c.functions.contains_key(name) {
            missing.push(format!("{} (macro)", name));
        }
    }
    assert!(missing.is_empty(), "functions missing from metaspace-sys: {:?}", missing);
}

#[test]
fn every_constant_of_the_header_is_defined_with_its_value() {
    let (h, c) = (header(), parse_crate());
    let mut wrong = Vec::new();
    for (name, value) in &h.constants {
        match (c.constants.get(name), value) {
            (None, _) => wrong.push(format!("{} missing", name)),
            (Some(text), Some(v)) if int_literal(text) != Some(*v) =>
                wrong.push(format!("{} = {} here, {} in the header", name, text, v)),
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "constants: {:?}", wrong);
}

#[test]
fn every_type_of_the_header_is_defined() {
    let (h, c) = (header(), parse_crate());
    let missing: Vec<_> = h.types.iter().filter(|t| !c.types.contains(*t)).collect();
    assert!(missing.is_empty(), "types missing from metaspace-sys: {:?}", missing);
}

/// (struct, size, [(field, offset)]) of this crate's structs, by offset_of!.
macro_rules! layout {
    ($($s:ident { $($f:ident),* $(,)? })*) => {
        vec![$((stringify!($s), size_of::<$s>(),
                vec![$((stringify!($f), offset_of!($s, $f))),*])),*]
    };
}

fn rust_layouts() -> Vec<(&'static str, usize, Vec<(&'static str, usize)>)> {
    layout! {
        ms_settings_t { size, reclaim, commit_granule_bytes, root_chunk_bytes, node_bytes,
            class_space_bytes, class_space_base, class_alignment_bytes, max_committed_bytes,
            gc_threshold_bytes, gc_callback, gc_callback_user, checked, gc_min_free_percent,
            gc_max_free_percent, gc_min_expansion_bytes, report_at_exit, verbose, archive_path,
            archive_policy, archive_verify, archive_relocation, count_allocations }
        ms_chunk_level_stats_t { count, bytes, committed_bytes }
        ms_space_stats_t { reserved_bytes, committed_bytes, used_bytes, free_in_chunks_bytes,
            free_chunks_bytes, free_blocks_bytes, deallocated_bytes, salvaged_bytes,
            alignment_gap_bytes, free_blocks_count, fence_bytes, overhead_bytes, chunks_in_use,
            free_chunks, nodes, root_chunks, free_chunks_by_level }
        ms_archive_stats_t { mapped, relocated, base, requested_base, relocation_delta,
            file_bytes, reserved_bytes, class_region_bytes, nonclass_region_bytes, used_bytes,
            pointers, narrow_pointers, roots, resident_bytes, deallocations_ignored, relocation,
            relocation_reason }
        ms_stats_t { space, total, chunk_levels, loaders, loaders_by_kind, commit_granule_bytes,
            commits, uncommits, archive, allocations_counted }
        ms_loader_stats_t { kind, allocations, used_bytes, committed_bytes, capacity_bytes,
            free_blocks_bytes, free_blocks_count, chunks, chunks_by_level, allocations_counted }
        ms_space_usage_t { reserved_bytes, committed_bytes, used_bytes, overhead_bytes }
        ms_usage_t { size, space, total }
        ms_report_options_t { size, scale, per_loader, per_kind, free_lists }
    }
}

#[test]
fn every_struct_has_the_headers_fields_in_order() {
    let h = header();
    let rust: BTreeMap<_, _> = rust_layouts().into_iter()
        .map(|(s, _, f)| (s.to_string(), f.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>()))
        .collect();
    assert_eq!(rust, h.structs);
}

#[test]
fn every_struct_has_the_c_compilers_layout() {
    // A C program prints sizeof and offsetof as the C compiler lays the header's structs out.
    let h = header();
    let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n\
                              #include <metaspace/metaspace.h>\nint main(void) {\n");
    for (s, fields) in &h.structs {
        c += &format!("  printf(\"{s} %zu\\n\", sizeof({s}));\n");
        for f in fields {
            c += &format!("  printf(\"{s}.{f} %zu\\n\", offsetof({s}, {f}));\n");
        }
    }
    c += "  return 0;\n}\n";
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (src, exe) = (dir.join("metaspace_layout.c"), dir.join("metaspace_layout"));
    std::fs::write(&src, c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    // Without the inline fast path: nothing of the header needs the library to link.
    let status = Command::new(&cc).args(["-std=c11", "-DMS_NO_INLINE_FAST_PATH", "-I"])
        .arg(include_dir()).arg(&src)
        .arg("-o").arg(&exe).status()
        .unwrap_or_else(|e| panic!("{} not runnable ({}): a C compiler is needed (CC=...)", cc, e));
    assert!(status.success());
    let out = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    let c_layout: BTreeMap<String, usize> = out.lines()
        .map(|l| l.split_once(' ').unwrap())
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect();
    let mut rust_layout = BTreeMap::new();
    for (s, size, fields) in rust_layouts() {
        rust_layout.insert(s.to_string(), size);
        for (f, offset) in fields {
            rust_layout.insert(format!("{}.{}", s, f), offset);
        }
    }
    assert_eq!(rust_layout, c_layout);
}

#[test]
fn every_symbol_the_library_exports_is_declared() {
    let Some(dir) = option_env!("METASPACE_SYS_LIB_DIR") else {
        eprintln!("library found in the linker's default path: exported symbols not checked");
        return;
    };
    let nm = std::env::var("NM").unwrap_or_else(|_| "nm".into());
    let lib = Path::new(dir).join("libmetaspace.so");
    let out = Command::new(&nm).args(["-D", "--defined-only"]).arg(&lib).output()
        .unwrap_or_else(|e| panic!("{} not runnable ({}) (NM=...)", nm, e));
    assert!(out.status.success(), "{} {}", nm, lib.display());
    let c = parse_crate();
    let exported: Vec<String> = String::from_utf8(out.stdout).unwrap().lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap().to_string())
        .filter(|s| s.starts_with("ms_") && !private(s))
        .collect();
    assert!(exported.len() >= 40, "{:?}", exported);
    let missing: Vec<_> = exported.iter().filter(|s| !c.functions.contains_key(*s)).collect();
    assert!(missing.is_empty(), "exported but not declared: {:?}", missing);
}
