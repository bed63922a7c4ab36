"""Which of PyTorch's functions refuse a Python scalar (or a numpy scalar), and where: the facts behind
the torch policy's SCALAR_REFUSALS table (gpupromote/promotion/policies/pytorch.py).

    python tools/probe_scalar_refusals.py     # needs torch (2.13.0+cpu when the table was written)

For every gp binary op, the torch function of the same op is called with a Python bool, int, float
and complex (and numpy scalars) first and second, beside bool, int32, int64, float32, float64 and
complex64 tensors. A call is a *refusal* when torch rejects the argument itself ("must be Tensor",
"received an invalid combination of arguments"), not the dtypes. Printed per op and position:
R (refused beside every tensor), . (never refused), or mix:... (refused beside some tensors only).
"""
import collections

import numpy as np
import torch

FUNCTIONS = {
    "add": torch.add, "subtract": torch.subtract, "multiply": torch.multiply, "true_divide": torch.true_divide,
    "floor_divide": torch.floor_divide, "remainder": torch.remainder, "fmod": torch.fmod, "power": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
    "equal": torch.eq, "not_equal": torch.ne, "less": torch.lt, "less_equal": torch.le, "greater": torch.gt,
    "greater_equal": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "left_shift": torch.bitwise_left_shift,
    "right_shift": torch.bitwise_right_shift, "arctan2": torch.atan2, "hypot": torch.hypot,
    "copysign": torch.copysign, "logaddexp": torch.logaddexp, "nextafter": torch.nextafter,
}
SCALARS = {"bool": True, "int": 2, "float": 2.0, "complex": 2 + 1j, "np.bool_": np.bool_(True),
           "np.int64": np.int64(2), "np.float64": np.float64(2.0), "np.float32": np.float32(2.0),
           "np.complex128": np.complex128(2 + 1j)}
TENSORS = [torch.ones(3, dtype=getattr(torch, d)) for d in ("bool", "int32", "int64", "float32", "float64", "complex64")]


def _refused(exc) -> bool:
    return "must be Tensor" in str(exc) or "invalid combination of arguments" in str(exc)


def _verdict(call) -> str:
    seen = set()
    for t in TENSORS:
        try:
            call(t)
            seen.add("taken")
        except Exception as exc:  # noqa: BLE001 - the exception is the observation
            seen.add("REFUSED" if _refused(exc) else "dtype error")
    if seen == {"REFUSED"}:
        return "R"
    return "mix:" + "/".join(sorted(seen)) if "REFUSED" in seen else "."


def main():
    rows = collections.defaultdict(dict)
    for op, fn in FUNCTIONS.items():
        for kind, s in SCALARS.items():
            rows[op][0, kind] = _verdict(lambda t, fn=fn, s=s: fn(s, t))
            rows[op][1, kind] = _verdict(lambda t, fn=fn, s=s: fn(t, s))
    cond = torch.tensor([True, False, True])
    for kind, s in SCALARS.items():   # torch.where(cond, x, y): x and y
        rows["where"][0, kind] = _verdict(lambda t, s=s: torch.where(cond, s, t))
        rows["where"][1, kind] = _verdict(lambda t, s=s: torch.where(cond, t, s))
    print(f"torch {torch.__version__}; columns: scalar kind @ position (0 first, 1 second)")
    print(f"{'op':<14}" + "".join(f"{k[:9] + '@' + str(p):>14}" for p in (0, 1) for k in SCALARS))
    for op, row in rows.items():
        print(f"{op:<14}" + "".join(f"{row[p, k]:>14}" for p in (0, 1) for k in SCALARS))


if __name__ == "__main__":
    main()
