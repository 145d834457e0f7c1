//! Which test produces a diagnostic code: the functions of a test file, and whether a
//! `#[test]` names a code in its body or in a function of its file that it calls
//! (`tests/fixtures.rs` holds every code no fixture produces to such a test).

use revtx_book::book::codes::Code;

/// The functions of a Rust file: name → (body, whether `#[test]` marks it, whether
/// `#[ignore]` does). A body runs from its `fn` to the first line that is a lone `}`
/// (rustfmt's layout).
pub fn functions(text: &str) -> std::collections::BTreeMap<&str, (&str, bool, bool)> {
    let mut out = std::collections::BTreeMap::new();
    let (mut attrs_test, mut attrs_ignore) = (false, false);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("#[test]") {
            attrs_test = true;
        } else if t.starts_with("#[ignore") {
            attrs_ignore = true;
        } else if let Some(rest) = t
            .strip_prefix("pub fn ")
            .or_else(|| t.strip_prefix("fn "))
            .filter(|_| line.starts_with("fn ") || line.starts_with("pub fn "))
        {
            let name = &rest[..rest.find(['(', '<']).unwrap_or(rest.len())];
            let end = text[offset..]
                .find("\n}\n")
                .map_or(text.len(), |k| offset + k + 3);
            out.insert(name, (&text[offset..end], attrs_test, attrs_ignore));
            (attrs_test, attrs_ignore) = (false, false);
        } else if !(t.starts_with("#[")
            || t.starts_with("///")
            || t.starts_with(')')
            || t.starts_with("reason")
            || t.starts_with("clippy")
            || t.is_empty())
        {
            (attrs_test, attrs_ignore) = (false, false);
        }
        offset += line.len();
    }
    out
}

/// Whether a line of code that names a code asks for it: not in a comment, and not in an
/// assertion that it is absent (`!=`, `assert_ne!`, `assert!(!…)`, `.is_none()`).
fn asks_for(line: &str, names: &str) -> bool {
    let code = line.split("//").next().unwrap_or_default();
    let mentioned = code.match_indices(names).any(|(k, _)| {
        !code[k + names.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
    });
    mentioned
        && ![
            "!=",
            "assert_ne!",
            "assert!(!",
            ".is_none()",
            "!out.diags",
            "!diags",
        ]
        .iter()
        .any(|neg| code.contains(neg))
}

/// Whether the `#[test]` function `test_fn` of `source`, which runs (no `#[ignore]`), asks
/// for `code` in its body or in the body of a function of the same file that it calls: a
/// line that names it outside a comment and outside an assertion of its absence. `Err`
/// says why not.
pub fn test_produces(source: &str, test_fn: &str, code: Code) -> Result<(), String> {
    let fns = functions(source);
    let Some((body, is_test, ignored)) = fns.get(test_fn) else {
        return Err(format!("there is no function `{test_fn}`"));
    };
    if !is_test {
        return Err(format!("`{test_fn}` is not a #[test]"));
    }
    if *ignored {
        return Err(format!("`{test_fn}` is #[ignore]d, so it never runs"));
    }
    let names = format!("Code::{code:?}");
    let names_it = |b: &str| b.lines().any(|l| asks_for(l, &names));
    let called = fns
        .iter()
        .filter(|(n, _)| **n != test_fn && body.contains(&format!("{n}(")))
        .any(|(_, (b, _, _))| names_it(b));
    if names_it(body) || called {
        Ok(())
    } else {
        Err(format!("`{test_fn}` never asks for `{names}`"))
    }
}
