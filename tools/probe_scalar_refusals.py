"""Probe torch 2.13 CPU: which function forms of gp's binary ops refuse a Python / numpy scalar."""
import numpy as np, torch, collections
FUNCS = {"add": torch.add, "subtract": torch.subtract, "multiply": torch.multiply, "true_divide": torch.true_divide,
 "floor_divide": torch.floor_divide, "remainder": torch.remainder, "fmod": torch.fmod, "power": torch.pow,
 "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
 "equal": torch.eq, "not_equal": torch.ne, "less": torch.lt, "less_equal": torch.le, "greater": torch.gt,
 "greater_equal": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
 "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
 "bitwise_xor": torch.bitwise_xor, "left_shift": torch.bitwise_left_shift, "right_shift": torch.bitwise_right_shift,
 "arctan2": torch.atan2, "hypot": torch.hypot, "copysign": torch.copysign, "logaddexp": torch.logaddexp,
 "nextafter": torch.nextafter}
SCALARS = {"bool": True, "int": 2, "float": 2.0, "complex": 2 + 1j,
           "np.bool_": np.bool_(True), "np.int64": np.int64(2), "np.float64": np.float64(2.0),
           "np.float32": np.float32(2.0), "np.complex128": np.complex128(2 + 1j)}
TENSORS = {d: torch.ones(3, dtype=getattr(torch, d)) for d in ("bool", "int32", "int64", "float32", "float64", "complex64")}
def refusal(e):
    s = str(e)
    return "must be Tensor" in s or "invalid combination of arguments" in s
rows = collections.defaultdict(dict)
for op, f in FUNCS.items():
    for kind, s in SCALARS.items():
        for pos in (0, 1):
            verdicts = set()
            for d, t in TENSORS.items():
                try:
                    f(s, t) if pos == 0 else f(t, s)
                    verdicts.add("ok")
                except Exception as e:
                    verdicts.add("REFUSED" if refusal(e) else "other")
            rows[op][(pos, kind)] = "R" if verdicts == {"REFUSED"} else ("mix:" + "/".join(sorted(verdicts)) if "REFUSED" in verdicts else ".")
# where(cond, x, y)
c = torch.tensor([True, False, True])
for kind, s in SCALARS.items():
    for pos in (1, 2):
        verdicts = set()
        for d, t in TENSORS.items():
            try:
                torch.where(c, s, t) if pos == 1 else torch.where(c, t, s)
                verdicts.add("ok")
            except Exception as e:
                verdicts.add("REFUSED" if refusal(e) else "other")
        rows["where"][(pos - 1, kind)] = "R" if verdicts == {"REFUSED"} else ("mix:" + "/".join(sorted(verdicts)) if "REFUSED" in verdicts else ".")
kinds = list(SCALARS)
print(f"{'op':<14}" + "".join(f"{k[:8]+'@'+str(p):>12}" for p in (0, 1) for k in kinds))
for op, r in rows.items():
    print(f"{op:<14}" + "".join(f"{r[(p, k)]:>12}" for p in (0, 1) for k in kinds))
# messages
for op in ("maximum", "equal", "add"):
    for pos in (0, 1):
        try:
            FUNCS[op](2.0, TENSORS["float32"]) if pos == 0 else FUNCS[op](TENSORS["float32"], 2.0)
        except Exception as e:
            print(op, pos, type(e).__name__, str(e).splitlines()[0][:160])
