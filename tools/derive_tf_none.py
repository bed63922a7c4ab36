#!/usr/bin/env python3
"""derive_tf_none.py SAFE.jsonl.gz OUT.jsonl.gz: tensorflow-none = SAFE records, config 'none-derived',
and an error where two tensors (t/z) of different dtypes had a result (RFC 431 NONE mode).

Works on both record sets, as the shared oracle README defines them:
  * binary records (tensorflow-safe.jsonl.gz): an error where a and b are both tensors of different
    dtypes and SAFE had a result;
  * unary records (tensorflow-safe.unary.jsonl.gz, field "family"): an error for a clip whose 0-d
    bounds have another dtype than x (SAFE had a result); unary ops and reductions as in SAFE.
"""
import gzip
import json
import os
import sys


def derive(r):
    r["config"] = "none-derived"
    family = r.get("family", "binary")
    if r["error"] is not None:
        return r
    if family == "binary":
        a, b = r["a"], r["b"]
        if a["kind"] != "s" and b["kind"] != "s" and a["dtype"] != b["dtype"]:
            other = b["dtype"]
        else:
            return r
        x = a["dtype"]
    elif family == "clip":
        x = r["a"]["dtype"]
        others = [r[k]["dtype"] for k in ("lo", "hi") if r[k]["kind"] != "s" and r[k]["dtype"] != x]
        if not others:
            return r
        other = others[0]
    else:
        return r
    r["result"] = None
    r["error"] = (f"TypeError: In promotion mode NONE (RFC 431), no implicit dtype promotion between "
                  f"tensors {x} and {other} (derived from the SAFE record)")
    return r


def main(src, dst):
    n = 0
    with gzip.open(src, "rt") as fi, gzip.open(dst + ".tmp", "wt") as fo:
        for line in fi:
            fo.write(json.dumps(derive(json.loads(line))) + "\n")
            n += 1
    os.replace(dst + ".tmp", dst)
    print(f"wrote {dst}: {n} records")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
