/* The cache-hit path of gp.result_type, compiled.
 *
 * gpupromote/api.py owns every decision: it resolves plans, fills the plan cache and keeps the
 * pure-Python result_type.  This module only repeats that function's first three steps in C,
 * because on a hit they are all there is to do:
 *   1. the key (policy, op, *key(a), *key(b)), two fields per operand, as api._operand_key builds it
 *      (op is a name, or None: promotion alone, which promote_types asks for);
 *   2. one lookup in api._plans, whose values are (plan, bounds, result dtype), or in a memo of
 *      the same values keyed by object identity (see MemoEntry), which skips building a tuple;
 *   3. the bounds the policy holds Python ints to ((position, lo, hi) triples).
 * Anything else (a miss, a value out of bounds, an operand it has no key for, `where`, a
 * number of operands other than two) goes to the Python function unchanged, so both paths give
 * the same answer and raise the same errors.  tests/test_fastpath.py holds them equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* T_OBJECT_EX, the kind of a __slots__ entry */
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/ndarraytypes.h>

/* Set once by bind(); strong references for the life of the process. */
static PyObject *plans;              /* api._plans */
static PyObject *current_policy;     /* api._current, a ContextVar */
static PyTypeObject *ndarray_type;   /* numpy.ndarray, exact type only */
static PyTypeObject *generic_type;   /* numpy.generic: numpy scalars key as 0-d arrays */
/* Types whose instances carry their interned key pair in a `_key` __slots__ entry (api.Spec,
 * gp.DType), and where that slot lives in an instance. */
#define MAX_KEYED_TYPES 4
static PyTypeObject *keyed_types[MAX_KEYED_TYPES];
static Py_ssize_t key_offsets[MAX_KEYED_TYPES];
static int n_keyed_types;
static PyObject *operand_key;        /* api._operand_key, for every other operand */
static PyObject *python_result_type; /* api._py_result_type, for everything but a hit */

static PyObject *str_op, *str_policy, *str_add, *str_where, *str_key, *str_dtype;

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
    if (t == ndarray_type) {
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
    for (int k = 0; k < n_keyed_types; k++) {
        if (t == keyed_types[k]) {  /* read the __slots__ entry directly: cheaper than getattr */
            PyObject *pair = *(PyObject **)((char *)x + key_offsets[k]);
            if (pair == NULL || !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
                PyErr_Format(PyExc_SystemError, "gpupromote: a %s without its key", t->tp_name);
                return -1;
            }
            *main = PyTuple_GET_ITEM(pair, 0);
            *detail = PyTuple_GET_ITEM(pair, 1);
            return 0;  /* stable: these keys are interned */
        }
    }
    if (PyObject_TypeCheck(x, generic_type)) {
        PyObject *descr = PyObject_GetAttr(x, str_dtype);
        if (descr == NULL) {
            return -1;
        }
        *main = *owned = descr;
        *detail = Py_True;
        return 0;  /* stable enough: a scalar type's dtype is one object (and the memo holds it) */
    }
    PyObject *pair = PyObject_CallOneArg(operand_key, x);
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
 * each entry repeats a value of `plans` (which never changes once set), so eviction is harmless. */
#define MEMO_SLOTS 2048
#define MEMO_PROBES 4
typedef struct {
    PyObject *key[6];  /* policy, op, a main, a detail, b main, b detail; key[0] NULL when empty */
    PyObject *bounds, *result;
} MemoEntry;
static MemoEntry memo[MEMO_SLOTS];

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
        MemoEntry *e = &memo[(slot + probe) & (MEMO_SLOTS - 1)];
        if (e->key[0] == key[0] && e->key[1] == key[1] && e->key[2] == key[2] && e->key[3] == key[3]
                && e->key[4] == key[4] && e->key[5] == key[5]) {
            return e;
        }
    }
    return NULL;
}

static void
memo_clear_entry(MemoEntry *e)
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
    MemoEntry *e = &memo[slot];
    for (int probe = 0; probe < MEMO_PROBES; probe++) {
        MemoEntry *candidate = &memo[(slot + probe) & (MEMO_SLOTS - 1)];
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
    memo_clear_entry(&old);
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

static int
same_name(PyObject *name, PyObject *interned)
{
    return name == interned || PyUnicode_Compare(name, interned) == 0;
}

static PyObject *
result_type(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *op = str_add, *policy = Py_None;
    if (python_result_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "gpupromote._fastpath.bind() was not called");
        return NULL;
    }
    if (nargs != 2) {
        goto slow;
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (same_name(name, str_op)) {
                op = args[nargs + i];
            }
            else if (same_name(name, str_policy)) {
                policy = args[nargs + i];
            }
            else {
                goto slow;  /* let Python word the TypeError */
            }
        }
    }
    if (op != Py_None && (!PyUnicode_CheckExact(op) || same_name(op, str_where))) {
        goto slow;  /* where(x, y) gains its condition in Python; op=None is promotion alone */
    }

    PyObject *key[6], *owned[2] = {NULL, NULL}, *answer = NULL;
    int stable[2];
    if (policy == Py_None) {
        if (PyContextVar_Get(current_policy, NULL, &policy) < 0) {
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
        PyObject *hit = PyDict_GetItemWithError(plans, tuple);
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
    return PyObject_Vectorcall(python_result_type, args, nargsf, kwnames);
}

static PyObject *
forget(PyObject *module, PyObject *unused)
{
    for (size_t i = 0; i < MEMO_SLOTS; i++) {
        memo_clear_entry(&memo[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *
bind(PyObject *module, PyObject *args)
{
    PyObject *p, *cv, *nd, *gen, *keyed, *ok_fn, *py_fn;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO:bind", &PyDict_Type, &p, &PyContextVar_Type, &cv,
                          &PyType_Type, &nd, &PyType_Type, &gen, &PyTuple_Type, &keyed, &ok_fn, &py_fn)) {
        return NULL;
    }
    Py_XSETREF(plans, Py_NewRef(p));
    Py_XSETREF(current_policy, Py_NewRef(cv));
    Py_XSETREF(ndarray_type, (PyTypeObject *)Py_NewRef(nd));
    if (PyTuple_GET_SIZE(keyed) > MAX_KEYED_TYPES) {
        PyErr_SetString(PyExc_ValueError, "bind: too many keyed types");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keyed); k++) {
        PyObject *type = PyTuple_GET_ITEM(keyed, k);
        PyObject *slot = PyType_Check(type)
            ? PyDict_GetItemWithError(((PyTypeObject *)type)->tp_dict, str_key) : NULL;
        if (slot == NULL || !Py_IS_TYPE(slot, &PyMemberDescr_Type)
                || ((PyMemberDescrObject *)slot)->d_member->type != T_OBJECT_EX) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "bind: %R needs a `_key` entry in its __slots__", type);
            }
            return NULL;
        }
    }
    for (int k = 0; k < n_keyed_types; k++) {
        Py_CLEAR(keyed_types[k]);
    }
    n_keyed_types = (int)PyTuple_GET_SIZE(keyed);
    for (int k = 0; k < n_keyed_types; k++) {
        PyObject *type = PyTuple_GET_ITEM(keyed, k);
        PyObject *slot = PyDict_GetItem(((PyTypeObject *)type)->tp_dict, str_key);
        keyed_types[k] = (PyTypeObject *)Py_NewRef(type);
        key_offsets[k] = ((PyMemberDescrObject *)slot)->d_member->offset;
    }
    Py_XSETREF(generic_type, (PyTypeObject *)Py_NewRef(gen));
    Py_XSETREF(operand_key, Py_NewRef(ok_fn));
    Py_XSETREF(python_result_type, Py_NewRef(py_fn));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"result_type", (PyCFunction)(void (*)(void))result_type, METH_FASTCALL | METH_KEYWORDS,
     "result_type($module, /, *operands, op='add', policy=None)\n--\n\n"
     "The result dtype of ``op`` on ``operands`` under ``policy`` (default: the current policy).\n"
     "For ``op=\"where\"`` pass (x, y) or (cond, x, y)."},
    {"bind", bind, METH_VARARGS,
     "bind(plans, current_policy, ndarray, generic, keyed_types, operand_key, python_result_type)\n"
     "Hand the plan cache and the Python fallbacks to result_type (api.py does this once)."},
    {"forget", forget, METH_NOARGS,
     "Drop the pointer memo (api.forget_plans does this when it empties the plan cache)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "gpupromote._fastpath",
    "gp.result_type's cache-hit path in C; gpupromote/api.py keeps the rules and the cache.", -1, methods,
};

PyMODINIT_FUNC
PyInit__fastpath(void)
{
    str_op = PyUnicode_InternFromString("op");
    str_policy = PyUnicode_InternFromString("policy");
    str_add = PyUnicode_InternFromString("add");
    str_where = PyUnicode_InternFromString("where");
    str_key = PyUnicode_InternFromString("_key");
    str_dtype = PyUnicode_InternFromString("dtype");
    if (!str_op || !str_policy || !str_add || !str_where || !str_key || !str_dtype) {
        return NULL;
    }
    return PyModule_Create(&module_def);
}
