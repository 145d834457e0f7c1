"""Loads the site's exported models into the independent PyTorch peer and decodes with it.

  make site && scripts/setup-peer.sh
  PYTHONPATH=.bench/torch python3 scripts/crosscheck-peer.py site [../shared/peer]

For every model in site/models/manifest.json: the weights go into the peer's `Model` (its
own code: nn.Linear, nn.LayerNorm, F.gelu, its own attention), the peer decodes the test
and long strings the engine decoded for the page (site/models/decodes.json), and every
string must come out the same. Prints one line per model; exits 1 on any disagreement.
"""
import gzip
import json
import os
import struct
import sys

import torch

site = sys.argv[1] if len(sys.argv) > 1 else "site"
peer_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join("..", "shared", "peer")
sys.path.insert(0, peer_dir)
import reverse_torch as peer  # noqa: E402

# The engine's parameter names, as the peer spells them.
RENAME = {"attn.qkv": "qkv", "attn.out": "proj", "mlp.up": "fc1", "mlp.down": "fc2"}
# The engine's switches, as the peer's variants.
VARIANTS = {
    (True, "keys", True): "reference",
    (False, "keys", True): "noscale",
    (True, "queries", True): "softmax_q",
    (True, "keys", False): "nomask",
}
LETTERS = "abcdefghij"


def peer_name(name):
    for ours, theirs in RENAME.items():
        name = name.replace(ours, theirs)
    return name


def load(model, entry):
    # The page's format: gzip over the floats' bytes in four planes (every first byte, then
    # every second, ...), little-endian.
    planes = gzip.decompress(open(os.path.join(site, "models", entry["file"]), "rb").read())
    n = entry["floats"]
    if len(planes) != 4 * n:
        sys.exit(f"{entry['id']}: {len(planes)} bytes for {n} floats")
    raw = bytes(planes[b * n + i] for i in range(n) for b in range(4))
    floats = struct.unpack(f"<{n}f", raw)
    state = {}
    for t in entry["tensors"]:
        n = 1
        for s in t["shape"]:
            n *= s
        values = floats[t["offset"] : t["offset"] + n]
        state[peer_name(t["name"])] = torch.tensor(values, dtype=torch.float32).view(t["shape"])
    missing = set(model.state_dict()) - set(state)
    extra = set(state) - set(model.state_dict())
    if missing or extra:
        sys.exit(f"{entry['id']}: names do not map (missing {sorted(missing)}, extra {sorted(extra)})")
    model.load_state_dict(state)


def main():
    manifest = json.load(open(os.path.join(site, "models", "manifest.json")))
    decodes = json.load(open(os.path.join(site, "models", "decodes.json")))
    torch.set_num_threads(1)
    failed = False
    for entry in manifest["models"]:
        a = entry["config"]["attn"]
        variant = VARIANTS[(a["scale"], a["softmax"], a["causal"])]
        model = peer.Model(variant)
        load(model, entry)
        model.eval()
        line = [f"{entry['id']} (peer variant {variant}):"]
        for split in ("test", "long"):
            d = decodes[entry["id"]][split]
            strings = [[LETTERS.index(c) for c in s] for s in d["inputs"]]
            with torch.no_grad():
                out = peer.greedy(model, strings)
            got = ["".join(LETTERS[i] if i < 10 else "?" for i in row) for row in out]
            same = sum(g == e for g, e in zip(got, d["outputs"]))
            failed |= same != len(got)
            line.append(f"{split} {same}/{len(got)} decodes identical")
        print(" ".join(line))
    sys.exit(1 if failed else 0)


main()
