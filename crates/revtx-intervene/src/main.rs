//! `revtx-intervene exec --request R --out O`: one intervening run, as the book build asks
//! for it (`revtx_spec::entry::ExecRequest`), its cache entry written into O.

use anyhow::{bail, Context, Result};
use clap::Parser;
use revtx_engine::entry::{self, ExecRequest};
use revtx_engine::profile::{Platform, Profile};
use revtx_intervene::CODE_FINGERPRINT;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "revtx-intervene",
    about = "Evaluates a trained run with parts of its model switched off"
)]
enum Cli {
    /// Run one request (JSON) and write its cache entry into OUT.
    Exec {
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() {
    let Cli::Exec { request, out } = Cli::parse();
    if let Err(e) = exec(&request, &out) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn exec(request: &Path, out: &Path) -> Result<()> {
    let text = std::fs::read_to_string(request)
        .with_context(|| format!("reading {}", request.display()))?;
    let req: ExecRequest = serde_json::from_str(&text).context("parsing the run request")?;
    if req.engine != CODE_FINGERPRINT {
        bail!(
            "this binary's code is {CODE_FINGERPRINT}, but the compiler keyed the run on {}: \
             build both from the same tree (`make build`)",
            req.engine
        );
    }
    if req.profile == Profile::Portable {
        if let Some(why) = Platform::this().unsupported(req.profile) {
            bail!("{why}");
        }
    }
    revtx_engine::numerics::enter(req.profile).map_err(anyhow::Error::msg)?;
    let result = revtx_intervene::run(&req)?;
    entry::write(out, |dir| {
        std::fs::write(
            dir.join(entry::RESULT_FILE),
            serde_json::to_vec(&result).map_err(std::io::Error::other)?,
        )
    })
    .with_context(|| format!("writing the cache entry {}", out.display()))
}
