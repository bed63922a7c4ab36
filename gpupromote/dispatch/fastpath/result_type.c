/* result_type.c: gp.result_type's compiled cache-hit path, its pointer memo, and the state bind()
 * hands it (defined here; bind() is in module.c, which also lists result_type in the method
 * table and empties the memo in forget()).  Relies on fastpath.h for the interned names; ops.c
 * shares gp_same_name, gp_current_policy and gp_ndarray_type.  (Every op's cache-hit path is in
 * ops.c, entry.c and device.c.)
 *
 * gp.result_type:
 *
 * gpupromote/dispatch/api.py owns every decision: it resolves plans, fills the plan cache and keeps the
 * pure-Python result_type.  This module only repeats that function's first three steps in C,
 * because on a hit they are all there is to do:
 *   1. the key (policy, op, *key(a), *key(b)), two fields per operand, as api._operand_key builds it
 *      (op is a name, or None: promotion alone, which promote_types asks for);
 *   2. one lookup in api._plans, whose values are (plan, bounds, result dtype), or in a memo of
 *      the same values keyed by object identity (see MemoEntry), which skips building a tuple;
 *   3. the bounds the policy holds Python ints to ((position, lo, hi) triples).
 * Anything else (a miss, a value out of bounds, an operand it has no key for, `where`, a
 * number of operands other than two) goes to the Python function unchanged, so both paths give
 * the same answer and raise the same errors.  tests/dispatch/test_fastpath.py holds them equal.
 */

#include "fastpath.h"

/* Set once by bind(); strong references for the life of the process. */
PyObject *gp_plans;              /* api._plans */
PyObject *gp_current_policy;     /* api._current, a ContextVar */
PyTypeObject *gp_ndarray_type;   /* numpy.ndarray, exact type only */
PyTypeObject *gp_generic_type;   /* numpy.generic: numpy scalars key as 0-d arrays */
/* Types whose instances carry their interned key pair in a `_key` __slots__ entry (api.Spec,
 * gp.DType), and where that slot lives in an instance (MAX_KEYED_TYPES: fastpath.h). */
PyTypeObject *gp_keyed_types[MAX_KEYED_TYPES];
Py_ssize_t gp_key_offsets[MAX_KEYED_TYPES];
int gp_n_keyed_types;
PyObject *gp_operand_key;        /* api._operand_key, for every other operand */
PyObject *gp_python_result_type; /* api._py_result_type, for everything but a hit */

/* x's two key fields, as api._operand_key gives them, borrowed for the length of the call.
 * `owned` is set to an object the caller releases when done (else NULL); `stable` to 1 when the
 * main field is an object that stands for the key by identity (a numpy dtype, a Python type, the
 * interned key of a spec or a gp.DType), so that the call can be memoized by pointer. -1 with an
 * exception set. */
static int
key_fields(PyObject *x, PyObject **main, PyObject **detail, PyObject **owned, int *stable)
{
    PyTypeObject *t = Py_TYPE(x);
    *owned = NULL;
    *stable = 1;
    if (t == gp_ndarray_type) {
        PyArrayObject *a = (PyArrayObject *)x;
        *main = (PyObject *)PyArray_DESCR(a);
        *detail = PyArray_NDIM(a) == 0 ? Py_True : Py_False;
        return 0;
    }
    if (t == &PyFloat_Type || t == &PyBool_Type || t == &PyComplex_Type) {
        *main = (PyObject *)t;
        *detail = Py_False;
        return 0;
    }
    if (t == &PyLong_Type) {
        int beyond_int64;
        (void)PyLong_AsLongLongAndOverflow(x, &beyond_int64);
        *main = (PyObject *)t;
        *detail = beyond_int64 > 0 ? Py_True : Py_False;
        return 0;
    }
    for (int k = 0; k < gp_n_keyed_types; k++) {
        if (t == gp_keyed_types[k]) {  /* read the __slots__ entry directly: cheaper than getattr */
            PyObject *pair = *(PyObject **)((char *)x + gp_key_offsets[k]);
            if (pair == NULL || !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
                PyErr_Format(PyExc_SystemError, "gpupromote: a %s without its key", t->tp_name);
                return -1;
            }
            *main = PyTuple_GET_ITEM(pair, 0);
            *detail = PyTuple_GET_ITEM(pair, 1);
            return 0;  /* stable: these keys are interned */
        }
    }
    if (PyObject_TypeCheck(x, gp_generic_type)) {
        PyObject *descr = PyObject_GetAttr(x, gp_str_dtype);
        if (descr == NULL) {
            return -1;
        }
        *main = *owned = descr;
        *detail = Py_True;
        return 0;  /* stable enough: a scalar type's dtype is one object (and the memo holds it) */
    }
    PyObject *pair = PyObject_CallOneArg(gp_operand_key, x);
    if (pair == NULL) {
        return -1;
    }
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_SystemError, "gpupromote: an operand key is not a pair");
        return -1;
    }
    *main = PyTuple_GET_ITEM(pair, 0);
    *detail = PyTuple_GET_ITEM(pair, 1);
    *owned = pair;
    *stable = 0;  /* _operand_key built a new one */
    return 0;
}

/* The memo: calls whose key objects are all identity-stable, keyed by their pointers, so that a
 * repeated call costs a few pointer compares instead of building and hashing a 6-tuple. Each
 * entry holds strong references to its key objects, so a pointer match is the same object, and
 * each entry repeats a value of `plans` (which never changes once set), so eviction is harmless.
 * (MemoEntry and MEMO_SLOTS: fastpath.h, for forget().) */
#define MEMO_PROBES 4
MemoEntry gp_memo[MEMO_SLOTS];

static size_t
memo_slot(PyObject *const key[6])
{
    uint64_t h = 0;
    for (int i = 0; i < 6; i++) {
        h = (h ^ (uint64_t)(uintptr_t)key[i]) * 0x9E3779B97F4A7C15ull;
    }
    return (size_t)(h >> 40) & (MEMO_SLOTS - 1);
}

static MemoEntry *
memo_find(PyObject *const key[6])
{
    size_t slot = memo_slot(key);
    for (int probe = 0; probe < MEMO_PROBES; probe++) {
        MemoEntry *e = &gp_memo[(slot + probe) & (MEMO_SLOTS - 1)];
        if (e->key[0] == key[0] && e->key[1] == key[1] && e->key[2] == key[2] && e->key[3] == key[3]
                && e->key[4] == key[4] && e->key[5] == key[5]) {
            return e;
        }
    }
    return NULL;
}

void
gp_memo_clear_entry(MemoEntry *e)
{
    for (int i = 0; i < 6; i++) {
        Py_CLEAR(e->key[i]);
    }
    Py_CLEAR(e->bounds);
    Py_CLEAR(e->result);
}

static void
memo_insert(PyObject *const key[6], PyObject *bounds, PyObject *result)
{
    size_t slot = memo_slot(key);
    MemoEntry *e = &gp_memo[slot];
    for (int probe = 0; probe < MEMO_PROBES; probe++) {
        MemoEntry *candidate = &gp_memo[(slot + probe) & (MEMO_SLOTS - 1)];
        if (candidate->key[0] == NULL) {
            e = candidate;
            break;
        }
    }
    /* take the new references before dropping the old ones: an evicted entry may hold the last
     * reference to an object, and its destructor must find the memo consistent */
    MemoEntry old = *e;
    for (int i = 0; i < 6; i++) {
        e->key[i] = Py_NewRef(key[i]);
    }
    e->bounds = Py_NewRef(bounds);
    e->result = Py_NewRef(result);
    gp_memo_clear_entry(&old);
}

/* 1 if every bounded Python int of the call is in range, 0 if not, -1 on error. */
static int
within_bounds(PyObject *bounds, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(bounds);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *bound = PyTuple_GET_ITEM(bounds, j);
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(bound, 0));
        if (i < 0 || i >= nargs) {
            return PyErr_Occurred() ? -1 : 0;
        }
        int ok = PyObject_RichCompareBool(PyTuple_GET_ITEM(bound, 1), args[i], Py_LE);
        if (ok == 1) {
            ok = PyObject_RichCompareBool(args[i], PyTuple_GET_ITEM(bound, 2), Py_LE);
        }
        if (ok != 1) {
            return ok;
        }
    }
    return 1;
}

int
gp_same_name(PyObject *name, PyObject *interned)
{
    return name == interned || PyUnicode_Compare(name, interned) == 0;
}

PyObject *
gp_result_type(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *op = gp_str_add, *policy = Py_None;
    if (gp_python_result_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "gpupromote.dispatch._fastpath.bind() was not called");
        return NULL;
    }
    if (nargs != 2) {
        goto slow;
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (gp_same_name(name, gp_str_op)) {
                op = args[nargs + i];
            }
            else if (gp_same_name(name, gp_str_policy)) {
                policy = args[nargs + i];
            }
            else {
                goto slow;  /* let Python word the TypeError */
            }
        }
    }
    if (op != Py_None && (!PyUnicode_CheckExact(op) || gp_same_name(op, gp_str_where))) {
        goto slow;  /* where(x, y) gains its condition in Python; op=None is promotion alone */
    }

    PyObject *key[6], *owned[2] = {NULL, NULL}, *answer = NULL;
    int stable[2];
    if (policy == Py_None) {
        if (PyContextVar_Get(gp_current_policy, NULL, &policy) < 0) {
            return NULL;
        }
    }
    else {
        Py_INCREF(policy);
    }
    key[0] = policy;
    key[1] = op;
    if (key_fields(args[0], &key[2], &key[3], &owned[0], &stable[0]) < 0
            || key_fields(args[1], &key[4], &key[5], &owned[1], &stable[1]) < 0) {
        PyErr_Clear();  /* Python raises the error about this operand, in its words */
        goto done;
    }
    int memoizable = stable[0] && stable[1] && PyUnicode_CheckExact(policy);
    PyObject *bounds, *result;
    MemoEntry *e = memoizable ? memo_find(key) : NULL;
    if (e != NULL) {
        bounds = Py_NewRef(e->bounds);
        result = Py_NewRef(e->result);
    }
    else {
        PyObject *tuple = PyTuple_New(6);
        if (tuple == NULL) {
            goto done;
        }
        for (int i = 0; i < 6; i++) {
            PyTuple_SET_ITEM(tuple, i, Py_NewRef(key[i]));
        }
        PyObject *hit = PyDict_GetItemWithError(gp_plans, tuple);
        Py_DECREF(tuple);
        if (hit == NULL) {
            goto done;  /* a miss (or an error, which the slow path meets again) */
        }
        bounds = Py_NewRef(PyTuple_GET_ITEM(hit, 1));
        result = Py_NewRef(PyTuple_GET_ITEM(hit, 2));
        if (memoizable) {
            memo_insert(key, bounds, result);
        }
    }
    if (within_bounds(bounds, args, nargs) == 1) {
        answer = Py_NewRef(result);
    }
    Py_DECREF(bounds);
    Py_DECREF(result);
done:
    Py_XDECREF(owned[0]);
    Py_XDECREF(owned[1]);
    Py_DECREF(policy);
    if (answer != NULL) {
        return answer;
    }
    PyErr_Clear();
slow:
    return PyObject_Vectorcall(gp_python_result_type, args, nargsf, kwnames);
}
