//! The guide (`guide/book/`) against the code: every list it gives of something the code
//! defines (commands and options, expression helpers, figure and table kinds, presets,
//! book.toml keys) must name exactly what the code has. The guide is built, with warnings
//! denied, by `scripts/build-guide.sh` in `make test`; its appendix of diagnostics is
//! generated and checked by `tests/fixtures.rs`.

mod common;
use common::*;
use revtx_book::book::figures::FigureKind;
use revtx_book::book::kinds::Kinds;
use revtx_book::book::tables::TableKind;
use std::collections::BTreeSet;

fn chapter(name: &str) -> String {
    std::fs::read_to_string(repo().join("guide/book").join(name)).unwrap()
}

/// The first cells of the rows of the markdown table that follows `heading` in `text`.
fn first_column(text: &str, heading: &str) -> Vec<String> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}`"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches('|')
                .trim()
                .to_string()
        })
        .collect()
}

/// The words in backticks of `cell`, each up to its first `(`; a filter's `xs | name(…)`
/// gives `name`.
fn names_in(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|code| {
            let code = code.rsplit("\\| ").next().unwrap();
            code.split('(').next().unwrap().trim().to_string()
        })
        .collect()
}

fn set(v: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    v.into_iter().collect()
}

fn same(what: &str, guide: &BTreeSet<String>, code: &BTreeSet<String>) {
    let missing: Vec<_> = code.difference(guide).collect();
    let extra: Vec<_> = guide.difference(code).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: the guide lacks {missing:?} and names {extra:?}, which the code does not have"
    );
}

#[test]
fn the_helpers_table_lists_every_registered_helper() {
    let src = std::fs::read_to_string(repo().join("src/book/expr/mod.rs")).unwrap();
    let code = set(src
        .split("env.add_")
        .skip(1)
        .filter(|s| s.starts_with("function(\"") || s.starts_with("filter(\""))
        .map(|s| s.split('"').nth(1).unwrap().to_string()));
    assert!(code.len() >= 20, "{code:?}");
    let guide = set(first_column(&chapter("expressions.md"), "## Helpers")
        .iter()
        .flat_map(|c| names_in(c)));
    same("helpers", &guide, &code);
}

/// The fields a kind's `Spec` reads, from serde's own list: an unknown field's error names
/// every field it expected ("there are no fields" for none).
fn fields_of<K: Kinds>(name: &str) -> BTreeSet<String> {
    let err = match K::read(name, "zz_not_a_field = 1") {
        Some(Err(e)) => e.to_string(),
        other => panic!(
            "{name}: an unknown field was not refused ({})",
            other.is_some()
        ),
    };
    assert!(
        err.contains("unknown field `zz_not_a_field`"),
        "{name}: {err}"
    );
    let expected = err.split("expected").nth(1).unwrap_or_default();
    let expected = expected.lines().next().unwrap_or_default();
    set(expected.split('`').skip(1).step_by(2).map(str::to_string))
}

/// Each kind's row names its own fields in its last cell ("none" for none), as its `Spec`
/// reads them.
#[test]
fn the_kind_tables_list_every_kinds_fields() {
    let kinds = chapter("kinds.md");
    let row = |name: &str| -> BTreeSet<String> {
        let line = kinds
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("no row for {name}"));
        let last = line
            .trim_end_matches('|')
            .rsplit('|')
            .next()
            .unwrap()
            .trim();
        if last == "none" {
            BTreeSet::new()
        } else {
            set(names_in(last))
        }
    };
    let mut fields = 0;
    for name in FigureKind::NAMES {
        let code = fields_of::<FigureKind>(name);
        fields += code.len();
        same(&format!("fields of figure `{name}`"), &row(name), &code);
    }
    for name in TableKind::NAMES {
        let code = fields_of::<TableKind>(name);
        fields += code.len();
        same(&format!("fields of table `{name}`"), &row(name), &code);
    }
    assert!(
        fields >= 8,
        "only {fields} fields found: the error format changed?"
    );
}

#[test]
fn the_kind_tables_list_every_kind() {
    let kinds = chapter("kinds.md");
    let figures = set(first_column(&kinds, "## Figure kinds")
        .iter()
        .flat_map(|c| names_in(c)));
    same(
        "figure kinds",
        &figures,
        &set(FigureKind::NAMES.iter().map(ToString::to_string)),
    );
    let tables = set(first_column(&kinds, "## Table kinds")
        .iter()
        .flat_map(|c| names_in(c)));
    same(
        "table kinds",
        &tables,
        &set(TableKind::NAMES.iter().map(ToString::to_string)),
    );
}

#[test]
fn the_preset_table_lists_every_preset() {
    let guide = set(first_column(&chapter("runs.md"), "## Presets")
        .iter()
        .flat_map(|c| names_in(c)));
    let code = set(revtx_spec::experiments::PRESETS
        .iter()
        .map(|p| p.name.to_string()));
    same("presets", &guide, &code);
}

#[test]
fn the_book_toml_keys_are_the_config_fields() {
    let src = std::fs::read_to_string(repo().join("src/book/parse/config.rs")).unwrap();
    let body = &src[src.find("pub struct BookConfig {").unwrap()..];
    let body = &body[..body.find("\n}").unwrap()];
    // A field's key is its name, or the name its `#[serde(rename = "…")]` gives it.
    let mut code = BTreeSet::new();
    let mut renamed: Option<String> = None;
    for l in body.lines().map(str::trim) {
        if let Some(i) = l.find("rename = \"") {
            let rest = &l[i + "rename = \"".len()..];
            renamed = Some(rest[..rest.find('"').unwrap()].to_string());
        } else if let Some(field) = l.strip_prefix("pub ").filter(|f| !f.starts_with("struct ")) {
            let name = field.split(':').next().unwrap().to_string();
            code.insert(renamed.take().unwrap_or(name));
        }
    }
    assert!(
        code.contains("title") && code.contains("chapters") && code.contains("lints-for"),
        "{code:?}"
    );
    let writing = chapter("writing.md");
    let para = writing
        .lines()
        .find(|l| l.starts_with("`book/book.toml` holds"))
        .expect("the settings paragraph");
    let guide = set(names_in(para)
        .into_iter()
        .filter(|n| !n.contains('/') && !n.contains(' ') && n != "inline" && n != "end"));
    same("book.toml keys", &guide, &code);
}

/// Every command of `revtx-book --help` has a row in the guide's table of commands, and
/// each command's options, as its own `--help` lists them, are exactly those the guide
/// gives that command: the options its row names, and the shared ones when the paragraph
/// of shared options names the command. One command losing an option fails, even when
/// another still has it.
#[test]
fn the_commands_and_options_are_the_command_lines() {
    let bin = env!("CARGO_BIN_EXE_revtx-book");
    let help = |args: &[&str]| {
        let out = std::process::Command::new(bin).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let top = help(&["--help"]);
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 9, "{commands:?}");
    let guide = chapter("getting-started.md");
    let section = &guide[guide.find("## The commands").unwrap()..];
    let section = &section[..section.find("\n## ").unwrap()];
    let rows = set(first_column(section, "| command |")
        .iter()
        .flat_map(|c| names_in(c)));
    same("commands", &rows, &set(commands.iter().cloned()));
    let shared_para = section
        .lines()
        .find(|l| l.starts_with("Options that "))
        .expect("the paragraph of shared options");
    let (sharers, shared) = shared_para.split_once(" share:").unwrap();
    let sharers = set(names_in(sharers));
    let shared = options_in(shared);
    assert!(
        sharers.len() >= 4 && shared.len() >= 8,
        "{sharers:?} {shared:?}"
    );
    let mut compared = 0;
    for c in &commands {
        // `run` forwards everything, `--help` included, to the engine.
        if c == "run" {
            continue;
        }
        let code = options_in(&help(&[c, "--help"]));
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| `{c}` |")))
            .unwrap_or_else(|| panic!("no row for `{c}`"));
        let mut guide = options_in(row);
        if sharers.contains(c) {
            guide.extend(shared.iter().cloned());
        }
        same(&format!("options of `{c}`"), &guide, &code);
        compared += 1;
    }
    assert!(compared >= 8, "options compared for {compared} commands");
}

/// The `--options` in `text` (a `--help` or a line of the guide), `--help` and `--version`
/// left out.
fn options_in(text: &str) -> BTreeSet<String> {
    let mut options = BTreeSet::new();
    for word in text.split(|ch: char| {
        ch.is_whitespace()
            || ch == ','
            || ch == '['
            || ch == ']'
            || ch == '`'
            || ch == '('
            || ch == ')'
    }) {
        if let Some(opt) = word.strip_prefix("--") {
            let opt: String = opt
                .chars()
                .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '-')
                .collect();
            if !opt.is_empty() && opt != "help" && opt != "version" {
                options.insert(format!("--{opt}"));
            }
        }
    }
    options
}

/// The guide's table of run keys against the configuration's fields: every leaf of a
/// config (with the keys left out at their defaults set), and the table's values against
/// the `reference` preset's.
#[test]
fn the_run_key_table_lists_every_config_field() {
    use revtx_spec::config::{Activation, NormPlacement, PositionEncoding};
    use revtx_spec::experiments::{Decay, Optimizer, RunConfig};
    fn leaves(v: &serde_json::Value, at: &str, out: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let key = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    leaves(x, &key, out);
                }
            }
            other => out.push((at.to_string(), other.clone())),
        }
    }
    let mut cfg = RunConfig::preset("reference").unwrap();
    let reference = serde_json::to_value(&cfg).unwrap();
    // Every key a config leaves out at its default, set, so that it is written.
    (cfg.train.warmup, cfg.train.decay, cfg.train.min_lr) = (1, Decay::Linear, 0.1);
    (cfg.train.optimizer, cfg.train.betas, cfg.train.eps) = (Optimizer::Adam, [0.8, 0.9], 1e-6);
    (cfg.train.momentum, cfg.train.clip) = (0.5, 1.0);
    cfg.model.position_encoding = PositionEncoding::Rope;
    cfg.model.norm = NormPlacement::Post;
    cfg.model.activation = Activation::Relu;
    cfg.model.norm_kind = revtx_spec::config::NormKind::Rms;
    cfg.data.task = revtx_spec::task::Task::Sort;
    cfg.data.letters = 26;
    let mut code = Vec::new();
    leaves(&serde_json::to_value(&cfg).unwrap(), "", &mut code);
    let text = chapter("runs.md");
    let section = &text[text.find("## Run keys").unwrap()..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |k| k + 3)];
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        rows.push((
            cells[1].trim_matches('`').to_string(),
            cells[2].trim_matches('`').to_string(),
        ));
    }
    let guide = set(rows.iter().map(|(k, _)| k.clone()));
    same(
        "run keys",
        &guide,
        &set(code.iter().map(|(k, _)| k.clone())),
    );
    // Each value as the reference preset has it (a key it leaves out: its default).
    let mut want = Vec::new();
    leaves(&reference, "", &mut want);
    for (key, shown) in &rows {
        let value = want.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        // A key the preset's config leaves out (at its default): the preset's field.
        let default = default_of(key);
        let value = value.unwrap_or(default);
        let parsed: serde_json::Value = serde_json::from_str(shown)
            .unwrap_or_else(|e| panic!("{key}: `{shown}` is not a value ({e})"));
        let same_number = value
            .as_f64()
            .zip(parsed.as_f64())
            .is_some_and(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            parsed == value || same_number,
            "{key}: the guide says {shown}, the preset has {value}"
        );
    }
}

/// The reference preset's value of a key its serialised config leaves out (each is
/// skipped at its default).
fn default_of(key: &str) -> serde_json::Value {
    use revtx_spec::experiments::RunConfig;
    let c = RunConfig::preset("reference").unwrap();
    match key {
        "train.warmup" => serde_json::json!(c.train.warmup),
        "train.decay" => serde_json::json!(c.train.decay),
        "train.min_lr" => serde_json::json!(c.train.min_lr),
        "train.optimizer" => serde_json::json!(c.train.optimizer),
        "train.betas" => serde_json::json!(c.train.betas),
        "train.eps" => serde_json::json!(c.train.eps),
        "train.momentum" => serde_json::json!(c.train.momentum),
        "train.clip" => serde_json::json!(c.train.clip),
        "model.position_encoding" => serde_json::json!(c.model.position_encoding),
        "model.norm" => serde_json::json!(c.model.norm),
        "model.activation" => serde_json::json!(c.model.activation),
        "model.norm_kind" => serde_json::json!(c.model.norm_kind),
        "data.task" => serde_json::json!(c.data.task),
        "data.letters" => serde_json::json!(c.data.letters),
        _ => serde_json::Value::Null,
    }
}

/// Every value of every choice a run block can make is named in its row of the table.
/// The lists are matches without a wildcard: a new value does not compile here until it
/// is listed, and then this test wants it in the guide.
#[test]
fn the_run_key_table_names_every_value_of_every_choice() {
    use revtx_spec::config::{Activation, NormKind, NormPlacement, PositionEncoding, SoftmaxAxis};
    use revtx_spec::experiments::{Decay, Optimizer, RunKind};
    use revtx_spec::task::{Targets, Task};
    fn names<T: serde::Serialize>(all: &[T]) -> Vec<String> {
        all.iter()
            .map(|v| {
                serde_json::to_value(v)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }
    macro_rules! every {
        ($t:ident: $($v:ident),+) => {{
            let _exhaustive = |x: $t| match x { $($t::$v)|+ => () };
            names(&[$($t::$v),+])
        }};
    }
    let choices = [
        ("kind", every!(RunKind: Train, WorkedExample, DotVariance)),
        (
            "model.position_encoding",
            every!(PositionEncoding: Learned, Sinusoidal, Rope, Alibi, None),
        ),
        ("model.norm", every!(NormPlacement: Pre, Post, None)),
        ("model.norm_kind", every!(NormKind: Layer, Rms)),
        ("data.task", every!(Task: Reverse, Copy, Sort, Add, Recall)),
        ("model.activation", every!(Activation: Gelu, Relu)),
        ("model.attn.softmax", every!(SoftmaxAxis: Keys, Queries)),
        ("data.targets", every!(Targets: Answer, AllPositions)),
        ("train.decay", every!(Decay: None, Linear, Cosine)),
        ("train.optimizer", every!(Optimizer: Adamw, Adam, Sgd)),
    ];
    let text = chapter("runs.md");
    for (key, values) in choices {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("no row for {key}"));
        for v in values {
            assert!(
                row.contains(&format!("`{v}`")),
                "{key}: the guide's row does not name `{v}`: {row}"
            );
        }
    }
}
