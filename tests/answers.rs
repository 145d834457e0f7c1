//! Answers to exercises on the site: each shut until the reader opens it, in place or
//! collected at the end of its chapter (`answers = "end"`).

mod common;
use common::*;

/// `#### Answer {.answer}` under an exercise opens a <details>, shut until the reader opens it, that holds
/// everything up to the next heading of its level or above; claims and references work
/// inside it; it is neither numbered nor in the table of contents.
#[test]
fn an_answer_is_hidden_until_opened() {
    let chapter = format!(
        "# T\n\n{TINY_RUN}\n\n## Exercise {{#sec-ex}}\n\n### Parameters {{.exercise}}\n\nHow many parameters?\n\n\
         #### Answer {{.answer #ans-params}}\n\nIt has [0]{{=tiny.params - tiny.params}} extra; see {{@sec-ex}}.\n\n\
         More of the answer.\n\n## Next {{#sec-next}}\n\nAfter.\n"
    );
    let p = Project::new(&chapter);
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(
        out.counts.checked, 1,
        "the claim inside the answer is checked"
    );
    let html = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    let open = html
        .find("<details class=\"answer\" id=\"ans-params\"><summary>Answer</summary>")
        .expect("the answer opens a shut <details>");
    let close = html[open..]
        .find("</div></details>")
        .expect("and closes it")
        + open;
    let next = html.find("<h2 id=\"sec-next\"").expect("the next section");
    let body = &html[open..close];
    assert!(
        body.contains("More of the answer."),
        "the answer holds its paragraphs"
    );
    assert!(
        body.contains("href=\"#sec-ex\""),
        "a reference inside the answer"
    );
    assert!(close < next, "the answer ends before the next section");
    assert_eq!(html.matches("<details class=\"answer\"").count(), 1);
    assert!(
        !html.contains("open>") && !body.contains(" open"),
        "shut by default"
    );
    assert!(
        html.contains("sec-num\">1.2</span> Next"),
        "the answer takes no section number"
    );
    let toc = fragment(&html, "<nav class=\"toc\"", "</nav>");
    assert!(
        !toc.contains("Answer"),
        "not in the table of contents: {toc}"
    );
}

/// `answers = "end"` in book.toml moves each answer, still shut, to an "Answers" section at
/// the end of its chapter, and leaves a link to it in its place.
#[test]
fn answers_can_be_collected_at_the_end_of_the_chapter() {
    let chapter = format!(
        "# T\n\n{TINY_RUN}\n\n## Exercises {{#sec-ex}}\n\n### First {{.exercise}}\n\nFirst?\n\n#### Answer {{.answer}}\n\n\
         One: [30]{{=tiny.config.train.steps}} steps.\n\n### Second {{.exercise}}\n\nSecond?\n\n\
         #### Answer {{.answer #ans-two}}\n\nTwo, see {{@sec-ex}}.\n\n## After {{#sec-after}}\n\nText after.\n"
    );
    let p = Project::new(&chapter);
    let toml = p.root().join("book/book.toml");
    let mut t = std::fs::read_to_string(&toml).unwrap();
    t.push_str("answers = \"end\"\n");
    std::fs::write(&toml, t).unwrap();
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(
        out.counts.checked, 1,
        "the claim in a moved answer is checked"
    );
    let html = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    let links: Vec<_> = html
        .match_indices("<p class=\"answer-link\"><a href=\"#")
        .collect();
    assert_eq!(links.len(), 2, "a link where each answer was");
    assert!(html.contains("href=\"#answer-1\"") && html.contains("href=\"#ans-two\""));
    let after = html.find("<h2 id=\"sec-after\"").unwrap();
    let answers = html.find("<h2 id=\"answers\"").expect("an Answers section");
    assert!(
        after < answers,
        "the answers come after the chapter's last section"
    );
    let first = html
        .find("<details class=\"answer\" id=\"answer-1\">")
        .unwrap();
    let second = html
        .find("<details class=\"answer\" id=\"ans-two\">")
        .unwrap();
    assert!(answers < first && first < second, "in order, under Answers");
    assert!(
        html[first..second].contains("steps."),
        "each answer keeps its text"
    );
    assert_eq!(html.matches("</div></details>").count(), 2);
    assert!(links[1].0 < after, "the links stay in the exercises");
    assert!(
        html[links[0].0..links[1].0].contains("Second?"),
        "the text between stays"
    );
}
