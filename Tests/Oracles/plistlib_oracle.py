#!/usr/bin/env python3
"""The plistlib oracle: reads a manifest of rendered files and what each must hold, and checks that
plistlib decodes each to exactly that value (types, float bits, dates to the microsecond) and, unless
told otherwise, that plistlib.dumps of that value gives the very same bytes. Prints one line per
failure and a closing count; exit status 1 on any failure."""
import datetime, json, plistlib, struct, sys

EPOCH = datetime.datetime(2001, 1, 1)

def build(t):
    kind = t["t"]
    if kind == "str": return t["v"]
    if kind == "int": return int(t["v"])
    if kind == "bool": return t["v"]
    if kind == "real": return struct.unpack(">d", int(t["bits"]).to_bytes(8, "big"))[0]
    if kind == "date": return EPOCH + datetime.timedelta(microseconds=int(t["micros"]))
    if kind == "array": return [build(x) for x in t["v"]]
    if kind == "dict": return {k: build(v) for k, v in t["v"]}
    raise ValueError(kind)

def same(a, b, path="root"):
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, float):
        return None if struct.pack(">d", a) == struct.pack(">d", b) else f"{path}: {a!r} != {b!r}"
    if isinstance(a, list):
        if len(a) != len(b): return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = same(x, y, f"{path}[{i}]")
            if r: return r
        return None
    if isinstance(a, dict):
        if list(a) != list(b): return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            r = same(a[k], b[k], f"{path}.{k}")
            if r: return r
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"

def main():
    manifest = json.load(open(sys.argv[1]))
    passed = failed = 0
    for entry in manifest:
        data = open(entry["file"], "rb").read()
        expected = build(entry["expected"])
        problem = same(plistlib.loads(data), expected)
        if not problem and entry.get("bytes_equal", True):
            fmt = plistlib.FMT_BINARY if entry["format"] == "binary" else plistlib.FMT_XML
            reference = plistlib.dumps(expected, fmt=fmt, sort_keys=True)
            if reference != data:
                at = next((i for i, (x, y) in enumerate(zip(reference, data)) if x != y), min(len(reference), len(data)))
                problem = f"bytes differ from plistlib.dumps at offset {at} (ours {len(data)} bytes, plistlib {len(reference)})"
        if problem:
            failed += 1
            print(f"FAIL {entry['file']}: {problem}")
        else:
            passed += 1
    print(f"plistlib oracle: {passed} files ok, {failed} files wrong")
    sys.exit(1 if failed else 0)

main()
