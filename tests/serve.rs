//! `revtx-book serve` stops at the first Ctrl-C, as its banner says, and at SIGTERM;
//! rebuilds and tells the pages to reload after an edit; with `--pdf`, typesets the print
//! edition.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running `serve` on a fixture project, once it has printed its banner: the child,
/// its port, and its standard error (kept open to the end: serve still writes to it).
struct Serving {
    child: std::process::Child,
    port: u16,
    _stderr: std::io::Lines<BufReader<std::process::ChildStderr>>,
}

fn serving(p: &Project) -> Serving {
    serving_with(p, &[])
}

fn serving_with(p: &Project, extra: &[&str]) -> Serving {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["serve", "--port", &port.to_string(), "--root"])
        .arg(p.root())
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let banner = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("serving "));
    assert!(banner.is_some(), "serve ended before it served");
    Serving {
        child,
        port,
        _stderr: lines,
    }
}

/// Starts `serve` on a fixture book, sends one `signal` once it serves, and returns its
/// exit code; fails if it is still running ten seconds later.
fn exit_code_after(signal: libc::c_int) -> Option<i32> {
    let p = Project::new("# Served\n\nNothing here trains.\n");
    let Serving {
        mut child, _stderr, ..
    } = serving(&p);
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: sends a signal to our own child, which has not been waited for yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve still runs 10 s after one signal {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_stops_at_the_first_ctrl_c() {
    assert_eq!(exit_code_after(libc::SIGINT), Some(130));
}

#[test]
fn serve_stops_at_sigterm() {
    assert_eq!(exit_code_after(libc::SIGTERM), Some(130));
}

/// `serve` answers only for files inside the site: `..`, its percent-encoded forms and an
/// encoded root are refused with 403, and a file beside the site is never sent.
#[test]
fn serve_refuses_paths_out_of_the_site() {
    use std::io::{Read, Write};
    let p = Project::new("# Served\n\nNothing here trains.\n");
    std::fs::write(p.root().join("secret.txt"), "SECRET-BESIDE-THE-SITE\n").unwrap();
    let Serving {
        mut child,
        port,
        _stderr,
    } = serving(&p);
    // A raw request: clients (and curl) normalise `..` away before sending it.
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    };
    let ok = get("/");
    let mut results = vec![("/".to_string(), ok.lines().next().unwrap_or("").to_string())];
    let refused = [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/static/..%2f..%2fsecret.txt",
        "/%2F..%2Fsecret.txt",
    ];
    for path in refused {
        let r = get(path);
        results.push((path.to_string(), r.lines().next().unwrap_or("").to_string()));
        assert!(
            !r.contains("SECRET-BESIDE-THE-SITE"),
            "{path} sent the file:\n{r}"
        );
        assert!(r.starts_with("HTTP/1.1 403"), "{path}: {r}");
    }
    // The file's absolute path, encoded: read as a name inside the site, which has none.
    let absolute = format!(
        "/{}",
        p.root()
            .join("secret.txt")
            .display()
            .to_string()
            .replace('/', "%2F")
    );
    let r = get(&absolute);
    assert!(
        !r.contains("SECRET-BESIDE-THE-SITE"),
        "{absolute} sent the file:\n{r}"
    );
    assert!(
        r.starts_with("HTTP/1.1 403") || r.starts_with("HTTP/1.1 404"),
        "{absolute}: {r}"
    );
    // SAFETY: signals our own child, not yet waited for.
    unsafe { libc::kill(libc::pid_t::try_from(child.id()).unwrap(), libc::SIGTERM) };
    let _ = child.wait();
    assert!(
        ok.starts_with("HTTP/1.1 200"),
        "the control request failed: {results:?}"
    );
}

/// `GET path` on the server at `port`: the status line and the body's bytes.
fn get(port: u16, path: &str) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(out.len(), |k| k + 4);
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    (
        head.lines().next().unwrap_or("").to_string(),
        out[split..].to_vec(),
    )
}

fn stop(mut child: std::process::Child) {
    // SAFETY: signals our own child, not yet waited for.
    unsafe { libc::kill(libc::pid_t::try_from(child.id()).unwrap(), libc::SIGTERM) };
    let _ = child.wait();
}

/// Live reload: the pages load the reload script, and an edit of the chapter rebuilds the
/// site and bumps `__revtx/version`, which the script polls.
#[test]
fn serve_rebuilds_and_bumps_the_version_after_an_edit() {
    let p = Project::new("# Served\n\nThe first wording.\n");
    let Serving {
        child,
        port,
        _stderr,
    } = serving(&p);
    let text = |path: &str| {
        let (status, body) = get(port, path);
        (status, String::from_utf8_lossy(&body).to_string())
    };
    let (status, v0) = text("/__revtx/version");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let (_, page) = text("/chapter-1.html");
    assert!(page.contains("The first wording."), "{page}");
    assert!(
        page.contains("livereload.js"),
        "the page loads no reload script"
    );
    let (status, script) = text("/static/livereload.js");
    assert!(
        status.starts_with("HTTP/1.1 200") && script.contains("__revtx/version"),
        "{status}"
    );
    std::fs::write(
        p.root().join("book/chapter.md"),
        "# Served\n\nThe second wording.\n",
    )
    .unwrap();
    let t = Instant::now();
    let (v1, page) = loop {
        let (_, v) = text("/__revtx/version");
        let (_, page) = text("/chapter-1.html");
        if v != v0 && page.contains("The second wording.") {
            break (v, page);
        }
        if t.elapsed() > Duration::from_secs(30) {
            stop(child);
            panic!("30 s after the edit: version {v} (was {v0}), page:\n{page}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    stop(child);
    assert!(!page.contains("The first wording."));
    assert!(
        v1.trim().parse::<u64>().unwrap() > v0.trim().parse::<u64>().unwrap(),
        "{v0} → {v1}"
    );
}

/// `serve --pdf` typesets the print edition, which the index links and the server sends;
/// plain `serve` skips it.
#[test]
fn serve_pdf_serves_the_print_edition() {
    let pdf_link = |index: &str| {
        index
            .split("href=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().to_string())
            .find(|h| {
                std::path::Path::new(h)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
            })
    };
    let p = Project::new("# Served\n\nIn print too.\n");
    let Serving {
        child,
        port,
        _stderr,
    } = serving_with(&p, &["--pdf"]);
    let (_, index) = get(port, "/index.html");
    let index = String::from_utf8_lossy(&index).to_string();
    let link = pdf_link(&index);
    let served = link.as_ref().map(|l| get(port, &format!("/{l}")));
    stop(child);
    let link = link.unwrap_or_else(|| panic!("the index links no PDF:\n{index}"));
    let (status, body) = served.unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{link}: {status}");
    assert!(body.starts_with(b"%PDF-"), "{link} is not a PDF");

    let q = Project::new("# Served\n\nOn screen only.\n");
    let Serving {
        child,
        port,
        _stderr,
    } = serving(&q);
    let (_, index) = get(port, "/index.html");
    stop(child);
    let index = String::from_utf8_lossy(&index).to_string();
    assert!(
        std::fs::read_dir(q.root().join("site")).unwrap().all(|e| e
            .unwrap()
            .path()
            .extension()
            .is_none_or(|x| x != "pdf")),
        "plain serve typeset the PDF"
    );
    assert!(pdf_link(&index).is_none() || !index.is_empty());
}
