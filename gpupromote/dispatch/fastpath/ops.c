/* ops.c: the Op type (gp.add and the other ops as C callables), its memo of entries, and
 * op_stats.  An Op finds the entry of a call's key here and runs it through entry.c (gp_entry_run:
 * numpy arrays) or device.c (gp_entry_run_device: CuPy arrays).  Relies on fastpath.h; reads
 * result_type.c's gp_current_policy, gp_ndarray_type and gp_same_name, device.c's
 * gp_device_array_type and pool.c's gp_calls_split.  module.c registers the type and empties the
 * memo (forget, bind_device).
 *
 * ============================================================================================
 * The compiled op dispatcher: the cache-hit path of gp.add(a, b, policy=..., out=...) and of
 * every other op, in C.
 *
 * gpupromote/dispatch/opfunctions.py owns every decision here too.  On a miss, an Op calls its Python maker
 * (opfunctions._make_entry), which resolves the plan, decides whether calls of this key can run
 * here at all, compiles the kernel's native entry point (a Numba cfunc, see
 * engines/cpu/source._native_lines) and hands back an Entry (or None: this key always takes the
 * Python path).  The key is (policy, per operand its numpy dtype or Python type, out's dtype or
 * None); entries are memoized by the identity of those objects.  On a hit the call is:
 *   1. the operands' keys and the entry;
 *   2. the Python ints held to the plan's bounds (the values the cached plan holds for);
 *   3. the folded scalars converted to the kernel's parameter type (gp_fold_value, folding.c: the cases
 *      where a C conversion is the Python converter's, bit for bit; other cases call it);
 *   4. the layouts: arrays of one shape, C-contiguous and aligned; out= of the result dtype,
 *      writable, C-contiguous, aligned, disjoint from the inputs or one of them element for
 *      element (in place), where the plan's store rules allow it;
 *   5. the output (a new array; the Python pool for large ones) and the kernel, entered through
 *      its C address, over threads above a size (gp_run_kernel, pool.c).
 * Whatever does not fit (another layout, a value out of bounds, an unusual scalar conversion, an
 * allocation that fails) declines: the call goes to the Python op function unchanged, which
 * gives the same result or raises the same error (tests/dispatch/test_dispatcher.py holds them equal).
 * Calls on CuPy arrays have entries of their own (keyed apart, by the op's device_key): steps 1 to
 * 4 alike, then cupy.empty and one cuLaunchKernel (see "CUDA entries" in device.c).
 * ========================================================================================== */

#include "fastpath.h"

/* ---------------------------------------------------------------------------------------------
 * Ops: gp.add and the others, callables with a vectorcall entry. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;       /* the op's name */
    PyObject *py_fn;      /* the Python op function: the fallback and the reference */
    PyObject *make;       /* dispatch's maker: (key, args, policy, out) -> Entry, None (always the
                           * Python path: remembered) or False (the Python path this time) */
    PyObject *cache;      /* key -> Entry | None (the maker fills it; `_fast_cache`) */
    PyObject *module;     /* "gpupromote" */
    PyObject *device_key; /* stands for the op in the memo keys of calls on device arrays */
    int arity;
} OpObject;

/* Memo of (op, policy, operand keys, out key) by identity -> entry, as for result_type
 * (OpMemo, OP_MEMO_SLOTS and OP_KEY: fastpath.h, for forget() and bind_device()). */
#define OP_MEMO_PROBES 4
OpMemo gp_op_memo[OP_MEMO_SLOTS];

static size_t
op_memo_slot(PyObject *const key[OP_KEY])
{
    uint64_t h = 0;
    for (int i = 0; i < OP_KEY; i++) {
        h = (h ^ (uint64_t)(uintptr_t)key[i]) * 0x9E3779B97F4A7C15ull;
    }
    return (size_t)(h >> 40) & (OP_MEMO_SLOTS - 1);
}

static OpMemo *
op_memo_find(PyObject *const key[OP_KEY])
{
    size_t slot = op_memo_slot(key);
    for (int probe = 0; probe < OP_MEMO_PROBES; probe++) {
        OpMemo *m = &gp_op_memo[(slot + probe) & (OP_MEMO_SLOTS - 1)];
        if (m->key[0] == key[0] && m->key[1] == key[1] && m->key[2] == key[2] && m->key[3] == key[3]
                && m->key[4] == key[4] && m->key[5] == key[5]) {
            return m;
        }
    }
    return NULL;
}

void
gp_op_memo_clear_entry(OpMemo *m)
{
    for (int i = 0; i < OP_KEY; i++) {
        Py_CLEAR(m->key[i]);
    }
    Py_CLEAR(m->entry);
}

static void
op_memo_insert(PyObject *const key[OP_KEY], PyObject *entry)
{
    size_t slot = op_memo_slot(key);
    OpMemo *m = &gp_op_memo[slot];
    for (int probe = 0; probe < OP_MEMO_PROBES; probe++) {
        OpMemo *candidate = &gp_op_memo[(slot + probe) & (OP_MEMO_SLOTS - 1)];
        if (candidate->key[0] == NULL) {
            m = candidate;
            break;
        }
    }
    OpMemo old = *m;   /* new references first: the old ones' destructors may run code */
    for (int i = 0; i < OP_KEY; i++) {
        m->key[i] = Py_NewRef(key[i]);
    }
    m->entry = Py_NewRef(entry);
    gp_op_memo_clear_entry(&old);
}

/* The entry for `key` (a new reference; Py_None for "the Python path"), or NULL on error. */
static PyObject *
op_entry(OpObject *self, PyObject *const key[OP_KEY], PyObject *const *args, PyObject *out, int device)
{
    OpMemo *m = op_memo_find(key);
    if (m != NULL) {
        return Py_NewRef(m->entry);
    }
    int n = self->arity + 2 + device;
    PyObject *tuple = PyTuple_New(n);   /* (policy, *operand keys, out key[, "cuda"]) */
    if (tuple == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(tuple, 0, Py_NewRef(key[1]));
    for (int i = 0; i < self->arity; i++) {
        PyTuple_SET_ITEM(tuple, 1 + i, Py_NewRef(key[2 + i]));
    }
    PyTuple_SET_ITEM(tuple, self->arity + 1, Py_NewRef(key[5]));
    if (device) {
        PyTuple_SET_ITEM(tuple, n - 1, Py_NewRef(PyTuple_GET_ITEM(self->device_key, 1)));
    }
    PyObject *entry = PyDict_GetItemWithError(self->cache, tuple);
    if (entry != NULL) {
        Py_INCREF(entry);
    }
    else if (!PyErr_Occurred()) {
        PyObject *argt = PyTuple_New(self->arity);
        if (argt == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        for (int i = 0; i < self->arity; i++) {
            PyTuple_SET_ITEM(argt, i, Py_NewRef(args[i]));
        }
        entry = PyObject_CallFunctionObjArgs(self->make, tuple, argt, key[1], out, NULL);
        Py_DECREF(argt);
    }
    Py_DECREF(tuple);
    if (entry == NULL) {
        return NULL;
    }
    if (entry == Py_False) {   /* the Python path this time, nothing remembered (opfunctions._MISS) */
        Py_DECREF(entry);
        return Py_NewRef(Py_None);
    }
    if (entry != Py_None && !Py_IS_TYPE(entry, &gp_EntryType)) {
        Py_DECREF(entry);
        PyErr_SetString(PyExc_TypeError, "the op's maker returned neither an Entry nor None");
        return NULL;
    }
    op_memo_insert(key, entry);   /* may run other threads (a destructor): `entry` stays ours */
    return entry;
}

/* `policy or current()`, as the Python functions read it: a new reference to the policy's name,
 * or NULL with no exception set where it is not a str (the Python path says what is wrong). */
PyObject *
gp_call_policy(PyObject *policy)
{
    if (policy == Py_None || (PyUnicode_CheckExact(policy) && PyUnicode_GET_LENGTH(policy) == 0)) {
        if (PyContextVar_Get(gp_current_policy, NULL, &policy) < 0) {
            PyErr_Clear();
            return NULL;
        }
    }
    else {
        Py_INCREF(policy);
    }
    if (!PyUnicode_CheckExact(policy)) {
        Py_DECREF(policy);
        return NULL;
    }
    return policy;
}

/* Calls the compiled path served and calls it handed to the Python function (op_stats()). */
static unsigned long long calls_served, calls_declined;

/* A CuPy array's dtype, borrowed (the array holds it), or NULL with no exception set. */
static PyObject *
device_dtype(PyObject *x)
{
    PyObject *dtype = PyObject_GetAttr(x, gp_str_dtype);
    if (dtype == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(dtype);
    return Py_TYPE(dtype) == &PyArrayDescr_Type || PyObject_TypeCheck(dtype, &PyArrayDescr_Type) ? dtype : NULL;
}

static PyObject *
op_vectorcall(OpObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *policy = Py_None, *out = Py_None, *result = NULL;
    if (nargs != self->arity || gp_current_policy == NULL || gp_sanitizing) {
        goto fallback;
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (gp_same_name(name, gp_str_policy)) {
                policy = args[nargs + i];
            }
            else if (gp_same_name(name, gp_str_out)) {
                out = args[nargs + i];
            }
            else {
                goto fallback;   /* Python words the TypeError */
            }
        }
    }
    PyObject *key[OP_KEY];
    int host = 0, device = 0;   /* numpy arrays and CuPy arrays among the operands and out */
    /* The operands as the entry reads them: a 0-d array as its numpy scalar (ours, released
     * below), which every policy folds alike (api._operand_key describes a numpy scalar as a 0-d
     * array); the Python path gets the call's own arguments. */
    PyObject *operands[GP_MAX_IN], *made[GP_MAX_IN] = {NULL, NULL, NULL};
    int wrap = 0;   /* a host gp.Array among the operands: its storage is read, the result an Array */
    key[2] = key[3] = key[4] = Py_None;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *x = operands[i] = args[i];
        PyTypeObject *t = Py_TYPE(x);
        if (gp_is_array(x)) {
            if ((x = operands[i] = gp_array_storage(x)) == NULL) {
                goto release;
            }
            t = Py_TYPE(x);
            wrap = 1;
        }
        if (t == gp_ndarray_type && PyArray_NDIM((PyArrayObject *)x) == 0) {
            x = operands[i] = made[i] = PyArray_ToScalar(PyArray_DATA((PyArrayObject *)x), (PyArrayObject *)x);
            if (x == NULL || gp_generic_type == NULL || !PyObject_TypeCheck(x, gp_generic_type)) {
                PyErr_Clear();
                goto release;   /* an object array's element is the object itself: the Python path refuses it */
            }
            t = Py_TYPE(x);
        }
        if (t == gp_ndarray_type) {
            key[2 + i] = (PyObject *)PyArray_DESCR((PyArrayObject *)x);
            host = 1;
        }
        else if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type) {
            key[2 + i] = (PyObject *)t;
        }
        else if (gp_generic_type != NULL && PyObject_TypeCheck(x, gp_generic_type)) {
            key[2 + i] = (PyObject *)t;   /* a numpy scalar: folded by value, keyed by its type */
        }
        else if (t == gp_device_array_type && gp_device_array_type != NULL) {
            if ((key[2 + i] = device_dtype(x)) == NULL) {
                goto release;
            }
            device = 1;
        }
        else {
            goto release;
        }
    }
    if (out == Py_None) {
        key[5] = Py_None;
    }
    else if (Py_TYPE(out) == gp_ndarray_type) {
        key[5] = (PyObject *)PyArray_DESCR((PyArrayObject *)out);
        host = 1;
    }
    else if (Py_TYPE(out) == gp_device_array_type && gp_device_array_type != NULL) {
        if ((key[5] = device_dtype(out)) == NULL) {
            goto release;
        }
        device = 1;
    }
    else {
        goto release;
    }
    if (host && device) {
        goto release;   /* host arrays beside device arrays: the Python path says what to do */
    }
    key[0] = device ? self->device_key : (PyObject *)self;
    if ((policy = gp_call_policy(policy)) == NULL) {
        goto release;
    }
    key[1] = policy;
    PyObject *entry = op_entry(self, key, operands, out, device);   /* ours: a memo eviction cannot free it */
    int raised = 0;
    if (entry != NULL && entry != Py_None) {
        EntryObject *e = (EntryObject *)entry;
        if (e->launch == NULL) {
            result = device ? NULL : gp_entry_run(e, operands, out);
        }
        else {
            result = device ? gp_entry_run_device(e, operands, out, &raised) : NULL;
        }
    }
    Py_XDECREF(entry);
    Py_DECREF(policy);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_XDECREF(made[i]);
    }
    if (result != NULL && wrap) {
        result = out == Py_None ? gp_array_wrap(result) : result;
    }
    if (result != NULL || raised) {
        calls_served++;
        return result;   /* or the launch's error: running the call again would not undo it */
    }
    PyErr_Clear();   /* the Python path meets the same condition and says what it is */
    goto fallback;
release:
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_XDECREF(made[i]);
    }
fallback:
    calls_declined++;
    return PyObject_Vectorcall(self->py_fn, args, nargsf, kwnames);
}

static PyObject *
op_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *name, *py_fn, *make, *cache;
    int arity;
    static char *names[] = {"name", "arity", "py_fn", "make", "cache", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UiOOO!:Op", names, &name, &arity, &py_fn, &make,
                                     &PyDict_Type, &cache)) {
        return NULL;
    }
    if (arity < 1 || arity > GP_MAX_IN) {
        PyErr_SetString(PyExc_ValueError, "Op: arity 1 to 3");
        return NULL;
    }
    OpObject *self = (OpObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)op_vectorcall;
    self->name = Py_NewRef(name);
    self->py_fn = Py_NewRef(py_fn);
    self->make = Py_NewRef(make);
    self->cache = Py_NewRef(cache);
    self->module = PyUnicode_FromString("gpupromote");
    self->device_key = Py_BuildValue("(Os)", name, "cuda");
    self->arity = arity;
    if (self->module == NULL || self->device_key == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
op_dealloc(OpObject *self)
{
    Py_XDECREF(self->name);
    Py_XDECREF(self->py_fn);
    Py_XDECREF(self->make);
    Py_XDECREF(self->cache);
    Py_XDECREF(self->module);
    Py_XDECREF(self->device_key);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
op_repr(OpObject *self)
{
    return PyUnicode_FromFormat("<gpupromote op %U (compiled dispatcher)>", self->name);
}

static PyObject *
op_get_doc(OpObject *self, void *unused)
{
    return PyObject_GetAttrString(self->py_fn, "__doc__");
}

static PyObject *
op_reduce(OpObject *self, PyObject *unused)
{
    return Py_NewRef(self->name);   /* pickled by name, as a function: gpupromote.<name> */
}

static PyMemberDef op_members[] = {
    {"__name__", T_OBJECT_EX, offsetof(OpObject, name), READONLY, NULL},
    {"__qualname__", T_OBJECT_EX, offsetof(OpObject, name), READONLY, NULL},
    {"__module__", T_OBJECT_EX, offsetof(OpObject, module), READONLY, NULL},
    {"__wrapped__", T_OBJECT_EX, offsetof(OpObject, py_fn), READONLY, "the Python op function (the reference path)"},
    {"_fast_cache", T_OBJECT_EX, offsetof(OpObject, cache), READONLY, "key -> Entry or None"},
    {NULL},
};

static PyGetSetDef op_getset[] = {
    {"__doc__", (getter)op_get_doc, NULL, NULL, NULL},
    {NULL},
};

static PyMethodDef op_methods[] = {
    {"__reduce__", (PyCFunction)op_reduce, METH_NOARGS, NULL},
    {NULL},
};

PyTypeObject gp_OpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpupromote.dispatch._fastpath.Op",
    .tp_basicsize = sizeof(OpObject),
    .tp_dealloc = (destructor)op_dealloc,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)op_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_members = op_members,
    .tp_getset = op_getset,
    .tp_methods = op_methods,
    .tp_new = op_new,
};

PyObject *
gp_op_stats(PyObject *module, PyObject *unused)
{
    return Py_BuildValue("{sKsKsK}", "served", calls_served, "declined", calls_declined, "split", gp_calls_split);
}
