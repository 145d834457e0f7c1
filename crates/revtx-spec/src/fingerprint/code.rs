//! What of a source file compiles: its tokens with comments and layout taken out, so the
//! engine's fingerprint moves when the code does and stays when only its comments,
//! indentation, line breaks or a formatter's trailing commas do (Rust and C/C++ alike).
//!
//! The form is a string, not a parse: literals are kept byte for byte; whitespace is
//! dropped except where two tokens would otherwise run together (`let x`, `a - -b`) and
//! where the C preprocessor reads a line's end; a comma that ends a list laid out over
//! lines (`f(\n a,\n)`) is the same list as `f(a)`; and in Rust a block that only holds
//! an expression, as a closure's body or a match arm's, is that expression (`|x| { x + 1 }`
//! is `|x| x + 1`), as rustfmt writes either by the line's width.

/// Which comment and literal rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Rust: nested block comments, raw strings, lifetimes.
    Rust,
    /// C and C++: flat block comments, preprocessor lines.
    C,
}

impl Lang {
    /// The language of a file by its extension, or `None` for a file kept as it is.
    pub fn of(path: &std::path::Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "rs" => Some(Lang::Rust),
            "c" | "cc" | "cpp" | "h" | "hpp" => Some(Lang::C),
            _ => None,
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether two characters, written together, would read as another token than written
/// apart (`- -` is not `--`, `: :` not `::`): the pairs that begin an operator of Rust or C++.
fn would_join(a: char, b: char) -> bool {
    const JOINED: &[&str] = &[
        "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=",
        "%=", "^=", "&=", "|=", "..", "++", "--", "##", ".*", "//", "/*", "*/",
    ];
    let mut pair = String::with_capacity(2);
    pair.push(a);
    pair.push(b);
    JOINED.contains(&pair.as_str())
}

/// The file's code as it compiles: see the module's words.
#[must_use]
pub fn normal_form(text: &str, lang: Lang) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Which characters of `out` belong to a literal.
    let mut lit: Vec<bool> = Vec::with_capacity(text.len());
    let mut i = 0;
    // Whitespace (or a comment) seen since the last token, and whether it held a newline.
    let (mut gap, mut gap_newline) = (false, false);
    // C: inside a preprocessor line, whose end is part of the code.
    let mut directive = false;
    // C: nothing but whitespace yet on this line.
    let mut line_start = true;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '\n' {
            if directive {
                out.push('\n');
                lit.push(false);
                directive = false;
                gap = false;
            } else {
                gap = true;
                gap_newline = true;
            }
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            gap = true;
            i += 1;
            continue;
        }
        if c == '\\' && next == Some('\n') && lang == Lang::C {
            // A continued line: the directive goes on.
            gap = true;
            i += 2;
            continue;
        }
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
            gap = true;
            continue;
        }
        if c == '/' && next == Some('*') {
            i = skip_block_comment(&s, i, lang);
            gap = true;
            continue;
        }
        // A token starts here. A comma before a closer, across a line break, ends a list
        // laid out over lines: the same list without it.
        if matches!(c, ')' | ']' | '}') && gap_newline && out.ends_with(',') {
            out.pop();
            lit.pop();
        }
        if gap {
            if let Some(prev) = out.chars().last() {
                if (is_word(prev) || prev == '\'') && is_word(c) || would_join(prev, c) {
                    out.push(' ');
                    lit.push(false);
                }
            }
        }
        if lang == Lang::C && line_start && c == '#' {
            directive = true;
        }
        (gap, gap_newline, line_start) = (false, false, false);
        let end = token(&s, i, lang, &mut out);
        // Only a literal is a token of more than one character here.
        lit.extend(std::iter::repeat_n(end - i > 1, end - i));
        i = end;
    }
    match lang {
        Lang::Rust => {
            let chars: Vec<char> = out.chars().collect();
            unwrap_blocks(&chars, &lit)
        }
        Lang::C => out,
    }
}

/// `out` with every block that holds one expression and nothing else, after a closure's
/// `|` or a match arm's `=>`, written as that expression (an arm's followed by its comma).
fn unwrap_blocks(out: &[char], lit: &[bool]) -> String {
    let mut res = String::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        let c = out[i];
        let after_arm = i >= 2 && out[i - 2] == '=' && out[i - 1] == '>';
        let after_closure = i >= 1 && out[i - 1] == '|';
        if c == '{' && !lit[i] && (after_arm || after_closure) {
            if let Some(close) = lone_expression(out, lit, i) {
                res.push_str(&unwrap_blocks(&out[i + 1..close], &lit[i + 1..close]));
                let next = out.get(close + 1);
                if after_arm && !matches!(next, Some(',' | '}') | None) {
                    res.push(',');
                }
                i = close + 1;
                continue;
            }
        }
        res.push(c);
        i += 1;
    }
    res
}

/// The index of the `}` closing the block opened at `open`, when the block holds one
/// expression: something, and no `;` or `let` outside its own brackets.
fn lone_expression(out: &[char], lit: &[bool], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in open + 1..out.len() {
        if lit[j] {
            continue;
        }
        match out[j] {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            '}' => return (j > open + 1).then_some(j),
            ';' if depth == 0 => return None,
            'l' if depth == 0
                && out[j..].starts_with(&['l', 'e', 't', ' '])
                && (j == open + 1 || !is_word(out[j - 1])) =>
            {
                return None
            }
            _ => {}
        }
    }
    None
}

/// Past a block comment starting at `i` (`/*`): Rust's nest, C's end at the first `*/`.
fn skip_block_comment(s: &[char], mut i: usize, lang: Lang) -> usize {
    let mut depth = 0usize;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            if depth == 0 || lang == Lang::Rust {
                depth += 1;
            }
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Copies the token (or the one character) at `i` into `out`; a literal whole.
fn token(s: &[char], i: usize, lang: Lang, out: &mut String) -> usize {
    let c = s[i];
    let prev_word = i > 0 && is_word(s[i - 1]);
    if lang == Lang::Rust && !prev_word {
        if let Some(end) = raw_string(s, i) {
            out.extend(&s[i..end]);
            return end;
        }
    }
    match c {
        '"' => {
            let end = quoted(s, i, '"');
            out.extend(&s[i..end]);
            end
        }
        '\'' if lang == Lang::C && !(prev_word && s[i - 1].is_ascii_digit()) => {
            let end = quoted(s, i, '\'');
            out.extend(&s[i..end]);
            end
        }
        '\'' if lang == Lang::Rust => {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime or label ('a).
            let is_char = s.get(i + 1) == Some(&'\\') || s.get(i + 2) == Some(&'\'');
            if is_char {
                let end = quoted(s, i, '\'');
                out.extend(&s[i..end]);
                end
            } else {
                out.push('\'');
                i + 1
            }
        }
        _ => {
            out.push(c);
            i + 1
        }
    }
}

/// The end of a literal opened by `quote` at `i`, escapes honoured.
fn quoted(s: &[char], i: usize, quote: char) -> usize {
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            '\\' => j += 2,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    s.len()
}

/// The end of a Rust raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starting at `i`, if one does.
fn raw_string(s: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if s.get(j) == Some(&'b') || s.get(j) == Some(&'c') {
        j += 1;
    }
    if s.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"'
            && s[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_layout_are_not_code() {
        let a = "fn f(a: u32, b: u32) -> u32 {\n    // the sum\n    a + b /* of two */\n}\n";
        let b = "/// Adds.\nfn f(\n    a: u32,\n    b: u32,\n) -> u32 {\n    a + b\n}";
        let c = "fn f(a:u32,b:u32)->u32{a+b}";
        assert_eq!(normal_form(a, Lang::Rust), normal_form(b, Lang::Rust));
        assert_eq!(normal_form(a, Lang::Rust), normal_form(c, Lang::Rust));
        assert_eq!(normal_form(a, Lang::Rust), "fn f(a:u32,b:u32)->u32{a+b}");
    }

    #[test]
    fn code_is_code() {
        let base = normal_form("let x = a - b * 1e-6;", Lang::Rust);
        for changed in [
            "let x = a + b * 1e-6;",
            "let x = a - b * 1e-7;",
            "let y = a - b * 1e-6;",
            "let x = a - -b * 1e-6;",
            "letx = a - b * 1e-6;",
        ] {
            assert_ne!(normal_form(changed, Lang::Rust), base, "{changed}");
        }
        // A one-element tuple keeps its comma; `a - -b` is not `a--b`.
        assert_ne!(
            normal_form("(a,)", Lang::Rust),
            normal_form("(a)", Lang::Rust)
        );
        assert_ne!(
            normal_form("a - -b", Lang::C),
            normal_form("a --b", Lang::C)
        );
    }

    #[test]
    fn literals_are_kept_whole() {
        let a = normal_form(r##"f("a  // b", 'x', '\'', r"c /* d", r#"e"#"##, Lang::Rust);
        assert_eq!(a, r##"f("a  // b",'x','\'',r"c /* d",r#"e"#"##);
        assert_ne!(
            normal_form("\"a  b\"", Lang::Rust),
            normal_form("\"a b\"", Lang::Rust)
        );
        // A lifetime is not a char literal.
        assert_eq!(
            normal_form("fn f<'a>(x: &'a str) {}", Lang::Rust),
            "fn f<'a>(x:&'a str){}"
        );
        // Rust's block comments nest; C's do not.
        assert_eq!(normal_form("a /* b /* c */ d */ e", Lang::Rust), "a e");
        assert_eq!(normal_form("a /* b /* c */ d", Lang::C), "a d");
    }

    #[test]
    fn a_block_of_one_expression_is_the_expression() {
        let same = |a: &str, b: &str| {
            assert_eq!(
                normal_form(a, Lang::Rust),
                normal_form(b, Lang::Rust),
                "{a} / {b}"
            );
        };
        same("v.map(|x| { x + 1 })", "v.map(|x| x + 1)");
        same("v.map(move || { f(\"}\") })", "v.map(move || f(\"}\"))");
        same(
            "match k { A => { f(x) } B => g(y), C => { h } }",
            "match k {\n A => f(x),\n B => g(y),\n C => h,\n}",
        );
        // Statements keep their block; an arm's or a closure's only.
        let kept = normal_form("v.map(|x| { let y = x; y })", Lang::Rust);
        assert_eq!(kept, "v.map(|x|{let y=x;y})");
        assert_eq!(normal_form("if a { b }", Lang::Rust), "if a{b}");
        assert_ne!(
            normal_form("match k { A => { f(x); } }", Lang::Rust),
            normal_form("match k { A => f(x) }", Lang::Rust)
        );
    }

    #[test]
    fn preprocessor_lines_end_where_they_end() {
        let a = "#include <x.h>\n#define N 8\nint f() { return N; } // n\n";
        let b = "#include <x.h>\n#define N 8\n/* f */ int f()\n{\n  return N;\n}\n";
        assert_eq!(normal_form(a, Lang::C), normal_form(b, Lang::C));
        assert_eq!(
            normal_form(a, Lang::C),
            "#include<x.h>\n#define N 8\nint f(){return N;}"
        );
        assert_ne!(
            normal_form("#define A\nB", Lang::C),
            normal_form("#define A B", Lang::C)
        );
    }
}
