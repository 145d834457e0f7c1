//! Writing typst: markup text and string literals escaped, and the print templates'
//! environment (`templates/print/`), whose values are escaped as markup unless marked safe.

use minijinja::{AutoEscape, Environment, Value};
use std::path::Path;

/// `s` as typst markup that shows exactly `s`: every character typst gives a meaning
/// (`# $ * _ [ ] < > @ = - + / ~ \` and backticks) escaped, and the dot of a leading
/// number (`1.` would start a numbered list at a line's start). Quotes stay as they are,
/// for typst's typographic quotes.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && s[digits..].starts_with('.') {
        out.push_str(&s[..digits]);
        out.push('\\');
        return out + &text(&s[digits..]);
    }
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '#'
                | '$'
                | '*'
                | '_'
                | '['
                | ']'
                | '<'
                | '>'
                | '@'
                | '='
                | '-'
                | '+'
                | '/'
                | '~'
                | '`'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `s` as a typst string literal, quotes included.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The print templates of one project: `templates/print/*.typ`.
pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    pub fn new(root: &Path) -> Self {
        let mut env = Environment::new();
        env.set_loader(crate::book::theme::loader(root));
        env.set_keep_trailing_newline(true);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|name| {
            if std::path::Path::new(name)
                .extension()
                .is_some_and(|e| e == "typ")
            {
                AutoEscape::Custom("typst")
            } else {
                AutoEscape::None
            }
        });
        env.set_formatter(|out, state, value| {
            if state.auto_escape() == AutoEscape::Custom("typst") && !value.is_safe() {
                let s = match value.as_str() {
                    Some(s) => s.to_string(),
                    None => value.to_string(),
                };
                out.write_str(&text(&s))?;
                Ok(())
            } else {
                minijinja::escape_formatter(out, state, value)
            }
        });
        // `{{ s | string }}`: a value as a typst string literal (for arguments).
        env.add_filter("string", |s: String| Value::from_safe_string(string(&s)));
        Templates { env }
    }

    /// Renders `templates/<name>` with `ctx`.
    pub fn render(&self, name: &str, ctx: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            text("a_b *c* #d $e$ [f] <g> @h"),
            r"a\_b \*c\* \#d \$e\$ \[f\] \<g\> \@h"
        );
        assert_eq!(text("1-2 = 3/4 ~ `x` \\"), r"1\-2 \= 3\/4 \~ \`x\` \\");
        assert_eq!(text("it's \"fine\""), "it's \"fine\"");
        assert_eq!(text("1. not a list, 2.5"), r"1\. not a list, 2.5");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(string("a \"b\" \\ c\nd"), r#""a \"b\" \\ c\nd""#);
    }
}
