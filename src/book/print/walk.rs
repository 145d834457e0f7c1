//! The walk over a chapter's nodes for print: the same nodes the site's walk reads, written
//! as typst markup. Values come from the render stage (`RenderedChapter::inline_text`), so
//! every checked figure reads exactly as on the site.

use super::markup::{string, text};
use super::Printer;
use crate::book::parse::{Chapter, Directive, Inline, Math, Node, Spanned};
use crate::book::render::numbering::{self, Number};
use crate::book::render::RenderedChapter;
use pulldown_cmark::{Alignment, Event, HeadingLevel, Tag, TagEnd};
use std::collections::HashMap;
use std::fmt::Write as _;

/// One chapter's walk.
pub(super) struct Walk<'c> {
    ch: &'c Chapter,
    rendered: &'c RenderedChapter,
    numbers: HashMap<usize, Number>,
    /// Footnote definitions: label → (first node, end node).
    notes: HashMap<String, (usize, usize)>,
    /// Footnotes already written, by label.
    noted: Vec<String>,
    /// Answers moved to the chapter's end: (id, exercise title, markup).
    answers: Vec<(String, String, String)>,
    /// The text of the last heading (an answer's exercise).
    last_heading: String,
}

impl<'c> Walk<'c> {
    pub fn new(ch: &'c Chapter, rendered: &'c RenderedChapter) -> Self {
        let mut notes = HashMap::new();
        for (i, node) in ch.nodes.iter().enumerate() {
            if let Node::Md(Event::Start(Tag::FootnoteDefinition(label))) = node {
                let end = i + ch.nodes[i..]
                    .iter()
                    .position(|n| matches!(n, Node::Md(Event::End(TagEnd::FootnoteDefinition))))
                    .unwrap_or(ch.nodes.len() - i - 1);
                notes.insert(label.to_string(), (i + 1, end));
            }
        }
        Walk {
            ch,
            rendered,
            numbers: numbering::numbers(ch),
            notes,
            noted: Vec::new(),
            answers: Vec::new(),
            last_heading: String::new(),
        }
    }
}

impl Printer<'_> {
    /// A chapter as typst markup: its title, its nodes, its answers and its references.
    pub(super) fn chapter(&mut self, w: &mut Walk) -> String {
        let mut out = String::new();
        let prefix = w.ch.place.prefix();
        let title = text(&w.rendered.title);
        let number = match w.ch.place {
            crate::book::parse::Place::Front(_) => String::new(),
            crate::book::parse::Place::Chapter(n) => format!("Chapter {n}"),
            crate::book::parse::Place::Appendix(_) => {
                format!("Appendix {}", prefix.clone().unwrap_or_default())
            }
        };
        let _ = writeln!(
            out,
            "\n#chapter({}, {})[{title}] <{}>\n",
            string(&number),
            string(&w.rendered.title),
            chapter_label(&w.ch.slug)
        );
        let nodes = &w.ch.nodes;
        let mut i = 0;
        // The answer being collected: (its heading's level, id, where its markup starts).
        let mut answer: Option<(u8, String, usize)> = None;
        while i < nodes.len() {
            if let Node::Md(Event::Start(Tag::Heading { level, .. })) = &nodes[i] {
                let level = *level as u8;
                if answer.as_ref().is_some_and(|(l, _, _)| level <= *l) {
                    let (_, id, start) = answer.take().unwrap_or_default();
                    let body = out.split_off(start);
                    w.answers.push((id, w.last_heading.clone(), body));
                }
            }
            i = self.block(w, i, &mut out, &mut answer);
        }
        if let Some((_, id, start)) = answer.take() {
            let body = out.split_off(start);
            w.answers.push((id, w.last_heading.clone(), body));
        }
        if !w.answers.is_empty() {
            out.push_str("\n#heading(level: 2, numbering: none)[Answers]\n");
            for (id, exercise, body) in std::mem::take(&mut w.answers) {
                let _ = writeln!(
                    out,
                    "\n#heading(level: 3, numbering: none, outlined: false)[Answer: {}] <{id}>\n{body}",
                    text(&exercise)
                );
            }
        }
        if !w.rendered.references.is_empty() {
            out.push_str("\n#heading(level: 2, numbering: none)[References]\n");
            for work in &w.rendered.references {
                let _ = writeln!(
                    out,
                    "\n#reference[{}] <{}>",
                    text(&work.text),
                    ref_label(&w.ch.slug, &work.key)
                );
            }
        }
        out
    }

    /// The block starting at node `i`, written to `out`; returns the index after it.
    fn block(
        &mut self,
        w: &mut Walk,
        i: usize,
        out: &mut String,
        answer: &mut Option<(u8, String, usize)>,
    ) -> usize {
        let nodes = &w.ch.nodes;
        match &nodes[i] {
            Node::Md(Event::Start(Tag::FootnoteDefinition(_))) => {
                let end = w
                    .notes
                    .values()
                    .find(|(s, _)| *s == i + 1)
                    .map_or(i, |(_, e)| *e);
                end + 1
            }
            Node::Md(Event::Start(Tag::Heading { .. })) => self.heading(w, i, out, answer),
            Node::Md(Event::Start(Tag::Table(aligns))) => self.md_table(w, i, aligns, out),
            Node::Code { lang, body } => {
                let _ = writeln!(
                    out,
                    "\n#raw(block: true, lang: {}, {})\n",
                    string(lang),
                    string(body.trim_end())
                );
                i + 1
            }
            Node::Directive(d) => {
                let number = w
                    .numbers
                    .get(&i)
                    .map(|n| n.label.clone())
                    .unwrap_or_default();
                let s = self.directive(w, d, &number);
                out.push_str(&s);
                i + 1
            }
            Node::Math(m) if m.display => {
                let number = w.numbers.get(&i);
                out.push_str(&self.equation(m, number));
                i + 1
            }
            Node::Md(Event::Start(Tag::Paragraph)) => {
                let end = matching_end(nodes, i);
                let inner = self.inlines_at(w, &nodes[i + 1..end], Some(i + 1));
                if !inner.trim().is_empty() {
                    let _ = writeln!(out, "\n{}\n", inner.trim());
                }
                end + 1
            }
            Node::Md(Event::Start(Tag::List(start))) => {
                let end = matching_end(nodes, i);
                let items = self.list_items(w, i + 1, end);
                let _ = match start {
                    Some(n) => writeln!(out, "\n#enum(start: {n}, {items})\n"),
                    None => writeln!(out, "\n#list({items})\n"),
                };
                end + 1
            }
            Node::Md(Event::Start(Tag::BlockQuote(_))) => {
                let end = matching_end(nodes, i);
                let mut inner = String::new();
                let mut k = i + 1;
                while k < end {
                    k = self.block(w, k, &mut inner, answer);
                }
                let _ = writeln!(out, "\n#quote(block: true)[{inner}]\n");
                end + 1
            }
            Node::Md(Event::Rule) => {
                out.push_str("\n#line(length: 100%, stroke: 0.5pt)\n");
                i + 1
            }
            // Raw HTML has no print form, nor has a broken directive; anything else stands
            // in prose.
            Node::Md(Event::Html(_)) | Node::Broken => i + 1,
            _ => {
                let s = self.inlines_at(w, &nodes[i..=i], Some(i));
                out.push_str(&s);
                i + 1
            }
        }
    }

    /// A heading at node `i`: numbered as on the site, with its id as its label. An answer's
    /// heading starts collecting the answer (it moves to the chapter's end) and leaves a
    /// pointer to it.
    fn heading(
        &mut self,
        w: &mut Walk,
        i: usize,
        out: &mut String,
        answer: &mut Option<(u8, String, usize)>,
    ) -> usize {
        let nodes = &w.ch.nodes;
        let Node::Md(Event::Start(Tag::Heading {
            level, id, classes, ..
        })) = &nodes[i]
        else {
            return i + 1;
        };
        let end = i + nodes[i..]
            .iter()
            .position(|n| matches!(n, Node::Md(Event::End(TagEnd::Heading(_)))))
            .unwrap_or(0);
        if *level == HeadingLevel::H1 {
            // The title is the chapter opener's; its id marks the chapter for references.
            if let Some(id) = id {
                let _ = writeln!(out, "\n#metadata(none) <{id}>\n");
            }
            return end + 1;
        }
        let inner = self.inlines(w, &nodes[i + 1..end]);
        let level = *level as u8;
        if classes.iter().any(|c| &**c == "answer") && answer.is_none() {
            let id = id.as_ref().map_or_else(
                || format!("answer-{}-{}", w.ch.slug.trim_end_matches(".html"), i),
                ToString::to_string,
            );
            let _ = writeln!(out, "\n#answer-pointer(<{id}>)\n");
            *answer = Some((level, id, out.len()));
            return end + 1;
        }
        let number = w.numbers.get(&i).map_or("", |n| n.label.as_str());
        let label = id
            .as_ref()
            .map_or_else(String::new, |id| format!(" <{id}>"));
        let numbered = if number.is_empty() {
            String::new()
        } else {
            format!("{} ", text(number))
        };
        let _ = writeln!(
            out,
            "\n#heading(level: {level}, numbering: none)[{numbered}{inner}]{label}\n"
        );
        w.last_heading = plain(&w.ch.nodes[i + 1..end], &w.rendered.inline_text);
        end + 1
    }

    /// The markdown table at node `i`, numbered and captioned if a `Table:` paragraph
    /// follows it; returns the index after it (and its caption).
    fn md_table(
        &mut self,
        w: &mut Walk,
        i: usize,
        aligns: &[Alignment],
        out: &mut String,
    ) -> usize {
        let end = numbering::table_end(&w.ch.nodes, i);
        let body = self.table_cells(w, i, end, aligns);
        let Some(cap) = numbering::table_caption(w.ch, i) else {
            let _ = writeln!(out, "\n{body}\n");
            return end + 1;
        };
        let caption = self.inlines(w, &cap.inner);
        let number = w
            .numbers
            .get(&i)
            .map(|n| n.label.clone())
            .unwrap_or_default();
        let label = cap.id.map(|id| format!(" <{id}>")).unwrap_or_default();
        let _ = writeln!(
            out,
            "\n#numbered-table({}, [{}])[{body}]{label}\n",
            string(number.trim_start_matches("Table ")),
            caption.trim()
        );
        cap.end
    }

    /// A list's items (`[…], […]`) between `start` and `end`.
    fn list_items(&mut self, w: &mut Walk, start: usize, end: usize) -> String {
        let nodes = &w.ch.nodes;
        let mut items = Vec::new();
        let mut k = start;
        while k < end {
            if matches!(nodes[k], Node::Md(Event::Start(Tag::Item))) {
                let close = matching_end(nodes, k);
                let mut inner = String::new();
                let mut j = k + 1;
                let mut none = None;
                while j < close {
                    j = self.block(w, j, &mut inner, &mut none);
                }
                items.push(format!("[{}]", inner.trim()));
                k = close + 1;
            } else {
                k += 1;
            }
        }
        items.join(", ")
    }

    /// A markdown table's cells as a typst `table`.
    fn table_cells(
        &mut self,
        w: &mut Walk,
        start: usize,
        end: usize,
        aligns: &[Alignment],
    ) -> String {
        let nodes = &w.ch.nodes;
        let mut head = Vec::new();
        let mut rows = Vec::new();
        let mut in_head = false;
        let mut k = start + 1;
        while k < end {
            match &nodes[k] {
                Node::Md(Event::Start(Tag::TableHead)) => in_head = true,
                Node::Md(Event::End(TagEnd::TableHead)) => in_head = false,
                Node::Md(Event::Start(Tag::TableCell)) => {
                    let close = matching_end(nodes, k);
                    let cell = format!("[{}]", self.inlines(w, &nodes[k + 1..close]).trim());
                    if in_head {
                        head.push(cell);
                    } else {
                        rows.push(cell);
                    }
                    k = close;
                }
                _ => {}
            }
            k += 1;
        }
        let align: Vec<&str> = aligns
            .iter()
            .map(|a| match a {
                Alignment::Right => "right",
                Alignment::Center => "center",
                _ => "left",
            })
            .collect();
        format!(
            "#table(columns: {}, align: ({},), table.header({}), {})",
            aligns.len().max(1),
            align.join(", "),
            head.join(", "),
            rows.join(", ")
        )
    }

    /// A directive: figures and tables numbered with their captions, listings, the widget as
    /// a note; nothing for a run.
    fn directive(&mut self, w: &mut Walk, d: &Spanned<Directive>, number: &str) -> String {
        match &d.node {
            Directive::Run { .. } | Directive::Notebook { .. } | Directive::Expression { .. } => {
                String::new()
            }
            Directive::Widget(widget) => self.widget(&widget.id, &w.ch.slug),
            Directive::Include(listing) => {
                let chapter = match w.ch.place {
                    crate::book::parse::Place::Chapter(n) => format!("Chapter {n}"),
                    _ => w.ch.title.clone(),
                };
                self.listing(listing, &chapter)
            }
            Directive::Figure(b) => {
                let caption = self.inlines(w, &b.caption);
                self.figure(b, number, caption.trim())
            }
            Directive::Table(b) => {
                let caption = self.inlines(w, &b.caption);
                self.kind_table(b, number, caption.trim())
            }
        }
    }

    /// A display formula, numbered as on the site; its LaTeX is its alt text.
    fn equation(&mut self, m: &Math, number: Option<&Number>) -> String {
        let math = self.math(m);
        let alt = string(m.tex.trim());
        let label = number.map(|n| n.label.trim_matches(['(', ')']).to_string());
        let id = number
            .and_then(|n| n.id.as_deref())
            .map(|id| format!(" <{id}>"))
            .unwrap_or_default();
        match label {
            Some(l) if !l.is_empty() => {
                format!(
                    "\n#numbered-equation({}, {alt}, $ {math} $){id}\n",
                    string(&l)
                )
            }
            _ => format!("\n#formula({alt}, $ {math} $)\n"),
        }
    }

    /// Nodes within a block (a heading, a caption) as inline markup.
    pub(super) fn inlines(&mut self, w: &mut Walk, nodes: &[Node]) -> String {
        self.inlines_at(w, nodes, None)
    }

    /// Nodes within a block as inline markup; `at` is the index of `nodes[0]` in the
    /// chapter when they are the chapter's own (a display formula there has a number).
    fn inlines_at(&mut self, w: &mut Walk, nodes: &[Node], at: Option<usize>) -> String {
        let mut out = String::new();
        let mut k = 0;
        while k < nodes.len() {
            match &nodes[k] {
                Node::Inline(n) => out.push_str(&self.inline(w, *n)),
                Node::Math(m) if !m.display => {
                    let math = self.math(m);
                    let _ = write!(out, "#formula({}, ${math}$)", string(m.tex.trim()));
                }
                Node::Math(m) => {
                    let number = at.and_then(|a| w.numbers.get(&(a + k))).cloned();
                    out.push_str(&self.equation(m, number.as_ref()));
                }
                Node::Md(ev) => match ev {
                    Event::Text(t) => out.push_str(&text(t)),
                    Event::Code(t) => {
                        let _ = write!(out, "#raw({})", string(t));
                    }
                    Event::SoftBreak => out.push(' '),
                    Event::HardBreak => out.push_str("\\\n"),
                    Event::Start(Tag::Emphasis) => out.push_str("#emph["),
                    Event::Start(Tag::Strong) => out.push_str("#strong["),
                    Event::Start(Tag::Strikethrough) => out.push_str("#strike["),
                    Event::Start(Tag::Superscript) => out.push_str("#super["),
                    Event::Start(Tag::Subscript) => out.push_str("#sub["),
                    Event::Start(Tag::Link { dest_url, .. }) => {
                        if dest_url.contains("://") || dest_url.starts_with("mailto:") {
                            let _ = write!(out, "#link({})[", string(dest_url));
                        } else {
                            out.push_str("#[");
                        }
                    }
                    Event::Start(Tag::Image { .. }) => out.push_str("#hide["),
                    Event::End(
                        TagEnd::Emphasis
                        | TagEnd::Strong
                        | TagEnd::Strikethrough
                        | TagEnd::Superscript
                        | TagEnd::Subscript
                        | TagEnd::Link
                        | TagEnd::Image,
                    ) => out.push(']'),
                    Event::Start(Tag::Paragraph) if !out.is_empty() => out.push(' '),
                    Event::FootnoteReference(label) => {
                        out.push_str(&self.footnote(w, label));
                    }
                    _ => {}
                },
                _ => {}
            }
            k += 1;
        }
        out
    }

    /// A footnote at its first reference; a later reference repeats its number. `id` is the
    /// note's id, unique in its chapter (the parse stage put it in place of the label).
    fn footnote(&mut self, w: &mut Walk, id: &str) -> String {
        let key = format!("fn-{}-{}", w.ch.slug.trim_end_matches(".html"), slug(id));
        if w.noted.iter().any(|l| l == id) {
            return format!("#footnote(<{key}>)");
        }
        w.noted.push(id.to_string());
        let Some(&(start, end)) = w.notes.get(id) else {
            return String::new();
        };
        // Its blocks as the chapter's: paragraphs, lists, code, display formulas, and the
        // notes it refers to, nested.
        let mut inner = String::new();
        let mut none = None;
        let mut k = start;
        while k < end {
            k = self.block(w, k, &mut inner, &mut none);
        }
        format!("#footnote[{}] <{key}>", inner.trim())
    }

    /// An inline construct: its value as the site shows it; a reference or citation linked.
    fn inline(&mut self, w: &Walk, n: usize) -> String {
        let value = w.rendered.inline_text.get(n).map_or("", String::as_str);
        match &w.ch.inlines[n].node {
            Inline::Ref { id } if self.labels.contains(id.as_str()) => {
                format!("#link(<{id}>)[{}]#page-of(<{id}>)", text(value))
            }
            Inline::Claim { .. } | Inline::Insert { .. } | Inline::Literal { .. } => {
                text(value) + &self.claim_label(w, n)
            }
            Inline::Ref { .. } => text(value),
            Inline::Cite { items, .. } => match items.first() {
                Some(item) => format!(
                    "#link(<{}>)[{}]",
                    ref_label(&w.ch.slug, &item.key),
                    text(value)
                ),
                None => text(value),
            },
            Inline::Assert { .. } => self.claim_label(w, n),
            Inline::Label { .. } | Inline::AssertStart => String::new(),
        }
    }

    /// With a changes appendix, the label of the claim at inline `n` (an invisible
    /// `metadata` element the appendix finds the page of): where its claim record is, as
    /// `render` places it (the quote's start, an assertion's statement, else the construct).
    fn claim_label(&mut self, w: &Walk, n: usize) -> String {
        let Some((sources, labels)) = self.claim_labels.as_mut() else {
            return String::new();
        };
        let inl = &w.ch.inlines[n];
        let at = match &inl.node {
            Inline::Claim { quoted_span, .. } | Inline::Literal { quoted_span, .. } => {
                quoted_span.range.start
            }
            Inline::Assert { text: Some(t), .. } => t.range.start,
            _ => inl.span.range.start,
        };
        let (line, col) = sources.line_col(w.ch.file, at);
        let label = crate::book::editions::record::claim_label(sources.path(w.ch.file), line, col);
        if labels.insert(label.clone()) {
            format!("#metadata(none)<{label}>")
        } else {
            String::new()
        }
    }
}

/// The plain text of heading nodes.
fn plain(nodes: &[Node], inline_text: &[String]) -> String {
    let mut s = String::new();
    for n in nodes {
        match n {
            Node::Md(Event::Text(t) | Event::Code(t)) => s.push_str(t),
            Node::Inline(k) => s.push_str(inline_text.get(*k).map_or("", String::as_str)),
            _ => {}
        }
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The index of the `End` matching the `Start` at `i`.
fn matching_end(nodes: &[Node], i: usize) -> usize {
    let mut depth = 0usize;
    for (k, n) in nodes.iter().enumerate().skip(i) {
        match n {
            Node::Md(Event::Start(_)) => depth += 1,
            Node::Md(Event::End(_)) => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    nodes.len() - 1
}

/// A label-safe form of a footnote's label or a bibliography key.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The label of a chapter's start.
pub(super) fn chapter_label(slug_: &str) -> String {
    format!("chapter-{}", slug(slug_.trim_end_matches(".html")))
}

/// The label of a work in a chapter's reference list.
fn ref_label(chapter: &str, key: &str) -> String {
    format!(
        "ref-{}-{}",
        slug(chapter.trim_end_matches(".html")),
        slug(key)
    )
}
