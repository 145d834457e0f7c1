//! `revtx-book serve`: build, serve `site/` on 127.0.0.1, watch the sources, rebuild and
//! reload the browser on change.
//!
//! - Pages poll `__revtx/version` (static/livereload.js); each finished build bumps it.
//! - A failed rebuild keeps the last good site on disk and the server injects the
//!   diagnostics into every page as an overlay; the server keeps running.
//! - A change under `src/` recompiles the binaries (`cargo build --release`) and restarts
//!   the server in place, because the run cache keys on the engine's compiled code.

use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use notify::{RecursiveMode, Watcher};
use revtx_book::book::{self, diag, BuildOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server shows: the build number and, after a failed build, its diagnostics.
#[derive(Default)]
struct State {
    version: AtomicU64,
    errors: Mutex<Vec<String>>,
}

pub fn serve(mut opts: BuildOptions, port: u16) -> ExitCode {
    opts.live_reload = true;
    let out = opts.out.clone().unwrap_or_else(|| opts.root.join("site"));
    let state = Arc::new(State::default());
    rebuild(&opts, &state);

    let addr = format!("127.0.0.1:{port}");
    let server = match tiny_http::Server::http(&addr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "serving {} on http://{addr}/ (Ctrl-C to stop)",
        out.display()
    );
    {
        let (state, out, root) = (state.clone(), out.clone(), opts.root.clone());
        std::thread::spawn(move || {
            for req in server.incoming_requests() {
                let resp = respond(&req, &out, &root, &state);
                let _ = req.respond(resp);
            }
        });
    }

    let (tx, rx) = mpsc::channel();
    let mut watcher = match notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev {
            let _ = tx.send(ev.paths);
        }
    }) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: cannot watch files: {e}");
            return ExitCode::FAILURE;
        }
    };
    for d in ["book", "templates", "static", "src"] {
        let p = opts.root.join(d);
        if p.exists() {
            let _ = watcher.watch(&p, RecursiveMode::Recursive);
        }
    }
    loop {
        let Ok(first) = rx.recv() else {
            return ExitCode::SUCCESS;
        };
        // Debounce: editors write several events per save.
        let mut paths = first;
        let deadline = Instant::now() + Duration::from_millis(60);
        while let Ok(more) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            paths.extend(more);
        }
        // Our own writes (book/claims.json) must not trigger a rebuild loop.
        paths.retain(|p| !p.ends_with("claims.json"));
        if paths.is_empty() {
            continue;
        }
        if paths.iter().any(|p| {
            p.strip_prefix(&opts.root)
                .is_ok_and(|r| r.starts_with("src"))
        }) {
            restart_after_compile(&opts.root);
        }
        rebuild(&opts, &state);
    }
}

fn rebuild(opts: &BuildOptions, state: &State) {
    let t = Instant::now();
    let outcome = book::build(opts);
    let mut err = StandardStream::stderr(ColorChoice::Auto);
    diag::emit(&outcome.diags, &outcome.sources, &mut err);
    let texts: Vec<String> = if outcome.errors() > 0 {
        diag::to_plain_text(&outcome.diags, &outcome.sources)
            .split("\n\n")
            .filter(|s| !s.trim().is_empty())
            .map(String::from)
            .collect()
    } else {
        Vec::new()
    };
    eprintln!(
        "rebuilt in {:.0} ms: {} error(s)",
        t.elapsed().as_secs_f64() * 1e3,
        outcome.errors()
    );
    *state.errors.lock().unwrap() = texts;
    state.version.fetch_add(1, Ordering::SeqCst);
}

/// Recompiles after a source change and replaces this process with the new binary.
fn restart_after_compile(root: &Path) {
    eprintln!("source changed: cargo build --release");
    let ok = std::process::Command::new("cargo")
        .args(["build", "--release"])
        .current_dir(root)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("compile failed; still serving the previous build");
        return;
    }
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("revtx-book"));
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .exec();
    eprintln!("cannot restart: {err}");
}

fn respond(
    req: &tiny_http::Request,
    out: &Path,
    root: &Path,
    state: &State,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let url = req.url().split(['?', '#']).next().unwrap_or("/");
    let header = |v: &str| tiny_http::Header::from_bytes("Content-Type", v).unwrap();
    if url == "/__revtx/version" {
        return tiny_http::Response::from_string(state.version.load(Ordering::SeqCst).to_string())
            .with_header(header("text/plain"));
    }
    let rel = percent_decode(url.trim_start_matches('/'));
    if rel.split('/').any(|c| c == "..") {
        return tiny_http::Response::from_string("forbidden").with_status_code(403);
    }
    let mut path = out.join(&rel);
    if path.is_dir() {
        path = path.join("index.html");
    }
    match std::fs::read(&path) {
        Ok(mut bytes) => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if ext == "html" {
                bytes = inject_overlay(bytes, root, &state.errors.lock().unwrap());
            }
            tiny_http::Response::from_data(bytes).with_header(header(content_type(ext)))
        }
        Err(_) => tiny_http::Response::from_string("not found").with_status_code(404),
    }
}

fn inject_overlay(bytes: Vec<u8>, root: &Path, errors: &[String]) -> Vec<u8> {
    if errors.is_empty() {
        return bytes;
    }
    let overlay = book::site::templates(root)
        .ok()
        .and_then(|env| {
            env.get_template("overlay.html")
                .ok()?
                .render(minijinja::context! { diagnostics => errors })
                .ok()
        })
        .unwrap_or_default();
    let html = String::from_utf8_lossy(&bytes);
    match html.rfind("</body>") {
        Some(k) => format!("{}{overlay}{}", &html[..k], &html[k..]).into_bytes(),
        None => bytes,
    }
}

fn content_type(ext: &str) -> &'static str {
    match ext {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css",
        "js" => "text/javascript",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "woff2" => "font/woff2",
        "csv" => "text/csv",
        _ => "application/octet-stream",
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
