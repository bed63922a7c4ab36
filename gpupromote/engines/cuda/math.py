"""The CUDA engine's glue to the owned math library (kernel/math): the C++ text a translation unit
carries so that core/ops.py's math helpers (``gp_exp``, ``gp_atan2`` ...) call the library's
functions, built from kernel/unary.py's table as the CPU engine's owned_math.py builds its Numba
twins from the same table.

``preamble(helpers, any_complex)`` is the text for the helpers a translation unit's expressions
name: the library's functions they need (and only those: NVRTC parses all it is given at every
compile) and their C++ overloads, with prototypes of the helpers gpupromote_unary.cuh's templates
call (``DECLARED``), so that those compile whether a kernel uses them or not.
"""
from __future__ import annotations

import re

from ...kernel.math import cuda_source
from ...kernel.unary import BINARY, NARROW_ROUNDING, UNARY, library_names, narrow_entry

__all__ = ["preamble", "helpers_of"]

# exact helpers of gpupromote_unary.cuh that call math helpers (complex abs and sign, angle)
_CALLS = {"gp_abs": ("gp_hypot",), "gp_sign": ("gp_hypot",), "gp_sign_jax": ("gp_hypot",), "gp_angle": ("gp_atan2",),
          "gp_sqrt": ("gp_csqrt",)}
# named by gpupromote_unary.cuh's templates: always declared (a body only where used)
DECLARED = frozenset({"gp_hypot", "gp_atan2", "gp_csqrt"})
_HELPER = re.compile(r"\b(gp_\w+)\(")
def helpers_of(expressions) -> set:
    """The math helpers (by their base name: gp_exp for gp_exp_f2) the expressions name, with the
    ones the exact helpers they name call."""
    found = set()
    for expr in expressions:
        for name in _HELPER.findall(expr):
            base = re.sub(r"_(f2|bf|e4|e5)$", "", name)
            found.add(base)
            found.update(_CALLS.get(base, ()))
    return found


def _real(helper, fn, arity):
    params = ("x",) if arity == 1 else ("a", "b")
    f_args = ", ".join(f"float {p}" for p in params)
    d_args = ", ".join(f"double {p}" for p in params)
    call = ", ".join(params)
    wide = ", ".join(f"(double){p}" for p in params)
    protos = [f"GP_HD float {helper}({f_args});", f"GP_HD double {helper}({d_args});"]
    bodies = [f"GP_HD float {helper}({f_args}) {{ return gpm_{fn}_f32({call}); }}",
              f"GP_HD double {helper}({d_args}) {{ return gpm_{fn}_f64({call}); }}"]
    for code, rounding in NARROW_ROUNDING.items():
        protos.append(f"GP_HD float {helper}_{code}({f_args});")
        fast = narrow_entry(fn, code) if arity == 1 else None
        body = f"return {fast}(x);" if fast is not None else f"return gp_ld_{code}({rounding}(gpm_{fn}_wide({wide})));"
        bodies.append(f"GP_HD float {helper}_{code}({f_args}) {{ {body} }}")
    return protos, bodies


def _complex(helper, cplx):
    protos = [f"GP_HD complex<float> {helper}(const complex<float>& z);",
              f"GP_HD complex<double> {helper}(const complex<double>& z);"]
    if cplx != "recipe":
        bodies = [f"GP_HD complex<float> {helper}(const complex<float>& z) {{ gpm_t_f32_f32 r = "
                  f"gpm_{cplx}_c64(z.real(), z.imag()); return complex<float>(r.v0, r.v1); }}",
                  f"GP_HD complex<double> {helper}(const complex<double>& z) {{ gpm_t_f64_f64 r = "
                  f"gpm_{cplx}_c128(z.real(), z.imag()); return complex<double>(r.v0, r.v1); }}"]
        return protos, bodies
    wide = f"{helper}_c128w"
    body = _recipe_body(helper)
    bodies = [f"GP_HD complex<double> {wide}(double x, double y) {{ {body} }}",
              f"GP_HD complex<float> {helper}(const complex<float>& z) {{ complex<double> r = "
              f"{wide}((double)z.real(), (double)z.imag()); return complex<float>((float)r.real(), (float)r.imag()); }}",
              f"GP_HD complex<double> {helper}(const complex<double>& z) {{ return {wide}(z.real(), z.imag()); }}"]
    return protos, bodies


def _recipe_body(helper) -> str:
    """kernel/unary.py's RECIPES in C++, in double: the twins of engines/cpu/owned_math.py's."""
    def c(fn, x, y):
        return f"gp_detail::c128_of(gpm_{fn}_c128({x}, {y}))"
    if helper == "gp_rsqrt":
        return f"return gp_detail::cdiv_<complex<double>, double>(complex<double>(1.0, 0.0), {c('csqrt', 'x', 'y')});"
    if helper == "gp_exp2":
        return f"return {c('cexp', 'x * 0x1.62e42fefa39efp-1', 'y * 0x1.62e42fefa39efp-1')};"
    if helper == "gp_expm1":
        return ("double a = gpm_sin_f64(y / 2.0); return complex<double>(gpm_expm1_f64(x) * gpm_cos_f64(y) - "
                "2.0 * a * a, gpm_exp_f64(x) * gpm_sin_f64(y));")
    if helper in ("gp_log2", "gp_log10"):
        scale = "0x1.71547652b82fep+0" if helper == "gp_log2" else "0x1.bcb7b1526e50ep-2"
        return f"gpm_t_f64_f64 r = gpm_clog_c128(x, y); return complex<double>(r.v0 * {scale}, r.v1 * {scale});"
    if helper == "gp_log1p":
        return "return complex<double>(gpm_log_f64(gpm_hypot_f64(x + 1.0, y)), gpm_arctan2_f64(y, x + 1.0));"
    if helper == "gp_sigmoid":
        return (f"return gp_detail::cdiv_<complex<double>, double>(complex<double>(1.0, 0.0), "
                f"complex<double>(1.0, 0.0) + {c('cexp', '-x', '-y')});")
    raise ValueError(f"{helper}: no complex recipe (kernel/unary.py RECIPES)")


def _csqrt():
    protos = ["GP_HD complex<float> gp_csqrt(const complex<float>& z);",
              "GP_HD complex<double> gp_csqrt(const complex<double>& z);"]
    bodies = ["GP_HD complex<float> gp_csqrt(const complex<float>& z) { gpm_t_f32_f32 r = "
              "gpm_csqrt_c64(z.real(), z.imag()); return complex<float>(r.v0, r.v1); }",
              "GP_HD complex<double> gp_csqrt(const complex<double>& z) { gpm_t_f64_f64 r = "
              "gpm_csqrt_c128(z.real(), z.imag()); return complex<double>(r.v0, r.v1); }"]
    return protos, bodies


def _power_complex():
    protos = ["GP_HD complex<float> gp_power_complex(const complex<float>& a, const complex<float>& b);",
              "GP_HD complex<double> gp_power_complex(const complex<double>& a, const complex<double>& b);"]
    bodies = ["GP_HD complex<float> gp_power_complex(const complex<float>& a, const complex<float>& b) { "
              "gpm_t_f32_f32 r = gpm_cpow_c64(a.real(), a.imag(), b.real(), b.imag()); return complex<float>(r.v0, r.v1); }",
              "GP_HD complex<double> gp_power_complex(const complex<double>& a, const complex<double>& b) { "
              "gpm_t_f64_f64 r = gpm_cpow_c128(a.real(), a.imag(), b.real(), b.imag()); return complex<double>(r.v0, r.v1); }"]
    return protos, bodies


def preamble(helpers, any_complex: bool) -> str:
    """The library functions ``helpers`` need and every math helper's C++ overloads."""
    used = set(helpers)
    names, protos, bodies, cprotos, cbodies = [], [], [], [], []
    for helper, (fn, cplx) in UNARY.items():
        if helper not in used:
            continue
        p, b = _real(helper, fn, 1)
        protos, bodies, names = protos + p, bodies + b, names + library_names(helper, "f")
        if cplx is not None and any_complex:
            p, b = _complex(helper, cplx)
            cprotos, cbodies, names = cprotos + p, cbodies + b, names + library_names(helper, "c")
    for helper, fn in BINARY.items():
        if helper in used or helper in DECLARED:
            p, b = _real(helper, fn, 2)
            protos += p
            if helper in used:
                bodies, names = bodies + b, names + library_names(helper, "f")
    for helper, make, lib in (("gp_power_complex", _power_complex, ["gpm_cpow_c64", "gpm_cpow_c128"]),
                              ("gp_csqrt", _csqrt, ["gpm_csqrt_c64", "gpm_csqrt_c128"])):
        if any_complex and (helper in used or helper in DECLARED):
            p, b = make()
            cprotos += p
            if helper in used:
                cbodies, names = cbodies + b, names + lib
    text = [cuda_source(names), "// the math helpers core/ops.py names, on the owned functions (engines/cuda/math.py)",
            *protos, *bodies]
    if any_complex:
        text += ["namespace gp_detail {",
                 "GP_HD complex<double> c128_of(gpm_t_f64_f64 r) { return complex<double>(r.v0, r.v1); }",
                 "}  // namespace gp_detail", *cprotos, *cbodies]
    return "\n".join(text) + "\n"
