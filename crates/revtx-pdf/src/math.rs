//! LaTeX math → typst math, through mitex, for the formulas a book writes between `$`s.
//! mitex's output calls helpers of its own (`mitexsqrt`, `mitexdisplay`, `textmath`, …),
//! which its typst package defines; [`PRELUDE`] defines them here, and `typeset` puts it
//! before every document.

/// Converts one formula (without its dollars) to typst math (without its dollars).
///
/// # Errors
/// What mitex could not parse, in its words.
pub fn latex_to_typst(tex: &str) -> Result<String, String> {
    mitex::convert_math(tex, None)
}

/// The helpers mitex's output calls, in typst. Colours, labels, arrays and the like that a
/// textbook's formulas do not use degrade to their content.
pub const PRELUDE: &str = r"#let mitexsqrt(..args) = {
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
#let mitexarray(..args) = args.pos().join()
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
";
