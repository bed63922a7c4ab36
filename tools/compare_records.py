#!/usr/bin/env python3
"""Compare records made here with the shared development subset, record by record.

    python tools/compare_records.py                      # tests/observed vs ../shared/oracle/data, *.unary + unary-values
    python tools/compare_records.py --mine DIR --ref DIR --show 10
    python tools/compare_records.py --pattern '*.jsonl.gz'   # any files present in both folders

Exit status 0 when every reference record has an equal record up to error-order (see below).

A record is identified by its call (fw, config, op, api, family, operands; value records by
fw, config and case). For every reference file the tool reports how many of its records are
in the other file and equal. The reference is a subset: records of the other file whose op
the reference file does not have are ignored; those of an op it has, for a call it does not
have, are counted as "extra" (e.g. more scalar values). Differences are classed:

  missing      the reference call is not in the other file
  result       a different result dtype (or one has an error and the other not)
  error-order  both raised, with messages that differ only in the order of a tuple's items
               (JAX's TypePromotionError lists the dtypes in hash-seed-dependent set order)
  error-text   both raised, with different messages (often a version difference)
  weak_type / in_dtypes / warning / values / bits   that field differs
  inputs       the operand descriptions differ (value records: the input values)
"""
import argparse
import collections
import fnmatch
import glob
import gzip
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("weak_type", "in_dtypes", "warning", "values", "bits")


def key_of(rec):
    if "case" in rec:
        return (rec["fw"], rec["config"], rec["case"])
    ops = tuple(json.dumps(rec.get(k), sort_keys=True) for k in ("a", "b", "c", "lo", "hi"))
    return (rec["fw"], rec["config"], rec["op"], rec["api"], rec.get("family", "binary")) + ops


def load(path):
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh]


_TUPLE = re.compile(r"\(([^()]*)\)")


def same_up_to_order(e1, e2):
    """Whether two error texts differ only in the order of the items of their parenthesized
    tuples: JAX lists the dtypes of a TypePromotionError ("Input dtypes ('bool', 'int64') ...")
    in set order, which follows the process's hash seed."""
    def norm(e):
        return _TUPLE.sub(lambda m: "(" + ", ".join(sorted(x.strip() for x in m.group(1).split(","))) + ")", e)
    n1, n2 = norm(e1), norm(e2)
    k = min(len(n1), len(n2))  # texts are cut at 200 characters
    return n1[:k] == n2[:k]


def classify(ref, mine):
    out = []
    if (ref["error"] is None) != (mine["error"] is None) or ref.get("result") != mine.get("result"):
        out.append("result")
    elif ref["error"] != mine["error"]:
        out.append("error-order" if same_up_to_order(ref["error"], mine["error"]) else "error-text")
    for f in FIELDS:
        if ref.get(f) != mine.get(f):
            out.append(f)
    if any(ref.get(k) != mine.get(k) for k in ("a", "lo", "hi")):
        out.append("inputs")
    return out


def compare_file(ref_path, mine_path, show):
    ref, mine = load(ref_path), load(mine_path)
    by_key = {key_of(r): r for r in mine}
    stats, examples = collections.Counter(), collections.defaultdict(list)
    for r in ref:
        m = by_key.get(key_of(r))
        if m is None:
            cls = ["missing"]
        else:
            cls = classify(r, m)
        if not cls:
            stats["equal"] += 1
            continue
        if cls == ["error-order"]:
            stats["equal-but-order"] += 1
        for c in cls:
            stats[c] += 1
            if len(examples[c]) < show:
                examples[c].append((r, m))
    ref_ops = {r["op"] for r in ref}
    ref_keys = {key_of(r) for r in ref}
    extra = [m for m in mine if m["op"] in ref_ops and key_of(m) not in ref_keys]
    stats["extra"] = len(extra)
    for m in extra[:show]:
        examples["extra"].append((None, m))
    return len(ref), stats, examples


META_KEYS = ("dtypes_used", "dtypes_skipped", "input_dtype_changes", "ops_skipped", "functions",
             "clip_bounds", "clip_bounds_skipped", "counts")


def compare_meta(ref_meta, mine_meta):
    """Fields of the shared metadata (which describe the full record set, counts included) that
    differ in ours; 'crashes_or_hangs' and timings are not compared."""
    diffs = []
    for k in META_KEYS:
        if k not in ref_meta:
            continue
        a, b = ref_meta.get(k), mine_meta.get(k)
        if k == "counts" and isinstance(b, dict):
            b = {kk: vv for kk, vv in b.items() if kk in a}
        if k == "functions" and isinstance(b, dict):
            b = {api: {op: f for op, f in fns.items() if op in a.get(api, {})} for api, fns in b.items()}
        if a != b:
            diffs.append(f"{k}: shared {json.dumps(a)[:300]} | mine {json.dumps(b)[:300]}")
    return diffs


def brief(rec):
    if rec is None:
        return "-"
    keep = {k: rec[k] for k in ("result", "error", "weak_type", "in_dtypes", "warning", "values", "bits") if k in rec}
    s = json.dumps(keep)
    return s if len(s) < 400 else s[:400] + "..."


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mine", default=os.path.join(REPO, "tests", "observed"))
    ap.add_argument("--ref", default=os.path.join(REPO, "..", "shared", "oracle", "data"))
    ap.add_argument("--pattern", default="*.unary.jsonl.gz,unary-values.jsonl.gz")
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--meta", action="store_true",
                    help="also compare the .meta.json files (the shared ones count the full record set)")
    args = ap.parse_args(argv)
    pats = args.pattern.split(",")
    refs = sorted(p for p in glob.glob(os.path.join(args.ref, "*.jsonl.gz"))
                  if any(fnmatch.fnmatch(os.path.basename(p), pat) for pat in pats))
    total_ref = total_eq = 0
    worst = 100.0
    total_equiv = 0
    print(f"{'file':<40} {'ref':>6} {'equal':>6} {'match%':>7} {'equiv%':>7}  differences")
    for rp in refs:
        name = os.path.basename(rp)
        mp = os.path.join(args.mine, name)
        if not os.path.exists(mp):
            print(f"{name:<40} {'':>6} {'':>6} {'':>7}  (no such file in {args.mine})")
            worst = 0.0
            continue
        n, stats, examples = compare_file(rp, mp, args.show)
        eq = stats["equal"]
        equiv = eq + stats["equal-but-order"]
        pct = 100.0 * eq / n if n else 100.0
        pct_equiv = 100.0 * equiv / n if n else 100.0
        worst = min(worst, pct_equiv)
        total_ref += n
        total_eq += eq
        total_equiv += equiv
        diffs = ", ".join(f"{k} {v}" for k, v in sorted(stats.items()) if k not in ("equal", "equal-but-order") and v)
        print(f"{name:<40} {n:>6} {eq:>6} {pct:>6.2f}% {pct_equiv:>6.2f}%  {diffs}")
        for cls, exs in sorted(examples.items()):
            for r, m in exs:
                rec = r or m
                call = {k: rec[k] for k in ("op", "api", "case", "a", "b", "lo", "hi") if k in rec}
                if "a" in call and "value" in call["a"]:
                    call["a"] = {k: v for k, v in call["a"].items() if k != "value"}
                print(f"    [{cls}] {json.dumps(call)}\n        shared: {brief(r)}\n        mine:   {brief(m)}")
    if args.meta:
        print("metadata (shared *.unary.meta.json describe the full set: counts must match a full run):")
        for rp in sorted(glob.glob(os.path.join(args.ref, "*.unary.meta.json"))):
            name = os.path.basename(rp)
            mp = os.path.join(args.mine, name)
            if not os.path.exists(mp):
                print(f"  {name}: (no such file in {args.mine})")
                continue
            with open(rp) as f1, open(mp) as f2:
                diffs = compare_meta(json.load(f1), json.load(f2))
            print(f"  {name}: {'same' if not diffs else ''}")
            for d in diffs:
                print(f"      {d}")
        rp = os.path.join(args.ref, "unary-values.meta.json")
        mp = os.path.join(args.mine, "unary-values.meta.json")
        if os.path.exists(rp) and os.path.exists(mp):
            with open(rp) as f1, open(mp) as f2:
                ref_m, mine_m = json.load(f1), json.load(f2)
            print(f"  unary-values.meta.json: records {ref_m['records']} / {mine_m['records']}, cases "
                  f"{ref_m['cases']} / {mine_m['cases']}, families {ref_m['families']} / {mine_m['families']}")
            mine_cfg = {(c["fw"], c["config"]): c for c in mine_m["configs"]}
            for c in ref_m["configs"]:
                m = mine_cfg.get((c["fw"], c["config"]), {})
                for k in ("functions", "ops_skipped", "counts"):
                    a, b = c.get(k), m.get(k)
                    if k == "counts" and isinstance(b, dict):
                        b = {kk: vv for kk, vv in b.items() if kk in a}
                    print(f"      {c['fw']}-{c['config']} {k}: {'same' if a == b else f'shared {a} | mine {b}'}")
    if total_ref:
        print(f"total: {total_eq}/{total_ref} equal ({100.0 * total_eq / total_ref:.2f}%), "
              f"{total_equiv}/{total_ref} equal up to the order of items in error texts "
              f"({100.0 * total_equiv / total_ref:.2f}%)")
    return 0 if worst == 100.0 else 1


if __name__ == "__main__":
    sys.exit(main())
