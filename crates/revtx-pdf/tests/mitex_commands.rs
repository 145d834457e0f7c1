//! Every command and environment of mitex's spec, converted and typeset alone: each name
//! mitex's output calls is defined, by typst's math or by the prelude (`src/math.rs`). A
//! name mitex writes that typst does not know is a failure here, not a reader's surprise.

use mitex::{ArgPattern, ArgShape, CommandSpecItem};
use mitex_spec_gen::DEFAULT_SPEC;
use revtx_pdf::{latex_to_typst, typeset, Document};

/// What print does not take, each with why; the book gets a located error for each.
const NOT_IN_PRINT: &[(&str, &str)] = &[
    ("tabular", "text mode (a table), and mitex panics on it"),
    ("item", "text mode (a list)"),
    ("includegraphics", "text mode (an image)"),
    ("toprule", "text mode (a table rule)"),
    ("midrule", "text mode (a table rule)"),
    ("bottomrule", "text mode (a table rule)"),
    ("textwidth", "text mode (a length)"),
    ("hspace", "a TeX length, which mitex passes on as letters"),
    ("vspace", "a TeX length, which mitex passes on as letters"),
    ("raisebox", "a TeX length, which mitex passes on as letters"),
    (
        "brace",
        "`brace` is typst's symbol (`brace.l`), which a helper would hide",
    ),
    ("set", "`set` is a typst keyword"),
];

/// A formula that uses `name` as its spec says it is used.
fn sample(name: &str, item: &CommandSpecItem) -> String {
    match item {
        CommandSpecItem::Cmd(c) => match &c.args {
            ArgShape::Right { pattern } => match pattern {
                ArgPattern::None => format!("\\{name} x"),
                ArgPattern::FixedLenTerm { len } | ArgPattern::RangeLenTerm { max: len, .. } => {
                    let args = ["{a_0}", "{a_1}", "{a_2}", "{a_3}"][..usize::from(*len)].concat();
                    format!("\\{name}{args}")
                }
                ArgPattern::Greedy => format!("\\{name} a b"),
                ArgPattern::Glob { .. } => format!("\\{name}{{a}}"),
            },
            ArgShape::Left1 => format!("x \\{name}"),
            ArgShape::InfixGreedy => format!("a \\{name} b"),
        },
        CommandSpecItem::Env(_) => {
            format!("\\begin{{{name}}} a & b \\\\ c & d \\end{{{name}}}")
        }
    }
}

#[test]
fn every_command_mitex_knows_typesets() {
    let mut items: Vec<_> = DEFAULT_SPEC.items().collect();
    items.sort_by_key(|(n, _)| *n);
    assert!(items.len() > 500, "mitex's spec: {} names", items.len());
    let mut bad = Vec::new();
    let mut refused = Vec::new();
    for (name, item) in items {
        let tex = sample(name, item);
        let result = latex_to_typst(&tex).and_then(|math| {
            let doc = Document {
                main: format!(
                    "#set document(title: [f])\n#math.equation(block: true, alt: \"f\", $ {math} $.body)\n"
                ),
                files: std::collections::HashMap::new(),
                epoch: None,
                ident: "f".into(),
            };
            typeset(&doc)
                .map(|_| ())
                .map_err(|p| format!("`{math}`: {}", p[0].message))
        });
        match (result, NOT_IN_PRINT.iter().any(|(n, _)| *n == name)) {
            (Ok(()), false) => {}
            (Err(e), false) => bad.push(format!("\\{name} (`{tex}`) → {e}")),
            (Err(_), true) => refused.push(name),
            (Ok(()), true) => bad.push(format!("\\{name} typesets now: take it off NOT_IN_PRINT")),
        }
    }
    assert!(
        bad.is_empty(),
        "{} names fail:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(refused.len(), NOT_IN_PRINT.len(), "{refused:?}");
}
