/* folding.c: folding a Python or numpy scalar into a kernel parameter (folding.converter in C):
 * gp_fold_value, and gp_fold_from_python for the cases it leaves to the Python converter.
 * entry.c's gp_entry_fold calls both, for the CPU and the CUDA entries alike.  Relies on
 * fastpath.h (Slot, the F_ codes, NumPy's scalar API). */

#include "fastpath.h"

typedef struct {
    char kind;   /* 'b' 'i' 'u' 'f' 'c' */
    int64_t i;
    uint64_t u;
    double re, im;
} Value;

static int fold_kind[F_COUNT] = {'b', 'i', 'i', 'i', 'i', 'u', 'u', 'u', 'u', 'f', 'f', 'c', 'c', 'f', 'f'};
static int fold_size[F_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16, 4, 4};

static int
value_truth(const Value *v)
{
    switch (v->kind) {
    case 'b': case 'i': return v->i != 0;
    case 'u': return v->u != 0;
    case 'f': return v->re != 0;  /* a NaN is true */
    default: return v->re != 0 || v->im != 0;
    }
}

static double
value_as_double(const Value *v)
{
    return v->kind == 'u' ? (double)v->u : v->kind == 'f' || v->kind == 'c' ? v->re : (double)v->i;
}

static float
value_as_float(const Value *v)
{
    /* one rounding, from the integer itself (numpy's C casts), not through double */
    return v->kind == 'u' ? (float)v->u : v->kind == 'f' || v->kind == 'c' ? (float)v->re : (float)v->i;
}

/* *x rounded to float32 (kept in the double); 0 when a finite value overflows to infinity,
 * which NumPy reports ("overflow encountered in cast", per np.errstate): the Python converter's
 * case. */
static int
narrow_to_float(double *x)
{
    float f = (float)*x;
    if (isinf(f) && isfinite(*x)) {
        return 0;
    }
    *x = (double)f;
    return 1;
}

/* An integer of `code`'s width from the low 64 bits (two's complement, wrapping). */
static void
wrap_int(Value *v, uint64_t bits, int code)
{
    switch (code) {
    case F_I1: v->kind = 'i'; v->i = (int8_t)bits; break;
    case F_I2: v->kind = 'i'; v->i = (int16_t)bits; break;
    case F_I4: v->kind = 'i'; v->i = (int32_t)bits; break;
    case F_I8: v->kind = 'i'; v->i = (int64_t)bits; break;
    case F_U1: v->kind = 'u'; v->u = (uint8_t)bits; break;
    case F_U2: v->kind = 'u'; v->u = (uint16_t)bits; break;
    case F_U4: v->kind = 'u'; v->u = (uint32_t)bits; break;
    default: v->kind = 'u'; v->u = bits; break;
    }
}

/* A float16's bits as the double that holds it exactly. */
static double
half_to_double(uint16_t h)
{
    int exponent = (h >> 10) & 0x1F;
    double magnitude = exponent == 0 ? ldexp((double)(h & 0x3FF), -24)
                       : exponent == 31 ? ((h & 0x3FF) ? NAN : INFINITY)
                       : ldexp((double)((h & 0x3FF) | 0x400), exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

static int memory_value(const char *p, char kind, Py_ssize_t size, Value *v);

/* Whether a numpy dtype is one of NumPy's own bool, integer, float16/32/64 or complex64/128 types,
 * whose values memory_value reads: not long double, and not a user type of the same kind and size
 * (ml_dtypes' float8_e5m2 says kind 'f', 1 byte). */
int
gp_plain_numeric(const PyArray_Descr *descr)
{
    switch (descr->type_num) {
    case NPY_BOOL: case NPY_BYTE: case NPY_UBYTE: case NPY_SHORT: case NPY_USHORT: case NPY_INT: case NPY_UINT:
    case NPY_LONG: case NPY_ULONG: case NPY_LONGLONG: case NPY_ULONGLONG: case NPY_HALF: case NPY_FLOAT:
    case NPY_DOUBLE: case NPY_CFLOAT: case NPY_CDOUBLE:
        return 1;
    default:
        return 0;
    }
}

/* A numpy scalar's value (bool, the integers, float16 / float32 / float64, complex64 / complex128)
 * in *v, as NumPy's C casts read it: 1; 0 for any other scalar (long double, the ml_dtypes
 * formats, ...) and for a NaN, which the Python converter folds. */
static int
numpy_scalar_value(PyObject *x, Value *v)
{
    PyArray_Descr *descr = PyArray_DescrFromScalar(x);
    if (descr == NULL) {
        PyErr_Clear();
        return 0;
    }
    char kind = descr->kind;
    Py_ssize_t size = PyDataType_ELSIZE(descr);
    int plain = gp_plain_numeric(descr);
    Py_DECREF(descr);
    if (!plain) {
        return 0;
    }
    union { npy_bool b; char bytes[16]; } c;
    PyArray_ScalarAsCtype(x, &c);
    return memory_value(c.bytes, kind, size, v);
}

/* The value at `p` of a numpy dtype of `kind` and `size` (one gp_plain_numeric accepts) in *v: 1;
 * 0 for a NaN (see numpy_scalar_value). */
static int
memory_value(const char *p, char kind, Py_ssize_t size, Value *v)
{
    union { npy_bool b; int8_t i1; int16_t i2; int32_t i4; int64_t i8; uint8_t u1; uint16_t u2; uint32_t u4;
            uint64_t u8; uint16_t f2; float f4; double f8; float c8[2]; double c16[2]; } c;
    memcpy(&c, p, (size_t)size);
    v->kind = kind;
    switch (kind) {
    case 'b': v->i = c.b != 0; break;
    case 'i': v->i = size == 1 ? c.i1 : size == 2 ? c.i2 : size == 4 ? c.i4 : c.i8; break;
    case 'u': v->u = size == 1 ? c.u1 : size == 2 ? c.u2 : size == 4 ? c.u4 : c.u8; break;
    case 'f': v->re = size == 2 ? half_to_double(c.f2) : size == 4 ? c.f4 : c.f8; break;
    default:
        v->re = size == 8 ? c.c8[0] : c.c16[0];
        v->im = size == 8 ? c.c8[1] : c.c16[1];
        break;
    }
    /* a NaN's sign and payload are the Python converter's to carry (NumPy's casts keep them) */
    return !isnan(v->re) && !isnan(v->im);
}

/* A numpy scalar's value `n` as `src`, as folding._cast_value (np.asarray(x).astype(src), a C
 * cast): 1, or 0 where this leaves it to the Python converter (a float or complex into an
 * integer, a complex into a real, an integer beyond 2**53 into a float: one rounding from the
 * integer, not two; a finite value overflowing a narrower float). */
static int
numpy_as_src(Value *v, const Value *n, int src)
{
    switch (src) {
    case F_B1:
        v->kind = 'b';
        v->i = value_truth(n);
        return 1;
    case F_I1: case F_I2: case F_I4: case F_I8: case F_U1: case F_U2: case F_U4: case F_U8:
        if (n->kind == 'f' || n->kind == 'c') {
            return 0;
        }
        wrap_int(v, n->kind == 'u' ? n->u : (uint64_t)n->i, src);   /* astype wraps */
        return 1;
    case F_F4: case F_F8: case F_F2: case F_C8: case F_C16:
        if (n->kind == 'c' && fold_kind[src] != 'c') {
            return 0;
        }
        if (n->kind == 'u' ? n->u > (1ull << 53) : (n->kind == 'i' && (n->i > (1ll << 53) || n->i < -(1ll << 53)))) {
            return 0;
        }
        v->kind = fold_kind[src];
        v->re = value_as_double(n);   /* exact: a float16 / 32 / 64, or an integer within 2**53 */
        v->im = n->kind == 'c' ? n->im : 0.0;
        if (src == F_F4 || src == F_C8) {
            return narrow_to_float(&v->re) && narrow_to_float(&v->im);
        }
        if (src == F_F2) {
#if defined(__FLT16_MAX__)
            double wide = v->re;
            v->re = (double)(_Float16)v->re;
            return !(isinf(v->re) && isfinite(wide));
#else
            return 0;
#endif
        }
        return 1;
    default:
        return 0;
    }
}

static int fold_finish(Value *v, int src, int to, Slot *slot);

/* The Python scalar x (float, int, bool or complex) or numpy scalar x as `src` (the precision the
 * policy keeps it in), then as `to` (the kernel's parameter type), written to *slot.  1: done;
 * 0: a conversion this function leaves to the Python converter (float -> int, complex -> real,
 * the narrow floats but float16 from a double, ...); never an error. */
int
gp_fold_value(PyObject *x, int src, int to, Slot *slot)
{
    PyTypeObject *t = Py_TYPE(x);
    int is_int = t == &PyLong_Type || t == &PyBool_Type;
    Value v = {0, 0, 0, 0.0, 0.0};
    /* 1. value -> src */
    if (!is_int && t != &PyFloat_Type && t != &PyComplex_Type) {
        Value n = {0, 0, 0, 0.0, 0.0};
        if (!PyArray_IsScalar(x, Generic) || !numpy_scalar_value(x, &n) || !numpy_as_src(&v, &n, src)) {
            return 0;
        }
    }
    else switch (src) {
    case F_B1:
        v.kind = 'b';
        v.i = PyObject_IsTrue(x);   /* bool(x): cannot fail for these types */
        break;
    case F_I1: case F_I2: case F_I4: case F_I8: case F_U1: case F_U2: case F_U4: case F_U8:
        if (!is_int) {
            return 0;
        }
        wrap_int(&v, PyLong_AsUnsignedLongLongMask(x), src);   /* PyTorch / np.where wrap ints */
        break;
    case F_F4: case F_F8: case F_F2: case F_C8: case F_C16:
        v.kind = fold_kind[src];
        if (t == &PyFloat_Type) {
            v.re = PyFloat_AS_DOUBLE(x);
        }
        else if (is_int) {
            v.re = PyLong_AsDouble(x);   /* float(v), correctly rounded; OverflowError: Python's */
            if (v.re == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        }
        else if (t == &PyComplex_Type && v.kind == 'c') {
            v.re = PyComplex_RealAsDouble(x);
            v.im = PyComplex_ImagAsDouble(x);
        }
        else {
            return 0;
        }
        if (src == F_F4 || src == F_C8) {
            if (!narrow_to_float(&v.re) || !narrow_to_float(&v.im)) {
                return 0;
            }
        }
        else if (src == F_F2) {
#if defined(__FLT16_MAX__)
            double wide = v.re;
            v.re = (double)(_Float16)v.re;   /* one rounding from the double, as np.float16(x) */
            if (isinf(v.re) && isfinite(wide)) {
                return 0;   /* NumPy warns "overflow encountered in cast": the Python converter */
            }
#else
            return 0;
#endif
        }
        break;
    default:
        return 0;
    }
    return fold_finish(&v, src, to, slot);
}

/* Value v (of `src`) as `to`, written to *slot: steps 2 and 3 of gp_fold_value. */
static int
fold_finish(Value *vp, int src, int to, Slot *slot)
{
    Value v = *vp;
    /* 2. src -> to */
    if (to != src) {
        switch (to) {
        case F_B1:
            v.i = value_truth(&v);
            v.kind = 'b';
            break;
        case F_I1: case F_I2: case F_I4: case F_I8: case F_U1: case F_U2: case F_U4: case F_U8:
            if (v.kind == 'f' || v.kind == 'c') {
                return 0;
            }
            wrap_int(&v, v.kind == 'u' ? v.u : (uint64_t)v.i, to);
            break;
        case F_F4: case F_C8:
            if (v.kind == 'c' && to == F_F4) {
                return 0;
            }
            if (v.kind == 'c' || v.kind == 'f') {
                if (!narrow_to_float(&v.re) || !narrow_to_float(&v.im)) {
                    return 0;
                }
            }
            else {
                v.re = (double)value_as_float(&v);   /* every integer is finite in float32 */
                v.im = 0;
            }
            v.kind = fold_kind[to];
            break;
        case F_F8: case F_C16:
            if (v.kind == 'c' && to == F_F8) {
                return 0;
            }
            if (v.kind != 'c') {
                v.re = value_as_double(&v);
                v.im = 0;
            }
            v.kind = fold_kind[to];
            break;
        default:
            return 0;   /* into float16 / bfloat16 from another type: the Python converter */
        }
    }
    /* 3. the carrier */
    switch (to) {
    case F_B1: slot->b = (unsigned char)(v.i != 0); break;
    case F_I1: slot->i1 = (int8_t)v.i; break;
    case F_I2: slot->i2 = (int16_t)v.i; break;
    case F_I4: slot->i4 = (int32_t)v.i; break;
    case F_I8: slot->i8 = v.i; break;
    case F_U1: slot->u1 = (uint8_t)v.u; break;
    case F_U2: slot->u2 = (uint16_t)v.u; break;
    case F_U4: slot->u4 = (uint32_t)v.u; break;
    case F_U8: slot->u8 = v.u; break;
    case F_F4: case F_F2: case F_BF: slot->f4 = (float)v.re; break;
    case F_F8: slot->f8 = v.re; break;
    case F_C8: slot->c8[0] = (float)v.re; slot->c8[1] = (float)v.im; break;
    default: slot->c16[0] = v.re; slot->c16[1] = v.im; break;
    }
    return 1;
}

/* The Python converter's answer (a numpy scalar of `to`) in the carrier. 1: done; 0: not a
 * scalar of that type (decline); -1: an error (the converter raised). */
int
gp_fold_from_python(PyObject *conv, PyObject *x, int to, Slot *slot)
{
    PyObject *r = PyObject_CallOneArg(conv, x);
    if (r == NULL) {
        return -1;
    }
    int ok = 0;
    if (to == F_F2 || to == F_BF) {
        double d = PyFloat_AsDouble(r);   /* exact: float16 and bfloat16 values are doubles */
        if (!(d == -1.0 && PyErr_Occurred())) {
            slot->f4 = (float)d;
            ok = 1;
        }
    }
    else if (PyArray_IsScalar(r, Generic)) {
        PyArray_Descr *descr = PyArray_DescrFromScalar(r);
        if (descr != NULL) {
            if (descr->kind == fold_kind[to] && PyDataType_ELSIZE(descr) == fold_size[to]) {
                PyArray_ScalarAsCtype(r, slot);
                ok = 1;
            }
            Py_DECREF(descr);
        }
    }
    Py_DECREF(r);
    if (PyErr_Occurred()) {
        return -1;
    }
    return ok;
}

/* The element at `p` of an array of dtype `descr` folded as gp_fold_value folds its numpy scalar
 * (a column operand's value for one row, entry.c): 1, or 0 where that is the Python converter's. */
int
gp_fold_raw(const char *p, PyArray_Descr *descr, int src, int to, Slot *slot)
{
    Value n = {0, 0, 0, 0.0, 0.0}, v = {0, 0, 0, 0.0, 0.0};
    if (!gp_plain_numeric(descr) || !PyArray_ISNBO(descr->byteorder)) {
        return 0;
    }
    return memory_value(p, descr->kind, PyDataType_ELSIZE(descr), &n) && numpy_as_src(&v, &n, src) && fold_finish(&v, src, to, slot);
}
