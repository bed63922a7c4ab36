"""python -m gpupromote table | diff | audit | explain | warmup | kernels | docs | config, and --version"""
from __future__ import annotations

import argparse
import os
import re
import sys

from ..core import dtypes as D
from ..core.ops import op_named

def _kinds(text):
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in ("t", "z", "s")]
    if bad or not kinds:
        raise ValueError(f"--kinds {text!r}: use a comma-separated list of t (arrays), z (0-d arrays), "
                         f"s (Python scalars)")
    return kinds


def _op(name):
    """The op's NumPy name (aliases accepted); an unknown name is an error, not a grid of refusals."""
    return op_named(name).name


def _write_picture(args, figure_fn, *fn_args):
    for path in filter(None, (getattr(args, "png", None), getattr(args, "svg", None))):
        figure_fn(*fn_args, path=path)
        print(f"wrote {path}")


def _cmd_table(args):
    from .tables import grid
    g = grid(args.policy, _op(args.op), _kinds(args.kinds))
    print(g.markdown() if args.markdown else g.text())
    if args.png or args.svg:
        from . import plots
        _write_picture(args, plots.table_figure, g)


def _cmd_diff(args):
    from .tables import diff_cells
    ga, gb, cells = diff_cells(args.a, args.b, _op(args.op), _kinds(args.kinds))
    if args.markdown:
        print(f"| | | `{args.a}` | `{args.b}` |\n|---|---|---|---|")
        print("\n".join(f"| `{r}` | `{c}` | {x} | {y} |" for r, c, x, y in cells))
    else:
        print(f"{len(cells)} of {len(ga.cells)} cells differ between {args.a} and {args.b} ({args.op}):")
        print("\n".join(f"  {r} + {c:<6} {args.a}: {x:<4} {args.b}: {y}" for r, c, x, y in cells))
    if args.png or args.svg:
        from . import plots
        _write_picture(args, plots.diff_figure, ga, gb)


def _cmd_audit(args):
    from .tables import audit
    report = audit(args.policy, _op(args.op))
    name = lambda d: d.name if d is not None else "refused"  # noqa: E731
    print(f"audit of {args.policy} ({args.op}, arrays with dimensions)")
    print(f"non-commutative cells: {len(report['non_commutative'])}")
    for a, b, ab, ba in report["non_commutative"]:
        print(f"  {a.name} + {b.name} -> {name(ab)}, but {b.name} + {a.name} -> {name(ba)}")
    print(f"non-associative triples: {len(report['non_associative'])}")
    for a, b, c, left, right in report["non_associative"][:args.show]:
        print(f"  ({a.name} + {b.name}) + {c.name} -> {name(left)}, {a.name} + ({b.name} + {c.name}) -> {name(right)}")
    print(f"lossy results (the result cannot hold every value of both inputs): {len(report['lossy'])}")
    for a, b, r in report["lossy"][:args.show]:
        print(f"  {a.name} + {b.name} -> {r.name}")
    print(f"silent widenings to 64-bit: {len(report['widened_to_64'])}")
    for a, b, r in report["widened_to_64"][:args.show]:
        print(f"  {a.name} + {b.name} -> {r.name}")
    if args.png or args.svg:
        from . import plots
        _write_picture(args, lambda *a, path: plots.audit_figure(*a, path=path, op=args.op), args.policy, report)


def _cmd_explain(args):
    """Print which rules fire, step by step and policy by policy; the exit status is 1 when a
    policy refuses a step (the account says why)."""
    from .expression import explain_expression
    from ..promotion.policies import get_policy
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    for p in policies or [""]:
        get_policy(p)
    text, taken = explain_expression(" ".join(args.expression), policies)
    print(text)
    return 0 if taken else 1


def _picture_path(fmt):
    """An argparse type: a file name that ends in ``.<fmt>`` (matplotlib picks the format by the
    suffix, and a name without one would be written as a PNG under another name)."""
    def check(text):
        if os.path.splitext(text)[1].lower() != f".{fmt}":
            raise argparse.ArgumentTypeError(f"--{fmt} {text!r}: the file name must end in .{fmt} (the picture's "
                                             f"format is its suffix), e.g. --{fmt} {os.path.splitext(text)[0] or 'table'}.{fmt}")
        return text
    check.__name__ = f"{fmt} file"
    return check


def _add_picture_options(p):
    p.add_argument("--png", type=_picture_path("png"), metavar="FILE.png",
                   help="also draw the picture into this PNG file (needs matplotlib)")
    p.add_argument("--svg", type=_picture_path("svg"), metavar="FILE.svg",
                   help="also draw the picture into this SVG file (needs matplotlib)")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error reported on one line (status 2) like every other error."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        sys.exit(2)


def build_parser():
    import gpupromote
    ap = _Parser(prog="python -m gpupromote", description="dtype promotion rules, side by side")
    ap.add_argument("--version", action="version", version=f"gpupromote {gpupromote.__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("table", help="the N x N promotion grid of a policy in 2-char codes")
    p.add_argument("policy")
    p.add_argument("--op", default="add")
    p.add_argument("--kinds", default="t", help="column operand kinds: t arrays, z 0-d arrays, s Python scalars")
    p.add_argument("--markdown", action="store_true")
    _add_picture_options(p)
    p = sub.add_parser("diff", help="the cells where two policies differ")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--op", default="add")
    p.add_argument("--kinds", default="t")
    p.add_argument("--markdown", action="store_true")
    _add_picture_options(p)
    p = sub.add_parser("audit", help="non-commutative, non-associative, lossy and 64-bit-widening promotions")
    p.add_argument("policy")
    p.add_argument("--op", default="add")
    p.add_argument("--show", type=int, default=10, help="examples to list per finding")
    _add_picture_options(p)
    p = sub.add_parser("explain", help="which rules fire for an expression, step by step, under one policy or several")
    p.add_argument("--policy", default="numpy", help="a policy, or several side by side: numpy,torch,paddle")
    p.add_argument("expression", nargs="+", help="e.g. 'int32[3] * 2.5 + float16[3]', 'maximum(int8[3], 2.0)' or "
                   "'where(bool[3], int8[3], 1.5)' (quoting is optional)")
    for name, (helptext, register) in _EXTRA.items():
        register(sub.add_parser(name, help=helptext))
    return ap


def _register_warmup(p):
    p.add_argument("--policy", default="numpy")
    p.set_defaults(func=_lazy("gpupromote.tools.warmup", "_cmd_warmup"))


def _register_kernels(p):
    p.add_argument("--op", required=True, help="op name or alias, e.g. add or mul")
    p.add_argument("--dtypes", required=True, help="comma-separated operand dtypes, e.g. float16,float32")
    p.add_argument("--policy", default=None, help="promotion policy (default: the current one, numpy)")
    p.add_argument("--scalar", action="store_true", help="make the last operand a Python scalar of its kind (folded)")
    p.add_argument("--variant", default=None,
                   help="contig (default: vectorized), scalar (contiguous, no vector loads), strided[NDIM][_32|_64]")
    p.set_defaults(func=_cmd_kernels)


def _kernel_operands(op, dtypes_, scalar, ndim):
    from ..dispatch.api import spec
    names = [s.strip() for s in dtypes_.split(",") if s.strip()]
    operands = [spec(n, ndim=ndim) for n in names]   # an unknown dtype is refused first
    the_op = op_named(op)
    # where's condition may be left out (a bool array is put first)
    takes = (2, 3) if the_op.name == "where" else (the_op.arity,)
    if len(names) not in takes:
        example = (["bool"] if the_op.name == "where" else []) + ["float16", "float32", "int8"]
        raise ValueError(f"--op {op} takes {' or '.join(map(str, takes))} operand(s), --dtypes names {len(names)} "
                         f"({', '.join(names) or 'none'}): one dtype per operand, e.g. --dtypes "
                         f"{','.join(example[:takes[0]])}")
    if scalar:  # the last operand becomes a Python scalar of its kind: a folded, by-value parameter
        last = D.dtype(names[-1])
        operands[-1] = {"b": True, "u": 1, "i": 1, "f": 1.0, "c": 1j}[last.kind]
    if op_named(op).name == "where" and len(operands) == 2:
        operands.insert(0, spec("bool", ndim=ndim))
    return operands


def _kernel_variant(text, kernel):
    from ..engines.cuda import source as S
    if text in (None, "contig", "vec"):
        return ("contig", S.vector_width(kernel))
    if text == "scalar":
        return ("contig", 1)
    m = re.fullmatch(r"strided(\d+)?(?:_(32|64))?", text)
    if m:
        return ("strided", int(m.group(1) or 2), int(m.group(2) or 64))
    raise SystemExit(f"--variant must be contig, scalar or strided[NDIM][_32|_64], not {text!r}")


def _cmd_kernels(args) -> int:
    """Print the CUDA source gpupromote generates for an op on operands of given dtypes."""
    from ..dispatch.api import get_policy_name, plan_for
    from ..engines.cuda import source as S
    operands = _kernel_operands(args.op, args.dtypes, args.scalar, 1)
    plan = plan_for(args.op, operands, policy=args.policy or get_policy_name())
    kernel = S.as_kernel(plan)
    variant = _kernel_variant(args.variant, kernel)
    print(f"// plan: {plan}")
    print(f"// kernel {S.kernel_name(kernel, variant)}, launched with the parameters described in "
          f"gpupromote/engines/cuda/source.py")
    print(S.kernel_source(kernel, variant))
    return 0


def _register_docs(p):
    p.add_argument("--out", default="docs")
    p.set_defaults(func=_lazy("gpupromote.tools.docs", "_cmd_docs"))


def _register_config(p):
    p.set_defaults(func=lambda args: _show_config())


def _show_config():
    import gpupromote
    gpupromote.show_config()


def _register_conformance(p):
    p.add_argument("--data", action="append", metavar="DIR",
                   help="a folder of record files (repeatable; default: tests/observed of this clone)")
    p.add_argument("--policy", help="score only this policy's files")
    p.add_argument("--family", default="binary,unary,clip,reduction",
                   help="comma list of the record kinds to score: binary, unary, clip, reduction (default: all)")
    p.add_argument("--show", type=int, default=5, help="disagreements to print per file (default 5)")
    p.add_argument("--min", type=float, default=None, help="exit 1 if a file scores below this percent")
    p.set_defaults(func=_cmd_conformance)


def _cmd_conformance(args) -> int:
    from . import conformance
    families = tuple(f.strip() for f in args.family.split(",") if f.strip())
    bad = [f for f in families if f not in conformance.FAMILIES]
    if bad or not families:
        raise ValueError(f"--family {args.family!r}: use a comma list of {', '.join(conformance.FAMILIES)}")
    folders = args.data or [conformance.repository_records()]
    if folders == [None]:
        raise ValueError("no records to score: this installation has no tests/observed (a clone of the repository "
                         "has); pass --data DIR")
    return conformance.run(folders, policy=args.policy, families=families, show=args.show, minimum=args.min)


def _lazy(module, attr):
    def run(args):
        import importlib
        return getattr(importlib.import_module(module), attr)(args)
    return run


# Subcommands whose code lives with what they drive (backends, docs), imported only when used;
# `kernels` lives here, as the code generator imports nothing of the resolver.
_EXTRA = {"warmup": ("compile a policy's common CPU kernels ahead of use", _register_warmup),
          "kernels": ("print the generated CUDA source of a kernel", _register_kernels),
          "docs": ("regenerate the pictures and markdown tables under docs/", _register_docs),
          "conformance": ("score the policies against records of the real frameworks", _register_conformance),
          "config": ("what this installation is made of: versions, fast path, threads, caches, GPU",
                     _register_config)}

_COMMANDS = {"table": _cmd_table, "diff": _cmd_diff, "audit": _cmd_audit, "explain": _cmd_explain}


def main(argv=None):
    """Run one command; 0 on success, 1 (with one line on stderr, no traceback) on any error, 2 on a
    usage error. A closed stdout (``| head``) ends the command quietly."""
    args = build_parser().parse_args(argv)
    func = getattr(args, "func", None) or _COMMANDS[args.command]
    try:
        status = func(args) or 0
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # why: the reader went away (| head); Python would report the flush at exit once more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - every error ends as one line, never a traceback
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        sys.stderr.write(f"python -m gpupromote {args.command}: error: {message}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
