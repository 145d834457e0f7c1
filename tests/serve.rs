//! `revtx-book serve` stops at the first Ctrl-C, as its banner says, and at SIGTERM.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `serve` on a fixture book, sends one `signal` once it serves, and returns its
/// exit code; fails if it is still running ten seconds later.
fn exit_code_after(signal: libc::c_int) -> Option<i32> {
    let p = Project::new("# Served\n\nNothing here trains.\n");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["serve", "--port", &port.to_string(), "--root"])
        .arg(p.root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open to the end: serve still writes to it after the banner.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let banner = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("serving "));
    assert!(banner.is_some(), "serve ended before it served");
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
