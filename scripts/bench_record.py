"""Benchmark records: one JSON file per measurement in bench/records/, in one shape, so
that BENCHMARKS.md can be generated from them (scripts/benchmarks.py).

    {
      "benchmark": "print",              # which benchmark
      "command": "scripts/bench-print.py --rounds 5",
      "commit": "<sha>", "dirty": false,  # what was measured
      "date": "2026-12-04T18:51:00Z",
      "machine": {"model": "...", "family": 6, "model_number": 167,
                  "isa": ["avx2", "fma", "avx512f"], "cores": 2},
      "figures": [{"name": "cold build", "value": 0.497, "unit": "s"}, ...],
      ...                                   # anything else the benchmark keeps
    }
"""

import json
import os
import subprocess
import sys
import time


def machine() -> dict:
    """The CPU as /proc/cpuinfo names it, its family and model, vector ISA, and cores."""
    info = {"model": "unknown", "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "model name":
                    info["model"] = v
                elif k == "cpu family":
                    info["family"] = int(v)
                elif k == "model":
                    info["model_number"] = int(v)
                elif k == "flags":
                    flags = set(v.split())
                    info["isa"] = [x for x in ("avx2", "fma", "avx512f", "amx_tile") if x in flags]
                    break
    except OSError:
        pass
    return info


def machine_slug(m: dict) -> str:
    words = [w for w in m.get("model", "cpu").replace("(R)", "").replace("(TM)", "").split() if w.isalnum()]
    return "-".join(w.lower() for w in words[:3]) or "cpu"


def commit(root: str = ".") -> tuple[str, bool]:
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True).stdout.strip()
    # book/claims.json is rewritten by every build, the measured ones too: it is no change
    # to what was measured.
    changed = [l for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if l.split(None, 1)[-1] != "book/claims.json"]
    return git("rev-parse", "HEAD"), bool(changed)


def write(path_or_dir: str, benchmark: str, figures: list[dict], root: str = ".", **extra) -> str:
    """Writes a record; a directory gets a file named by benchmark, commit and machine."""
    sha, dirty = commit(root)
    m = machine()
    record = {
        "benchmark": benchmark,
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "commit": sha,
        "dirty": dirty,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": m,
        "figures": figures,
        **extra,
    }
    path = path_or_dir
    if os.path.isdir(path_or_dir) or path_or_dir.endswith("/"):
        path = os.path.join(path_or_dir, f"{benchmark}-{sha[:7]}-{machine_slug(m)}.json")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    return path
