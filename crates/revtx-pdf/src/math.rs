//! LaTeX math → typst math, through mitex, for the formulas a book writes between `$`s.
//! mitex's output calls helpers of its own (`mitexsqrt`, `mitexdisplay`, `textmath`, …),
//! which its typst package defines; [`PRELUDE`] defines them here, and `typeset` puts it
//! before every document.

/// Converts one formula (without its dollars) to typst math (without its dollars).
///
/// # Errors
/// What mitex could not parse, in its words; a formula that makes mitex panic (it slices
/// some malformed arguments, `\begin{tabular} a \end{tabular}`) is an error too, not the
/// end of the build.
pub fn latex_to_typst(tex: &str) -> Result<String, String> {
    std::panic::catch_unwind(|| mitex::convert_math(tex, None))
        .unwrap_or_else(|_| Err("mitex cannot convert this formula (it panicked)".into()))
        .map(|s| renamed(&s))
}

/// Symbols mitex 0.2 writes by names typst 0.15 no longer has, with their names now.
const RENAMED: &[(&str, &str)] = &[
    ("angle.l", "chevron.l"),
    ("angle.r", "chevron.r"),
    ("bracket.l.double", "bracket.l.stroked"),
    ("bracket.r.double", "bracket.r.stroked"),
    ("dot.circle", "dot.o"),
    ("dot.circle.big", "dot.o.big"),
    ("plus.circle", "plus.o"),
    ("plus.circle.big", "plus.o.big"),
    ("minus.circle", "minus.o"),
    ("times.circle", "times.o"),
    ("times.circle.big", "times.o.big"),
    ("ast.circle", "convolve.o"),
    ("circle.nested", "compose.o"),
    ("dash.circle", "dash.o"),
    ("arrow.l.dash", "arrow.l.dashed"),
    ("arrow.r.dash", "arrow.r.dashed"),
    ("planck.reduce", "planck"),
];

/// mitex's output with [`RENAMED`] symbols renamed: whole names, in math only (not in the
/// `[…]` text of `\text` and the like, where a word is a word).
fn renamed(typst: &str) -> String {
    let mut out = String::with_capacity(typst.len());
    let mut text_depth = 0usize;
    let mut chars = typst.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            '[' => {
                text_depth += 1;
                out.push(c);
            }
            ']' => {
                text_depth = text_depth.saturating_sub(1);
                out.push(c);
            }
            c if c.is_ascii_alphabetic() && text_depth == 0 => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '.' {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let name = &typst[i..end];
                out.push_str(
                    RENAMED
                        .iter()
                        .find(|(old, _)| *old == name)
                        .map_or(name, |(_, new)| new),
                );
            }
            c => out.push(c),
        }
    }
    out
}

/// The helpers mitex's output calls, in typst, and the names it writes that typst's math does
/// not have (`aligned`, `operatorname`, `pmatrix`, …). Colours, labels and the like that a
/// textbook's formulas do not use degrade to their content. `tests/mitex_commands.rs`
/// typesets every command of mitex's spec, so a name missing here is a failing test.
pub const PRELUDE: &str = r#"#let mitexsqrt(..args) = {
  let a = args.pos()
  if a.len() == 1 { math.sqrt(a.at(0)) } else { math.root(a.at(0), a.at(1)) }
}
#let mitexdisplay(it) = math.display(it)
#let mitexinline(it) = math.inline(it)
#let mitexscript(it) = math.script(it)
#let mitexsscript(it) = math.sscript(it)
#let mitexoverbrace(it) = math.overbrace(it)
#let mitexunderbrace(it) = math.underbrace(it)
#let mitexoverbracket(it) = math.overbracket(it)
#let mitexunderbracket(it) = math.underbracket(it)
#let mitexbold(it) = math.bold(math.upright(it))
#let mitexmathbf(it) = math.bold(math.upright(it))
#let mitexupright(it) = math.upright(it)
#let mitexitalic(it) = math.italic(it)
#let mitexfrak(it) = math.frak(it)
#let mitexcal(it) = math.cal(it)
#let mitexmono(it) = math.mono(it)
#let mitexsans(it) = math.sans(it)
#let mitexcolor(color, ..body) = body.pos().join()
#let mitexarray(arg0: none, ..args) = math.mat(delim: none, ..args.pos())
#let mitexlabel(..args) = none
#let mitexref(..args) = none
#let mitexcite(..args) = none
#let mitexcaption(..args) = none
#let miteximage(..args) = none
#let textmath(it) = it
#let overset(top, base) = math.attach(math.limits(base), t: top)
#let underset(bottom, base) = math.attach(math.limits(base), b: bottom)
#let operatornamewithlimits(it) = math.op(math.upright(it), limits: true)
#let boxed(it) = box(stroke: 0.5pt, inset: 2pt, $it$)
#let xrightarrow(..args) = math.attach(math.stretch(sym.arrow.r, size: 2em), t: args.pos().last())
#let xleftarrow(..args) = math.attach(math.stretch(sym.arrow.l, size: 2em), t: args.pos().last())
#let big(it) = math.lr(it, size: 120%)
#let Big(it) = math.lr(it, size: 150%)
#let bigg(it) = math.lr(it, size: 180%)
#let Bigg(it) = math.lr(it, size: 210%)
#let zws = sym.zws
#let diff = sym.partial
#let negthinspace = h(-0.1667em)
#let negmedspace = h(-0.2222em)
#let negthickspace = h(-0.2778em)
#let negthinmedspace = h(-0.1667em)
#let enspace = h(0.5em)
#let aligned(..args) = if args.pos().len() > 0 { args.pos().at(0) }
#let alignedat(arg0: none, ..args) = if args.pos().len() > 0 { args.pos().at(0) }
#let matrix(..rows) = math.mat(delim: none, ..rows)
#let pmatrix(..rows) = math.mat(delim: "(", ..rows)
#let bmatrix(..rows) = math.mat(delim: "[", ..rows)
#let Bmatrix(..rows) = math.mat(delim: "{", ..rows)
#let vmatrix(..rows) = math.mat(delim: "|", ..rows)
#let Vmatrix(..rows) = math.mat(delim: "‖", ..rows)
#let smallmatrix(..rows) = math.inline(math.mat(delim: none, ..rows))
#let rcases(..rows) = math.cases(reverse: true, ..rows)
#let operatorname(it) = math.op(math.upright(it))
#let argmax = math.op("arg max", limits: true)
#let argmin = math.op("arg min", limits: true)
#let plim = math.op("plim", limits: true)
#let injlim = math.op("inj lim", limits: true)
#let projlim = math.op("proj lim", limits: true)
#let cosec = math.op("cosec")
#let cotg = math.op("cotg")
#let sh = math.op("sh")
#let ch = math.op("ch")
#let th = math.op("th")
#let cth = math.op("cth")
#let dfrac(num, den) = math.display(math.frac(num, den))
#let cfrac(num, den) = math.display(math.frac(num, den))
#let tfrac(num, den) = math.inline(math.frac(num, den))
#let dbinom(n, k) = math.display(math.binom(n, k))
#let tbinom(n, k) = math.inline(math.binom(n, k))
#let stackrel(top, base) = math.attach(math.limits(base), t: top)
#let substack(it) = it
#let atop(top, bottom) = math.mat(delim: none, (top,), (bottom,))
#let brack(top, bottom) = math.mat(delim: "[", (top,), (bottom,))
#let xcancel(it) = math.cancel(it, cross: true)
#let bcancel(it) = math.cancel(it, inverted: true)
#let sout(it) = math.cancel(it, angle: 90deg)
#let phantom(it) = hide(it)
#let hphantom(it) = box(height: 0pt, hide($it$))
#let vphantom(it) = box(width: 0pt, hide($it$))
#let mathclap(it) = box(width: 0pt, $it$)
#let mathring(it) = math.accent(it, "\u{030A}")
#let overgroup(it) = math.accent(it, "\u{0311}")
#let undergroup(it) = math.accent(it, "\u{032E}")
#let overleftharpoon(it) = math.accent(it, "\u{20D0}")
#let overrightharpoon(it) = math.accent(it, "\u{20D1}")
#let overleftrightarrow(it) = math.accent(it, "\u{20E1}")
#let overlinesegment(it) = math.accent(it, "\u{20E9}")
#let underbar(it) = math.underline(it)
#let mathbin(it) = math.class("binary", it)
#let mathrel(it) = math.class("relation", it)
#let mathop(it) = math.class("large", it)
#let mathopen(it) = math.class("opening", it)
#let mathclose(it) = math.class("closing", it)
#let mathpunct(it) = math.class("punctuation", it)
#let mathord(it) = math.class("normal", it)
#let mathinner(it) = math.class("fence", it)
#let middle(it) = math.mid(it)
#let fbox(it) = box(stroke: 0.5pt, inset: 2pt, $it$)
#let hbox(it) = it
#let colorbox(color, body) = body
#let colortext(color, body) = body
#let pmod(it) = $quad (mod thick it)$
#let pod(it) = $quad (it)$
#let bra(it) = $chevron.l it|$
#let ket(it) = $|it chevron.r$
#let braket(it) = $chevron.l it chevron.r$
#let Bra(it) = $lr(chevron.l it|)$
#let Ket(it) = $lr(|it chevron.r)$
#let Braket(it) = $lr(chevron.l it chevron.r)$
#let Set(it) = $lr(\{it\})$
#let arctg = math.op("arctg")
#let arcctg = math.op("arcctg")
#let TeX = math.upright($T E X$)
#let LaTeX = math.upright($L A T E X$)
#let KaTeX = math.upright($K A T E X$)
#let smallint = math.inline(sym.integral)
#let thickapprox = math.bold(sym.approx)
#let thicksim = math.bold(sym.tilde)
#let sect = sym.inter
#let ohm = symbol("Ω", ("inv", "℧"))
#let varGamma = math.italic(sym.Gamma)
#let varDelta = math.italic(sym.Delta)
#let varTheta = math.italic(sym.Theta)
#let varLambda = math.italic(sym.Lambda)
#let varXi = math.italic(sym.Xi)
#let varPi = math.italic(sym.Pi)
#let varSigma = math.italic(sym.Sigma)
#let varUpsilon = math.italic(sym.Upsilon)
#let varPhi = math.italic(sym.Phi)
#let varPsi = math.italic(sym.Psi)
#let varOmega = math.italic(sym.Omega)
#let mitexxarrow(arrow, args) = math.attach(math.stretch(arrow, size: 2em), t: args.pos().last())
#let xLeftarrow(..args) = mitexxarrow(sym.arrow.l.double, args)
#let xRightarrow(..args) = mitexxarrow(sym.arrow.r.double, args)
#let xleftrightarrow(..args) = mitexxarrow(sym.arrow.l.r, args)
#let xLeftrightarrow(..args) = mitexxarrow(sym.arrow.l.r.double, args)
#let xhookleftarrow(..args) = mitexxarrow(sym.arrow.l.hook, args)
#let xhookrightarrow(..args) = mitexxarrow(sym.arrow.r.hook, args)
#let xtwoheadleftarrow(..args) = mitexxarrow(sym.arrow.l.twohead, args)
#let xtwoheadrightarrow(..args) = mitexxarrow(sym.arrow.r.twohead, args)
#let xleftharpoonup(..args) = mitexxarrow(sym.harpoon.lt, args)
#let xrightharpoonup(..args) = mitexxarrow(sym.harpoon.rt, args)
#let xleftharpoondown(..args) = mitexxarrow(sym.harpoon.lb, args)
#let xrightharpoondown(..args) = mitexxarrow(sym.harpoon.rb, args)
#let xleftrightharpoons(..args) = mitexxarrow(sym.harpoons.ltrb, args)
#let xrightleftharpoons(..args) = mitexxarrow(sym.harpoons.rtlb, args)
#let xtofrom(..args) = mitexxarrow(sym.arrows.rl, args)
#let xmapsto(..args) = mitexxarrow(sym.arrow.r.bar, args)
#let xlongequal(..args) = mitexxarrow(sym.eq, args)
#let textbf(it) = text(weight: "bold", it)
#let textit(it) = text(style: "italic", it)
#let textrm(it) = it
#let textup(it) = text(style: "normal", it)
#let textnormal(it) = it
#let textmd(it) = text(weight: "regular", it)
#let textsf(it) = it
#let texttt(it) = text(font: "DejaVu Sans Mono", it)
"#;
