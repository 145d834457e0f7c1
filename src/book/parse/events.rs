//! The one markdown parse of a chapter: pulldown-cmark events become [`Node`]s, with
//! directives, code, math and inline constructs attached where the parse met them.

use super::directive::{self, Directive};
use super::footnotes;
use super::inline::{pieces, Piece, Substituted};
use super::{numerals, options, Spanned};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Parser, Tag, TagEnd};
use std::cell::RefCell;
use std::ops::Range;

/// One element of a parsed chapter, in document order.
#[derive(Clone, Debug)]
pub enum Node {
    /// A markdown event: structure, prose text, code spans, breaks, raw HTML.
    Md(Event<'static>),
    /// A claim, insert, label or reference: its index in `Chapter::inlines`.
    Inline(usize),
    /// A formula.
    Math(Math),
    /// A code block that is not a directive: its language (the fence's first word) and text.
    Code { lang: String, body: String },
    /// A directive fence.
    Directive(Spanned<Directive>),
    /// A fence that names a directive but does not parse (already diagnosed).
    Broken,
}

/// A formula between `$` or `$$`.
#[derive(Clone, Debug)]
pub struct Math {
    pub display: bool,
    pub tex: String,
    /// The formula with its dollars, in the source; for a caption's formula, its fence.
    pub span: Span,
    /// Whether `span` is the formula itself (not so in captions).
    pub exact: bool,
}

/// The nodes of a chapter and the placeholders that stand in prose.
pub struct Parsed {
    pub nodes: Vec<Node>,
    /// Per placeholder of `Substituted::found`: its index among the prose constructs.
    pub index: Vec<Option<usize>>,
    /// How many numerals of the prose are bound to nothing (each is warned about).
    pub unbound: usize,
}

/// Parses the substituted chapter text once.
pub fn parse(file: FileId, src: &str, sub: &Substituted, diags: &mut Vec<Diagnostic>) -> Parsed {
    let events: Vec<(Event, Range<usize>)> = Parser::new_ext(&sub.text, options())
        .into_offset_iter()
        .collect();
    let index = prose(&events, sub, diags);
    super::answers::check(file, src, &events, sub, diags);
    let notes = footnotes::check(file, src, &events, sub, diags);
    let lint = numerals::lint(
        events.iter().map(|(e, r)| (e, r.clone())),
        &sub.text,
        &|p| sub.to_src(p),
        file,
    );
    let mut b = Builder {
        file,
        src,
        sub,
        index: &index,
        nodes: Vec::with_capacity(events.len()),
        code: None,
        stray_math: false,
        lint: RefCell::new(lint),
    };
    for (ev, range) in events {
        b.event(ev, range, diags);
    }
    footnotes::relabel(&mut b.nodes, &notes);
    let mut lint = b.lint.into_inner();
    lint.sort_by_key(|d| d.span.as_ref().map(|s| s.range.start));
    let unbound = lint.len();
    diags.extend(lint);
    Parsed {
        nodes: b.nodes,
        index,
        unbound,
    }
}

/// Which placeholders stand in prose (or in figure and table bodies): those are constructs,
/// numbered in source order, and their problems are reported. The others, in code, math,
/// HTML or link targets, go back to the text they replaced.
fn prose(
    events: &[(Event, Range<usize>)],
    sub: &Substituted,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Option<usize>> {
    let mut in_prose = vec![false; sub.found.len()];
    let mut prose_ranges = Vec::new();
    let mut fence: Option<bool> = None;
    for (ev, range) in events {
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                fence = Some(
                    directive::DirectiveKind::from_word(word(kind))
                        .is_some_and(directive::DirectiveKind::has_prose),
                );
            }
            Event::End(TagEnd::CodeBlock) => fence = None,
            Event::Text(t) if fence != Some(false) => {
                for piece in pieces(t) {
                    if let Some(p) = placeholder(&piece).and_then(|n| in_prose.get_mut(n)) {
                        *p = true;
                    }
                }
                prose_ranges.push(sub.to_src(range.start)..sub.to_src(range.end));
            }
            _ => {}
        }
    }
    let mut index = Vec::with_capacity(in_prose.len());
    let mut found = Vec::new();
    for (f, &prose) in sub.found.iter().zip(&in_prose) {
        index.push(prose.then_some(found.len()));
        if prose {
            found.push(f);
        }
    }
    let mut located: Vec<(usize, &Diagnostic)> = found
        .iter()
        .flat_map(|f| f.diags.iter().map(|d| (f.inline.span.range.start, d)))
        .chain(
            sub.unclosed
                .iter()
                .filter(|(at, _)| prose_ranges.iter().any(|r| r.contains(at)))
                .map(|(at, d)| (*at, d)),
        )
        .collect();
    located.sort_by_key(|(at, _)| *at);
    diags.extend(located.into_iter().map(|(_, d)| d.clone()));
    index
}

fn placeholder(piece: &Piece) -> Option<usize> {
    match piece {
        Piece::Placeholder(n) => Some(*n),
        Piece::Text(_) => None,
    }
}

fn word<'a>(kind: &'a CodeBlockKind) -> &'a str {
    match kind {
        CodeBlockKind::Fenced(i) => i.split_whitespace().next().unwrap_or_default(),
        CodeBlockKind::Indented => "",
    }
}

/// Turns events into nodes.
struct Builder<'a> {
    file: FileId,
    src: &'a str,
    sub: &'a Substituted,
    index: &'a [Option<usize>],
    nodes: Vec<Node>,
    /// The code block being read: (info string, start in the text, body so far).
    code: Option<(String, usize, String)>,
    /// Whether this block already has an unclosed `$$` reported.
    stray_math: bool,
    /// The unbound numerals found so far (prose, then captions as they are parsed).
    lint: RefCell<Vec<Diagnostic>>,
}

impl Builder<'_> {
    fn span(&self, r: Range<usize>) -> Span {
        Span {
            file: self.file,
            range: self.sub.to_src(r.start)..self.sub.to_src(r.end),
        }
    }

    fn restore(&self, s: &str) -> String {
        self.sub.restore(s, self.src)
    }

    fn event(&mut self, ev: Event, range: Range<usize>, diags: &mut Vec<Diagnostic>) {
        let node = match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(i) => i.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, range.start, String::new()));
                return;
            }
            Event::Text(t) if self.code.is_some() => {
                if let Some(c) = self.code.as_mut() {
                    c.2.push_str(&t);
                }
                return;
            }
            Event::End(TagEnd::CodeBlock) => match self.code.take() {
                Some((info, start, body)) => self.code_block(&info, start, &body, diags),
                None => return,
            },
            Event::InlineMath(ref t) | Event::DisplayMath(ref t) => Node::Math(Math {
                display: matches!(ev, Event::DisplayMath(_)),
                tex: self.restore(t),
                span: self.span(range),
                exact: true,
            }),
            Event::Text(t) => {
                self.stray_math(range, diags);
                split(&t, self.index, &mut self.nodes);
                return;
            }
            Event::End(_) => {
                self.stray_math = false;
                Node::Md(ev.into_static())
            }
            Event::Code(t) => Node::Md(Event::Code(self.restore(&t).into())),
            Event::Html(t) => Node::Md(Event::Html(self.restore(&t).into())),
            Event::InlineHtml(t) => Node::Md(Event::InlineHtml(self.restore(&t).into())),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => Node::Md(Event::Start(Tag::Link {
                link_type,
                dest_url: self.restore(&dest_url).into(),
                title: self.restore(&title).into(),
                id: id.into_static(),
            })),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Node::Md(Event::Start(Tag::Image {
                link_type,
                dest_url: self.restore(&dest_url).into(),
                title: self.restore(&title).into(),
                id: id.into_static(),
            })),
            other => Node::Md(other.into_static()),
        };
        self.nodes.push(node);
    }

    /// A finished code block: a directive, a broken one, or code.
    fn code_block(
        &self,
        info: &str,
        start: usize,
        body: &str,
        diags: &mut Vec<Diagnostic>,
    ) -> Node {
        let info = self.restore(info);
        let lang = info
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let text = &self.sub.text;
        let line_end = text[start..].find('\n').map_or(start, |n| start + n);
        let Some(kind) = directive::DirectiveKind::from_word(&lang) else {
            let body = self.restore(body);
            if lang.is_empty() {
                markup_in_code(self.span(start..line_end), &body, diags);
            }
            return Node::Code { lang, body };
        };
        let body_start = (line_end + 1).min(text.len());
        let body = if kind.has_prose() {
            body.to_string()
        } else {
            self.restore(body)
        };
        let at = self.span(start..line_end);
        let fence = directive::Fence {
            info: &info,
            body: &body,
            file: self.file,
            span: at.clone(),
            to_src: &|p| self.sub.to_src(body_start + p),
            caption: &|c| self.caption(c, &at, &body, body_start),
        };
        directive::parse(kind, &fence, diags).map_or(Node::Broken, Node::Directive)
    }

    /// pulldown-cmark leaves a `$$` that opens no formula as text: its braces do not
    /// balance, or nothing closes it. Reported once per block.
    fn stray_math(&mut self, range: Range<usize>, diags: &mut Vec<Diagnostic>) {
        // pulldown-cmark gives each `$` an event of its own: look one byte further.
        let at = self.span(range);
        let (start, end) = (at.range.start, at.range.end);
        let text = self.src.get(start..=end).unwrap_or(&self.src[start..end]);
        let Some(k) = text.find("$$") else {
            return;
        };
        if self.stray_math {
            return;
        }
        self.stray_math = true;
        let start = at.range.start + k;
        diags.push(
            Diagnostic::error(
                Code::MathUnclosed,
                Some(Span {
                    file: self.file,
                    range: start..start + 2,
                }),
                "this display formula is not closed",
            )
            .label("no closing `$$` with balanced braces after this")
            .hint("a formula's `{` and `}` must balance, e.g. `$$ \\frac{1}{2} $$`"),
        );
    }

    /// A figure or table caption: inline markdown with its constructs. Its formulas are
    /// placed at the directive's fence; its numerals are linted where the caption is in the
    /// fence's body (`body`, at `body_start` of the text), or at the fence if it is written
    /// with escapes.
    fn caption(&self, c: &str, fence: &Span, body: &str, body_start: usize) -> Vec<Node> {
        let events: Vec<(Event, Range<usize>)> =
            Parser::new_ext(c, options()).into_offset_iter().collect();
        let at = body.find(c).filter(|_| !c.is_empty());
        let to_src = |k: usize| match at {
            Some(a) => self.sub.to_src(body_start + a + k),
            None => fence.range.start,
        };
        self.lint.borrow_mut().extend(numerals::lint(
            events.iter().map(|(e, r)| (e, r.clone())),
            c,
            &to_src,
            self.file,
        ));
        let mut nodes = Vec::new();
        for (ev, _) in events {
            match ev {
                Event::Text(t) => split(&t, self.index, &mut nodes),
                Event::InlineMath(ref t) | Event::DisplayMath(ref t) => {
                    nodes.push(Node::Math(Math {
                        display: matches!(ev, Event::DisplayMath(_)),
                        tex: t.to_string(),
                        span: fence.clone(),
                        exact: false,
                    }));
                }
                other => nodes.push(Node::Md(other.into_static())),
            }
        }
        nodes
    }
}

/// Prose text as nodes: text, and the constructs its placeholders stand for.
fn split(t: &str, index: &[Option<usize>], nodes: &mut Vec<Node>) {
    for piece in pieces(t) {
        match piece {
            Piece::Text(s) => nodes.push(Node::Md(Event::Text(CowStr::from(s.to_string())))),
            Piece::Placeholder(n) => {
                if let Some(Some(k)) = index.get(n) {
                    nodes.push(Node::Inline(*k));
                }
            }
        }
    }
}

/// A fenced block with no language whose text holds the book's own markup (`]{=`,
/// `]{?`, `]{!`, `{@`) is most likely prose that a stray fence turned into code: its
/// figures are then neither checked nor shown as figures, and nothing else would say so.
fn markup_in_code(fence: Span, body: &str, diags: &mut Vec<Diagnostic>) {
    let Some(found) = ["]{=", "]{?", "]{!", "{@"]
        .iter()
        .find(|m| body.contains(**m))
    else {
        return;
    };
    diags.push(
        Diagnostic::warning(
            Code::MarkupInCode,
            Some(fence),
            format!("this code block holds the book's markup (`{found}`): is a fence left open?"),
        )
        .label("a fence with no language opens a code block here")
        .hint("a fence closed twice opens a block that runs to the next fence; delete the extra ```, or give a real code block its language"),
    );
}
