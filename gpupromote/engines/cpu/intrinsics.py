"""What the Numba helper modules share: the jit options, the trampoline that lets plain Python
call a helper, and the LLVM-level building blocks (one instruction on one type).

Apart from the helpers themselves (``_numba_narrow``, ``_numba_complex``, ``_numba_binary``) so
that each of those imports only this and none imports another's private names; the helpers
bind these public names under their old private spellings (``_njit``, ``_bitcast``, ``_iadd``...).
"""
from llvmlite import binding as _binding, ir as _llvm
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...kernel.reduce import LANES, LEAF
from .cache import cached_njit

__all__ = ["JIT_OPTIONS", "OVERLOAD_OPTIONS", "helper_njit", "call_jitted", "declare_helper", "bitcast",
           "iadd", "isub", "imul", "idiv", "irem", "ishl", "ishr", "frem",
           "fold_add", "fold_multiply", "prefer_256_bit", "never_inline", "always_inline", "borrowed", "scratch",
           "overlaps", "prefetch_row", "PREFETCH_DISTANCE", "stream_store", "stream_head", "stream_fence", "STREAM_ALIGN"]

# why: float division by zero must give inf/nan as in NumPy, not raise ZeroDivisionError.
JIT_OPTIONS = {"error_model": "numpy"}
# An overload's implementation is only ever called from compiled code: without the wrappers that
# let Python and C call it, a cold kernel compiles faster (gp.exp float32: 0.19 -> 0.14 s).
OVERLOAD_OPTIONS = {**JIT_OPTIONS, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
# cached in the kernels' tag folder, where a damaged file is dropped, not fatal (_numba_cache.py)
helper_njit = cached_njit(**JIT_OPTIONS)


# --------------------------------------------------------------------------------------------
# LLVM-level building blocks. Numba's own operators widen small ints to int64, turn
# uint64-with-int64 into float64 and guard integer division with a Python exception; these
# emit exactly one LLVM instruction on one type instead.

@intrinsic
def bitcast(typingctx, value, totype):
    """Reinterpret the bits of a number as another number type of the same width."""
    target = getattr(totype, "instance_type", None)
    if not isinstance(value, (types.Integer, types.Float)) or \
            not isinstance(target, (types.Integer, types.Float)) or value.bitwidth != target.bitwidth:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(target))
    return target(value, totype), codegen


@intrinsic
def prefer_256_bit(typingctx):
    """Marks the function it is called in to be vectorized with 256-bit vectors (LLVM's
    "prefer-vector-width" function attribute); no code. The generated kernels of plain arithmetic
    call it: such loops are memory-bound, and on Zen 4 a 512-bit one ran 8-12% slower (float32
    add of 10^7 with out=: 4.4 ms with zmm, 3.8 with ymm, NumPy's loop 3.7-3.9). The values are
    the same: each element's operations do not depend on the vector width."""
    def codegen(context, builder, sig, args):
        # (llvmlite's attribute set checks names against LLVM's enum attributes; a string
        # attribute goes in as its text, which the IR writer prints as it is)
        set.add(builder.function.attributes, '"prefer-vector-width"="256"')
        return context.get_dummy_value()
    return types.none(), codegen


@helper_njit
def overlaps(a, b):
    """Whether contiguous arrays ``a`` and ``b`` share memory (byte ranges that meet)."""
    pa, pb = a.ctypes.data, b.ctypes.data
    return pa < pb + b.size * b.itemsize and pb < pa + a.size * a.itemsize


@intrinsic
def never_inline(typingctx):
    """Marks the function it is called in ``noinline`` for LLVM; no code. The twin kernels' block
    passes (source._twin_pass_lines) call it: each is compiled (and optimized) once, and called
    once a block of 1024 elements."""
    def codegen(context, builder, sig, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def always_inline(typingctx):
    """Marks the function it is called in ``alwaysinline`` for LLVM; no code. A reduction's element
    function (reduce.py ``elem``) calls it: with two math functions in its map, or one and the
    float16 conversions, it grew past LLVM's inlining threshold and was called once an element,
    its arrays' reference counts taken and dropped each time (a fused float16 sum of exp(x) * tanh(x)
    73 ns an element, float32 exp * tanh * sigmoid 56)."""
    def codegen(context, builder, sig, args):
        builder.function.attributes.add("alwaysinline")
        return context.get_dummy_value()
    return types.none(), codegen


# Arrays without a reference count. Numba takes and drops an array's reference (an atomic add on
# its meminfo, NRT_incref / NRT_decref) around every call that passes it to a function not inlined.
# A locked instruction waits for the stores before it to drain, so in a loop over rows that calls a
# long vector loop (reduce.py's terms: exp over a row) it also stopped each row's pipeline from
# overlapping the next: a 4096 x 1024 float32 exp-and-sum 2.81 -> 2.6 ms with the kernels' entry
# functions borrowing their arrays (the caller holds them for the whole call) and their scratch
# arrays on the stack; NRT_incref / NRT_decref of a null meminfo return at once.

@intrinsic
def borrowed(typingctx, arr):
    """``arr`` with no meminfo: the same data, shape and strides, not reference-counted. Only for
    arrays some caller holds for as long as the borrowed one is used (a kernel's arguments)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(src, name))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()
    return arr(arr), codegen


@intrinsic
def scratch(typingctx, n, dtype):
    """A 1-d array of ``n`` (a literal) elements of ``dtype`` in the calling function's stack frame,
    not reference-counted: valid until that function returns (a reduction's lanes, stack and buf)."""
    if not isinstance(n, types.IntegerLiteral) or not isinstance(dtype, types.NumberClass):
        return None
    arrty = types.Array(dtype.instance_type, 1, "C")

    def codegen(context, builder, sig, args):
        count, item = n.literal_value, context.get_data_type(arrty.dtype)
        itemsize = context.get_abi_sizeof(item)
        data = cgutils.alloca_once(builder, item, size=count)
        data.align = 64   # a cache line: vector stores and the loads after them never straddle two
        out = context.make_array(arrty)(context, builder)
        intp = context.get_value_type(types.intp)
        context.populate_array(out, data=data, shape=cgutils.pack_array(builder, [intp(count)]),
                               strides=cgutils.pack_array(builder, [intp(itemsize)]), itemsize=intp(itemsize),
                               meminfo=None)
        return out._getvalue()
    return arrty(n, dtype), codegen


# How far ahead of what a reduction reads now it asks for memory (prefetch_row). A leaf's fold is a
# chain of dependent adds with a horizontal tree and the binary counter after it: some 50
# instructions for 8 cache lines, so the out-of-order window holds few lines in flight and the
# hardware prefetchers alone left a float32 sum of 10**7 at 22 GB/s on a Zen 5 core (a plain
# vector loop over the same array: 47). With each leaf's bytes asked for 8 KB ahead: 44-47 GB/s
# (2 KB ahead 38, 16 KB 42). The values are the same: a prefetch moves no data into registers.
PREFETCH_DISTANCE = 8192
_PREFETCH_MAX_SPAN = 16384   # a row longer than this is not asked for in one go (its leaves are)


@intrinsic
def prefetch_row(typingctx, src, m, ahead, base, count):
    """Ask the caches for the memory of ``count`` elements of row ``m`` of the 2-d ``src`` from its
    element ``base``, PREFETCH_DISTANCE bytes past them; or, where ``ahead`` > 0, the same elements
    of row ``m + ahead`` (none past the last row): a recorded program running its rows in blocks of
    ``ahead`` rows asks for the next block while this one is read from the cache (program.py). One
    prefetch a 64-byte line, none where a row is not contiguous or the span exceeds
    _PREFETCH_MAX_SPAN bytes. No value. The addresses may lie past the array's end: a prefetch never
    faults (x86 PREFETCHh, AArch64 PRFM) and is computed as an integer, not an in-bounds pointer."""
    if not isinstance(src, types.Array) or src.ndim != 2 \
            or not all(isinstance(a, types.Integer) for a in (m, ahead, base, count)):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        m, ahead, first, count = (context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], sig.args[1:]))
        itemsize = intp(context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype)))
        rows = cgutils.unpack_tuple(builder, ary.shape)[0]
        row_stride, stride = cgutils.unpack_tuple(builder, ary.strides)
        span = builder.mul(count, itemsize)
        far = builder.icmp_signed(">", ahead, intp(0))
        row = builder.select(far, builder.add(m, ahead), m)
        wanted = builder.and_(builder.and_(builder.icmp_signed("==", stride, itemsize),
                                           builder.icmp_signed("<=", span, intp(_PREFETCH_MAX_SPAN))),
                              builder.icmp_signed("<", row, rows))
        i8p, i32 = _llvm.IntType(8).as_pointer(), _llvm.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, _llvm.FunctionType(_llvm.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        with builder.if_then(wanted, likely=True):
            offset = builder.add(builder.mul(row, row_stride), builder.mul(first, itemsize))
            start = builder.add(builder.ptrtoint(ary.data, intp),
                                builder.add(offset, builder.select(far, intp(0), intp(PREFETCH_DISTANCE))))
            with cgutils.for_range_slice(builder, intp(0), span, intp(64), intp=intp) as (offset, _):
                # (read, keep in every level: PREFETCHT0)
                builder.call(fn, [builder.inttoptr(builder.add(start, offset), i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.none(src, m, ahead, base, count), codegen


# Streaming stores: a long loop of plain arithmetic writes its result past the caches (x86
# MOVNTPS / MOVNTDQ, AArch64 STNP), so the store does not first read each line it overwrites. On a
# Zen 5 core, 10**7 float32, one thread: a + b 2.78 -> 2.18 ms, a + b into float16 2.56 -> 1.77-1.88.
# LLVM vectorizes a non-temporal store only where the scalar store claims the vector's alignment;
# stream.py runs it over a range that starts on a 64-byte boundary and is a whole number
# of STREAM_BLOCK elements, so every vector store it makes is aligned. The values are the same:
# where a store goes in the memory system changes no bit of it.
STREAM_ALIGN = 64
_X86 = _binding.get_process_triple().startswith(("x86_64", "i686", "i386"))


@intrinsic
def stream_store(typingctx, arr, index, value):
    """``arr[index] = value`` (cast to the array's type as a setitem casts) as a non-temporal store
    claiming STREAM_ALIGN bytes of alignment: only inside the loops stream.py writes."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        item = context.cast(builder, args[2], sig.args[2], aryty.dtype)
        store = builder.store(context.data_model_manager[aryty.dtype].as_data(builder, item), ptr, align=STREAM_ALIGN)
        store.set_metadata("nontemporal", builder.module.add_metadata([_llvm.Constant(_llvm.IntType(32), 1)]))
        return context.get_dummy_value()
    return types.none(arr, index, value), codegen


@helper_njit
def stream_head(out):
    """How many of 1-d contiguous ``out``'s first elements lie before its first STREAM_ALIGN-byte
    boundary (all of them where its address is not a multiple of its item size)."""
    address, size = out.ctypes.data, out.itemsize
    if address % size:
        return out.shape[0]
    return min(out.shape[0], (-address) % STREAM_ALIGN // size)


@intrinsic
def stream_fence(typingctx):
    """Orders the streaming stores before it ahead of every store after it (x86 SFENCE; elsewhere a
    full fence): a result handed to another thread is whole in memory."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(builder.module, _llvm.FunctionType(_llvm.VoidType(), []),
                                                "llvm.x86.sse.sfence")
            builder.call(fn, [])
        else:
            builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.none(), codegen


def _same_type_int_op(signed_op, unsigned_op):
    @intrinsic
    def op(typingctx, a, b):
        if not isinstance(a, types.Integer) or a != b:
            return None

        def codegen(context, builder, sig, args):
            name = signed_op if sig.args[0].signed else unsigned_op
            return getattr(builder, name)(*args)
        return a(a, b), codegen
    return op


# Wrapping arithmetic in the operands' own width. Division, remainder and shifts are
# undefined for a zero divisor, INT_MIN / -1 or a shift >= the width: callers guard those.
iadd = _same_type_int_op("add", "add")
isub = _same_type_int_op("sub", "sub")
imul = _same_type_int_op("mul", "mul")
idiv = _same_type_int_op("sdiv", "udiv")   # truncating
irem = _same_type_int_op("srem", "urem")   # sign of the dividend
ishl = _same_type_int_op("shl", "shl")
ishr = _same_type_int_op("ashr", "lshr")


@intrinsic
def frem(typingctx, a, b):
    """LLVM frem, i.e. C fmod/fmodf (exact)."""
    if not isinstance(a, types.Float) or a != b:
        return None

    def codegen(context, builder, sig, args):
        return builder.frem(*args)
    return a(a, b), codegen


# --------------------------------------------------------------------------------------------
# Public names: a plain function (callable from Python through a jitted trampoline) plus the
# overload that njit code resolves (_numba_narrow._conversion, _numba_binary._binary).

_TRAMPOLINES = {}


def call_jitted(fn, *args):
    tramp = _TRAMPOLINES.get(fn)
    if tramp is None:
        tramp = njit(lambda x: fn(x)) if len(args) == 1 else njit(lambda x, y: fn(x, y))
        _TRAMPOLINES[fn] = tramp
    return tramp(*args)


def declare_helper(name, typer):
    """Declare the helper ``name`` for compiled code: ``typer(*numba types)`` returns the
    implementation for those argument types, or None where the helper is not defined for them (a
    typing error naming it). The returned plain function raises if called from Python; kernels
    reach the overload, which LLVM inlines into the calling loop."""
    from numba.extending import overload
    arity = typer.__code__.co_argcount
    args = ", ".join(typer.__code__.co_varnames[:arity])
    scope = {}
    exec(f"def public({args}):\n    raise NotImplementedError('{name} is only callable from compiled kernels')", scope)
    public = scope["public"]
    public.__name__ = public.__qualname__ = name
    public.__doc__ = typer.__doc__
    overload(public, jit_options=OVERLOAD_OPTIONS)(typer)
    return public


# --------------------------------------------------------------------------------------------
# A reduction leaf's value: LANES running sums (or products), lane j taking src[base + LANES t + j]
# for t = 0 .. LEAF / LANES - 1 in order of t, then the lanes combined as
# ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) (kernel/reduce.py's order). Scalar code gives
# LLVM no way to this (Numba runs no SLP vectorizer, and a fold over t is an ordered reduction the
# loop vectorizer refuses), so it is written here as vector loads and adds and, for the lanes'
# tree, shuffles pairing even lanes with odd ones (the left operand always the lower lane): the
# same operations, in the same order, as the scalar lanes, so the same bits. (The lanes went through
# memory before, stored as a vector and read back one at a time; in registers, a 4096 x 1024 float32
# exp-and-sum's folds cost about 0.07 ms less.)

def _vector_fold(float_op: str, int_op: str):
    @intrinsic
    def fold(typingctx, src, base):
        if not (isinstance(src, types.Array) and src.ndim == 1 and src.layout == "C"
                and isinstance(src.dtype, (types.Float, types.Integer)) and isinstance(base, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            dtype = sig.args[0].dtype
            op = getattr(builder, float_op if isinstance(dtype, types.Float) else int_op)
            vector = _llvm.VectorType(context.get_value_type(dtype), LANES)
            align = dtype.bitwidth // 8
            data = context.make_array(sig.args[0])(context, builder, args[0])
            start = builder.gep(data.data, [context.cast(builder, args[1], sig.args[1], types.intp)])
            acc = None
            for t in range(LEAF // LANES):
                at = builder.gep(start, [_llvm.Constant(_llvm.IntType(64), LANES * t)])
                v = builder.load(builder.bitcast(at, vector.as_pointer()), align=align)
                # the first term alone: comb(identity, x) is x (-0.0 + x, 1.0 * x, 0 + x, 1 * x)
                acc = v if acc is None else op(acc, v)
            width = LANES
            while width > 1:   # lanes 2i and 2i + 1 meet, 2i on the left
                width //= 2
                even, odd = ([_llvm.Constant(_llvm.IntType(32), 2 * i + j) for i in range(width)] for j in (0, 1))
                mask = _llvm.VectorType(_llvm.IntType(32), width)
                acc = op(builder.shuffle_vector(acc, acc, _llvm.Constant(mask, even)),
                         builder.shuffle_vector(acc, acc, _llvm.Constant(mask, odd)))
            return builder.extract_element(acc, _llvm.Constant(_llvm.IntType(32), 0))
        return src.dtype(src, base), codegen
    return fold


def _scalar_add(a, b):
    return a + b


def _scalar_multiply(a, b):
    return a * b


def _strided_fold(op):
    """The leaf's value of a strided src, lane by lane (written out: LANES scalars)."""
    names = [f"r{j}" for j in range(LANES)]
    pairs = names
    while len(pairs) > 1:
        pairs = [f"op({a}, {b})" for a, b in zip(pairs[::2], pairs[1::2])]
    text = "\n    ".join([f"{', '.join(names)} = {', '.join(f'src[base + {j}]' for j in range(LANES))}",
                          f"for t in range(1, {LEAF // LANES}):", f"    k = base + {LANES} * t",
                          *(f"    r{j} = op(r{j}, src[k + {j}])" for j in range(LANES)), f"return {pairs[0]}"])
    scope = {"op": op}
    exec(f"def strided(src, base):\n    {text}\n", scope)
    return scope["strided"]


def _leaf_fold(name: str, vector, scalar):
    """fold_<name>(src, base): a full leaf's value, by the vector fold on a contiguous src, by the
    same operations one lane at a time on a strided one (a reduction over a leading axis)."""
    def typer(src, base):
        if isinstance(src, types.Array) and src.layout == "C":
            return lambda src, base: vector(src, base)
        return _strided_fold(njit(inline="always")(scalar))
    typer.__name__ = f"fold_{name}"
    return declare_helper(f"fold_{name}", typer)


fold_add = _leaf_fold("add", _vector_fold("fadd", "add"), _scalar_add)
fold_multiply = _leaf_fold("multiply", _vector_fold("fmul", "mul"), _scalar_multiply)
