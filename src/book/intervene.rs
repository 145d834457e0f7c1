//! Intervening runs as a run block writes them (`from`, `ablate`, `mode`, `patch`), read
//! apart from the run spec, and their plan: the trained run's config with what it switches
//! off or patches.

use super::codes::Code;
use super::diag::{Diagnostic, Span};
use super::kinds::Body;
use super::runs::RunPlan;
use revtx_spec::config::PositionEncoding;
use revtx_spec::experiments::intervene::{
    each_head, AblateMode, At, Corruption, Intervene, Patch, Target,
};
use revtx_spec::experiments::{RunConfig, RunKind};

/// An intervention as the block writes it, with the place of each value.
#[derive(Clone, Debug)]
pub struct Written {
    pub from: String,
    pub from_span: Span,
    pub mode: AblateMode,
    pub ablate: Ablate,
    pub ablate_span: Span,
    pub patch: Option<WrittenPatch>,
    /// `table_change = true`, at its place.
    pub table_change: Option<Span>,
}

/// `patch = { length = 8, letter = 0 }` as written: its values (defaults filled in) and
/// the places of the table and of the keys a plan can find wrong.
#[derive(Clone, Debug)]
pub struct WrittenPatch {
    pub patch: Patch,
    pub span: Span,
    pub length_span: Span,
    pub letter_span: Span,
    /// Where `corrupt` is written, if it is.
    pub corrupt_span: Option<Span>,
}

/// A `patch` table's keys, each with its place.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchKeys {
    length: toml::Spanned<i64>,
    letter: toml::Spanned<i64>,
    strings: Option<toml::Spanned<i64>>,
    seed: Option<toml::Spanned<i64>>,
    corrupt: Option<toml::Spanned<String>>,
}

/// `ablate`: every head, or the targets listed (each as written, with its place).
#[derive(Clone, Debug)]
pub enum Ablate {
    EachHead,
    Listed(Vec<(String, Span)>),
}

/// Reads `from`, `ablate` and `mode` out of a run block's `text` (the body, or what is left
/// of it): the text with their lines blanked, and the intervention, if the block has one.
#[allow(
    clippy::too_many_lines,
    reason = "one block's intervention keys, read in the order they are checked"
)]
pub fn read(text: &str, body: &Body) -> Result<(String, Option<Box<Written>>), Diagnostic> {
    #[derive(serde::Deserialize)]
    struct Head {
        from: Option<toml::Spanned<String>>,
        ablate: Option<toml::Spanned<toml::Value>>,
        mode: Option<toml::Spanned<String>>,
        patch: Option<toml::Spanned<PatchKeys>>,
        table_change: Option<toml::Spanned<bool>>,
    }
    let head: Head = toml::from_str(text).map_err(|e| body.toml_error(&e, "run directive"))?;
    let measures = head.patch.is_some() || head.table_change.as_ref().is_some_and(|t| *t.get_ref());
    if let (None, Some(t)) = (&head.from, &head.table_change) {
        return Err(needs_from(body, "table_change", t.span()));
    }
    let (from, ablate) = match (head.from, head.ablate, &head.patch) {
        (None, None, None) => {
            return match head.mode {
                Some(m) => Err(needs_from(body, "mode", m.span())),
                None => Ok((text.to_string(), None)),
            }
        }
        (None, Some(a), _) => return Err(needs_from(body, "ablate", a.span())),
        (None, None, Some(p)) => return Err(needs_from(body, "patch", p.span())),
        (Some(f), None, None) if !measures => {
            return Err(Diagnostic::error(
                Code::Intervention,
                Some(body.span(f.span())),
                format!("the run reads `{}`'s weights but switches nothing off", f.get_ref()),
            )
            .hint("list what it switches off, e.g. `ablate = [\"b0.h1\", \"b1.mlp\"]`, or `ablate = \"each-head\"`, or patch one letter: `patch = { length = 8, letter = 0 }`, or measure its position table's change: `table_change = true`"))
        }
        (Some(f), a, _) => (f, a),
    };
    let patch = head
        .patch
        .as_ref()
        .map(|p| written_patch(body, p))
        .transpose()?;
    let table_change = head
        .table_change
        .as_ref()
        .filter(|t| *t.get_ref())
        .map(|t| body.span(t.span()));
    let mode = match &head.mode {
        None => AblateMode::Zero,
        Some(m) if m.get_ref() == "zero" => AblateMode::Zero,
        Some(m) if m.get_ref() == "mean" => AblateMode::Mean,
        Some(m) => {
            return Err(Diagnostic::error(
                Code::Intervention,
                Some(body.span(m.span())),
                format!("unknown ablation mode `{}`", m.get_ref()),
            )
            .hint(format!("modes: {}", AblateMode::NAMES.join(", "))))
        }
    };
    // What `ablate` lists (nothing, for a run that only patches or measures), with its place.
    let (listed, ablate_span) = match &ablate {
        None => (Ablate::Listed(Vec::new()), body.span(from.span())),
        Some(ablate) => {
            let ablate_span = body.span(ablate.span());
            let listed = match ablate.get_ref() {
                toml::Value::String(s) if s == "each-head" => Ablate::EachHead,
                toml::Value::Array(items) if !items.is_empty() => {
                    let mut out = Vec::new();
                    let mut at = ablate.span().start;
                    for item in items {
                        let toml::Value::String(s) = item else {
                            return Err(not_a_list(&ablate_span));
                        };
                        // Each string's place: the next quoted string in the array's text.
                        let inside = &text[at..ablate.span().end];
                        let q = inside.find(['"', '\'']).map_or(0, |k| k);
                        let start = at + q;
                        let end = (start + s.len() + 2).min(ablate.span().end);
                        out.push((s.clone(), body.span(start..end)));
                        at = end;
                    }
                    Ablate::Listed(out)
                }
                _ => return Err(not_a_list(&ablate_span)),
            };
            (listed, ablate_span)
        }
    };
    let mut rest = text.as_bytes().to_vec();
    for span in [
        Some(from.span()),
        ablate.as_ref().map(toml::Spanned::span),
        head.mode.as_ref().map(toml::Spanned::span),
        head.patch.as_ref().map(toml::Spanned::span),
        head.table_change.as_ref().map(toml::Spanned::span),
    ]
    .into_iter()
    .flatten()
    {
        super::kinds::blank_lines(&mut rest, span);
    }
    let written = Written {
        from: from.get_ref().clone(),
        from_span: body.span(from.span()),
        mode,
        ablate: listed,
        ablate_span,
        patch,
        table_change,
    };
    Ok((
        String::from_utf8(rest).unwrap_or_default(),
        Some(Box::new(written)),
    ))
}

/// A `patch` table read: each count a whole number of the right size, at its key.
fn written_patch(body: &Body, p: &toml::Spanned<PatchKeys>) -> Result<WrittenPatch, Diagnostic> {
    let keys = p.get_ref();
    let count = |v: &toml::Spanned<i64>, name: &str, least: i64| -> Result<usize, Diagnostic> {
        usize::try_from(*v.get_ref())
            .ok()
            .filter(|&n| i64::try_from(n).is_ok_and(|n| n >= least))
            .ok_or_else(|| {
                Diagnostic::error(
                    Code::Intervention,
                    Some(body.span(v.span())),
                    format!(
                        "`patch.{name}` is {}, not a count of {least} or more",
                        v.get_ref()
                    ),
                )
            })
    };
    let length = count(&keys.length, "length", 1)?;
    let letter = count(&keys.letter, "letter", 0)?;
    if letter >= length {
        return Err(Diagnostic::error(
            Code::Intervention,
            Some(body.span(keys.letter.span())),
            format!(
                "`patch.letter` is {letter}, and a string of {length} letters has letters 0 to {}",
                length - 1
            ),
        )
        .hint("letters are counted from 0"));
    }
    let corrupt = match &keys.corrupt {
        None => Corruption::Letter,
        Some(c) if c.get_ref() == "letter" => Corruption::Letter,
        Some(c) if c.get_ref() == "place" => Corruption::Place,
        Some(c) => {
            return Err(Diagnostic::error(
                Code::Intervention,
                Some(body.span(c.span())),
                format!("unknown corruption `{}`", c.get_ref()),
            )
            .hint(format!(
                "`patch.corrupt` is one of: {}",
                Corruption::NAMES.join(", ")
            )))
        }
    };
    if corrupt == Corruption::Place && letter + 1 >= length {
        return Err(Diagnostic::error(
            Code::Intervention,
            Some(body.span(keys.letter.span())),
            format!(
                "`patch.letter` is {letter}, and a place corruption swaps it with the letter after it, which a string of {length} letters lacks"
            ),
        )
        .hint(format!("at most {}", length.saturating_sub(2))));
    }
    let strings = keys
        .strings
        .as_ref()
        .map_or(Ok(Patch::STRINGS), |s| count(s, "strings", 1))?;
    let seed = match &keys.seed {
        None => Patch::SEED,
        Some(s) => u64::try_from(*s.get_ref()).map_err(|_| {
            Diagnostic::error(
                Code::Intervention,
                Some(body.span(s.span())),
                format!("`patch.seed` is {}, not a seed (0 or more)", s.get_ref()),
            )
        })?,
    };
    Ok(WrittenPatch {
        patch: Patch {
            length,
            letter,
            strings,
            seed,
            corrupt,
        },
        span: body.span(p.span()),
        length_span: body.span(keys.length.span()),
        letter_span: body.span(keys.letter.span()),
        corrupt_span: keys.corrupt.as_ref().map(|c| body.span(c.span())),
    })
}

fn needs_from(body: &Body, key: &str, span: std::ops::Range<usize>) -> Diagnostic {
    Diagnostic::error(
        Code::Intervention,
        Some(body.span(span)),
        format!("`{key}` needs `from`: the trained run whose weights are switched off in part"),
    )
    .hint("add `from = \"<a run of the book that trains>\"`")
}

fn not_a_list(at: &Span) -> Diagnostic {
    Diagnostic::error(
        Code::Intervention,
        Some(at.clone()),
        "`ablate` lists components, or says \"each-head\"",
    )
    .hint("e.g. `ablate = [\"b0.h1\", \"b1.attn\", \"b0.mlp\", \"b0.h0+b0.h1\"]`")
}

/// Keys of a run spec that would change the run an intervention reads.
const TRAINING_KEYS: &[&str] = &["base", "kind", "model", "data", "train", "eval"];

/// The plan of an intervening run: `from`'s config with the intervention, at `from`'s seeds
/// or the subset the block lists. Every problem is an error at its key.
#[allow(clippy::too_many_arguments, reason = "one block, read in parts")]
pub fn plan(
    id: &str,
    w: &Written,
    spec: &revtx_spec::experiments::RunSpec,
    block: &Span,
    plans: &[RunPlan],
    key_span: &dyn Fn(&str) -> Option<Span>,
    contrast: Option<super::contrast::Contrast>,
    diags: &mut Vec<Diagnostic>,
) -> Option<RunPlan> {
    let before = diags.len();
    training_keys(
        id,
        spec,
        &|k| key_span(k).unwrap_or_else(|| block.clone()),
        diags,
    );
    let trained = trained_run(w, plans, diags)?;
    let targets = targets(id, w, &trained.config.model, diags);
    let patch = w
        .patch
        .as_ref()
        .and_then(|p| patch(id, w, p, &trained.config, diags));
    if let (Some(at), Some(why)) = (
        &w.table_change,
        revtx_spec::experiments::intervene::Part::Pos.missing_in(&trained.config.model),
    ) {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(at.clone()),
                format!("run `{id}` cannot measure `{}`'s table change", w.from),
            )
            .label(why),
        );
    }
    let seeds = seeds(
        w,
        spec,
        trained,
        &|| {
            key_span("seeds")
                .or_else(|| key_span("seed"))
                .unwrap_or_else(|| block.clone())
        },
        diags,
    );
    if diags.len() > before {
        return None;
    }
    Some(RunPlan {
        id: id.to_string(),
        config: RunConfig {
            intervene: Some(Intervene {
                from: w.from.clone(),
                mode: w.mode,
                ablate: targets,
                patch,
                table_change: w.table_change.is_some(),
            }),
            ..trained.config.clone()
        },
        seeds,
        span: block.clone(),
        weights: None,
        contrast,
    })
}

/// The patch, if the trained run's task and positions allow it (an error at its key
/// otherwise).
fn patch(
    id: &str,
    w: &Written,
    p: &WrittenPatch,
    trained: &RunConfig,
    diags: &mut Vec<Diagnostic>,
) -> Option<Patch> {
    let task = trained.data.task;
    if Patch::answer_index(task, p.patch.length, p.patch.letter).is_none() {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(p.span.clone()),
                format!("run `{id}` cannot patch `{}`: its task is `{}`", w.from, task.name()),
            )
            .note("patching follows one input letter to the answer letter it decides, which copying and reversal fix by position")
            .hint("point `from` at a copying or reversal run"),
        );
        return None;
    }
    let tabled = matches!(
        trained.model.position_encoding,
        PositionEncoding::Learned | PositionEncoding::Sinusoidal
    );
    if p.patch.corrupt == Corruption::Place && !tabled {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(p.corrupt_span.clone().unwrap_or_else(|| p.span.clone())),
                format!(
                    "run `{id}` cannot swap places in `{}`: its positions are `{}`",
                    w.from,
                    trained.model.position_encoding.name()
                ),
            )
            .note("a place corruption swaps two rows of the position table that is added to the tokens, and these positions enter inside attention")
            .hint("point `from` at a run with learned or sinusoidal positions"),
        );
        return None;
    }
    let size = task.size(p.patch.length);
    let (needs, has) = (task.sequence_len(size), trained.model.positions);
    if i64::try_from(needs).map_or(true, |n| n > has) {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(p.length_span.clone()),
                format!(
                    "a string of {} letters needs {needs} positions, and `{}`'s model has {has}",
                    p.patch.length, w.from
                ),
            )
            .hint(format!(
                "at most {} letters",
                (1..=p.patch.length)
                    .rev()
                    .find(
                        |&l| i64::try_from(task.sequence_len(task.size(l))).is_ok_and(|n| n <= has)
                    )
                    .unwrap_or(0)
            )),
        );
        return None;
    }
    Some(p.patch.clone())
}

/// An error at each key of the block that would change the trained run.
fn training_keys(
    id: &str,
    spec: &revtx_spec::experiments::RunSpec,
    at: &dyn Fn(&str) -> Span,
    diags: &mut Vec<Diagnostic>,
) {
    let set = [
        spec.base.is_some(),
        spec.kind.is_some(),
        spec.model.is_some(),
        spec.data.is_some(),
        spec.train.is_some(),
        spec.eval.is_some(),
    ];
    for (k, _) in TRAINING_KEYS.iter().zip(set).filter(|(_, set)| *set) {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(at(k)),
                format!("run `{id}` trains nothing: `{k}` would change the run it reads"),
            )
            .hint(format!(
                "set `{k}` on a run that trains, and point `from` at it"
            )),
        );
    }
}

/// The run `from` names, if it is an earlier run of the book that trains.
fn trained_run<'p>(
    w: &Written,
    plans: &'p [RunPlan],
    diags: &mut Vec<Diagnostic>,
) -> Option<&'p RunPlan> {
    let Some(trained) = plans.iter().find(|p| p.id == w.from) else {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(w.from_span.clone()),
                format!("unknown trained run `{}`", w.from),
            )
            .hint("`from` names a run declared earlier in the book, which trains"),
        );
        return None;
    };
    if trained.config.intervene.is_some() || trained.config.kind != RunKind::Train {
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(w.from_span.clone()),
                format!("`{}` trains no model", w.from),
            )
            .note(match &trained.config.intervene {
                Some(iv) => format!("it switches parts of `{}` off", iv.from),
                None => "it is a probe".into(),
            })
            .hint("`from` names a run that trains"),
        );
        return None;
    }
    Some(trained)
}

/// The targets, each read and checked against the trained run's model (an error at each
/// that does not read or names a part the model lacks, and at a target listed twice).
fn targets(
    id: &str,
    w: &Written,
    model: &revtx_spec::config::ModelConfig,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Target> {
    let items = match &w.ablate {
        Ablate::EachHead => return each_head(model),
        Ablate::Listed(items) => items,
    };
    let mut out: Vec<Target> = Vec::new();
    for (s, at) in items {
        let read = Target::parse(s).and_then(|t| {
            match t
                .parts
                .iter()
                .find_map(|p| p.missing_in(model).map(|why| (p, why)))
            {
                Some((p, why)) => Err(format!("`{p}`: {why} (`{}`'s model)", w.from)),
                None if t.at != At::All && w.mode == AblateMode::Mean => Err(format!(
                    "`{s}` is switched off at some positions only, and mean ablation replaces a part everywhere: restricted targets are zeroed (leave `mode` out)"
                )),
                None => Ok(t),
            }
        });
        match read {
            Ok(t) if out.contains(&t) => diags.push(
                Diagnostic::error(
                    Code::Intervention,
                    Some(at.clone()),
                    format!("`{t}` is listed twice"),
                )
                .hint("each target is evaluated once"),
            ),
            Ok(t) => out.push(t),
            Err(why) => diags.push(
                Diagnostic::error(
                    Code::Intervention,
                    Some(at.clone()),
                    format!("run `{id}` cannot switch off `{s}`"),
                )
                .label(why),
            ),
        }
    }
    out
}

/// The seeds the block lists (each one `from` trained: an error otherwise), or `from`'s.
fn seeds(
    w: &Written,
    spec: &revtx_spec::experiments::RunSpec,
    trained: &RunPlan,
    at: &dyn Fn() -> Span,
    diags: &mut Vec<Diagnostic>,
) -> Vec<u64> {
    if spec.seed.is_none() && spec.seeds.is_none() {
        return trained.seeds.clone();
    }
    let listed = spec.seed_list();
    for s in listed.iter().filter(|s| !trained.seeds.contains(s)) {
        let have: Vec<String> = trained.seeds.iter().map(u64::to_string).collect();
        diags.push(
            Diagnostic::error(
                Code::Intervention,
                Some(at()),
                format!("`{}` has no seed {s}", w.from),
            )
            .note(format!("its seeds: {}", have.join(", ")))
            .hint("an intervention reads trained weights: list seeds that were trained, or leave `seeds` out for all of them"),
        );
    }
    listed
}
