//! Answers to exercises: a heading with the class `answer` opens a shut `<details>` that
//! holds everything up to the next heading of its level or above. Where book.toml says
//! `answers = "end"`, each answer moves to an "Answers" section at the end of its chapter,
//! and a link to it stays in its place.

use pulldown_cmark::Event;

/// Closes an answer's `<details>` (opened by `templates/partials/answer.html`).
const ANSWER_END: &str = "</div></details>\n";

/// The answers of one chapter, as the walk meets them.
#[derive(Default)]
pub(super) struct Answers {
    /// The level of the answer's heading while one is open, and where in the output it
    /// starts.
    open: Option<(u8, usize)>,
    /// Each answer's id and its events' range in the output.
    done: Vec<(String, std::ops::Range<usize>)>,
}

impl Answers {
    /// Before a heading of `level`: closes the open answer if the heading ends it.
    pub fn heading(&mut self, level: u8, out: &mut Vec<Event<'static>>) {
        if self.open.is_some_and(|(l, _)| level <= l) {
            self.close(out);
        }
    }

    /// Whether an answer is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Opens an answer whose heading (of `level`) is `html`; `id` is its id.
    pub fn open(&mut self, level: u8, id: String, html: String, out: &mut Vec<Event<'static>>) {
        self.open = Some((level, out.len()));
        self.done.push((id, out.len()..out.len()));
        out.push(Event::Html(html.into()));
    }

    /// Closes the open answer, if any.
    pub fn close(&mut self, out: &mut Vec<Event<'static>>) {
        if self.open.take().is_some() {
            out.push(Event::Html(ANSWER_END.into()));
            if let Some((_, r)) = self.done.last_mut() {
                r.end = out.len();
            }
        }
    }

    /// How many answers the chapter has so far.
    pub fn count(&self) -> usize {
        self.done.len()
    }

    /// Moves every answer out of `out`, leaving `link(id)` in its place, and returns them
    /// in order.
    pub fn collect(
        self,
        out: &mut Vec<Event<'static>>,
        mut link: impl FnMut(&str) -> String,
    ) -> Vec<Event<'static>> {
        let mut moved: Vec<Vec<Event<'static>>> = Vec::new();
        for (id, r) in self.done.into_iter().rev() {
            let here = Event::Html(link(&id).into());
            moved.push(out.splice(r, [here]).collect());
        }
        moved.into_iter().rev().flatten().collect()
    }
}
