"""Warm-up: compile (or load from the disk cache) a policy's common CPU kernels ahead of use, and
``python -m gpupromote warmup``.

Apart from the backend because nothing on a call's path needs it: it only asks ``kernel_for``
for kernels, as a first call would.
"""
from __future__ import annotations

import sys

import numpy as np

from ..core import dtypes as D
from ..engines.cpu.cache import WRITE_DIR
from ..engines.cpu.kernels import kernel_for
from ..engines.cpu.source import kernel_key

__all__ = ["common_plans", "warmup"]

# ---------------------------------------------------------------------------------------------
# Warm-up: compile a policy's common kernels ahead of time

_WARM_OPS = ("add", "subtract", "multiply", "true_divide", "maximum", "minimum", "equal", "less", "where")
_WARM_DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_WARM_PAIRS = (("int8", "float32"), ("int32", "float32"), ("int64", "float64"), ("float16", "float32"),
               ("bfloat16", "float32"), ("int32", "int64"), ("uint8", "int32"), ("float32", "float64"))


def common_plans(policy: str):
    """The plans ``warmup`` compiles: same-dtype pairs, common mixed pairs (both orders) and
    array-with-Python-scalar forms of the main ops; plans the policy refuses are skipped."""
    from ..dispatch.api import spec
    from ..promotion.resolve import resolve
    from ..dispatch.api import describe
    pairs = [(d, d) for d in _WARM_DTYPES] + list(_WARM_PAIRS) + [(b, a) for a, b in _WARM_PAIRS]
    seen, plans = set(), []
    for op in _WARM_OPS:
        combos = []
        for a, b in pairs:
            combos.append((spec(a), spec(b)))
        for d in _WARM_DTYPES:
            combos += [(spec(d), 2), (spec(d), 2.5)]
        for combo in combos:
            args = (spec("bool"), *combo) if op == "where" else combo
            try:
                plan = resolve(policy, op, [describe(x) for x in args])
            except (TypeError, ValueError, OverflowError):
                continue
            if kernel_key(plan) in seen or any(d.numpy is None for d in (*plan.inputs, plan.result)):
                continue
            seen.add(kernel_key(plan))
            plans.append(plan)
    return plans


def warmup(policy: str, progress=None, plans=None) -> int:
    """Compile (or load from the disk cache) the flat kernels of ``plans`` (default:
    ``common_plans(policy)``). ``progress(done, total, plan)`` is called after each one.
    Returns the number of kernels."""
    plans = common_plans(policy) if plans is None else plans
    for n, plan in enumerate(plans, 1):
        k = kernel_for(plan)
        args = []
        for d, f in zip(plan.inputs, plan.folded):
            target = D.bool_ if plan.op == "where" and not args else plan.compute
            args.append(target.numpy.type(1) if f else np.ones(4, d.numpy))
        out = np.empty(4, plan.result.numpy)
        k(args, out)
        if progress is not None:
            progress(n, len(plans), plan)
    return len(plans)


def _cmd_warmup(args) -> int:
    """``python -m gpupromote warmup --policy P``: compile with a progress bar."""
    import time

    from ..promotion.policies import get_policy
    get_policy(args.policy)   # an unknown policy is an error, not "0 kernels ready"
    width, start = 30, time.perf_counter()

    def bar(done, total, plan):
        filled = width * done // total
        label = f"{plan.op}({', '.join(d.name for d in plan.inputs)}) -> {plan.result.name}"
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:50]:<50}")
        sys.stderr.flush()

    n = warmup(args.policy, progress=bar)
    sys.stderr.write("\n")
    print(f"{n} kernels ready for policy {args.policy!r} in {time.perf_counter() - start:.1f} s "
          f"(cache: {WRITE_DIR})")
    return 0
