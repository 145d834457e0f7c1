//! Tests of the chapter parse: inline constructs, typed directives and where their errors
//! are placed.

use super::*;
use crate::book::codes::Code;

fn parse(src: &str) -> (Chapter, Vec<Diagnostic>) {
    let mut d = Vec::new();
    let c = parse_chapter(0, Place::Chapter(1), src, &mut d);
    (c, d)
}

fn line_of(src: &str, d: &Diagnostic) -> usize {
    let at = d.span.as_ref().expect("a located diagnostic").range.start;
    src[..at].matches('\n').count() + 1
}

#[test]
fn claims_inserts_refs_and_labels() {
    let src = "# T\n\nIt scored [94.6%]{=noscale.train.test.accuracy} in {=noscale.env.train_seconds}s, see {@fig-loss}.\n\n$$x$$ {#eq-x}\n\n`[1]{=not.a.claim}`\n";
    let (c, d) = parse(src);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(c.inlines.len(), 4);
    match &c.inlines[0].node {
        Inline::Claim {
            quoted,
            expr,
            quoted_span,
            ..
        } => {
            assert_eq!(quoted, "94.6%");
            assert_eq!(expr, "noscale.train.test.accuracy");
            assert_eq!(&src[quoted_span.range.clone()], "94.6%");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&c.inlines[1].node, Inline::Insert { .. }));
    assert!(matches!(&c.inlines[2].node, Inline::Ref { id } if id == "fig-loss"));
    assert!(matches!(&c.inlines[3].node, Inline::Label { id } if id == "eq-x"));
    let code = c
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Md(Event::Code(t)) if &**t == "[1]{=not.a.claim}"));
    assert!(code, "code is left alone");
    let inline_nodes: Vec<usize> = c
        .nodes
        .iter()
        .filter_map(|n| match n {
            Node::Inline(k) => Some(*k),
            _ => None,
        })
        .collect();
    assert_eq!(
        inline_nodes,
        [0, 1, 2, 3],
        "each construct sits where the parse met it"
    );
    assert_eq!(c.title, "T");
}

#[test]
fn code_math_and_html_keep_constructs_as_written() {
    let src = "# T\n\n```java\n/** {@link Foo} and {=x */\n```\n\n$a {=b}$ and <span title=\"{=c}\">d</span>\n";
    let (c, d) = parse(src);
    assert!(d.is_empty(), "{d:?}");
    assert!(c.inlines.is_empty());
    assert!(c
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Code { body, .. } if body.contains("{@link Foo} and {=x"))));
    assert!(c
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Math(m) if m.tex == "a {=b}")));
}

#[test]
fn directives_are_typed() {
    let src = "```run short\nbase = \"reference\"\nseed = 3\n[train]\nsteps = 10\n```\n\n```figure fig-a\nkind = \"loss\"\nruns = [\"short\"]\nsmooth = 5\ncaption = \"Loss [0.5]{=short.train.final_loss ~ 1}\"\n```\n\n```include crates/revtx-engine/src/model/attention.rs:attention\n```\n";
    let (c, d) = parse(src);
    assert!(d.is_empty(), "{d:?}");
    let dirs: Vec<&Directive> = c.directives().map(|d| &d.node).collect();
    assert_eq!(dirs.len(), 3);
    assert!(
        matches!(dirs[0], Directive::Run { id, spec, .. } if id == "short" && spec.seed == Some(3))
    );
    match dirs[1] {
        Directive::Figure(b) => {
            assert_eq!(b.runs, ["short"]);
            assert!(
                matches!(&b.kind, crate::book::figures::FigureKind::Loss(s) if s.smooth == Some(5))
            );
            assert!(
                b.caption.iter().any(|n| matches!(n, Node::Inline(0))),
                "{:?}",
                b.caption
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(dirs[2], Directive::Include(l) if l.source.path == "crates/revtx-engine/src/model/attention.rs" && l.source.anchor.as_deref() == Some("attention") && l.twins.is_empty())
    );
}

#[test]
fn toml_errors_point_into_the_body() {
    let src = "intro\n\n```run r\nseed = \"three\"\n```\n";
    let (_, d) = parse(src);
    assert_eq!(d.len(), 1);
    assert_eq!(line_of(src, &d[0]), 4);
}

#[test]
fn figure_and_table_errors_have_their_lines() {
    let fig = |body: &str| format!("# T\n\n```figure fig-x\n{body}\n```\n");
    let cases = [
        // (body, line, code, text)
        (
            "kind = \"pie\"\nruns = [\"r\"]\ncaption = \"c\"",
            4,
            "unknown-kind",
            "unknown figure kind `pie`",
        ),
        (
            "runs = [\"r\"]\ncaption = \"c\"",
            3,
            "toml",
            "missing field `kind`",
        ),
        (
            "kind = \"loss\"\nruns = [\"r\"]",
            3,
            "toml",
            "missing field `caption`",
        ),
        (
            "kind = \"loss\"\nruns = [\"r\"]\ncaption = \"c\"\nsmoth = 3",
            7,
            "toml",
            "unknown field `smoth`",
        ),
        (
            "kind = \"loss\"\nruns = [\"r\"]\ncaption = \"c\"\nsmooth = \"x\"",
            7,
            "toml",
            "invalid type",
        ),
        (
            "kind = \"loss\"\nruns = []\ncaption = \"c\"",
            3,
            "no-runs",
            "draws no runs",
        ),
        (
            "kind = \"loss\"\nruns = [\"r\"]\nlabels = [\"{=r.params}\"]\ncaption = \"c\"",
            3,
            "directive",
            "belong in the caption",
        ),
    ];
    for (body, line, code, text) in cases {
        let src = fig(body);
        let (c, d) = parse(&src);
        assert_eq!(d.len(), 1, "{body}: {d:?}");
        assert_eq!(
            (line_of(&src, &d[0]), d[0].code.name()),
            (line, code),
            "{body}: {d:?}"
        );
        let said = format!(
            "{} {}",
            d[0].message,
            d[0].label.clone().unwrap_or_default()
        );
        assert!(said.contains(text), "{body}: {said}");
        assert!(c.nodes.iter().any(|n| matches!(n, Node::Broken)));
    }
    let src = "```table t\nkind = \"seed-spread\"\nruns = [\"r\"]\ncaption = \"c\"\n```\n";
    let (_, d) = parse(src);
    assert_eq!(
        d.len(),
        1,
        "{:?}",
        d.iter().map(|d| (&d.message, &d.label)).collect::<Vec<_>>()
    );
    assert!(
        d[0].label
            .as_deref()
            .unwrap_or_default()
            .contains("missing field `columns`"),
        "{d:?}"
    );
    assert_eq!(
        line_of(src, &d[0]),
        2,
        "toml places a missing field of the kind at the body"
    );
}

#[test]
fn an_unbalanced_display_formula_is_located() {
    let src = "# T\n\nText.\n\n$$ \\frac{1}{ $$\n\nMore.\n";
    let (_, d) = parse(src);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((line_of(src, &d[0]), d[0].code), (5, Code::MathUnclosed));
    let (_, d) = parse("# T\n\n$$ \\frac{1}{2} $$ and `$$` in code\n");
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn assertions_wrap_their_text_with_the_claims_in_it() {
    let src = "# T\n\nIt [reverses all [500]{=r.total} strings, see {@sec-x}]{? r.correct == r.total}. Done.{? r.ok}\n";
    let (c, d) = parse(src);
    assert!(d.is_empty(), "{d:?}");
    let kinds: Vec<&str> = c
        .inlines
        .iter()
        .map(|i| match &i.node {
            Inline::AssertStart => "start",
            Inline::Claim { .. } => "claim",
            Inline::Ref { .. } => "ref",
            Inline::Assert { text: Some(_), .. } => "assert",
            Inline::Assert { text: None, .. } => "bare",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["start", "claim", "ref", "assert", "bare"]);
    match &c.inlines[3].node {
        Inline::Assert { expr, text, .. } => {
            assert_eq!(expr, "r.correct == r.total");
            let t = text.as_ref().unwrap();
            assert_eq!(
                &src[t.range.clone()],
                "reverses all [500]{=r.total} strings, see {@sec-x}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&c.inlines[4].node, Inline::Assert { expr, .. } if expr == "r.ok"));
    // The text between the brackets is prose: it stays in the nodes, in order.
    let prose: Vec<String> = c
        .nodes
        .iter()
        .filter_map(|n| match n {
            Node::Md(Event::Text(t)) => Some(t.to_string()),
            Node::Inline(k) => Some(format!("<{k}>")),
            _ => None,
        })
        .collect();
    assert_eq!(
        prose.concat(),
        "TIt <0>reverses all <1> strings, see <2><3>. Done.<4>"
    );
}

#[test]
fn literals_and_links_are_not_assertions() {
    let src = "# T\n\nOriginally [362]{! original} steps; a [link](http://x.org) and [brackets] stay.\n\n`[a]{? b}` in code.\n";
    let (c, d) = parse(src);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(c.inlines.len(), 1);
    assert!(matches!(
        &c.inlines[0].node,
        Inline::Literal { quoted, reason, .. } if quoted == "362" && reason == "original"
    ));
    assert!(c
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Md(Event::Code(t)) if &**t == "[a]{? b}")));
}

/// A literal's reason is words: an apostrophe in it does not open a string.
#[test]
fn a_literal_reason_may_hold_an_apostrophe() {
    let (c, d) = parse("# T\n\nAt least [2.0×]{! the issue's goal} and [3]{! ours}.\n");
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(c.inlines.len(), 2);
    assert!(matches!(
        &c.inlines[0].node,
        Inline::Literal { quoted, reason, .. } if quoted == "2.0×" && reason == "the issue's goal"
    ));
}

#[test]
fn unbound_numbers_are_warned_about_where_they_are() {
    let src = "# T\n\nThe floor is 1.10, see [1,063]{=r.n}; GPT-2 in 2017.\n\n```figure fig-a\nkind = \"loss\"\nruns = [\"r\"]\ncaption = \"Loss over 25 steps.\"\n```\n";
    let (c, d) = parse(src);
    let unbound: Vec<(usize, &str)> = d
        .iter()
        .filter(|d| d.code == Code::UnboundNumber)
        .map(|x| {
            let r = x.span.as_ref().unwrap().range.clone();
            (line_of(src, x), &src[r])
        })
        .collect();
    assert_eq!(unbound, [(3, "1.10"), (8, "25")]);
    assert_eq!(c.unbound, 2);
}

/// `url` is the site's absolute address: a scheme and a host, nothing relative.
#[test]
fn url_must_be_absolute_http() {
    for ok in [
        "https://example.org/book/",
        "http://localhost:3000",
        "https://a.b-c.org",
    ] {
        assert_eq!(super::check_url(ok), Ok(()), "{ok}");
    }
    for bad in [
        "example.org/book",
        "//example.org",
        "ftp://example.org",
        "https://",
        "https:///path",
        "https://exa mple.org",
        "https://example.org/a b",
    ] {
        assert!(super::check_url(bad).is_err(), "{bad}");
    }
}
