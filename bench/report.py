"""Print the ratio table of a pytest-benchmark JSON file (the resolver, CPU and GPU suites).

    python -m pytest bench/bench_cpu.py --benchmark-json=cpu.json
    python bench/report.py cpu.json

Speed ratio = the baseline's median / gpupromote's median (> 1: gpupromote is faster), per group,
with gpupromote's own goal for the case beside it (the speed the package set itself when the feature
was built; no other library's figure); then the rows that move a known number of bytes, as GB/s
and as a share of np.add(f32, f32, out=)'s rate in the same run. Compile and load rows have no
NumPy counterpart: their median (or the per-kernel time measured inside the new process) is
compared with the goal directly. "pool off" rows show the allocator's share and have no goal.

Each row writes its times in one unit (the goal's too), so that two figures of one quantity read
alike. Where this machine cannot reach a goal whatever the code does, the row says so instead of
"missed": all cores streaming from a memory system that gives NumPy's own add no more, or a goal
that asks for less time than moving the row's bytes takes at the run's reference rate.
"""
from __future__ import annotations

import json
import sys

# gpupromote's own goals: group prefix -> (goal, kind): "ratio" >= goal, or "time" <= goal seconds
GOALS = {
    "out= N=1e7 float16+float32": (5.0, "ratio"),  # kernel speed alone; NumPy converts float16 in software
    "out= N=1e7": (0.95, "ratio"),                  # (and >= 85% of np.add(f32, f32, out=)'s GB/s: below)
    "threads out= N=1e7 float16+float32": (1.7, "ratio"),   # all cores (2) against one thread
    "threads out= N=1e7 int8+float32": (1.7, "ratio"),
    "dispatch, all cores": (0.95, "ratio"),  # no slower than one thread (the same code runs; 5%: one run's noise)
    "dispatch: float32[1] + float32[1]": (0.8, "ratio"),   # >= 0.8x np.add
    "dispatch: int8[1] + Python int": (0.8, "ratio"),
    "N=1e7 float32+float32": (0.95, "ratio"),
    "N=1e7 int8+float32": (1.5, "ratio"),
    "N=1e7 int32+Python float": (1.5, "ratio"),
    "N=1e7 float16+float32": (5.0, "ratio"),
    "N=1e7 bfloat16+float32": (1.5, "ratio"),
    "cold compile": (0.100, "time"),
    "warm load": (0.005, "time"),
    "result_type": (1.0, "ratio"),
    "fuse a*b+c*d-e N=1e7 float32|numexpr": (1.0, "ratio"),  # >= 1.0x numexpr (one thread)
    "fuse a*b+c*d-e N=1e7 float32": (2.0, "ratio"),  # >= 2x NumPy eager
    "fuse a*b+c*d-e N=1e7 float16": (5.0, "ratio"),
    "fuse: cold compile": (0.150, "time"),
    "unary exp N=1e7 float32|numpy": (0.5, "ratio"),   # correctly rounded against NumPy's AVX-512 loops
    "unary log N=1e7 float32|numpy": (0.5, "ratio"),
    "unary tanh N=1e7 float32|numpy": (0.5, "ratio"),
    "unary sigmoid N=1e7 float32|numpy": (0.5, "ratio"),
    "unary exp N=1e7 float32 out= (no allocation)|numpy": (0.5, "ratio"),   # the kernels alone
    "unary log N=1e7 float32 out= (no allocation)|numpy": (0.5, "ratio"),
    "unary tanh N=1e7 float32 out= (no allocation)|numpy": (0.5, "ratio"),
    "unary tanh N=1e7 float16 out= (no allocation)|numpy": (3.0, "ratio"),
    "unary exp N=1e7 float16|numpy": (3.0, "ratio"),
    "unary log N=1e7 float16|numpy": (3.0, "ratio"),
    "unary tanh N=1e7 float16|numpy": (3.0, "ratio"),
    "unary sigmoid N=1e7 float16|numpy": (3.0, "ratio"),
    "unary exp N=1e7 bfloat16|numpy": (3.0, "ratio"),
    "unary log N=1e7 bfloat16|numpy": (3.0, "ratio"),
    "unary tanh N=1e7 bfloat16|numpy": (3.0, "ratio"),
    "unary sigmoid N=1e7 bfloat16|numpy": (3.0, "ratio"),
    "gelu tanh N=1e7 float32|numpy": (2.0, "ratio"),
    "gelu tanh N=1e7 float32|numexpr": (1.0, "ratio"),
    "gelu tanh N=1e7 float16|numpy": (5.0, "ratio"),
    "unary: cold compile": (0.100, "time"),
    "gelu: cold compile": (0.150, "time"),
    "fuse: warm load": (0.005, "time"),
    "reduce sum N=1e7 float32|numpy": (0.9, "ratio"),    # (and >= 85% of the reference GB/s: below)
    "reduce sum N=1e7 float16|numpy": (5.0, "ratio"),
    "reduce sum N=1e7 bfloat16|numpy": (5.0, "ratio"),
    "reduce fused sum(x*y) N=1e7 float32|numpy": (1.5, "ratio"),
    "softmax rows 4096x1024 float32|numpy": (2.0, "ratio"),   # fused, against NumPy eager; torch beside it
    "reduce: one call, sum of 100 float32|numpy": (1.0, "ratio"),   # the compiled dispatcher: no slower than np.sum
    "sanitize ": (1 / 1.5, "ratio"),   # gp.sanitize on: at most 1.5x the time of the call with it off
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


_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def _unit(seconds):
    """The largest unit in which ``seconds`` is at least 1 (ns below that)."""
    return next(((name, scale) for name, scale in _UNITS if seconds >= scale), _UNITS[-1])


def _fmt(seconds, unit=None):
    name, scale = unit or _unit(seconds)
    value = seconds / scale
    return f"{value:,.0f} {name}" if value >= 1000 else f"{value:.3g} {name}"   # 1,230 us, never 1.23e+03


def _memory_ceiling(groups):
    """All cores against one thread for NumPy's own add in this run (the "threads ceiling" row):
    what the memory system lets a streaming kernel gain from threads here; None when not measured."""
    ceiling = next((impls for group, impls in groups.items() if group.startswith("threads ceiling")), None)
    if not ceiling or not ceiling.get("all cores") or not ceiling.get("1 thread"):
        return None
    return ceiling["1 thread"] / ceiling["all cores"]


def _verdict(group, goal, ratio, ours, ceiling, theirs=None, floor=None):
    """"yes", "missed", or why this machine cannot reach the goal. ``floor``: the time the row's
    bytes take at the run's reference rate (None where the row does not say its bytes)."""
    if goal[1] == "time":
        return "yes" if ours is not None and ours <= goal[0] else "missed"
    if ratio is not None and ratio >= goal[0]:
        return "yes"
    streaming = group.startswith("threads out=") and "compute-bound" not in group
    if streaming and ceiling is not None and ceiling < goal[0]:
        reached = f", {ratio / ceiling:.0%} of it" if ratio else ""
        return f"machine limit: memory gives NumPy {ceiling:.2f}x{reached}"
    if floor is not None and theirs is not None and theirs / goal[0] < floor:
        unit = _unit(floor)
        return (f"machine limit: the goal asks {_fmt(theirs / goal[0], unit)}, its bytes take {_fmt(floor, unit)} "
                f"at the reference rate")
    return "missed"


def table(data: dict) -> str:
    """One row per group and baseline implementation (numpy, cupy, torch, ...): gpupromote's
    median, the baseline's, their ratio and gpupromote's own goal where it set one."""
    groups: dict = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        median = info.get("per_kernel_s", b["stats"]["median"])
        groups.setdefault(b["group"] or b["name"], {})[info.get("impl", "?")] = median
    ceiling = _memory_ceiling(groups)
    reference, moved = _reference_rate(data), _bytes_moved(data)
    rows = ["goal: the speed gpupromote set itself for the case (a ratio, or a time); met: yes, missed, or the "
            "machine's limit", "",
            f"{'case':<58} {'gpupromote':>11} {'baseline':>16} {'ratio':>7} {'goal':>9}  met"]
    for group, impls in groups.items():
        mine = "gpupromote" if "gpupromote" in impls else "all cores"   # the ceiling rows: NumPy on all cores
        ours = impls.get(mine)
        baselines = [(name, t) for name, t in impls.items() if name != mine] or [("-", None)]
        for name, theirs in baselines:
            goal = _goal(group, name)
            ratio = theirs / ours if ours and theirs else None
            times = [t for t in (ours, theirs, goal[0] if goal and goal[1] == "time" else None) if t]
            unit = _unit(min(times)) if times else None   # one unit for the row's times
            if goal is None:
                shown_goal, met = "", ""
            elif goal[1] == "ratio":
                floor = moved[group] / reference if reference and group in moved else None
                shown_goal, met = f">= {goal[0]:.2f}x", _verdict(group, goal, ratio, ours, ceiling, theirs, floor)
            else:
                shown_goal, met = f"<= {_fmt(goal[0], unit)}", _verdict(group, goal, ratio, ours, ceiling)
            base = f"{name} {_fmt(theirs, unit)}" if theirs else "-"
            rows.append(f"{group:<58} {_fmt(ours, unit) if ours else '-':>11} {base:>16} "
                        f"{f'{ratio:.2f}x' if ratio else '-':>7} {shown_goal:>9}  {met}")
    return "\n".join(rows) + _threads_against_the_ceiling(groups) + _bandwidth(data)


def _threads_against_the_ceiling(groups) -> str:
    """Each streaming "threads" row's all-core speed-up beside the memory system's (NumPy's add split
    over the same cores, same run): a kernel that streams from memory cannot scale past it."""
    limit = _memory_ceiling(groups)
    if limit is None:
        return ""
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


def _rates(data: dict) -> dict:
    """{group: {impl: bytes per second}} of the rows that say how many bytes they move."""
    rows = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if "bytes" in info:
            rows.setdefault(b["group"], {})[info.get("impl", "?")] = info["bytes"] / b["stats"]["median"]
    return rows


def _reference_rate(data: dict):
    """np.add(f32, f32, out=)'s bytes per second in this run (None where not measured)."""
    return next((impls.get("numpy") for group, impls in _rates(data).items() if group.startswith(_REFERENCE)), None)


def _bytes_moved(data: dict) -> dict:
    """{group: bytes gpupromote's row reads and writes}."""
    return {b["group"]: b["extra_info"]["bytes"] for b in data["benchmarks"]
            if "bytes" in b.get("extra_info", {}) and b["extra_info"].get("impl") == "gpupromote"}


def _bandwidth(data: dict) -> str:
    """The rows that say how many bytes they move (inputs read + output written), as GB/s and as
    a share of the reference row's rate (NumPy's float32 add into a preallocated out)."""
    rows = _rates(data)
    reference = _reference_rate(data)
    if not rows or not reference:
        return ""
    lines = ["", "", f"== bytes moved (inputs read + output written), GB/s; % of np.add(f32, f32, out=) "
                     f"({reference / 1e9:.1f} GB/s in this run); goal >= {_SHARE_GOAL:.0%} on one thread",
             f"{'case':<58} {'impl':>11} {'GB/s':>7} {'% ref':>7}  met"]
    for group, impls in rows.items():
        for impl, rate in impls.items():
            goal = group.startswith(("out= ", "reduce sum N=1e7 float32")) and impl == "gpupromote"
            met = ("yes" if rate >= _SHARE_GOAL * reference else "missed") if goal else ""
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
