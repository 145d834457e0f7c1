//! The book compiler links no libtorch: its ~0.17 s of static initialisation would run
//! before every `revtx-book` command. The engine does. Cargo holds the wall (the compiler
//! does not depend on the engine crate); this checks the binaries themselves.

mod common;

use std::process::Command;

/// The shared libraries a binary loads, as `ldd` lists them.
fn libraries(bin: &str) -> Vec<String> {
    let out = Command::new("ldd").arg(bin).output().expect("ldd runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn torch(libs: &[String]) -> Vec<&String> {
    libs.iter()
        .filter(|l| l.contains("torch") || l.starts_with("libc10"))
        .collect()
}

#[test]
fn the_compiler_links_no_libtorch_and_the_engine_does() {
    let engine = libraries(&common::engine_exe().to_string_lossy());
    assert!(
        !torch(&engine).is_empty(),
        "the control: revtx-engine must load libtorch ({engine:?})"
    );
    let book = libraries(env!("CARGO_BIN_EXE_revtx-book"));
    assert!(book.len() > 2, "ldd listed nothing: {book:?}");
    assert_eq!(
        torch(&book),
        Vec::<&String>::new(),
        "revtx-book loads libtorch"
    );
}
