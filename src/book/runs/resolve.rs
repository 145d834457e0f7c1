//! Run directives → plans (each run's config, from its base and overrides) → jobs, one
//! per (run, seed), with their cache keys.

use super::{Job, RunPlan};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Sources, Span};
use crate::book::parse::{Book, Directive};
use revtx_spec::entry::{self};
use revtx_spec::experiments::RunConfig;
use revtx_spec::profile::Profile;

/// Resolves the run directives of every chapter, in order. A run's `base` is a preset
/// or an earlier run of the book; an intervening run's `from`, an earlier run that trains.
#[allow(
    clippy::too_many_lines,
    reason = "one pass over the run blocks, each checked at its keys in the order they apply"
)]
pub fn plan(book: &Book, sources: &Sources, diags: &mut Vec<Diagnostic>) -> Vec<RunPlan> {
    let mut plans: Vec<RunPlan> = Vec::new();
    let mut contrasts = Vec::new();
    let read = crate::book::store::weights_read(book, sources);
    for ch in &book.chapters {
        for d in ch.directives() {
            let Directive::Run {
                id,
                spec,
                contrast,
                intervene,
            } = &d.node
            else {
                continue;
            };
            if let Some(c) = contrast {
                contrasts.push((id.clone(), (**c).clone()));
            }
            if plans.iter().any(|p| p.id == *id) {
                continue; // a second declaration: `duplicate-id`, at it, says so
            }
            if let Some(w) = intervene {
                let at = |k: &str| key_span(sources, &d.span, k);
                let contrast = contrast.as_deref().cloned();
                if let Some(p) =
                    crate::book::intervene::plan(id, w, spec, &d.span, &plans, &at, contrast, diags)
                {
                    plans.push(p);
                }
                continue;
            }
            let base_name = spec.base.clone().unwrap_or_else(|| {
                if RunConfig::preset(id).is_some() {
                    id.clone()
                } else {
                    "reference".into()
                }
            });
            let base = plans
                .iter()
                .find(|p| p.id == base_name)
                .map(|p| p.config.clone())
                .or_else(|| RunConfig::preset(&base_name));
            let Some(base) = base else {
                let known: Vec<&str> = revtx_spec::experiments::PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect();
                diags.push(
                    Diagnostic::error(
                        Code::UnknownBase,
                        Some(d.span.clone()),
                        format!("unknown base run `{base_name}`"),
                    )
                    .hint(format!(
                        "a base is an earlier run of the book or one of: {}",
                        known.join(", ")
                    )),
                );
                continue;
            };
            if spec.seeds.as_ref().is_some_and(Vec::is_empty) {
                diags.push(
                    Diagnostic::error(
                        Code::NoSeeds,
                        Some(d.span.clone()),
                        format!("run `{id}` has no seeds"),
                    )
                    .hint("list at least one, e.g. `seeds = [0, 1, 2]`, or write `seed = 0`"),
                );
                continue;
            }
            match spec.apply(&base) {
                Ok(config) => {
                    // What the engine would refuse after "ran (not cached)": here, at the key.
                    for (key, msg) in config.problems() {
                        let at = key_span(sources, &d.span, key);
                        let set_here = at.is_some();
                        let mut diag = Diagnostic::error(
                            Code::InvalidRun,
                            Some(at.unwrap_or_else(|| d.span.clone())),
                            format!("run `{id}` cannot run: {msg}"),
                        );
                        if !set_here {
                            diag = diag.note(format!(
                                "`{key}` is not set in this block: it comes from `{base_name}`"
                            ));
                        }
                        diags.push(diag.hint(format!("set `{key}` in the run block")));
                    }
                    if spec.seed.is_some() && spec.seeds.is_some() {
                        diags.push(
                            Diagnostic::error(
                                Code::SeedAndSeeds,
                                Some(d.span.clone()),
                                format!("run `{id}` gives both `seed` and `seeds`"),
                            )
                            .hint("keep one"),
                        );
                    }
                    plans.push(RunPlan {
                        id: id.clone(),
                        config,
                        seeds: spec.seed_list(),
                        span: d.span.clone(),
                        weights: read.get(id.as_str()).copied(),
                        contrast: contrast.as_deref().cloned(),
                    });
                }
                Err(e) => diags.push(unfit(sources, &d.span, id, spec, &base, e)),
            }
        }
    }
    crate::book::contrast::check(&contrasts, &plans, diags);
    plans
}

/// A run block whose overrides do not fit its config: at the key whose value does not
/// fit, when the block writes it, else at the block.
fn unfit(
    sources: &Sources,
    block: &Span,
    id: &str,
    spec: &revtx_spec::experiments::RunSpec,
    base: &RunConfig,
    why: String,
) -> Diagnostic {
    let culprit = spec.culprit(base);
    let at = culprit.as_deref().and_then(|k| key_span(sources, block, k));
    let diag = Diagnostic::error(
        Code::InvalidRun,
        Some(at.unwrap_or_else(|| block.clone())),
        match &culprit {
            Some(k) => format!("invalid run `{id}`: `{k}` does not fit"),
            None => format!("invalid run `{id}`"),
        },
    )
    .label(why);
    match culprit {
        Some(k) => diag.hint(format!(
            "change or remove `{k}`: the guide's run-key table lists every key and its values"
        )),
        None => diag,
    }
}

/// Where the run block at `block` sets `key` (`model.positions`, `model.attn.scale`): its
/// name, written under its table (`[model]` then `positions = …`, `[model.attn]` then
/// `scale = …`) or dotted (`model.positions = …`); `None` when the block does not set it.
fn key_span(sources: &Sources, block: &Span, key: &str) -> Option<Span> {
    // `block` is the fence's info line; the body runs from the next line to the fence.
    let text = sources.text(block.file).get(block.range.start..)?;
    let mut section = String::new();
    let mut offset = block.range.start;
    for (k, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        if k == 0 {
            offset += line.len();
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            return None;
        }
        let indent = line.len() - t.len();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.split_once(']')) {
            section = name.0.trim().to_string();
            if section == key {
                // A whole table (`[train]`): at its name.
                let start = offset + indent + 1 + (name.0.len() - name.0.trim_start().len());
                return Some(Span {
                    file: block.file,
                    range: start..start + section.len(),
                });
            }
        } else {
            let name = t.split('=').next().unwrap_or_default().trim_end();
            let whole = name.len() < t.len();
            let dotted: String = name.split('.').map(str::trim).collect::<Vec<_>>().join(".");
            let full = if section.is_empty() {
                dotted
            } else {
                format!("{section}.{dotted}")
            };
            if whole && (full == key || key.starts_with(&format!("{full}."))) {
                let start = offset + indent;
                return Some(Span {
                    file: block.file,
                    range: start..start + name.len(),
                });
            }
        }
        offset += line.len();
    }
    None
}

/// The jobs of every planned (run, seed), with their cache keys. An intervening run's job
/// is keyed on its trained run's key, and that run keeps its weights at those seeds.
pub fn jobs(plans: &[RunPlan], profile: Profile) -> Vec<Job> {
    let read_by_intervention = |id: &str, seed: u64| {
        plans.iter().any(|q| {
            q.config.intervene.as_ref().is_some_and(|iv| iv.from == id) && q.seeds.contains(&seed)
        })
    };
    plans
        .iter()
        .flat_map(|p| {
            p.seeds.iter().enumerate().map(move |(i, &seed)| {
                let trained = p.config.intervene.as_ref().map(|_| {
                    let config = RunConfig {
                        intervene: None,
                        ..p.config.clone()
                    };
                    entry::key(&config, seed, profile, crate::ENGINE)
                });
                let key = match &trained {
                    Some(t) => entry::intervention_key(t, &p.config, crate::INTERVENE),
                    None => entry::key(&p.config, seed, profile, crate::ENGINE),
                };
                Job {
                    run: p.id.clone(),
                    seed,
                    config: p.config.clone(),
                    key,
                    span: p.span.clone(),
                    // A probe trains no model, and an intervention no new one: neither has
                    // weights to keep.
                    weights: (p.weights.is_some_and(|w| w.reads(i))
                        || read_by_intervention(&p.id, seed))
                        && p.config.kind == revtx_spec::experiments::RunKind::Train
                        && trained.is_none(),
                    trained,
                }
            })
        })
        .collect()
}
