//! A claim's surroundings in its chapter's source: the section it is in, the sentence
//! around it, that sentence as a reader sees it, and its prose with the quoted figures
//! masked (so that a retrained figure is not taken for an edit).

/// A source's lines, indexed once: where each starts and the section it is in, so that
/// the hundreds of claims of a chapter each find theirs without reading it from the top.
pub struct Index<'a> {
    text: &'a str,
    /// Byte offset of each line's start (line `n`, 1-based, at `starts[n - 1]`).
    starts: Vec<usize>,
    /// The heading each line is under: an index into `headings`, by line.
    under: Vec<Option<usize>>,
    headings: Vec<(String, Option<String>)>,
}

impl<'a> Index<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        let mut under = Vec::new();
        let mut headings = Vec::new();
        let mut current = None;
        let mut fenced = false;
        for l in text.split_inclusive('\n') {
            under.push(current);
            starts.push(starts.last().copied().unwrap_or(0) + l.len());
            let t = l.trim_end_matches(['\n', '\r']).trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            if let Some(rest) = t.strip_prefix("##") {
                headings.push(heading(rest));
                current = Some(headings.len() - 1);
            }
        }
        under.push(current);
        Index {
            text,
            starts,
            under,
            headings,
        }
    }

    /// The `##`-or-deeper heading above line `line` (1-based): its title, without its
    /// attribute block, and its id if it gives one.
    pub fn section_at(&self, line: usize) -> Option<(String, Option<String>)> {
        // Past the last line, the last heading (as reading to the end finds it).
        let at = line.saturating_sub(1).min(self.under.len() - 1);
        let i = self.under[at]?;
        Some(self.headings[i].clone())
    }

    /// The byte offset of line `line`, column `col` (1-based, in characters).
    fn offset(&self, line: usize, col: usize) -> Option<usize> {
        let start = *self.starts.get(line.checked_sub(1)?)?;
        if start > self.text.len()
            || (line > 1 && start == self.text.len() && !self.text.ends_with('\n'))
        {
            return None;
        }
        let l = &self.text[start..];
        let within = l
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(l.len(), |(i, _)| i);
        Some(start + within)
    }

    /// The sentence that holds line `line`, column `col` (1-based, in characters), as
    /// written, on one line.
    pub fn sentence_at(&self, line: usize, col: usize) -> String {
        match self.offset(line, col) {
            Some(at) => sentence_around(self.text, at),
            None => String::new(),
        }
    }
}

/// A heading's text after its `##`: its title (cleaned) and its id if it gives one.
fn heading(rest: &str) -> (String, Option<String>) {
    let rest = rest.trim_start_matches('#').trim();
    let (title, id) = match rest.rfind('{') {
        Some(b) if rest.ends_with('}') => {
            let attrs = &rest[b + 1..rest.len() - 1];
            let id = attrs
                .split_whitespace()
                .find_map(|a| a.strip_prefix('#'))
                .map(String::from);
            (rest[..b].trim().to_string(), id)
        }
        _ => (rest.to_string(), None),
    };
    (clean(&title), id)
}

/// The `##`-or-deeper heading above line `line` (1-based) of `text` (see [`Index`]).
pub fn section_at(text: &str, line: usize) -> Option<(String, Option<String>)> {
    Index::new(text).section_at(line)
}

/// The sentence of `text` that holds line `line`, column `col` (1-based, in characters),
/// as written, on one line (see [`Index`]).
pub fn sentence_at(text: &str, line: usize, col: usize) -> String {
    Index::new(text).sentence_at(line, col)
}

/// The sentence of `text` around byte offset `at`.
fn sentence_around(text: &str, at: usize) -> String {
    // The paragraph: between blank lines.
    let start = text[..at].rfind("\n\n").map_or(0, |i| i + 2);
    let end = text[at..].find("\n\n").map_or(text.len(), |i| at + i);
    let para = &text[start..end];
    let at = at - start;
    let mut begin = 0;
    let (mut square, mut curly) = (0i32, 0i32);
    let chars: Vec<(usize, char)> = para.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        match c {
            '[' => square += 1,
            ']' => square -= 1,
            '{' => curly += 1,
            '}' => curly -= 1,
            '.' | '?' | '!' if square <= 0 && curly <= 0 => {
                let next = chars.get(k + 1).map(|&(_, n)| n);
                if next.is_none_or(char::is_whitespace) {
                    let stop = i + c.len_utf8();
                    if stop > at {
                        return one_line(&para[begin..stop]);
                    }
                    begin = stop;
                }
            }
            _ => {}
        }
    }
    one_line(&para[begin..])
}

/// The byte offset of 1-based `line`, `col` (characters).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A sentence as a reader sees it: `[83%]{=expr}` is `83%`, `[text]{? cond}` is `text`,
/// `{=expr}` (an insert) is `…`, `{@id}` is `id`; emphasis and code marks stay.
pub fn clean(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['[', '{']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some((inner, after)) = bracketed(tail, '[', ']') {
            if let Some((_, after_attr)) = after
                .strip_prefix('{')
                .and_then(|_| bracketed(after, '{', '}'))
            {
                out.push_str(&clean(inner));
                rest = after_attr;
                continue;
            }
            out.push('[');
            rest = &tail[1..];
            continue;
        }
        if let Some((inner, after)) = bracketed(tail, '{', '}') {
            if let Some(id) = inner.strip_prefix('@') {
                out.push_str(id);
            } else if inner.starts_with(['=', '?', '!']) {
                out.push('…');
            } else {
                out.push('{');
                out.push_str(inner);
                out.push('}');
            }
            rest = after;
            continue;
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    one_line(&out)
}

/// [`clean`], with the insert of `expr` shown as `value` (the claim a change is about).
pub fn clean_with(s: &str, expr: &str, value: &str) -> String {
    let insert = format!("{{={expr}}}");
    match s.find(&insert) {
        Some(i) => clean(&format!("{}{value}{}", &s[..i], &s[i + insert.len()..])),
        None => clean(s),
    }
}

/// The sentence with every quoted figure's text masked (`[83%]{=e}` is `[]{=e}`): two
/// sentences whose masks differ were edited, not only retrained.
pub fn masked(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match bracketed(tail, '[', ']') {
            Some((inner, after)) if after.starts_with("{=") || after.starts_with("{?") => {
                // A checked figure's quote is masked; an assertion's statement is prose.
                if after.starts_with("{=") {
                    out.push_str("[]");
                } else {
                    out.push('[');
                    out.push_str(&masked(inner));
                    out.push(']');
                }
                rest = after;
            }
            _ => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    one_line(&out)
}

/// How a figure is written, digits aside: `0.52` is `#.##`, `52%` is `##%`.
pub fn shape(quoted: &str) -> String {
    quoted
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

/// `open … close` at the start of `s` (nested pairs inside), and what follows.
fn bracketed(s: &str, open: char, close: char) -> Option<(&str, &str)> {
    if !s.starts_with(open) {
        return None;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some((&s[open.len_utf8()..i], &s[i + close.len_utf8()..]));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# Ch {#ch}\n\n## Scale {#sec-scale}\n\nIt trains for\n[30]{=tiny.config.train.steps} steps. It reaches [52%]{=tiny.train.test.accuracy}, on\n[most seeds]{? x > 0.5}. The end.\n";

    /// The index's answers are what reading the text from the top gives, at every line and
    /// at columns inside, past and at the end of each, fences and a missing last newline
    /// included.
    #[test]
    fn the_index_answers_as_reading_from_the_top_does() {
        fn section_from_top(text: &str, line: usize) -> Option<(String, Option<String>)> {
            let mut found = None;
            let mut fenced = false;
            for l in text.lines().take(line.saturating_sub(1)) {
                let t = l.trim_start();
                if t.starts_with("```") || t.starts_with("~~~") {
                    fenced = !fenced;
                }
                if !fenced {
                    if let Some(rest) = t.strip_prefix("##") {
                        found = Some(heading(rest));
                    }
                }
            }
            found
        }
        fn offset_from_top(text: &str, line: usize, col: usize) -> Option<usize> {
            let mut start = 0;
            for _ in 1..line {
                start += text[start..].find('\n')? + 1;
            }
            let l = &text[start..];
            let within = l
                .char_indices()
                .nth(col.saturating_sub(1))
                .map_or(l.len(), |(i, _)| i);
            Some(start + within)
        }
        let fenced =
            "# C\n\n## One {#one}\n\nA é. B.\n\n```text\n## not a heading\n```\n\n### Two\n\nC. D";
        for text in [TEXT, fenced, "", "\n\n", "no newline"] {
            let index = Index::new(text);
            let lines = text.split('\n').count() + 2;
            for line in 0..=lines {
                assert_eq!(
                    index.section_at(line),
                    section_from_top(text, line),
                    "{text:?} line {line}"
                );
                for col in [0, 1, 2, 5, 40, 200] {
                    let want =
                        offset_from_top(text, line.max(1), col).map(|at| sentence_around(text, at));
                    let got = index
                        .offset(line.max(1), col)
                        .map(|at| sentence_around(text, at));
                    assert_eq!(got, want, "{text:?} line {line} col {col}");
                }
            }
        }
    }

    #[test]
    fn the_sentence_and_section_around_a_claim() {
        // `[52%]` is on line 6, column 47.
        let line = 6;
        let col = TEXT.lines().nth(5).unwrap().find("[52%]").unwrap() + 1;
        let s = sentence_at(TEXT, line, col);
        assert_eq!(
            s,
            "It reaches [52%]{=tiny.train.test.accuracy}, on [most seeds]{? x > 0.5}."
        );
        assert_eq!(clean(&s), "It reaches 52%, on most seeds.");
        assert_eq!(
            section_at(TEXT, line),
            Some(("Scale".to_string(), Some("sec-scale".to_string())))
        );
        assert_eq!(
            sentence_at(TEXT, 6, 1),
            "It trains for [30]{=tiny.config.train.steps} steps."
        );
    }

    #[test]
    fn a_retrained_figure_is_no_edit_and_a_reworded_sentence_is() {
        let a = "It reaches [52%]{=acc} on [most]{? x} seeds.";
        let b = "It reaches [61%]{=acc} on [most]{? x} seeds.";
        let c = "It now reaches [61%]{=acc} on [most]{? x} seeds.";
        assert_eq!(masked(a), masked(b));
        assert_ne!(masked(b), masked(c));
        assert_ne!(shape("0.52"), shape("52%"));
        assert_eq!(shape("52%"), shape("61%"));
    }
}
