//! The partials' template environment: `templates/partials/*.html` and
//! `templates/tables/*.html`, rendered by minijinja with HTML auto-escaping.
//!
//! Values are escaped the way the site's chapters always have been: `& < > " '` as
//! `&amp; &lt; &gt; &quot; &#39;`, which is also how pulldown-cmark escapes the markdown's
//! own HTML (minijinja's default would write `&#x27;` and `&#x2f;`). The page templates
//! (`site.rs`) keep minijinja's default.

use minijinja::{AutoEscape, Environment, Value};
use std::path::Path;

/// The partials of one project.
pub struct Partials {
    env: Environment<'static>,
}

impl Partials {
    /// Loads partials from `root/templates` as they are asked for.
    pub fn new(root: &Path) -> Self {
        let mut env = Environment::new();
        env.set_loader(crate::book::theme::loader(root));
        // What a template's file holds is what it writes, final newline included; inline
        // partials end with a `{#- … -#}` comment that swallows it.
        env.set_keep_trailing_newline(true);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_formatter(|out, state, value| match value.as_str() {
            Some(s) if state.auto_escape() == AutoEscape::Html && !value.is_safe() => {
                escape(out, s).map_err(|e| {
                    minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string())
                })
            }
            _ => minijinja::escape_formatter(out, state, value),
        });
        Partials { env }
    }

    /// Renders `templates/<name>` with `ctx`.
    pub fn render(&self, name: &str, ctx: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }
}

/// `s` with `& < > " '` escaped, as the templates escape a value: for the HTML the
/// compiler writes outside a template (previews, citations).
pub fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let _ = escape(&mut out, s);
    out
}

/// Writes `s` with `& < > " '` escaped.
fn escape(out: &mut impl std::fmt::Write, s: &str) -> std::fmt::Result {
    let mut rest = s;
    while let Some(k) = rest.find(['&', '<', '>', '"', '\'']) {
        out.write_str(&rest[..k])?;
        out.write_str(match rest.as_bytes()[k] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        })?;
        rest = &rest[k + 1..];
    }
    out.write_str(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    fn partials() -> Partials {
        Partials::new(Path::new(env!("CARGO_MANIFEST_DIR")))
    }

    #[test]
    fn values_are_escaped_like_the_markdown() {
        let mut s = String::new();
        escape(&mut s, r#"a<b>&"c"'d'/e"#).unwrap();
        assert_eq!(s, "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;/e");
        let p = partials();
        let html = p
            .render(
                "partials/xref.html",
                context! { n => 3, href => "page.html#x", label => "it's <1>", preview => "<p>" },
            )
            .unwrap();
        assert_eq!(
            html,
            r#"<span class="xref-box"><a class="xref" href="page.html#x" aria-describedby="xref-3-tip">it&#39;s &lt;1&gt;</a><span class="claim-tip xref-tip" role="tooltip" id="xref-3-tip">&lt;p&gt;</span></span>"#
        );
    }

    #[test]
    fn a_figure_is_its_svg_with_an_accessible_name() {
        let svg = crate::book::figures::Svg {
            width: 720,
            height: 360,
            alt: "Loss \"falls\" & <stays>".into(),
            body: "<line/>\n</svg>\n".into(),
        };
        let html = partials()
            .render(
                "partials/figure.html",
                context! { id => "fig-x", label => "Figure 1.1", caption => Value::from_safe_string("A <em>b</em>".into()), svg },
            )
            .unwrap();
        let alt = "Loss &quot;falls&quot; &amp; &lt;stays&gt;";
        assert_eq!(
            html,
            format!(
                "<figure class=\"plot\" id=\"fig-x\">\n<div class=\"plot-svg\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 720 360\" role=\"img\" aria-label=\"{alt}\">\n<title>{alt}</title>\n<line/>\n</svg>\n</div>\n<figcaption><span class=\"fig-num\">Figure 1.1.</span> A <em>b</em></figcaption>\n</figure>\n"
            )
        );
    }
}
