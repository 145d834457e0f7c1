//! Interrupting `build`, as the guide promises (its chapter on runs): Ctrl-C (SIGINT to
//! the process group, so the engines get it too) or SIGTERM (to `revtx-book` alone) stops
//! the engines, starts no queued run, leaves the site and the finished cache entries as
//! they were, and exits 1; a second signal exits at once, with 130.

mod common;
use common::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A run far too long to finish during the test, declared three times over (three seeds):
/// with `--jobs 1` one trains and two wait in the queue.
const LONG: &str =
    "```run long\nbase = \"reference\"\nseeds = [1, 2, 3]\n[train]\nsteps = 1000000\n```";

/// The pids of `pid`'s child processes that train (`revtx-engine exec`; not the numerics
/// probe that runs first), from /proc (Linux).
fn engines(pid: u32) -> Vec<u32> {
    children(pid)
        .into_iter()
        .filter(|c| {
            std::fs::read(format!("/proc/{c}/cmdline"))
                .is_ok_and(|a| a.split(|b| *b == 0).any(|w| w == b"exec"))
        })
        .collect()
}

/// The pids of `pid`'s child processes.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
    {
        let f = task.unwrap().path().join("children");
        for c in std::fs::read_to_string(f)
            .unwrap_or_default()
            .split_whitespace()
        {
            out.push(c.parse().unwrap());
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    // /proc/<pid>/stat's third field is the state; Z is a zombie, gone but not reaped.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// What `building` gives: the project, the running build, the site and the cache before
/// it, and the engine it started.
struct Building(Project, Child, Files, Files, u32);

/// Every file of a directory, by relative path.
type Files = Vec<(String, Vec<u8>)>;

/// A project with a built site and one finished cache entry; then its book gains the long
/// runs and `build --jobs 1` starts in its own process group. Returns the project, the
/// running build, the site and cache before it, and the engine it started.
fn building() -> Building {
    let first = format!("# I\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&first);
    assert_eq!(p.build().errors(), 0);
    let site = files_under(&p.root().join("site"));
    let cache = files_under(&p.root().join(".revtx-cache/runs"));
    assert!(!site.is_empty() && !cache.is_empty());
    std::fs::write(
        p.root().join("book/chapter.md"),
        format!("{first}\n{LONG}\n"),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["build", "--jobs", "1", "--root"])
        .arg(p.root())
        .arg("--out")
        .arg(p.root().join("site"))
        .env("REVTX_ENGINE", common::engine_exe())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(p.root().join("build.stderr")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let engine = loop {
        if let Some(&e) = engines(child.id()).first() {
            break e;
        }
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "no engine started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let it get going (load libtorch, start training) before it is interrupted.
    std::thread::sleep(Duration::from_millis(1500));
    Building(p, child, site, cache, engine)
}

/// Waits for `child` (at most 10 s): its exit code, and every engine it started meanwhile.
fn wait(child: &mut Child, engine: u32) -> (Option<i32>, Vec<u32>) {
    let sent = Instant::now();
    let mut seen = vec![engine];
    loop {
        for c in engines(child.id()) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), seen);
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("build still runs 10 s after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: signals our own child (or its process group), not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

fn interrupted_cleanly(sig: libc::c_int, group: bool) {
    let Building(p, mut child, site, cache, engine) = building();
    let pid = i32::try_from(child.id()).unwrap();
    signal(if group { -pid } else { pid }, sig);
    let (code, engines) = wait(&mut child, engine);
    assert_eq!(code, Some(1), "exit status after one signal");
    let said = std::fs::read_to_string(p.root().join("build.stderr")).unwrap();
    assert!(
        said.contains(&format!(
            "error[{}]",
            revtx_book::book::codes::Code::Interrupted
        )),
        "{said}"
    );
    assert_eq!(
        engines,
        vec![engine],
        "a queued run started after the signal"
    );
    let gone = Instant::now();
    while alive(engine) && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(engine),
        "the engine still runs after the build ended"
    );
    assert!(
        files_under(&p.root().join("site")) == site,
        "the site changed"
    );
    assert!(
        files_under(&p.root().join(".revtx-cache/runs")) == cache,
        "the finished cache entries changed"
    );
}

#[test]
fn ctrl_c_stops_the_build_and_changes_nothing() {
    interrupted_cleanly(libc::SIGINT, true);
}

#[test]
fn sigterm_stops_the_build_and_changes_nothing() {
    interrupted_cleanly(libc::SIGTERM, false);
}

/// The first SIGTERM reaches `revtx-book` alone, which then gives the engine 200 ms to
/// stop before killing it; a second signal 20 ms after the first ends it at once, and
/// the engine with it.
#[test]
fn a_second_signal_exits_at_once() {
    let Building(p, mut child, site, _, engine) = building();
    let pid = i32::try_from(child.id()).unwrap();
    signal(pid, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(20));
    signal(pid, libc::SIGTERM);
    let (code, _) = wait(&mut child, engine);
    assert_eq!(code, Some(130));
    // It killed its engine before exiting: nothing is left training, orphaned.
    let gone = Instant::now();
    while alive(engine) && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphaned = alive(engine);
    if orphaned {
        signal(i32::try_from(engine).unwrap(), libc::SIGKILL);
    }
    assert!(!orphaned, "the engine still trains after revtx-book exited");
    assert!(
        files_under(&p.root().join("site")) == site,
        "the site changed"
    );
}

/// A build killed at any moment of writing the site (SIGKILL, so no handler runs: the
/// worst a second Ctrl-C or a power cut can do) leaves the whole old site or the whole new
/// one, never a mix; the next build finishes the job and sweeps what the killed one left.
#[test]
fn a_build_killed_while_writing_leaves_one_whole_site() {
    let chapter = |word: &str| format!("# I\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}} {word}.\n");
    let p = Project::new(&chapter("alpha"));
    let site = p.root().join("site");
    let build = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_revtx-book"));
        c.args(["build", "--offline", "--no-pdf", "--quiet", "--root"])
            .arg(p.root())
            .arg("--out")
            .arg(&site)
            .env("REVTX_ENGINE", common::engine_exe())
            .env("SOURCE_DATE_EPOCH", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    // Trains the tiny run once; every build after this one reads it from the cache.
    assert_eq!(p.build().errors(), 0);
    let mut whole = Vec::new();
    let mut took = Duration::ZERO;
    for word in ["alpha", "beta"] {
        std::fs::write(p.root().join("book/chapter.md"), chapter(word)).unwrap();
        let t = Instant::now();
        assert!(build().status().unwrap().success());
        took = took.max(t.elapsed());
        whole.push(files_under(&site));
    }
    assert_ne!(whole[0], whole[1]);
    // Half the kills are spread from the start of a build to well past its end; the other
    // half land the moment the chapter's page changes, which is inside the write phase of
    // a writer that rewrites files one by one.
    let page = site.join("chapter-1.html");
    let stamp = || {
        std::fs::metadata(&page).map_or((0, 0), |m| {
            use std::os::unix::fs::MetadataExt;
            (m.ino(), m.mtime_nsec())
        })
    };
    let (mut old, mut new) = (0, 0);
    for k in 0..24u32 {
        let (from, to) = ((k + 1) % 2, k % 2);
        std::fs::write(
            p.root().join("book/chapter.md"),
            chapter(["alpha", "beta"][to as usize]),
        )
        .unwrap();
        let before = stamp();
        let mut child = build().spawn().unwrap();
        if k % 2 == 0 {
            std::thread::sleep(took * (k / 2) / 8);
        } else {
            let t = Instant::now();
            while stamp() == before && t.elapsed() < took * 4 {
                std::hint::spin_loop();
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let now = files_under(&site);
        if now == whole[from as usize] {
            old += 1;
        } else if now == whole[to as usize] {
            new += 1;
        } else {
            panic!("kill {k} left a mixed site");
        }
        // The next build completes it; the site is then the new one, and nothing of the
        // killed build is left beside it.
        assert!(build().status().unwrap().success());
        assert_eq!(files_under(&site), whole[to as usize]);
        let beside: Vec<String> = std::fs::read_dir(p.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".revtx-site-tmp-"))
            .collect();
        assert!(
            beside.is_empty(),
            "left beside the site after kill {k}: {beside:?} holding {:?}",
            beside
                .iter()
                .map(|b| files_under(&p.root().join(b))
                    .into_iter()
                    .map(|(n, c)| format!(
                        "{n}: {}",
                        String::from_utf8_lossy(&c[..c.len().min(80)])
                    ))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
    }
    assert!(
        old > 0 && new > 0,
        "{old} kills left the old site, {new} the new one"
    );
}
