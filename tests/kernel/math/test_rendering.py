"""The renderings themselves: the C++ header compiles alone with g++ and with NVRTC (sm_90),
contains no call to a libm or CUDA math function (only the exact primitives, in the prelude),
renders every constant exactly as a hex float; the description language rejects what the two
engines would disagree on; the Numba twins vectorise a float32 loop."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from gpupromote.kernel.math import cuda_source, entry_points, numba_functions
from gpupromote.kernel.math import _cpp, _dsl
from gpupromote.kernel.math._dsl import f32, f64, helper, i64, u32

LIBM = """exp expf exp2 exp2f expm1 expm1f exp10 exp10f log logf log2 log2f log10 log10f log1p log1pf pow powf
sqrt sqrtf cbrt cbrtf rsqrt rsqrtf rcbrt sin sinf cos cosf tan tanf sincos sincosf sinpi cospi asin asinf acos
acosf atan atanf atan2 atan2f sinh sinhf cosh coshf tanh tanhf asinh asinhf acosh acoshf atanh atanhf erf erff
erfc erfcf hypot hypotf fmod fmodf remainder ldexp ldexpf frexp scalbn nextafter lgamma tgamma fmax fmin fdim
__expf __exp10f __logf __log2f __log10f __powf __sinf __cosf __tanf __sincosf __fdividef norm rhypot""".split()
EXACT_PRIMITIVES = "floor ceil trunc rint floorf ceilf truncf rintf".split()


def _body():
    """The functions of the header, without its prelude (the primitives' definitions)."""
    src = cuda_source()
    return src[src.index("GPM_HD gpm_u64 gpm_as_u64"):], src


def test_no_math_library_calls():
    body, src = _body()
    prelude_end = src.index("GPM_HD double gpm_fabs_d")
    for name in LIBM:
        hits = [m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\(", src)]
        assert not hits, (name, [src[h - 40:h + 40] for h in hits[:3]])
    for name in EXACT_PRIMITIVES:   # exact functions, only as the device side of a primitive
        hits = [m.start() for m in re.finditer(rf"(?<![\w.]){name}\s*\(", src)]
        assert all(h < prelude_end for h in hits), name
    builtins = set(re.findall(r"__builtin_(\w+)", src))
    assert builtins <= {"fma", "fmaf", "sqrt", "sqrtf", "fabs", "fabsf", "copysign", "copysignf", "memcpy"}, builtins
    assert "#include" not in src


def test_every_name_is_prefixed_and_constants_are_hex():
    body, src = _body()
    funcs = re.findall(r"GPM_HD [\w ]+? (\w+)\(", src)
    assert funcs and all(f.startswith("gpm_") for f in funcs)
    code = re.sub(r"//.*", "", body)
    decimal = re.findall(r"(?<![\w.])\d+\.\d*(?:[eE][-+]?\d+)?(?![\w.])", code)
    assert not [d for d in decimal if d not in ("1.0", "0.0")], decimal[:10]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_header_compiles_alone_with_gxx(tmp_path):
    p = tmp_path / "gpm.cpp"
    p.write_text(cuda_source() + "\nint main() { return gpm_exp_f64(0.0) == 1.0 ? 0 : 1; }\n")
    r = subprocess.run(["g++", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-O1", str(p), "-o",
                        str(tmp_path / "a.out")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert subprocess.run([str(tmp_path / "a.out")]).returncode == 0


def _all_calls_kernel():
    lines = []
    for name, (pts, rt) in entry_points().items():
        args = ", ".join({"f64": "d", "f32": "f"}[t] for t in pts)
        if isinstance(rt, tuple):
            lines.append(f"    {{ {_cpp.ctype(rt)} r = {name}({args}); acc += (double)r.v0 + (double)r.v1; }}")
        else:
            lines.append(f"    acc += (double){name}({args});")
    return ('extern "C" __global__ void gpm_all(const double* xd, const float* xf, double* out) {\n'
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    double d = xd[i]; float f = xf[i]; double acc = 0.0;\n"
            + "\n".join(lines) + "\n    out[i] = acc;\n}\n")


@pytest.mark.nvrtc
def test_header_compiles_with_nvrtc_for_sm90():
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    src = (cuda_source() + "\n" + _all_calls_kernel()).encode()
    err, prog = nvrtc.nvrtcCreateProgram(src, b"gpm_math.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [b"--gpu-architecture=sm_90", b"--std=c++17"]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, n = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * max(n, 2)   # never the shared one-byte b" ": NVRTC writes its NUL into it
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")[-4000:]
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    assert size > 1000
    nvrtc.nvrtcDestroyProgram(prog)


# --------------------------------------------------------------------------------------------
# the description language refuses what would make the engines differ

def _render(fn):
    try:
        return _cpp.FnRenderer(fn.__name__, _cpp.Tables()).render()
    finally:
        _dsl.REGISTRY.pop(fn.__name__, None)


def test_mixed_float_types_are_refused():
    @helper
    def gpm_test_bad_mixed(x: f32, y: f64) -> f64:
        return x * y
    with pytest.raises(_cpp.DslError, match="different types"):
        _render(gpm_test_bad_mixed)


def test_bare_float_literal_in_float32_is_refused():
    @helper
    def gpm_test_bad_literal(x: f32) -> f32:
        return x * 0.5
    with pytest.raises(_cpp.DslError, match="f32"):
        _render(gpm_test_bad_literal)


def test_narrow_integer_arithmetic_is_refused():
    @helper
    def gpm_test_bad_u32(x: u32) -> u32:
        return x + u32(1)
    with pytest.raises(_cpp.DslError, match="no arithmetic on u32"):
        _render(gpm_test_bad_u32)


def test_calls_outside_the_library_are_refused():
    import math

    @helper
    def gpm_test_bad_call(x: f64) -> f64:
        return math.exp(x)
    with pytest.raises(_cpp.DslError):
        _render(gpm_test_bad_call)


def test_a_well_typed_function_renders_to_hex_and_intrinsics():
    @helper
    def gpm_test_good(x: f64, k: i64) -> f64:
        y = fma(x, 0.1, 1.0)
        return y * f64(k + 1)
    from gpupromote.kernel.math._dsl import fma  # noqa: F401 - the name the function uses
    gpm_test_good.__globals__["fma"] = fma
    src = _render(gpm_test_good)
    assert "gpm_fma_d(x, 0x1.999999999999ap-4, 0x1.0000000000000p+0)" in src
    assert "((double)((k + 1LL)))" in src


# --------------------------------------------------------------------------------------------
# the Numba twins

@pytest.mark.parametrize("flat", [False, True], ids=["as-written", "flat"])
def test_numba_dict_holds_every_function(flat):
    fns = numba_functions(flat=flat)
    assert set(entry_points()) <= set(fns)
    assert all(n.startswith("gpm_") for n in fns)


@pytest.mark.parametrize("flat", [False, True], ids=["as-written", "flat"])
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid"])
def test_float32_loop_vectorises(name, flat):
    from numba import njit
    f = numba_functions(flat=flat)[f"gpm_{name}_f32"]

    @njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = f(x[i])
    x = np.linspace(-5, 5, 64).astype(np.float32)
    loop(x, np.empty_like(x))
    ir = loop.inspect_llvm(loop.signatures[0])
    assert re.search(r"<(4|8|16) x double>", ir), "the float32 loop did not vectorise"
