"""CUDA C++ source for an ir.Kernel (one plan, or a fused chain). Pure text: imports neither
cupy nor CUDA, so CI can generate and NVRTC-compile every kernel on a machine without a GPU.

A compiled kernel is one ir.Kernel and one *variant*:

    ("contig", N)            all array operands and the output contiguous in the same order and of
                             the output's size: a flat loop, N elements per thread per step read
                             with aligned vector loads (N = 1: the same loop without them)
    ("strided", ndim, bits)  anything else (broadcast, strided, negative strides): the index of each
                             operand from shape and byte strides, in ``bits``-bit (32 or 64) integers

The generated functor reads every array operand in its own storage type, evaluates the IR's DAG
one local per node (casts as gpupromote_elementwise.cuh's gp_cast and the narrow loads / stores,
each op's expression as core/ops.py chose it: the same text the Numba generator reads) and converts
the value once to the output's storage type. A folded operand (a Python scalar or a 0-d host
array) is a by-value kernel parameter already in the type the IR gives it, the pattern of
PyTorch's ``opmath_symmetric_gpu_kernel_with_scalars``. The generator never sees a plan's policy.

Kernel parameters, in order (the launcher in _cuda_launch.py passes exactly these):
    long long n
    one parameter per folded operand i: ``s<i>`` of its C type; a complex one is passed as two
        parameters ``s<i>_re, s<i>_im`` of its part type; a condition is a ``bool``
    the output pointer, then one pointer per array operand (storage types; ``char*`` for strided)
    kernels with checks: ``unsigned char* gp_flags``, one byte per check, set to 1 when it fires
    strided only: the ``ndim`` extents, then ``ndim`` byte strides for the output and for each
        array operand, outermost dimension first
"""
from __future__ import annotations

import re

from ...core import dtypes as D
from ...kernel import ir
from . import math as owned_math

__all__ = ["storage_ctype", "compute_ctype", "vector_width", "vector_alignment", "kernel_name", "kernel_code",
           "kernel_source", "translation_unit", "needs_complex", "scalar_parameters", "cast_plan",
           "NVRTC_OPTIONS", "HEADERS", "unsupported", "UnsupportedPlan", "flushes_subnormals", "as_kernel",
           "cast_text", "apply_text", "const_text", "round_to_narrow_text", "STORE_FUNCTIONS", "LOADS", "prologue"]

# Compile options every gpupromote kernel is built with (on top of -std, -arch and -I).
# why: no -ftz (CuPy's own kernels flush float32 subnormals; NumPy and the CPU engine do not) and
# -fmad=false (the CPU engine never contracts a*b+c into one rounding; NVCC does by default).
NVRTC_OPTIONS = ("-fmad=false",)
HEADERS = ("gpupromote_math.cuh", "gpupromote_elementwise.cuh")
UNARY_HEADER = "gpupromote_unary.cuh"   # after the owned math's glue, whose helpers it calls

#          code   storage C type      load         register (carrier) type
_STORAGE = {"b1": ("unsigned char",      "gp_ld_b1",  "bool"),
            "u1": ("unsigned char",      None,        "unsigned char"),
            "u2": ("unsigned short",     None,        "unsigned short"),
            "u4": ("unsigned int",       None,        "unsigned int"),
            "u8": ("unsigned long long", None,        "unsigned long long"),
            "i1": ("signed char",        None,        "signed char"),
            "i2": ("short",              None,        "short"),
            "i4": ("int",                None,        "int"),
            "i8": ("long long",          None,        "long long"),
            "e4": ("unsigned char",      "gp_ld_e4",  "float"),   # why: float8_e4m3fn bits; ml_dtypes rules
            "e5": ("unsigned char",      "gp_ld_e5",  "float"),
            "f2": ("unsigned short",     "gp_ld_f2",  "float"),   # why: bits, so no cuda_fp16.h is needed
            "bf": ("unsigned short",     "gp_ld_bf",  "float"),
            "f4": ("float",              None,        "float"),
            "f8": ("double",             None,        "double"),
            "c4": ("gp_c32",             "gp_ld_c4",  "complex<float>"),
            "c8": ("gp_c64",             "gp_ld_c8",  "complex<float>"),
            "c16": ("gp_c128",           "gp_ld_c16", "complex<double>")}

# The store of each output dtype whose storage is not its register type (a C cast otherwise).
_STORE = {"b1": "gp_st_b1", "e4": "gp_st_e4", "e5": "gp_st_e5", "f2": "gp_st_f2", "bf": "gp_st_bf",
          "c4": "gp_st_c4", "c8": "gp_st_c8", "c16": "gp_st_c16"}
_NARROW_CODES = ("f2", "bf", "e4", "e5")

# Compute kinds the helpers of the two headers are defined on; C operators take any kind the op
# accepts. A plan a policy admits beyond these has no CUDA kernel (UnsupportedPlan).
_HELPER_KINDS = {"gp_floor_divide": "buif", "gp_remainder": "buif", "gp_fmod": "buif", "gp_power": "bui",
                 "gp_maximum": "buifc", "gp_minimum": "buifc", "gp_fmax": "buifc", "gp_fmin": "buifc",
                 "gp_left_shift": "ui", "gp_right_shift": "ui", "gp_atan2": "f", "gp_hypot": "f", "gp_powerf": "f",
                 "gp_power_complex": "c", "gp_cbrt": "f", "gp_erf": "f", "gp_reciprocal_div": "c",
                 "gp_copysign": "f", "gp_logaddexp": "f", "gp_nextafter": "f", "gp_floor_divide_xla": "buif",
                 "gp_remainder_xla": "buif", "gp_abs": "buifc", "gp_not": "b", "gp_cmul": "c", "gp_cdiv": "c",
                 "gp_clt": "c", "gp_cle": "c", "gp_cgt": "c", "gp_cge": "c"}


class UnsupportedPlan(TypeError):
    """The kernel uses an op that has no CUDA implementation for its compute dtype."""


def as_kernel(k) -> ir.Kernel:
    """An ir.Kernel, or the one-node kernel of a Plan."""
    return k if isinstance(k, ir.Kernel) else ir.from_plan(k)


def unsupported(k) -> str | None:
    """Why no CUDA kernel can be generated for ``k`` (an ir.Kernel or a Plan), None when one can."""
    kernel = as_kernel(k)
    for node in kernel.steps():
        if isinstance(node, ir.Apply):
            for helper in re.findall(r"(gp_\w+)\(", node.expr):
                kinds = _HELPER_KINDS.get(helper)
                if kinds is not None and node.compute.kind not in kinds:
                    return (f"{node.op} has no CUDA kernel for {node.compute.name} ({helper} is defined on "
                            f"kinds {kinds!r}): cast the operands explicitly")
            if node.compute.is_narrow_float or node.compute.code == "c4":
                return f"{node.compute.name} is not a compute dtype (plans compute narrow floats in float32)"
    return None


def cast_plan(src, dst) -> ir.Kernel:
    """The kernel of astype: ``src`` read, converted as NumPy / ml_dtypes casts, stored as ``dst``."""
    return ir.cast_kernel(src, dst)


def _code(dt) -> str:
    return D.dtype(dt).code


def storage_ctype(dt) -> str:
    """The C type an element of ``dt`` is stored in (bit patterns for narrow floats)."""
    return _STORAGE[_code(dt)][0]


def compute_ctype(dt) -> str:
    """The C type a value of ``dt`` lives in: its carrier (float for narrow floats, complex<float>
    for complex32)."""
    return _STORAGE[_code(dt)][2]


def flushes_subnormals(k) -> bool:
    """Whether the kernel flushes subnormals (XLA's FTZ / DAZ, a plan flag)."""
    return any(isinstance(n, ir.Apply) and n.op == "_flush" for n in as_kernel(k).steps())


def needs_complex(k) -> bool:
    """Whether the kernel needs CuPy's complex<T> (cupy/complex.cuh)."""
    return any(d.kind == "c" for d in as_kernel(k).dtypes())


def vector_width(k) -> int:
    """Elements per thread per step of the contiguous kernel: 16 bytes of the narrowest operand
    (the output included), at most 64 bytes of the widest, so wide operands do not eat registers."""
    kernel = as_kernel(k)
    sizes = [kernel.params[i].dtype.itemsize for i in kernel.arrays] + [kernel.out.itemsize]
    return max(1, min(16 // min(sizes), 64 // max(sizes)))


def vector_alignment(dt, width: int) -> int:
    """The byte alignment a data pointer of ``dt`` needs for the contiguous kernel of ``width``."""
    return min(16, D.dtype(dt).itemsize * width)


def scalar_parameters(k):
    """[(operand index, C type, complex split)] of the folded operands, in parameter order."""
    out = []
    for p in as_kernel(k).params:
        if not p.folded:
            continue
        if p.dtype.kind == "c":
            out.append((p.index, "double" if p.dtype.itemsize == 16 else "float", True))
        else:
            out.append((p.index, compute_ctype(p.dtype), False))
    return out


def _variant_suffix(variant) -> str:
    if variant[0] == "contig":
        return f"v{int(variant[1])}"
    if variant[0] == "strided":
        return f"s{int(variant[1])}_{int(variant[2])}"
    raise ValueError(f"unknown kernel variant {variant!r}: ('contig', N) or ('strided', ndim, 32|64)")


def kernel_name(k, variant) -> str:
    """A readable, unique C identifier for (kernel, variant): gp_add_f2_f4_rf2_<IR digest>_v8. A
    folded operand is spelled ``s``: the kernel only sees its value."""
    kernel = as_kernel(k)
    ins = "_".join("s" if p.folded else p.dtype.code for p in kernel.params)
    label = re.sub(r"\W", "_", kernel.label)[:24]
    return f"gp_{label}_{ins}_r{kernel.out.code}_{kernel.digest}_{_variant_suffix(variant)}"


# ---------------------------------------------------------------------------------------------
# The functor

def _cast(expr: str, src: D.DType, dst: D.DType) -> str:
    """C converting ``expr`` (a value of ``src`` in its carrier type) to ``dst``'s carrier, as NumPy /
    ml_dtypes astype converts."""
    if src is dst:
        return expr
    if dst.kind == "b":
        return f"gp_truth({expr})"
    if dst.code == "f2" and compute_ctype(src) == "float":
        return f"gp_round_f2({expr})"   # gp_ld_f2(gp_st_f2(...)) in fewer instructions
    if dst.code in _NARROW_CODES:
        return f"gp_ld_{dst.code}({_round_to_narrow(expr, src, dst)})"
    if dst.code == "c4":
        return f"gp_ld_c4(gp_st_c4({_cast(expr, src, D.complex64)}))"
    if src.code in _NARROW_CODES and dst is D.float32:
        return expr   # the carrier already is float32
    if src.code in ("e4", "e5") and dst.kind in "ui":   # ml_dtypes' own rule (gp_f8toi)
        return f"gp_f8toi<{compute_ctype(dst)} >({expr})"
    return f"gp_cast<{compute_ctype(dst)} >({expr})"


def _round_to_narrow(expr: str, src: D.DType, dst: D.DType) -> str:
    """The narrow bit pattern of ``dst`` nearest ``expr``: one rounding from float or double (ints
    and bools through double, where they are exact up to 2**53; small ones through float, exact too)."""
    if src.kind == "c":
        expr, src = f"({expr}).real()", D.float64 if src.code == "c16" else D.float32
    if compute_ctype(src) == "float" or src is D.float64:
        return f"{_STORE[dst.code]}({expr})"
    via = "float" if src.kind == "b" or src.itemsize <= 2 else "double"
    return f"{_STORE[dst.code]}(({via})({expr}))"


def _apply(node, args) -> str:
    expr = node.expr
    for k in reversed(range(len(args))):
        expr = expr.replace(f"in{k}", args[k])
    return f"({compute_ctype(node.dtype)})({expr})"


_INT_MIN = {"i1": "(-127 - 1)", "i2": "(-32767 - 1)", "i4": "(-2147483647 - 1)", "i8": "(-9223372036854775807LL - 1)"}


def _const(node) -> str:
    d, v = node.dtype, node.value
    if d.kind == "b":
        return "true" if v else "false"
    if d.kind in "ui":
        if d.kind == "i" and v == -(1 << (d.bits - 1)):
            return f"(({compute_ctype(d)}){_INT_MIN[d.code]})"
        return f"(({compute_ctype(d)}){v}{'ULL' if d.kind == 'u' else 'LL'})"
    raise ValueError(f"no C literal for the constant {v!r} of {d.name}")


def _param_value(p) -> str:
    if p.folded:
        return f"s{p.index}"
    load = _STORAGE[p.dtype.code][1]
    return f"{load}(x{p.index})" if load else f"x{p.index}"


def _functor(kernel, fname: str) -> str:
    """struct <fname>: the folded scalars (and the flags pointer) as members; operator() maps the
    array operands' storage values to the output's storage value."""
    members, params = [], []
    for p in kernel.params:
        if p.folded:
            members.append(f"  {compute_ctype(p.dtype)} s{p.index};  // operand {p.index}: folded, passed by value")
        else:
            params.append(f"const {storage_ctype(p.dtype)} x{p.index}")
    if kernel.checks:
        members.append("  unsigned char* flags;  // one byte per check")
    names, steps, direct = ir.lower(kernel, _param_value, _cast, _apply, _const)
    lets = [f"    const {compute_ctype(node.dtype)} {name} = {value};" for name, node, value in steps]
    for k, check in enumerate(kernel.checks):
        lets.append(f"    if ({names[check.cond]}) flags[{k}] = 1;  // {check.what}, step {check.step}")
    out = kernel.out
    if direct is not None:
        stored = _round_to_narrow(names[direct], direct.dtype, out)
    elif out.code in _STORE:
        stored = f"{_STORE[out.code]}({names[kernel.value]})"
    else:
        stored = names[kernel.value]
    members_txt = ("\n".join(members) + "\n") if members else ""
    return (f"struct {fname} {{\n{members_txt}"
            f"  GP_DEV {storage_ctype(out)} operator()({', '.join(params)}) const {{\n"
            + "\n".join(lets) + "\n"
            f"    return {stored};  // {out.name}\n"
            f"  }}\n}};\n")


def _scalar_params_c(kernel) -> tuple[list[str], str]:
    """(kernel parameter declarations, functor initializer) of the folded operands and flags."""
    decls, inits = [], []
    for i, ctype, split in scalar_parameters(kernel):
        if split:
            decls += [f"{ctype} s{i}_re", f"{ctype} s{i}_im"]
            inits.append(f"{compute_ctype(kernel.params[i].dtype)}(s{i}_re, s{i}_im)")
        else:
            decls.append(f"{ctype} s{i}")
            inits.append(f"s{i}")
    if kernel.checks:
        inits.append("gp_flags")
    return decls, "{" + ", ".join(inits) + "}"


def kernel_code(k, variant, name: str | None = None) -> str:
    """The functor and the extern "C" kernel of one (kernel, variant), without the #includes."""
    kernel = as_kernel(k)
    why = unsupported(kernel)
    if why:
        raise UnsupportedPlan(why)
    name = name or kernel_name(kernel, variant)
    fname = f"{name}_f"
    decls, init = _scalar_params_c(kernel)
    flags = ["unsigned char* __restrict__ gp_flags"] if kernel.checks else []
    header = "".join(f"// {line}\n" for line in kernel.text.splitlines())
    functor = _functor(kernel, fname)
    if variant[0] == "contig":
        width = int(variant[1])
        ptrs = [f"{storage_ctype(kernel.out)}* __restrict__ y"] + \
               [f"const {storage_ctype(kernel.params[i].dtype)}* __restrict__ x{i}" for i in kernel.arrays]
        params = ", ".join(["long long n", *decls, *ptrs, *flags])
        call = ", ".join(["n", "f", "y", *(f"x{i}" for i in kernel.arrays)])
        body = (f'extern "C" __global__ void {name}({params}) {{\n'
                f"  const {fname} f = {init};\n"
                f"  gp_contig_loop<{width}>({call});\n}}\n")
        return header + functor + body
    if variant[0] == "strided":
        return header + functor + _strided_kernel(kernel, variant, name, fname, decls, init, flags)
    raise ValueError(f"unknown kernel variant {variant!r}")


def _strided_kernel(kernel, variant, name, fname, decls, init, flags) -> str:
    ndim, bits = int(variant[1]), int(variant[2])
    if ndim < 1 or bits not in (32, 64):
        raise ValueError(f"strided variant needs ndim >= 1 and 32 or 64 bits, not {variant!r}")
    idx = "int" if bits == 32 else "long long"
    arrays = kernel.arrays
    names = ["y"] + [f"x{i}" for i in arrays]
    ptrs = ["char* __restrict__ y"] + [f"const char* __restrict__ x{i}" for i in arrays]
    dims = [f"long long d{k}" for k in range(ndim)]
    strides = [f"long long {p}s{k}" for p in names for k in range(ndim)]
    params = ", ".join(["long long n", *decls, *ptrs, *flags, *dims, *strides])
    lines = [f'extern "C" __global__ void {name}({params}) {{',
             f"  const {fname} f = {init};",
             f"  typedef {idx} I;  // {bits}-bit offsets: the launcher checks they fit",
             "  const I stride = (I)blockDim.x * (I)gridDim.x;",
             "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)n; i += stride) {",
             "    I r = i;",
             "    " + " ".join(f"I o_{p} = 0;" for p in names)]
    for k in reversed(range(ndim)):  # innermost first: coordinate k of the C-order index
        if k:
            lines.append(f"    {{ const I c = r % (I)d{k}; r /= (I)d{k};")
        else:
            lines.append("    { const I c = r;")
        lines.append("      " + " ".join(f"o_{p} += c * (I){p}s{k};" for p in names) + " }")
    args = ", ".join(f"*reinterpret_cast<const {storage_ctype(kernel.params[i].dtype)}*>(x{i} + o_x{i})"
                     for i in arrays)
    lines.append(f"    *reinterpret_cast<{storage_ctype(kernel.out)}*>(y + o_y) = f({args});")
    lines += ["  }", "}", ""]
    return "\n".join(lines)


# The text builders the reduction generator (engines/cuda/reduce.py) shares with this one.
cast_text, apply_text, const_text, round_to_narrow_text, STORE_FUNCTIONS, LOADS = (
    _cast, _apply, _const, _round_to_narrow, _STORE, {code: row[1] for code, row in _STORAGE.items()})


def prologue(kernels, any_complex: bool) -> str:
    """The includes and helper definitions a translation unit of ``kernels`` starts with."""
    return _prologue(kernels, any_complex)


def _prologue(kernels, any_complex: bool) -> str:
    """The includes, the owned math functions the kernels' expressions use with their glue
    (engines/cuda/math.py), and the exact unary helpers, which call some of them."""
    lines = ["// generated by gpupromote.engines.cuda.source: do not edit"]
    if any_complex:
        lines += ["#include <cupy/complex.cuh>", "#define GP_HAVE_COMPLEX 1"]
    lines += [f'#include "{h}"' for h in HEADERS]
    exprs = [node.expr for kernel in kernels for node in kernel.steps() if isinstance(node, ir.Apply)]
    lines += [owned_math.preamble(owned_math.helpers_of(exprs), any_complex), f'#include "{UNARY_HEADER}"']
    return "\n".join(lines) + "\n\n"


def translation_unit(items) -> str:
    """One source holding the kernels of several (kernel or plan, variant) pairs (one NVRTC compile)."""
    items = [(as_kernel(k), v) for k, v in items]
    seen, parts = set(), []
    for kernel, variant in items:
        name = kernel_name(kernel, variant)
        if name in seen:
            continue
        seen.add(name)
        parts.append(kernel_code(kernel, variant, name))
    return _prologue([k for k, _ in items], any(needs_complex(k) for k, _ in items)) + "\n".join(parts)


def kernel_source(k, variant) -> str:
    """The complete source of one kernel."""
    return translation_unit([(k, variant)])
