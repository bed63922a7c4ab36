/* reduce_op.c: the ReduceOp type (gp.sum, prod, mean, max, min, any, all, argmax, argmin as C
 * callables) and ReduceEntry (one key's reduction kernel).  Relies on fastpath.h; reads
 * result_type.c's gp_current_policy, gp_ndarray_type and gp_same_name, and ops.c's
 * gp_call_policy; module.c registers the types and empties the memo (forget).
 *
 * The cache-hit path of a reduction of a whole C-contiguous numpy array or of its last axis, with
 * the defaults (no dtype=, ddof=, out=): what dispatch/reduce.py's Python fast path does, without
 * the Python frames.  dispatch/reduce.py owns every decision: on a miss a ReduceOp calls its maker
 * (policy, x, last_axis, keepdims) -> ReduceEntry or None (this key always takes the Python path),
 * which resolves the plan and compiles the reduction's ``native(data, M, K)`` (engines/cpu/reduce.py).
 * On a hit the call is: the entry (memo by the identity of op, policy and dtype, and the rank, axis
 * and keepdims), the result array (0-d, or the kept axes), one call of the kernel in this thread.
 * Whatever does not fit (another axis, a keyword it does not know, a non-contiguous or empty array,
 * more than max_n elements, which the Python path splits over threads) declines: the Python
 * function runs the call and gives the same bits, since the order of the additions depends on
 * the row length only (kernel/reduce.py). */

#include "fastpath.h"

typedef void (*gp_reduce_kernel)(char **data, int64_t rows, int64_t k);

/* ---------------------------------------------------------------------------------------------
 * ReduceEntry */

typedef struct {
    PyObject_HEAD
    gp_reduce_kernel fn;
    PyObject *keep;            /* the CFunc owning the machine code */
    PyArray_Descr *result;
    long long max_n;           /* calls of more elements decline (the Python path's threads) */
} ReduceEntryObject;

static PyObject *
rentry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    unsigned long long address;
    PyObject *keep;
    PyArray_Descr *result;
    long long max_n;
    static char *names[] = {"address", "keep", "result", "max_n", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KOO&L:ReduceEntry", names, &address, &keep, PyArray_DescrConverter,
                                     &result, &max_n)) {
        return NULL;
    }
    if (address == 0 || max_n < 1) {
        Py_DECREF(result);
        PyErr_SetString(PyExc_ValueError, "ReduceEntry: a kernel address and max_n >= 1");
        return NULL;
    }
    ReduceEntryObject *e = (ReduceEntryObject *)type->tp_alloc(type, 0);
    if (e == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    e->fn = (gp_reduce_kernel)(uintptr_t)address;
    e->keep = Py_NewRef(keep);
    e->result = result;   /* the converter's reference */
    e->max_n = max_n;
    return (PyObject *)e;
}

static void
rentry_dealloc(ReduceEntryObject *e)
{
    Py_XDECREF(e->keep);
    Py_XDECREF(e->result);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

PyTypeObject gp_ReduceEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpupromote.dispatch._fastpath.ReduceEntry",
    .tp_doc = "ReduceEntry(address, keep, result, max_n): a reduction's native(data, M, K), its result dtype, "
              "and the most elements a call runs here",
    .tp_basicsize = sizeof(ReduceEntryObject),
    .tp_dealloc = (destructor)rentry_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = rentry_new,
};

/* ---------------------------------------------------------------------------------------------
 * The memo: (op, policy, dtype, rank, last axis, keepdims) by identity -> entry or None. */

#define RMEMO_SLOTS 512
#define RMEMO_PROBES 4

typedef struct {
    PyObject *op, *policy, *descr;   /* op NULL: an empty slot */
    int ndim, last, keepdims;
    PyObject *entry;
} ReduceMemo;

static ReduceMemo memo[RMEMO_SLOTS];

static size_t
memo_slot(PyObject *op, PyObject *policy, PyObject *descr, int code)
{
    uint64_t h = (uint64_t)(uintptr_t)op;
    h = (h ^ (uint64_t)(uintptr_t)policy) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (uint64_t)(uintptr_t)descr) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (uint64_t)code) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40) & (RMEMO_SLOTS - 1);
}

static void
memo_clear(ReduceMemo *m)
{
    Py_CLEAR(m->op);
    Py_CLEAR(m->policy);
    Py_CLEAR(m->descr);
    Py_CLEAR(m->entry);
}

void
gp_reduce_memo_clear(void)
{
    for (size_t i = 0; i < RMEMO_SLOTS; i++) {
        memo_clear(&memo[i]);
    }
}

/* ---------------------------------------------------------------------------------------------
 * ReduceOp */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;     /* the reduction's name */
    PyObject *py_fn;    /* the Python function: the fallback and the reference */
    PyObject *make;     /* (policy, x, last_axis, keepdims) -> ReduceEntry or None */
    PyObject *module;   /* "gpupromote" */
} ReduceOpObject;

static PyObject *str_axis, *str_keepdims;
static unsigned long long reductions_served, reductions_declined;

/* The entry for the key (a new reference; Py_None: the Python path), or NULL on error. */
static PyObject *
reduce_entry(ReduceOpObject *self, PyObject *policy, PyArrayObject *x, int last, int keepdims)
{
    PyObject *descr = (PyObject *)PyArray_DESCR(x);
    int ndim = PyArray_NDIM(x);
    int code = ndim * 4 + last * 2 + keepdims;
    size_t slot = memo_slot((PyObject *)self, policy, descr, code);
    for (int probe = 0; probe < RMEMO_PROBES; probe++) {
        ReduceMemo *m = &memo[(slot + probe) & (RMEMO_SLOTS - 1)];
        if (m->op == (PyObject *)self && m->policy == policy && m->descr == descr && m->ndim == ndim
                && m->last == last && m->keepdims == keepdims) {
            return Py_NewRef(m->entry);
        }
    }
    PyObject *entry = PyObject_CallFunctionObjArgs(self->make, policy, (PyObject *)x, last ? Py_True : Py_False,
                                                   keepdims ? Py_True : Py_False, NULL);
    if (entry == NULL) {
        return NULL;
    }
    if (entry != Py_None && !Py_IS_TYPE(entry, &gp_ReduceEntryType)) {
        Py_DECREF(entry);
        PyErr_SetString(PyExc_TypeError, "the reduction's maker returned neither a ReduceEntry nor None");
        return NULL;
    }
    ReduceMemo *m = &memo[slot];
    for (int probe = 0; probe < RMEMO_PROBES; probe++) {
        ReduceMemo *candidate = &memo[(slot + probe) & (RMEMO_SLOTS - 1)];
        if (candidate->op == NULL) {
            m = candidate;
            break;
        }
    }
    ReduceMemo old = *m;   /* new references first: the old ones' destructors may run code */
    m->op = Py_NewRef((PyObject *)self);
    m->policy = Py_NewRef(policy);
    m->descr = Py_NewRef(descr);
    m->ndim = ndim;
    m->last = last;
    m->keepdims = keepdims;
    m->entry = Py_NewRef(entry);
    memo_clear(&old);
    return entry;
}

/* The reduction of x through the entry, or NULL with no exception set (the Python path). */
static PyObject *
reduce_run(ReduceEntryObject *e, PyArrayObject *x, int last, int keepdims)
{
    int ndim = PyArray_NDIM(x);
    npy_intp n = PyArray_SIZE(x);
    if (n < 1 || n > e->max_n || !PyArray_IS_C_CONTIGUOUS(x) || !PyArray_ISALIGNED(x)) {
        return NULL;
    }
    npy_intp *shape = PyArray_DIMS(x);
    npy_intp K = last ? shape[ndim - 1] : n;
    npy_intp dims[NPY_MAXDIMS];
    int out_ndim = 0;
    if (last) {
        for (int d = 0; d < ndim - 1; d++) {
            dims[out_ndim++] = shape[d];
        }
        if (keepdims) {
            dims[out_ndim++] = 1;
        }
    }
    else if (keepdims) {
        for (int d = 0; d < ndim; d++) {
            dims[out_ndim++] = 1;
        }
    }
    Py_INCREF(e->result);   /* PyArray_NewFromDescr steals it */
    PyObject *result = PyArray_NewFromDescr(&PyArray_Type, e->result, out_ndim, dims, NULL, NULL, 0, NULL);
    if (result == NULL) {
        PyErr_Clear();
        return NULL;
    }
    char *data[2] = {PyArray_BYTES(x), PyArray_BYTES((PyArrayObject *)result)};
    if (n >= 16384) {
        Py_BEGIN_ALLOW_THREADS
        e->fn(data, (int64_t)(n / K), (int64_t)K);
        Py_END_ALLOW_THREADS
    }
    else {
        e->fn(data, (int64_t)(n / K), (int64_t)K);
    }
    return result;
}

static PyObject *
reduce_vectorcall(ReduceOpObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *axis = Py_None, *keepdims = Py_False, *policy = Py_None, *result = NULL;
    if (nargs < 1 || nargs > 2 || gp_current_policy == NULL || gp_sanitizing || Py_TYPE(args[0]) != gp_ndarray_type) {
        goto fallback;
    }
    if (nargs == 2) {
        axis = args[1];
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (gp_same_name(name, str_axis) && nargs == 1) {
                axis = args[nargs + i];
            }
            else if (gp_same_name(name, str_keepdims)) {
                keepdims = args[nargs + i];
            }
            else if (gp_same_name(name, gp_str_policy)) {
                policy = args[nargs + i];
            }
            else {
                goto fallback;   /* dtype=, out=, ddof=, or a mistake Python words */
            }
        }
    }
    PyArrayObject *x = (PyArrayObject *)args[0];
    int ndim = PyArray_NDIM(x), last;
    if (ndim < 1 || (keepdims != Py_True && keepdims != Py_False)) {
        goto fallback;
    }
    if (axis == Py_None) {
        last = 0;
    }
    else if (PyLong_CheckExact(axis)) {
        long a = PyLong_AsLong(axis);
        if (a == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto fallback;
        }
        if (a != -1 && a != ndim - 1) {
            goto fallback;   /* another axis: the Python path's layout */
        }
        last = 1;
    }
    else {
        goto fallback;
    }
    if ((policy = gp_call_policy(policy)) == NULL) {
        goto fallback;
    }
    PyObject *entry = reduce_entry(self, policy, x, last, keepdims == Py_True);
    Py_DECREF(policy);
    if (entry == NULL) {
        PyErr_Clear();   /* the Python path meets the same condition and says what it is */
        goto fallback;
    }
    if (entry != Py_None) {
        result = reduce_run((ReduceEntryObject *)entry, x, last, keepdims == Py_True);
    }
    Py_DECREF(entry);
    if (result != NULL) {
        reductions_served++;
        return result;
    }
fallback:
    reductions_declined++;
    return PyObject_Vectorcall(self->py_fn, args, nargsf, kwnames);
}

static PyObject *
reduce_op_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *name, *py_fn, *make;
    static char *names[] = {"name", "py_fn", "make", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UOO:ReduceOp", names, &name, &py_fn, &make)) {
        return NULL;
    }
    if (str_axis == NULL && ((str_axis = PyUnicode_InternFromString("axis")) == NULL
                             || (str_keepdims = PyUnicode_InternFromString("keepdims")) == NULL)) {
        return NULL;
    }
    ReduceOpObject *self = (ReduceOpObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)reduce_vectorcall;
    self->name = Py_NewRef(name);
    self->py_fn = Py_NewRef(py_fn);
    self->make = Py_NewRef(make);
    self->module = PyUnicode_FromString("gpupromote");
    if (self->module == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
reduce_op_dealloc(ReduceOpObject *self)
{
    Py_XDECREF(self->name);
    Py_XDECREF(self->py_fn);
    Py_XDECREF(self->make);
    Py_XDECREF(self->module);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
reduce_op_repr(ReduceOpObject *self)
{
    return PyUnicode_FromFormat("<gpupromote reduction %U (compiled dispatcher)>", self->name);
}

static PyObject *
reduce_op_get_doc(ReduceOpObject *self, void *unused)
{
    return PyObject_GetAttrString(self->py_fn, "__doc__");
}

static PyObject *
reduce_op_reduce(ReduceOpObject *self, PyObject *unused)
{
    return Py_NewRef(self->name);   /* pickled by name, as a function: gpupromote.<name> */
}

static PyObject *
reduce_op_get_signature(ReduceOpObject *self, void *unused)
{
    PyObject *inspect = PyImport_ImportModule("inspect");
    if (inspect == NULL) {
        return NULL;
    }
    PyObject *sig = PyObject_CallMethod(inspect, "signature", "O", self->py_fn);
    Py_DECREF(inspect);
    return sig;
}

static PyMemberDef reduce_op_members[] = {
    {"__name__", T_OBJECT_EX, offsetof(ReduceOpObject, name), READONLY, NULL},
    {"__qualname__", T_OBJECT_EX, offsetof(ReduceOpObject, name), READONLY, NULL},
    {"__module__", T_OBJECT_EX, offsetof(ReduceOpObject, module), READONLY, NULL},
    {"__wrapped__", T_OBJECT_EX, offsetof(ReduceOpObject, py_fn), READONLY, "the Python function (the reference path)"},
    {NULL},
};

static PyGetSetDef reduce_op_getset[] = {
    {"__doc__", (getter)reduce_op_get_doc, NULL, NULL, NULL},
    {"__signature__", (getter)reduce_op_get_signature, NULL, NULL, NULL},
    {NULL},
};

static PyMethodDef reduce_op_methods[] = {
    {"__reduce__", (PyCFunction)reduce_op_reduce, METH_NOARGS, NULL},
    {NULL},
};

PyTypeObject gp_ReduceOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpupromote.dispatch._fastpath.ReduceOp",
    .tp_basicsize = sizeof(ReduceOpObject),
    .tp_dealloc = (destructor)reduce_op_dealloc,
    .tp_vectorcall_offset = offsetof(ReduceOpObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)reduce_op_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_members = reduce_op_members,
    .tp_getset = reduce_op_getset,
    .tp_methods = reduce_op_methods,
    .tp_new = reduce_op_new,
};

PyObject *
gp_reduce_stats(PyObject *module, PyObject *unused)
{
    return Py_BuildValue("{sKsK}", "served", reductions_served, "declined", reductions_declined);
}
