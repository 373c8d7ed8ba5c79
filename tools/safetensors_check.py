#!/usr/bin/env python3
"""Check a safetensors file against the format's spec, independently of tapegrad.

    python3 tools/safetensors_check.py model.safetensors [--torch]

Reads the file with the Python standard library only (json + struct), applies the same rules as
the reference reader (header length, JSON object, fields and types of every entry, sizes, offsets
covering the data exactly, no trailing bytes), then prints the metadata and, per tensor in file
order, its name, dtype, shape, offsets and the sum of its values. When numpy is importable the
sums are recomputed with numpy.frombuffer; with --torch (and torch importable) also with
torch.frombuffer, i.e. as PyTorch sees the bytes. Exits 1 with a message on the first problem.
"""
import json
import math
import struct
import sys

MAX_HEADER = 100_000_000
# safetensors dtype -> (bytes per element, struct format or None, numpy dtype, torch dtype name)
DTYPES = {
    "BOOL": (1, "?", "bool", "bool"),
    "U8": (1, "B", "uint8", "uint8"),
    "I8": (1, "b", "int8", "int8"),
    "I16": (2, "h", "<i2", "int16"),
    "U16": (2, "H", "<u2", None),
    "F16": (2, "e", "<f2", "float16"),
    "BF16": (2, None, None, "bfloat16"),
    "I32": (4, "i", "<i4", "int32"),
    "U32": (4, "I", "<u4", None),
    "F32": (4, "f", "<f4", "float32"),
    "F64": (8, "d", "<f8", "float64"),
    "I64": (8, "q", "<i8", "int64"),
    "U64": (8, "Q", "<u8", None),
}


class FormatError(Exception):
    pass


def no_repeats(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise FormatError(f"header repeats the key {k!r}")
    return dict(pairs)


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def parse(blob):
    if len(blob) < 8:
        raise FormatError(f"file is {len(blob)} bytes long, too short for the header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER:
        raise FormatError(f"header length {n} is over {MAX_HEADER}")
    if n > len(blob) - 8:
        raise FormatError(f"header length {n} is larger than the rest of the file")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=no_repeats)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"header is not valid JSON: {e}")
    if not isinstance(header, dict):
        raise FormatError("header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(v, str) for v in metadata.values())):
        raise FormatError("__metadata__ is not an object of strings")
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
            raise FormatError(f"tensor {name!r}: needs dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPES:
            raise FormatError(f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(is_count(d) for d in shape):
            raise FormatError(f"tensor {name!r}: bad shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(map(is_count, offsets))
                or offsets[0] > offsets[1]):
            raise FormatError(f"tensor {name!r}: bad data_offsets {offsets!r}")
        if math.prod(shape) * DTYPES[dtype][0] != offsets[1] - offsets[0]:
            raise FormatError(f"tensor {name!r}: shape {shape} of {dtype} does not fit {offsets}")
        entries.append((offsets[0], offsets[1], name, dtype, shape))
    entries.sort()
    end = 0
    for begin, stop, name, _, _ in entries:
        if begin != end:
            raise FormatError(f"tensor {name!r} starts at {begin}, expected {end} "
                              "(an overlap or a hole)")
        end = stop
    if 8 + n + end != len(blob):
        raise FormatError(f"data holds {len(blob) - 8 - n} bytes, the tensors cover {end}")
    return n, metadata or {}, entries


def plain_sum(raw, dtype):
    """Sum of the values using only struct (exact for integers, fsum for floats)."""
    size, fmt, _, _ = DTYPES[dtype]
    count = len(raw) // size
    if fmt is None:  # BF16: the high half of a float32
        values = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    else:
        values = struct.unpack(f"<{count}{fmt}", raw)
    if dtype.startswith("F") or dtype == "BF16":
        try:
            return math.fsum(values)
        except (ValueError, OverflowError):  # inf - inf, or an overflowing sum
            return sum(values)
    return sum(int(v) for v in values)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    with open(args[0], "rb") as f:
        blob = f.read()
    try:
        n, metadata, entries = parse(blob)
    except FormatError as e:
        print(f"{args[0]}: INVALID: {e}")
        return 1
    try:
        import numpy as np
    except ImportError:
        np = None
    torch = None
    if "--torch" in argv:
        try:
            import torch
        except ImportError:
            print("(torch not importable; skipping the torch check)")
    print(f"{args[0]}: valid safetensors, {len(blob)} bytes, header {n} bytes, "
          f"{len(entries)} tensors")
    print(f"metadata: {json.dumps(metadata, sort_keys=True, ensure_ascii=False)}")
    mismatches = 0
    for begin, stop, name, dtype, shape in entries:
        raw = blob[8 + n + begin:8 + n + stop]
        total = plain_sum(raw, dtype)
        line = f"  {name}: {dtype} {shape} [{begin}, {stop}) sum={total!r}"
        checks = []
        if np is not None and DTYPES[dtype][2] is not None:
            checks.append(("numpy", np.frombuffer(raw, dtype=DTYPES[dtype][2]).reshape(shape)
                           .astype("float64" if dtype.startswith("F") else "int64").sum()))
        if torch is not None and DTYPES[dtype][3] is not None:
            t = (torch.frombuffer(bytearray(raw), dtype=getattr(torch, DTYPES[dtype][3]))
                 if raw else torch.empty(0, dtype=getattr(torch, DTYPES[dtype][3])))
            t = t.reshape(shape)
            checks.append(("torch", t.double().sum() if dtype.startswith(("F", "BF")) else
                           t.long().sum()))
        for who, value in checks:
            value = value.item()
            same = (math.isclose(value, total, rel_tol=1e-12, abs_tol=1e-12)
                    or (math.isnan(value) and math.isnan(total)) or value == total)
            line += f" {who}={'ok' if same else repr(value)}"
            mismatches += not same
        print(line)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
