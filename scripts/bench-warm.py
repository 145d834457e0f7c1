#!/usr/bin/env python3
"""The warm path, timed side by side: two revtx-book binaries, in alternating rounds.

    scripts/bench-warm.py OLD_BIN NEW_BIN [--root .] [--old-root DIR] [--old-commit REV] [--rounds 5]
                          [--reloads 5] [--chapter FILE] [--json FILE]

For each binary:
  build   wall time of `build --offline --quiet` on a warm cache and an existing site
          (the binary's own runs must be cached: run one `build` with it first);
  reload  `serve --offline`: the time from an edit of book/<first chapter> (a comment added
          at its end, or taken away again; the file is put back as it was at the end) to
          the served build number (/__revtx/version) going up, i.e. the watcher's debounce,
          the rebuild and the write, as the browser's poll would see it. An edit, not a
          touch: a build that finds a chapter's text unchanged renders it from its memo.
--chapter names the chapter to edit (a file under book/, in both trees); the default is the
first chapter of book.toml. Each chapter's own rendering is what a reload redoes, so the
longest chapter is the slowest reload.
--old-root gives the old binary its own tree (a worktree of an older commit, whose book
the old binary can read); both default to --root. --old-commit REV names the old binary's
commit when it reads the same tree (else the record would name the tree's HEAD for it).
Rounds alternate the binaries so that a busy machine slows both alike. Prints medians and
min–max, and with --json (a file, or a directory such as bench/records/) writes a
benchmark record (scripts/bench_record.py): machine, commit, date and command line.
"""

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_record  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_once(binary, root):
    t = time.perf_counter()
    r = subprocess.run([binary, "build", "--offline", "--quiet", "--root", root],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{binary} build --offline failed (are its runs cached?):\n{r.stderr[-2000:]}")
    return took


def version(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__revtx/version", timeout=5) as r:
        return int(r.read())


def reloads(binary, root, chapter, n):
    with open(chapter) as f:
        original = f.read()
    port = free_port()
    p = subprocess.Popen([binary, "serve", "--offline", "--quiet", "--port", str(port), "--root", root],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:
            if line.startswith("serving "):
                break
        else:
            sys.exit(f"{binary} serve ended before it served")
        out = []
        for i in range(n):
            time.sleep(0.5)  # let the watcher settle after the last build's own writes
            v = version(port)
            text = original if i % 2 else original + f"\n<!-- bench-warm edit {os.getpid()} -->\n"
            t = time.perf_counter()
            with open(chapter, "w") as f:
                f.write(text)
            while version(port) <= v:
                if time.perf_counter() - t > 30:
                    sys.exit(f"{binary} serve did not rebuild within 30 s")
                time.sleep(0.002)
            out.append(time.perf_counter() - t)
        return out
    finally:
        p.terminate()
        p.wait()
        with open(chapter, "w") as f:
            f.write(original)


def first_chapter(root):
    import tomllib
    with open(os.path.join(root, "book", "book.toml"), "rb") as f:
        return os.path.join(root, "book", tomllib.load(f)["chapters"][0])


def cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def summary(xs):
    ms = [x * 1000 for x in xs]
    return {"median_ms": round(statistics.median(ms), 1), "min_ms": round(min(ms), 1),
            "max_ms": round(max(ms), 1), "n": len(ms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--root", default=".")
    ap.add_argument("--old-root")
    # The old binary's commit when it was built from this tree's history (not --old-root):
    # git cannot tell it, and the record must not name the new commit for it.
    ap.add_argument("--old-commit")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reloads", type=int, default=5)
    ap.add_argument("--chapter", help="the chapter to edit for reloads (default: the first)")
    ap.add_argument("--json")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    roots = {"old": os.path.abspath(a.old_root or a.root), "new": root}
    bins = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    builds = {k: [] for k in bins}
    reload = {k: [] for k in bins}
    for k, b in bins.items():  # warm the page cache and the site once
        build_once(b, roots[k])
    for r in range(a.rounds):
        for k, b in (bins.items() if r % 2 == 0 else reversed(list(bins.items()))):
            builds[k].append(build_once(b, roots[k]))
    for r in range(max(1, a.rounds // 2)):
        for k, b in (bins.items() if r % 2 == 0 else reversed(list(bins.items()))):
            chapter = (os.path.join(roots[k], "book", a.chapter) if a.chapter
                       else first_chapter(roots[k]))
            reload[k].extend(reloads(b, roots[k], chapter, a.reloads))
    rev = lambda d: subprocess.run(["git", "-C", d, "rev-parse", "--short", "HEAD"],
                                   capture_output=True, text=True).stdout.strip()
    commit = rev(root)
    record = {
        "what": "warm `build --offline --quiet` and `serve` reload, side by side",
        "edited": a.chapter or os.path.basename(first_chapter(root)),
        "machine": f"{cpu()}, {os.cpu_count()} cores",
        "commit": commit,
        "date": time.strftime("%Y-%m-%d"),
        "binaries": bins,
        "commits": {"old": a.old_commit or rev(roots["old"]), "new": rev(root)},
        "build": {k: summary(v) for k, v in builds.items()},
        "reload": {k: summary(v) for k, v in reload.items()},
    }
    for what in ("build", "reload"):
        for k in bins:
            s = record[what][k]
            print(f"{what:<7}{k:<4} median {s['median_ms']:>7.1f} ms  (min {s['min_ms']:.1f}, max {s['max_ms']:.1f}, n={s['n']})")
    print(f"# {record['machine']}; commit {commit}")
    if a.json:
        old = record["commits"]["old"]
        figures = [
            {"name": f"warm build, old {old}", "value": record["build"]["old"]["median_ms"], "unit": "ms"},
            {"name": "warm build", "value": record["build"]["new"]["median_ms"], "unit": "ms"},
            {"name": f"reload, old {old}", "value": record["reload"]["old"]["median_ms"], "unit": "ms"},
            {"name": "reload", "value": record["reload"]["new"]["median_ms"], "unit": "ms"},
        ]
        print("record:", bench_record.write(a.json, "warm-rebuild", figures, root=root, detail=record))


if __name__ == "__main__":
    main()
