//! Where an answer may stand: a heading with the class `answer` answers the exercise whose
//! heading holds it, so it sits directly under a heading with the class `exercise`, one
//! level below it (at any depth), and not itself inside another answer. Anything else is
//! an error at the `.answer`.

use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use crate::book::parse::inline::Substituted;
use pulldown_cmark::{Event, HeadingLevel, Tag};
use std::ops::Range;

/// Checks every answer heading of a chapter's events (over `sub`'s text).
pub fn check(
    file: FileId,
    src: &str,
    events: &[(Event, Range<usize>)],
    sub: &Substituted,
    diags: &mut Vec<Diagnostic>,
) {
    // The headings above the current place: (level, whether it is an answer, whether it
    // is an exercise).
    let mut above: Vec<(HeadingLevel, bool, bool)> = Vec::new();
    for (ev, range) in events {
        let Event::Start(Tag::Heading { level, classes, .. }) = ev else {
            continue;
        };
        above.retain(|(l, _, _)| l < level);
        let has = |class: &str| classes.iter().any(|c| &**c == class);
        let answer = has("answer");
        let why = match above.last() {
            _ if !answer => None,
            _ if above.iter().any(|(_, a, _)| *a) => Some("an answer inside another answer"),
            Some((parent, _, true)) if *parent as usize + 1 == *level as usize => None,
            Some((_, _, true)) => Some("an answer must sit one level below its exercise's heading"),
            _ => Some("an answer must sit directly under the heading of its exercise"),
        };
        if let Some(why) = why {
            let (start, end) = (sub.to_src(range.start), sub.to_src(range.end));
            let at = src[start..end]
                .find(".answer")
                .map_or(start..end, |k| start + k..start + k + ".answer".len());
            diags.push(
                Diagnostic::error(Code::Directive, Some(Span { file, range: at }), why)
                    .label("this heading is marked as an answer")
                    .hint(
                        "put the answer one level below its exercise, marked as one: \
                         `### An exercise {.exercise}` then `#### Answer {.answer}`",
                    ),
            );
        }
        // A misplaced answer is reported once; the headings under it are judged as if it
        // were a plain heading.
        above.push((*level, answer && why.is_none(), has("exercise")));
    }
}
