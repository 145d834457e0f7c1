"""Reading the engine's trained weights: a site's exported models, or a run's
safetensors file, as state dicts that ``Transformer.load_state_dict`` takes as they are.

Both formats hold float32 little-endian values under the engine's parameter names.
"""

from __future__ import annotations

import gzip
import json
import math
import struct
import sys
from pathlib import Path

import torch
from torch import Tensor


def _from_little_endian(raw: Tensor, dtype: torch.dtype) -> Tensor:
    """The values of ``dtype`` whose little-endian bytes are ``raw`` (uint8, contiguous),
    as a flat tensor."""
    size = torch.empty(0, dtype=dtype).element_size()
    raw = raw.reshape(-1, size)
    if sys.byteorder == "big":
        raw = raw.flip(-1)
    return raw.contiguous().view(dtype).reshape(-1)


def load_export(models_dir: str | Path, model_id: str) -> tuple[dict, str, dict[str, Tensor]]:
    """The model ``model_id`` of a site's ``models/`` folder: its config (the engine's
    JSON of ``ModelConfig``), its task and its weights by name.

    The manifest lists each tensor's name, shape and offset (in floats) into the model's
    file. The file is the float32 values, byte-plane shuffled (the first byte of every
    float, then every second byte, ...) and then gzip-compressed (src/book/export.rs).
    """
    models_dir = Path(models_dir)
    manifest = json.loads((models_dir / "manifest.json").read_text())
    if manifest.get("format") != 1:
        raise ValueError(f"unknown manifest format {manifest.get('format')}")
    entry = next((m for m in manifest["models"] if m["id"] == model_id), None)
    if entry is None:
        raise KeyError(f"no model {model_id!r} in {models_dir / 'manifest.json'}")
    n = entry["floats"]
    planes = gzip.decompress((models_dir / entry["file"]).read_bytes())
    if len(planes) != 4 * n:
        raise ValueError(f"{entry['file']} holds {len(planes)} bytes, expected {4 * n}")
    # Plane p holds byte p of every float: read as (4, n), transpose to (n, 4).
    shuffled = torch.frombuffer(bytearray(planes), dtype=torch.uint8).view(4, n)
    floats = _from_little_endian(shuffled.t(), torch.float32)
    state = {}
    for t in entry["tensors"]:
        size = math.prod(t["shape"])
        if t["offset"] + size > n:
            raise ValueError(f"tensor {t['name']} runs past the end of {entry['file']}")
        state[t["name"]] = floats[t["offset"]:t["offset"] + size].view(t["shape"]).clone()
    return entry["config"], entry.get("task", "reverse"), state


# safetensors' dtype names and ours.
_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}


def load_safetensors(path: str | Path) -> dict[str, Tensor]:
    """Every tensor of a safetensors file, by name.

    The format: an 8-byte little-endian header length, a JSON header mapping each name
    to its dtype, shape and byte range [begin, end) in the data that follows, then the
    raw little-endian data.
    """
    raw = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    data = torch.frombuffer(bytearray(raw[8 + header_len:]), dtype=torch.uint8) \
        if len(raw) > 8 + header_len else torch.empty(0, dtype=torch.uint8)
    state = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = math.prod(info["shape"])
        if end - begin != count * torch.empty(0, dtype=dtype).element_size():
            raise ValueError(f"{path}: {name} has {end - begin} bytes for shape {info['shape']}")
        state[name] = _from_little_endian(data[begin:end], dtype).view(info["shape"])
    return state
