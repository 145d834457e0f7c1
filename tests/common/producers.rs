//! Which test produces a diagnostic code: the functions of a test file, and whether a
//! `#[test]` names a code in its body or in a function of its file that it calls
//! (`tests/fixtures.rs` holds every code no fixture produces to such a test).

use revtx_book::book::codes::Code;

/// The functions of a Rust file: name → (body, whether `#[test]` marks it). A body runs
/// from its `fn` to the first line that is a lone `}` (rustfmt's layout).
pub fn functions(text: &str) -> std::collections::BTreeMap<&str, (&str, bool)> {
    let mut out = std::collections::BTreeMap::new();
    let mut attrs_test = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("#[test]") {
            attrs_test = true;
        } else if let Some(rest) = t
            .strip_prefix("pub fn ")
            .or_else(|| t.strip_prefix("fn "))
            .filter(|_| line.starts_with("fn ") || line.starts_with("pub fn "))
        {
            let name = &rest[..rest.find(['(', '<']).unwrap_or(rest.len())];
            let end = text[offset..]
                .find("\n}\n")
                .map_or(text.len(), |k| offset + k + 3);
            out.insert(name, (&text[offset..end], attrs_test));
            attrs_test = false;
        } else if !(t.starts_with("#[")
            || t.starts_with("///")
            || t.starts_with(')')
            || t.starts_with("reason")
            || t.starts_with("clippy")
            || t.is_empty())
        {
            attrs_test = false;
        }
        offset += line.len();
    }
    out
}

/// Whether the `#[test]` function `test_fn` of `source` names `code` in its body or in the body
/// of a function of the same file that it calls; `Err` says why not.
pub fn test_produces(source: &str, test_fn: &str, code: Code) -> Result<(), String> {
    let fns = functions(source);
    let Some((body, is_test)) = fns.get(test_fn) else {
        return Err(format!("there is no function `{test_fn}`"));
    };
    if !is_test {
        return Err(format!("`{test_fn}` is not a #[test]"));
    }
    let names = format!("Code::{code:?}");
    let names_it = |b: &str| {
        b.match_indices(&names).any(|(k, _)| {
            !b[k + names.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        })
    };
    let called = fns
        .iter()
        .filter(|(n, _)| **n != test_fn && body.contains(&format!("{n}(")))
        .any(|(_, (b, _))| names_it(b));
    if names_it(body) || called {
        Ok(())
    } else {
        Err(format!("`{test_fn}` never names `{names}`"))
    }
}
