//! The walk over a chapter's nodes: prose goes to pulldown-cmark's HTML writer as it is,
//! every other node becomes the HTML of its partial, and the search text is collected.

use super::answers::Answers;
use super::inlines::InlineOut;
use super::notes::Notes;
use super::numbering::{self, Number};
use super::search::Search;
use super::{Counts, RenderedChapter, Renderer, TocEntry};
use crate::book::cite::Work;
use crate::book::claims::ClaimKind;
use crate::book::parse::{Chapter, Directive, Inline, Math, Node, Spanned};
use minijinja::{context, Value};
use pulldown_cmark::{Event, HeadingLevel, Tag, TagEnd};

impl Renderer<'_> {
    /// Renders one chapter.
    #[allow(
        clippy::too_many_lines,
        reason = "one walk over the nodes, an arm per kind of block, read top to bottom"
    )]
    pub(super) fn chapter(&mut self, ch: &Chapter) -> RenderedChapter {
        let mut inlines = self.inlines(ch);
        let references = self.citations(ch, &mut inlines);
        let numbers = numbering::numbers(ch);
        let mut counts = Counts::default();
        let mut toc = Vec::new();
        let mut title = ch.title.clone();
        let mut search = Search::new(&ch.slug);
        let mut out: Vec<Event<'static>> = Vec::with_capacity(ch.nodes.len());
        let mut answers = Answers::default();
        self.notes = Notes::of(ch);
        self.widget_bytes.clear();
        self.notebook = None;
        self.page = (
            ch.title.clone(),
            ch.slug.clone(),
            match ch.place {
                crate::book::parse::Place::Chapter(n) => format!("Chapter {n}"),
                _ => String::new(),
            },
        );
        let mut i = 0;
        while i < ch.nodes.len() {
            self.notes_so_far(&ch.nodes[i], &mut out, &mut search);
            if let Some(next) = self.notes.skip(i) {
                i = next;
                continue;
            }
            let html = match &ch.nodes[i] {
                Node::Md(Event::Start(Tag::Heading {
                    level, id, classes, ..
                })) => {
                    let end = i + ch.nodes[i..]
                        .iter()
                        .position(|n| matches!(n, Node::Md(Event::End(TagEnd::Heading(_)))))
                        .unwrap_or(0);
                    let inner = &ch.nodes[i + 1..end];
                    let section = numbers.get(&i).map_or("", |n| n.label.as_str());
                    i = end + 1;
                    answers.heading(*level as u8, &mut out);
                    if classes.iter().any(|c| &**c == "answer") && !answers.is_open() {
                        let id = id.as_ref().map_or_else(
                            || format!("answer-{}", answers.count() + 1),
                            ToString::to_string,
                        );
                        let html = self.answer(&id, inner, &inlines, &mut search);
                        answers.open(*level as u8, id, html, &mut out);
                        continue;
                    }
                    let (html, text) = self.heading(
                        (*level, id.as_deref(), section),
                        (inner, &ch.nodes[i..]),
                        &inlines,
                        &mut toc,
                        &mut search,
                    );
                    match html {
                        Some(html) => out.push(Event::Html(html.into())),
                        None => title = text,
                    }
                    continue;
                }
                Node::Md(Event::Start(Tag::Table(_))) => {
                    let (html, next) =
                        self.md_table(ch, i, &numbers, &inlines, &mut counts, &mut search);
                    out.push(Event::Html(html.into()));
                    i = next;
                    continue;
                }
                Node::Code { lang, body } => {
                    search.push(body);
                    self.code_block(lang, body)
                }
                Node::Directive(d) => {
                    let number = numbers.get(&i).map_or("", |n: &Number| n.label.as_str());
                    self.directive(d, number, &inlines, &mut counts, &mut search)
                }
                Node::Broken => String::new(),
                Node::Math(m) if m.display => {
                    counts.equations += 1;
                    search.push(&m.tex);
                    self.equation(m, numbers.get(&i))
                }
                node => {
                    self.inline_node(node, &inlines, &mut out, &mut search);
                    i += 1;
                    continue;
                }
            };
            out.push(Event::Html(html.into()));
            i += 1;
        }
        for t in self.notes.take_text() {
            search.push(&t);
        }
        out.extend(self.notes.take_pending());
        self.chapter_end(answers, &references, &mut out, &mut toc, &mut search);
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, out.into_iter());
        self.count_claims(ch, &mut counts);
        let search = search.finish(&title);
        RenderedChapter {
            title,
            slug: ch.slug.clone(),
            html,
            toc,
            search,
            counts,
            inline_text: inlines.into_iter().map(|o| o.text).collect(),
            references,
            colab: self
                .notebook
                .as_ref()
                .and_then(|_| crate::book::notebook::colab_url(self.config, &ch.slug)),
            notebook: self.notebook.take(),
        }
    }

    /// A heading's HTML, with its entry in the table of contents and the search index, and
    /// its text (with its section number, if it has one); the page's `#` title has no HTML.
    /// A heading with an id previews as its text and the first words `after` it.
    fn heading(
        &mut self,
        (level, id, number): (HeadingLevel, Option<&str>, &str),
        (nodes, after): (&[Node], &[Node]),
        inlines: &[InlineOut],
        toc: &mut Vec<TocEntry>,
        search: &mut Search,
    ) -> (Option<String>, String) {
        let (inner, text) = self.inline_html(nodes, inlines);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if level == HeadingLevel::H1 {
            return (None, text);
        }
        if let Some(id) = id {
            let first = self.section_preview(after, inlines);
            let preview = format!("{}. {first}", super::escape_text(&text));
            self.previews.insert(id.to_string(), preview);
        }
        let id = id.map_or_else(|| format!("sec-{}", slugify(&text)), ToString::to_string);
        let text = if number.is_empty() {
            text
        } else {
            format!("{number} {text}")
        };
        let level = level as u8;
        if level <= 3 {
            toc.push(TocEntry {
                level,
                id: id.clone(),
                text: text.clone(),
            });
        }
        if level == 2 {
            search.section(&text, &id);
        } else {
            search.push(&text);
        }
        let inner = Value::from_safe_string(inner);
        let html = self.html(
            "partials/heading.html",
            context! { level, id, number, inner, text => &text },
        );
        (Some(html), text)
    }

    /// The chapter's citations, put in `inlines`, and its reference list: the works it cites.
    fn citations(&mut self, ch: &Chapter, inlines: &mut [InlineOut]) -> Vec<Work> {
        let Some(bib) = self.bibliography else {
            return Vec::new();
        };
        let cited = bib.chapter(ch);
        for (n, c) in cited.cites.into_iter().enumerate() {
            let Some((html, text)) = c else { continue };
            let narrative = matches!(
                &ch.inlines[n].node,
                Inline::Cite {
                    narrative: true,
                    ..
                }
            );
            let html = Value::from_safe_string(html);
            inlines[n] = InlineOut {
                html: self.html("partials/citation.html", context! { html, narrative }),
                text,
            };
        }
        cited.list
    }

    /// Before node `next` of the walk: the text of the notes rendered so far goes to the
    /// search index, and the notes with blocks that wait are written as soon as the
    /// markup allows a block (after a paragraph or a block, or before a list item or a
    /// quote closes), never inside a paragraph.
    fn notes_so_far(&mut self, next: &Node, out: &mut Vec<Event<'static>>, search: &mut Search) {
        for t in self.notes.take_text() {
            search.push(&t);
        }
        if !self.notes.has_pending() {
            return;
        }
        let after_block = matches!(
            out.last(),
            Some(Event::End(TagEnd::Paragraph) | Event::Html(_))
        );
        let closing = matches!(
            next,
            Node::Md(Event::End(
                TagEnd::Item | TagEnd::BlockQuote(_) | TagEnd::FootnoteDefinition
            ))
        );
        if after_block || closing {
            out.extend(self.notes.take_pending());
        }
    }

    /// What ends a chapter: its answers, if book.toml collects them there, then its
    /// reference list.
    fn chapter_end(
        &mut self,
        mut answers: Answers,
        references: &[Work],
        out: &mut Vec<Event<'static>>,
        toc: &mut Vec<TocEntry>,
        search: &mut Search,
    ) {
        answers.close(out);
        if self.answers_at_end && answers.count() > 0 {
            let link = |id: &str| self.html("partials/answer-link.html", context! { id });
            let moved = answers.collect(out, link);
            toc.push(TocEntry {
                level: 2,
                id: "answers".into(),
                text: "Answers".into(),
            });
            let heading = self.html("partials/answers.html", context! {});
            out.push(Event::Html(heading.into()));
            out.extend(moved);
        }
        if !references.is_empty() {
            let html = self.reference_list(references, toc, search);
            out.push(Event::Html(html.into()));
        }
    }

    /// The chapter's reference list (`partials/references.html`), in its table of contents
    /// and its search index as a section.
    fn reference_list(
        &mut self,
        references: &[Work],
        toc: &mut Vec<TocEntry>,
        search: &mut Search,
    ) -> String {
        toc.push(TocEntry {
            level: 2,
            id: "references".into(),
            text: "References".into(),
        });
        search.section("References", "references");
        let items: Vec<Value> = (references.iter())
            .map(|w| {
                search.push(&w.text);
                context! { key => w.key, html => w.html }
            })
            .collect();
        self.html("partials/references.html", context! { items })
    }

    /// The first words of the section whose heading ends before `nodes` start, as HTML:
    /// its text (formulas typeset) up to the next heading, as far as a preview shows.
    fn section_preview(&mut self, nodes: &[Node], inlines: &[InlineOut]) -> String {
        let mut out = String::new();
        let mut shown = 0;
        for node in nodes {
            if shown > super::PREVIEW_CHARS {
                out.push('…');
                break;
            }
            let text = match node {
                // A heading ends the section; a table ends what a preview shows of it.
                Node::Md(Event::Start(Tag::Heading { .. })) => break,
                Node::Md(Event::Start(Tag::Table(_))) => {
                    out.push('…');
                    break;
                }
                Node::Md(Event::Text(t) | Event::Code(t)) => t.to_string(),
                Node::Md(Event::SoftBreak | Event::HardBreak | Event::End(_)) => " ".into(),
                Node::Inline(k) => inlines[*k].text.clone(),
                Node::Math(m) if !m.display => {
                    shown += m.tex.len() / 2;
                    out.push_str(&self.math(m));
                    continue;
                }
                _ => continue,
            };
            let room = (super::PREVIEW_CHARS + 1).saturating_sub(shown);
            let cut = super::shorten(&text, room.max(1));
            shown += cut.len();
            if text.starts_with(char::is_whitespace) {
                out.push(' ');
            }
            out.push_str(&super::escape_text(&cut));
            if cut.ends_with('…') {
                break;
            }
            if text.ends_with(char::is_whitespace) {
                out.push(' ');
            }
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The chapter's claims by kind, and its unbound numerals.
    fn count_claims(&self, ch: &Chapter, counts: &mut Counts) {
        let file = self.sources.display_path(ch.file);
        let mine: Vec<_> = self.claims.iter().filter(|c| c.file == file).collect();
        let of = |k: ClaimKind| mine.iter().filter(|c| c.kind == k).count();
        counts.checked = of(ClaimKind::Checked);
        counts.inserted = of(ClaimKind::Inserted);
        counts.literal = of(ClaimKind::Literal);
        counts.asserted = of(ClaimKind::Asserted);
        counts.unbound = ch.unbound;
    }

    /// The opening of an answer: a `<details>` whose summary is the heading's text, shut
    /// until the reader opens it (`templates/partials/answer.html`). Not in the table of
    /// contents; its text is searchable.
    fn answer(
        &mut self,
        id: &str,
        nodes: &[Node],
        inlines: &[InlineOut],
        search: &mut Search,
    ) -> String {
        let (inner, text) = self.inline_html(nodes, inlines);
        search.push(&text);
        let inner = Value::from_safe_string(inner);
        self.html("partials/answer.html", context! { id, inner })
    }

    /// A directive's HTML (nothing for a run), counted and indexed for search.
    fn directive(
        &mut self,
        d: &Spanned<Directive>,
        number: &str,
        inlines: &[InlineOut],
        counts: &mut Counts,
        search: &mut Search,
    ) -> String {
        match &d.node {
            Directive::Run { .. } | Directive::Expression { .. } => String::new(),
            Directive::Widget(w) => self.widget(w, &d.span),
            Directive::Notebook { run } => {
                self.notebook(run, &d.span);
                String::new()
            }
            Directive::Include(listing) => {
                counts.listings += 1;
                let (html, code) = self.include(listing, counts.listings, &d.span);
                search.push(&listing.source.path);
                search.push(&code);
                html
            }
            Directive::Figure(b) => {
                counts.figures += 1;
                let (caption, text) = self.caption(&b.caption, inlines);
                search.push(&text);
                self.preview(&b.id, &text);
                self.figure(b, number, &caption, &d.span)
            }
            Directive::Table(b) => {
                counts.tables += 1;
                let (caption, text) = self.caption(&b.caption, inlines);
                search.push(&text);
                self.preview(&b.id, &text);
                self.table(b, number, &caption, &d.span)
            }
        }
    }

    /// A display formula with its number: `partials/equation.html`.
    pub(super) fn equation(&mut self, m: &Math, number: Option<&Number>) -> String {
        let math = self.math(m);
        let id = number.and_then(|n| n.id.as_deref()).unwrap_or_default();
        if !id.is_empty() {
            self.previews.insert(id.to_string(), math.clone());
        }
        let math = Value::from_safe_string(math);
        let label = number.map(|n| n.label.as_str()).unwrap_or_default();
        self.html("partials/equation.html", context! { id, math, label })
    }

    /// A node within prose: markdown as it is, inline constructs and formulas as HTML.
    pub(super) fn inline_node(
        &mut self,
        node: &Node,
        inlines: &[InlineOut],
        out: &mut Vec<Event<'static>>,
        search: &mut Search,
    ) {
        match node {
            Node::Inline(k) => {
                out.push(Event::InlineHtml(inlines[*k].html.clone().into()));
                search.push_inline(&inlines[*k].text);
            }
            Node::Md(Event::FootnoteReference(id)) => {
                let html = self.footnote_ref(id, inlines);
                out.push(Event::InlineHtml(html.into()));
            }
            Node::Math(m) => {
                search.push_inline(&m.tex);
                let html = if m.display {
                    self.equation(m, None)
                } else {
                    self.math(m)
                };
                out.push(Event::InlineHtml(html.into()));
            }
            Node::Md(ev) => {
                match ev {
                    Event::Text(t) | Event::Code(t) => search.push_inline(t),
                    Event::SoftBreak | Event::HardBreak => search.push(""),
                    Event::End(end) if !inline_end(*end) => search.push(""),
                    _ => {}
                }
                out.push(ev.clone());
            }
            Node::Code { .. } | Node::Directive(_) | Node::Broken => {}
        }
    }

    /// Nodes within a block (a heading, a caption, a table) as HTML, and their plain text.
    pub(super) fn inline_html(
        &mut self,
        nodes: &[Node],
        inlines: &[InlineOut],
    ) -> (String, String) {
        let mut events: Vec<Event<'static>> = Vec::with_capacity(nodes.len());
        let mut search = Search::new("");
        for node in nodes {
            self.inline_node(node, inlines, &mut events, &mut search);
        }
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, events.into_iter());
        (html, search.finish("").remove(0).text)
    }
}

/// Whether a tag closes inline markup (no word break for search).
fn inline_end(end: TagEnd) -> bool {
    matches!(
        end,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image
            | TagEnd::Superscript
            | TagEnd::Subscript
    )
}

/// The id of a heading without an explicit `{#id}`: a slug of its text.
pub fn slugify(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if (c.is_whitespace() || c == '-' || c == '.')
            && !out.ends_with('-')
            && !out.is_empty()
        {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(
            slugify("1.4 Why the square root"),
            "1-4-why-the-square-root"
        );
        assert_eq!(slugify("Where this goes wrong"), "where-this-goes-wrong");
    }
}
