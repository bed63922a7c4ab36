#!/usr/bin/env python3
"""derive_none.py SAFE.jsonl.gz OUT.jsonl.gz: tensorflow-none = SAFE records, config 'none-derived',
and an error where two tensors (t/z) of different dtypes had a result (RFC 431 NONE mode)."""
import gzip
import json
import sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
with gzip.open(src, "rt") as fi, gzip.open(dst + ".tmp", "wt") as fo:
    for line in fi:
        r = json.loads(line)
        r["config"] = "none-derived"
        a, b = r["a"], r["b"]
        if r["error"] is None and a["kind"] != "s" and b["kind"] != "s" and a["dtype"] != b["dtype"]:
            r["result"] = None
            r["error"] = (f"TypeError: In promotion mode NONE (RFC 431), no implicit dtype promotion between "
                          f"tensors {a['dtype']} and {b['dtype']} (derived from the SAFE record)")
        fo.write(json.dumps(r) + "\n"); n += 1
import os; os.replace(dst + ".tmp", dst)
print(f"wrote {dst}: {n} records")
