//! Every diagnostic's code: what kind of problem it is, e.g. `drift`. Bless, the deny
//! switches and the printer select diagnostics by these variants, never by their message;
//! `tests/codes.rs` holds each to a fixture or test that produces it.

macro_rules! codes {
    ($($(#[doc = $doc:literal])+ $variant:ident => $name:literal,)+) => {
        /// What kind of problem a diagnostic reports. Its name is how it prints:
        /// `error[drift]: …`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Code {
            /// Every code, in the order they are declared.
            pub const ALL: &[Code] = &[$(Code::$variant,)+];

            /// The name it prints under, kebab-case.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)+
                }
            }

            /// One line on what it means (the first line of its doc comment).
            pub fn about(self) -> &'static str {
                match self {
                    $(Code::$variant => [$($doc),+][0].trim(),)+
                }
            }
        }
    };
}

codes! {
    // ---- The book and its chapters
    /// book.toml does not parse, or a directive's TOML body is invalid.
    Toml => "toml",
    /// book.toml lists no chapters.
    NoChapters => "no-chapters",
    /// A chapter listed in book.toml lies outside book/ (an absolute path, `..`, a symlink).
    ChapterOutside => "chapter-outside",
    /// The bibliography or citation style book.toml names lies outside book/.
    FileOutside => "file-outside",
    /// book.toml lists the same chapter file twice.
    DuplicateChapter => "duplicate-chapter",
    /// A file cannot be read or written.
    Io => "io",
    /// The output folder is not one the tool may write: the book, the project, the cache,
    /// `/`, the home folder, or a non-empty folder that holds no site of its own.
    OutDir => "out-dir",

    // ---- Markup
    /// A directive is malformed: a missing argument, a claim where none may be.
    Directive => "directive",
    /// A figure or table names a kind the tool does not have.
    UnknownKind => "unknown-kind",
    /// A figure, table or widget lists no runs.
    NoRuns => "no-runs",
    /// A figure kind that draws one run lists several.
    Runs => "runs",
    /// Two figures, tables, equations or sections share an id.
    DuplicateId => "duplicate-id",
    /// A reference's id is malformed.
    BadReference => "bad-reference",
    /// The bibliography or the citation style cannot be read.
    Bibliography => "bibliography",
    /// A citation's key is not in the bibliography.
    UnknownCitation => "unknown-citation",
    /// A citation's locator (`sec. 3.2`) starts with no label the tool knows.
    BadLocator => "bad-locator",
    /// A bibliography entry that no chapter cites.
    UncitedEntry => "uncited-entry",
    /// A reference names no figure, table, equation or section.
    UnknownReference => "unknown-reference",
    /// An `include` cannot be read, lies outside the project or lacks its anchor.
    Include => "include",
    /// A `{` of a claim, insert or assertion is never closed.
    UnclosedBrace => "unclosed-brace",
    /// `$` or `$$` math is never closed.
    MathUnclosed => "math-unclosed",
    /// KaTeX cannot render a formula.
    Katex => "katex",
    /// A number in the prose is neither computed, asserted nor marked as a literal.
    UnboundNumber => "unbound-number",
    /// A literal `{! …}` gives no reason.
    LiteralNoReason => "literal-no-reason",
    /// A literal `{! …}` follows no bracketed number.
    LiteralUnbracketed => "literal-unbracketed",
    /// A quote in brackets is empty.
    EmptyQuote => "empty-quote",
    /// A footnote reference `[^label]` has no definition `[^label]:`.
    FootnoteUndefined => "footnote-undefined",
    /// Two footnote definitions share a label (labels match whatever their case).
    FootnoteDuplicate => "footnote-duplicate",
    /// A footnote definition that nothing refers to (neither edition shows it).
    FootnoteUnused => "footnote-unused",
    /// A code block with no language holds the book's markup: a stray fence, most likely.
    /// A fence left open, or one closed twice, turns the prose after it into code.
    MarkupInCode => "markup-in-code",

    // ---- Runs
    /// A run's body is not a valid run (its overrides do not fit the config).
    InvalidRun => "invalid-run",
    /// A run gives both `seed` and `seeds`.
    SeedAndSeeds => "seed-and-seeds",
    /// A run lists no seeds.
    NoSeeds => "no-seeds",
    /// A run lists a seed twice.
    RepeatedSeed => "repeated-seed",
    /// A run's base is neither a preset nor an earlier run.
    UnknownBase => "unknown-base",
    /// An intervening run (`from`, `ablate`) cannot run as its block is written.
    /// Its trained run is unknown or trains nothing, a target names a head or block the
    /// model lacks, or the block sets a key that would change the trained run.
    Intervention => "intervention",
    /// A figure, table, widget, expression or `--rerun` names a run the book does not declare.
    UnknownRun => "unknown-run",
    /// A run's declared contrast (`contrast = { with, varies }`) does not hold: the two runs
    /// differ in a key it does not name, or not in one it names.
    Confounded => "confounded",
    /// A claim compares two runs that differ in more than one configuration key, and no
    /// contrast is declared between them: the sentence may credit one key with the others.
    UndeclaredComparison => "undeclared-comparison",
    /// A claim compares the means of two ensembles that share seeds: same initialisation and
    /// batches, so they are better compared seed by seed (`paired`).
    Unpaired => "unpaired",
    /// Something that needs a training run names a probe.
    ProbeRun => "probe-run",
    /// A widget lists a run whose model the page's JavaScript cannot run.
    WidgetModel => "widget-model",
    /// A chapter's widgets' models weigh more than a page may load.
    WidgetBudget => "widget-budget",
    /// A run failed in the engine.
    RunFailed => "run-failed",
    /// `--offline`, and a run the book needs is not in the cache.
    Offline => "offline",
    /// Two caches hold different results under one key.
    CacheConflict => "cache-conflict",
    /// A result kept with the book does not match its checksum: refused unread.
    StoreCorrupt => "store-corrupt",
    /// The store keeps a result no run of the book uses any more (`revtx-book store prune`).
    UnusedResult => "unused-result",
    /// A retrained result differs from the one kept with the book (`revtx-book audit`).
    AuditMismatch => "audit-mismatch",
    /// An edition book.toml lists cannot be read (no such revision, no record, both).
    Edition => "edition",
    /// The build was interrupted (Ctrl-C, SIGTERM).
    Interrupted => "interrupted",

    // ---- Claims
    /// An expression does not parse or cannot be evaluated.
    Expression => "expression",
    /// `{=}` or `{?}` holds no expression.
    EmptyExpression => "empty-expression",
    /// A quoted figure does not match its run.
    Drift => "drift",
    /// A quoted figure cannot be compared with its value (a number against a string).
    QuoteMismatch => "quote-mismatch",
    /// A claim's tolerance is malformed.
    BadTolerance => "bad-tolerance",
    /// A claim or assertion depends on no run.
    ConstantClaim => "constant-claim",
    /// An asserted statement is false.
    AssertionFalse => "assertion-false",
    /// An assertion's value is not a boolean.
    AssertionNotBoolean => "assertion-not-boolean",
    /// An asserted statement holds with all of an ensemble's seeds but not with one of them
    /// left out: one seed decides it.
    Fragile => "fragile",
    /// A checked figure is quoted to finer digits than its seeds earn (its leave-one-seed-out
    /// standard error is larger than its last digit).
    Precision => "precision",
    /// Bless left assertions that now fail: their sentences need rewriting.
    AssertionsToRewrite => "assertions-to-rewrite",
    /// A bless that cannot be done (another profile).
    Bless => "bless",

    // ---- Figures, tables, templates
    /// A figure cannot be drawn from its runs.
    Figure => "figure",
    /// A table cannot be built from its runs.
    Table => "table",
    /// A page template fails to render.
    Template => "template",
    /// The print edition cannot be typeset (a formula typst cannot take, a typst error).
    Print => "print",

    // ---- This machine's numerics
    /// This platform cannot compute the book's bits (no AVX2 and FMA).
    NumericsUnsupported => "numerics-unsupported",
    /// This machine's numerics fingerprint differs from the book's.
    NumericsMismatch => "numerics-mismatch",
    /// The numerics probe could not run.
    NumericsProbe => "numerics-probe",
    /// book/numerics.json does not parse.
    NumericsFile => "numerics-file",
    /// book/numerics.json holds no fingerprint.
    NumericsUnrecorded => "numerics-unrecorded",
    /// book/numerics.json was recorded by another engine.
    NumericsEngine => "numerics-engine",
    /// A result under a profile that cannot be compared with the book (native).
    NotComparable => "not-comparable",
}

impl Code {
    /// Warnings about the machine rather than the book: the numerics gate's, and results
    /// that are not comparable here. The book's `deny_warnings` leaves them alone;
    /// `--deny-warnings` does not.
    /// A lint about the reasoning of the text (a comparison, the seeds' say): book.toml's
    /// `[lints]` sets its level.
    pub fn is_lint(self) -> bool {
        matches!(
            self,
            Code::Fragile | Code::Precision | Code::UndeclaredComparison | Code::Unpaired
        )
    }

    /// The code named `name` (its kebab-case name), if there is one.
    pub fn named(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.name() == name)
    }

    pub fn is_environmental(self) -> bool {
        matches!(
            self,
            Code::NumericsUnsupported
                | Code::NumericsMismatch
                | Code::NumericsProbe
                | Code::NumericsFile
                | Code::NumericsUnrecorded
                | Code::NumericsEngine
                | Code::NotComparable
        )
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
