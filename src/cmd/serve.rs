//! `revtx-book serve`: build, serve `site/` on 127.0.0.1, watch the sources, rebuild and
//! reload the browser on change.
//!
//! - Pages poll `__revtx/version` (static/livereload.js); each finished build bumps it.
//! - A failed rebuild keeps the last good site on disk and the server injects the
//!   diagnostics into every page as an overlay; the server keeps running.
//! - A change under `src/` recompiles the binaries (`cargo build --release`) and restarts
//!   the server in place, because the run cache keys on the engine's compiled code.

use notify_debouncer_mini::{new_debouncer, notify::RecursiveMode, DebounceEventResult};
use revtx_book::book::{self, diag, runs, BuildOptions};
use std::os::unix::process::CommandExt;
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
    opts.runs.remember_verified = true;
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| opts.root.join(revtx_book::book::outdir::BOOK_SITE));
    let state = Arc::new(State::default());
    // Watched before the first build and before the server answers: an edit made as soon
    // as the page is up (or while the first build runs) is never missed.
    // Editors write several events per save: the debouncer gathers them into one batch.
    let (tx, rx) = mpsc::channel::<Vec<PathBuf>>();
    let debouncer = new_debouncer(
        Duration::from_millis(25),
        move |res: DebounceEventResult| {
            if let Ok(events) = res {
                let _ = tx.send(events.into_iter().map(|e| e.path).collect());
            }
        },
    );
    let mut debouncer = match debouncer {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot watch files: {e}");
            return ExitCode::FAILURE;
        }
    };
    for d in ["book", "templates", "static", "src"] {
        let p = opts.root.join(d);
        if p.exists() {
            let _ = debouncer.watcher().watch(&p, RecursiveMode::Recursive);
        }
    }
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

    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(mut paths) => {
                // Our own writes (book/claims.json, book/numerics.json, the results a build
                // keeps in the book's store) must not loop a rebuild.
                paths.retain(|p| {
                    let name = p
                        .file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default();
                    !(name == "claims.json"
                        || name == "numerics.json"
                        || name.ends_with(".run")
                        || name.starts_with(".tmp-stored-"))
                });
                if paths.iter().any(|p| {
                    p.strip_prefix(&opts.root)
                        .is_ok_and(|r| r.starts_with("src"))
                }) {
                    restart_after_compile(&opts.root);
                }
                if !paths.is_empty() {
                    rebuild(&opts, &state);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return ExitCode::SUCCESS,
        }
        // Ctrl-C or SIGTERM: a build in progress has already ended without touching the
        // site (`runs::INTERRUPTED`), so the server can stop at once.
        if runs::INTERRUPTED.load(Ordering::SeqCst) {
            eprintln!("stopped");
            return ExitCode::from(130);
        }
    }
}

fn rebuild(opts: &BuildOptions, state: &State) {
    let t = Instant::now();
    let outcome = book::build(opts);
    // Colour only for a terminal: a log file or a pipe gets plain text.
    diag::emit_stderr(&outcome.diags, &outcome.sources);
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
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("revtx-book"));
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .exec();
    eprintln!("cannot restart: {err}");
}

/// Whether a decoded request path names something inside the site: plain names only, no
/// `..`, no root (`%2F` decodes to one), no backslash or NUL.
fn inside_site(rel: &str) -> bool {
    !rel.contains(['\\', '\0'])
        && Path::new(rel).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
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
    let rel = percent_encoding::percent_decode_str(url)
        .decode_utf8_lossy()
        .trim_start_matches('/')
        .to_string();
    if !inside_site(&rel) {
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
            let mime = mime_guess::from_path(&path).first_or_octet_stream();
            let kind = if mime.type_() == "text" {
                format!("{}; charset=utf-8", mime.essence_str())
            } else {
                mime.essence_str().to_string()
            };
            tiny_http::Response::from_data(bytes).with_header(header(&kind))
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
