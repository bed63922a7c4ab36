"""Print the ratio table of a pytest-benchmark JSON file (the resolver, CPU and GPU suites).

    python -m pytest bench/bench_cpu.py --benchmark-json=cpu.json
    python bench/report.py cpu.json

Speed ratio = the baseline's median / gpupromote's median (> 1: gpupromote is faster), per group,
with the goal the issues set beside it; then the rows that move a known number of bytes, as GB/s
and as a share of np.add(f32, f32, out=)'s rate in the same run. Compile and load rows have no
NumPy counterpart: their median (or the per-kernel time measured inside the new process) is
compared with the goal directly. "pool off" rows show the allocator's share and have no goal.
"""
from __future__ import annotations

import json
import sys

# group prefix -> (goal, kind): "ratio" >= goal, or "time" <= goal seconds
GOALS = {
    "out= N=1e7 float16+float32": (5.0, "ratio"),  # issue 12: kernel speed alone, NumPy converts float16 in software
    "out= N=1e7": (0.95, "ratio"),                  # issue 12 (and >= 85% of np.add(f32, f32, out=)'s GB/s: below)
    "threads out= N=1e7 float16+float32": (1.7, "ratio"),   # issue 12: all cores (2) against one thread
    "threads out= N=1e7 int8+float32": (1.7, "ratio"),
    "dispatch, all cores": (0.95, "ratio"),  # issue 12: no slower than one thread (the same code runs; 5%: one run's noise)
    "dispatch: float32[1] + float32[1]": (0.8, "ratio"),   # issue 12: >= 0.8x np.add
    "dispatch: int8[1] + Python int": (0.8, "ratio"),
    "N=1e7 float32+float32": (0.95, "ratio"),
    "N=1e7 int8+float32": (1.5, "ratio"),
    "N=1e7 int32+Python float": (1.5, "ratio"),
    "N=1e7 float16+float32": (5.0, "ratio"),
    "N=1e7 bfloat16+float32": (1.5, "ratio"),
    "cold compile": (0.100, "time"),
    "warm load": (0.005, "time"),
    "result_type": (1.0, "ratio"),
    "fuse a*b+c*d-e N=1e7 float32|numexpr": (1.0, "ratio"),  # issue 9: >= 1.0x numexpr (one thread)
    "fuse a*b+c*d-e N=1e7 float32": (2.0, "ratio"),  # issue 9: >= 2x NumPy eager
    "fuse a*b+c*d-e N=1e7 float16": (5.0, "ratio"),
    "fuse: cold compile": (0.150, "time"),
    "fuse: warm load": (0.005, "time"),  # issue 2: no slower than np.result_type (stretch: 0.6x its time, 1.67x)
}


def _goal(group, baseline=None):
    """The goal of a group (a key "prefix|baseline" sets one for that baseline only)."""
    if group.endswith("pool off"):
        return None
    for key, goal in GOALS.items():
        prefix, _, only = key.partition("|")
        if group.startswith(prefix) and only in ("", baseline):
            return goal
    return None


def _fmt(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def table(data: dict) -> str:
    """One row per group and baseline implementation (numpy, cupy, torch, ...): gpupromote's
    median, the baseline's, their ratio and the goal where the issues set one."""
    groups: dict = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        median = info.get("per_kernel_s", b["stats"]["median"])
        groups.setdefault(b["group"] or b["name"], {})[info.get("impl", "?")] = median
    rows = [f"{'case':<58} {'gpupromote':>11} {'baseline':>16} {'ratio':>7} {'goal':>9}  met"]
    for group, impls in groups.items():
        mine = "gpupromote" if "gpupromote" in impls else "all cores"   # the ceiling rows: NumPy on all cores
        ours = impls.get(mine)
        baselines = [(name, t) for name, t in impls.items() if name != mine] or [("-", None)]
        for name, theirs in baselines:
            goal = _goal(group, name)
            ratio = theirs / ours if ours and theirs else None
            if goal is None:
                shown_goal, met = "", ""
            elif goal[1] == "ratio":
                shown_goal, met = f">= {goal[0]:.2f}x", "yes" if ratio is not None and ratio >= goal[0] else "NO"
            else:
                shown_goal, met = f"<= {_fmt(goal[0])}", "yes" if ours is not None and ours <= goal[0] else "NO"
            base = f"{name} {_fmt(theirs)}" if theirs else "-"
            rows.append(f"{group:<58} {_fmt(ours) if ours else '-':>11} {base:>16} "
                        f"{f'{ratio:.2f}x' if ratio else '-':>7} {shown_goal:>9}  {met}")
    return "\n".join(rows) + _threads_against_the_ceiling(groups) + _bandwidth(data)


def _threads_against_the_ceiling(groups) -> str:
    """Each streaming "threads" row's all-core speed-up beside the memory system's (NumPy's add split
    over the same cores, same run): a kernel that streams from memory cannot scale past it."""
    ceiling = next((impls for group, impls in groups.items() if group.startswith("threads ceiling")), None)
    if not ceiling or not ceiling.get("all cores") or not ceiling.get("1 thread"):
        return ""
    limit = ceiling["1 thread"] / ceiling["all cores"]
    lines = ["", "", f"== all cores against one thread; the memory system gives NumPy's add {limit:.2f}x in this run",
             f"{'case':<58} {'speed-up':>9} {'of the ceiling':>15}"]
    for group, impls in groups.items():
        streaming = group.startswith("threads out=") and "compute-bound" not in group
        if streaming and impls.get("gpupromote") and impls.get("1 thread"):
            speedup = impls["1 thread"] / impls["gpupromote"]
            lines.append(f"{group:<58} {speedup:>8.2f}x {speedup / limit:>14.0%}")
    return "\n".join(lines)


_REFERENCE = "out= N=1e7 float32+float32"   # np.add(f32, f32, out=): the memory rate a kernel can reach
_SHARE_GOAL = 0.85


def _bandwidth(data: dict) -> str:
    """The rows that say how many bytes they move (inputs read + output written), as GB/s and as
    a share of the reference row's rate (NumPy's float32 add into a preallocated out)."""
    rows = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if "bytes" in info:
            rows.setdefault(b["group"], {})[info.get("impl", "?")] = info["bytes"] / b["stats"]["median"]
    reference = next((impls.get("numpy") for group, impls in rows.items() if group.startswith(_REFERENCE)), None)
    if not rows or not reference:
        return ""
    lines = ["", "", f"== bytes moved (inputs read + output written), GB/s; % of np.add(f32, f32, out=) "
                     f"({reference / 1e9:.1f} GB/s in this run); goal >= {_SHARE_GOAL:.0%} on one thread",
             f"{'case':<58} {'impl':>11} {'GB/s':>7} {'% ref':>7}  met"]
    for group, impls in rows.items():
        for impl, rate in impls.items():
            goal = group.startswith("out= ") and impl == "gpupromote"
            met = ("yes" if rate >= _SHARE_GOAL * reference else "NO") if goal else ""
            lines.append(f"{group:<58} {impl:>11} {rate / 1e9:>7.1f} {rate / reference:>7.0%}  {met}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__)
        return 2
    with open(argv[0]) as f:
        print(table(json.load(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
