//! Tests of the inline scanner: tolerances, quotes, citations and placeholders.

use super::claims::split_tolerance;
use super::*;

#[test]
fn tolerance_forms() {
    assert_eq!(
        split_tolerance("a.b ~ 0.5").1,
        Some(Tolerance::Absolute(0.5))
    );
    assert_eq!(
        split_tolerance("a.b ~ 5%").1,
        Some(Tolerance::Relative(5.0))
    );
    assert!(
        split_tolerance("a.b ~ -1").2.is_some(),
        "a negative tolerance is an error"
    );
    assert_eq!(
        split_tolerance("'a' ~ b.c"),
        ("'a' ~ b.c", None, None),
        "string concatenation is no tolerance"
    );
}

#[test]
fn placeholders_map_back_to_the_source() {
    let src = "ab [1]{=x} cd {@y} e";
    let s = substitute(0, src);
    assert_eq!(s.found.len(), 2);
    let at = s.text.find(PLACEHOLDER_OPEN).unwrap();
    assert_eq!(
        s.to_src(at),
        3,
        "a placeholder maps to its construct's start"
    );
    let cd = s.text.find("cd").unwrap();
    assert_eq!(s.to_src(cd), src.find("cd").unwrap());
    assert_eq!(s.restore(&s.text, src), src);
}

/// (narrative, [(key, locator)], the citation's source).
type Cites = Vec<(bool, Vec<(String, Option<String>)>, String)>;

fn cites(src: &str) -> Cites {
    let s = substitute(0, src);
    s.found
        .iter()
        .filter_map(|f| match &f.inline.node {
            Inline::Cite { items, narrative } => Some((
                *narrative,
                items
                    .iter()
                    .map(|i| {
                        assert_eq!(&src[i.key_span.range.clone()], i.key);
                        if let Some((l, sp)) = &i.locator {
                            assert_eq!(&src[sp.range.clone()], l);
                        }
                        (i.key.clone(), i.locator.as_ref().map(|l| l.0.clone()))
                    })
                    .collect(),
                src[f.inline.span.range.clone()].to_string(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn citation_forms() {
    let got = cites("As @vaswani2017 showed [@ba2016; @xiong2020, sec. 3.2].");
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].0 && got[0].1 == [("vaswani2017".into(), None)]);
    assert_eq!(got[0].2, "@vaswani2017");
    assert!(!got[1].0);
    assert_eq!(
        got[1].1,
        [
            ("ba2016".into(), None),
            ("xiong2020".into(), Some("sec. 3.2".into()))
        ]
    );
    assert_eq!(got[1].2, "[@ba2016; @xiong2020, sec. 3.2]");
    // A sentence's full stop is not part of the key.
    assert_eq!(cites("see @ba2016.")[0].1[0].0, "ba2016");
    // Text before the key makes the brackets plain text around a narrative citation.
    let got = cites("[see @x]");
    assert!(got.len() == 1 && got[0].0 && got[0].2 == "@x", "{got:?}");
    // Not citations: an address, a reference, a link, a bare `@`, an empty locator.
    for src in [
        "mail a@b.org",
        "{@fig-loss}",
        "[@x](https://x.org)",
        "@ alone",
    ] {
        assert!(cites(src).is_empty(), "{src}");
    }
    // A locator without its comma, and a comma without its locator: citations, each with
    // an error at the mistake.
    for (src, at, says) in [
        (
            "[@x p. 3]",
            4..8,
            "`p. 3` follows the key `x` without a comma",
        ),
        ("[@x, ]", 3..4, "a comma with no locator after it"),
    ] {
        let sub = substitute(0, src);
        assert_eq!(sub.found.len(), 1, "{src}");
        let d = &sub.found[0].diags;
        assert!(
            d.len() == 1
                && d[0].code == Code::BadLocator
                && d[0].message.contains(says)
                && d[0].span.as_ref().unwrap().range == at,
            "{src}: {d:?}"
        );
    }
}
