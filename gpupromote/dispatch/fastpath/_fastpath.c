/* The compiled cache-hit paths: gp.result_type's, and every op's (from "The compiled op
 * dispatcher" on).
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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* T_OBJECT_EX, the kind of a __slots__ entry */
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

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
        PyErr_SetString(PyExc_RuntimeError, "gpupromote.dispatch._fastpath.bind() was not called");
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

/* ============================================================================================
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
 *   3. the folded scalars converted to the kernel's parameter type (fold_value: the cases
 *      where a C conversion is the Python converter's, bit for bit; other cases call it);
 *   4. the layouts: arrays of one shape, C-contiguous and aligned; out= of the result dtype,
 *      writable, C-contiguous, aligned, disjoint from the inputs or one of them element for
 *      element (in place), where the plan's store rules allow it;
 *   5. the output (a new array; the Python pool for large ones) and the kernel, entered through
 *      its C address, over threads above a size (run_kernel).
 * Whatever does not fit (another layout, a value out of bounds, an unusual scalar conversion, an
 * allocation that fails) declines: the call goes to the Python op function unchanged, which
 * gives the same result or raises the same error (tests/dispatch/test_dispatcher.py holds them equal).
 * Calls on CuPy arrays have entries of their own (keyed apart, by the op's device_key): steps 1 to
 * 4 alike, then cupy.empty and one cuLaunchKernel (see "CUDA entries" below).
 * ========================================================================================== */

typedef void (*gp_kernel)(char **data, int64_t n);

#define GP_MAX_IN 3
#define GP_MAX_OPS (GP_MAX_IN + 1)

/* The parameter types a folded scalar can be passed as (opfunctions._FOLD_CODES), in its carrier:
 * float16 and bfloat16 values are passed as the float32 that holds them exactly. */
enum { F_B1, F_I1, F_I2, F_I4, F_I8, F_U1, F_U2, F_U4, F_U8, F_F4, F_F8, F_C8, F_C16, F_F2, F_BF, F_COUNT };

typedef union {
    unsigned char b; int8_t i1; int16_t i2; int32_t i4; int64_t i8;
    uint8_t u1; uint16_t u2; uint32_t u4; uint64_t u8;
    float f4; double f8; float c8[2]; double c16[2];
} Slot;

/* ---------------------------------------------------------------------------------------------
 * Threads: a small pool of pthreads that run chunks of one kernel call while the caller, with
 * the GIL released, runs chunks too.  Each element depends on its own inputs only, so any split
 * gives the one-thread result bit for bit.  Another caller that finds the pool busy runs its
 * call alone (correct, just not parallel). */

#define GP_MAX_THREADS 256
static int n_threads = 1;              /* set by _cpu_threads (GPUPROMOTE_NUM_THREADS) */
static unsigned long long calls_split; /* kernel calls split over threads (op_stats()) */
static int64_t min_chunk = 1 << 16;    /* elements per thread at least */
#define GP_RELEASE_GIL_MIN 16384       /* elements: below, releasing the GIL costs more than it gives */
#define GP_MIN_SHARED_CHUNK 16384      /* elements: the smallest of several chunks per thread */

typedef struct {
    gp_kernel fn;
    char *data[GP_MAX_OPS];
    int64_t itemsize[GP_MAX_OPS];   /* 0 for a folded scalar: every chunk reads the same value */
    int nops;
    int64_t n, chunk;
    int nchunks;
} Job;

static void
run_chunk(const Job *job, int c)
{
    int64_t lo = (int64_t)c * job->chunk;
    int64_t hi = lo + job->chunk < job->n ? lo + job->chunk : job->n;
    if (lo >= hi) {
        return;
    }
    char *data[GP_MAX_OPS];
    for (int k = 0; k < job->nops; k++) {
        data[k] = job->data[k] + lo * job->itemsize[k];
    }
    job->fn(data, hi - lo);
}

#if !defined(_WIN32)
#include <pthread.h>
#include <unistd.h>
#define GP_HAVE_THREADS 1

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int workers;            /* started worker threads */
    pid_t pid;              /* the process that started them: a forked child has none */
    unsigned long generation;
    const Job *job;
    int next, remaining, busy;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, 0, 0, 0};

static void *
pool_worker(void *unused)
{
    (void)unused;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool.mu);
    seen = pool.generation;
    for (;;) {
        while (pool.generation == seen) {
            pthread_cond_wait(&pool.wake, &pool.mu);
        }
        seen = pool.generation;
        while (pool.job != NULL && pool.next < pool.job->nchunks) {
            const Job *job = pool.job;
            int c = pool.next++;
            pthread_mutex_unlock(&pool.mu);
            run_chunk(job, c);
            pthread_mutex_lock(&pool.mu);
            if (--pool.remaining == 0) {
                pthread_cond_signal(&pool.done);
            }
        }
    }
    return NULL;
}

static void
pool_after_fork_in_child(void)
{
    /* the workers were not forked: start again with none (and fresh locks) */
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.job = NULL;
    pool.busy = 0;
    pool.pid = getpid();
}

/* Run every chunk of `job`, on the pool where it is free; called without the GIL. */
static void
pool_run(const Job *job)
{
    pthread_mutex_lock(&pool.mu);
    if (pool.busy) {
        pthread_mutex_unlock(&pool.mu);
        for (int c = 0; c < job->nchunks; c++) {
            run_chunk(job, c);
        }
        return;
    }
    pool.busy = 1;
    int wanted = job->nchunks - 1 < GP_MAX_THREADS ? job->nchunks - 1 : GP_MAX_THREADS;
    while (pool.workers < wanted) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, pool_worker, NULL);
        pthread_attr_destroy(&attr);
        if (failed) {
            break;  /* fewer helpers: the caller runs what they leave */
        }
        pool.workers++;
    }
    pool.job = job;
    pool.next = 0;
    pool.remaining = job->nchunks;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    while (pool.next < job->nchunks) {
        int c = pool.next++;
        pthread_mutex_unlock(&pool.mu);
        run_chunk(job, c);
        pthread_mutex_lock(&pool.mu);
        pool.remaining--;
    }
    while (pool.remaining > 0) {
        pthread_cond_wait(&pool.done, &pool.mu);
    }
    pool.job = NULL;
    pool.busy = 0;
    pthread_mutex_unlock(&pool.mu);
}
#endif

/* fn over n >= 1 elements: over threads when there is enough work for two, else in this thread
 * (without the GIL once the loop is long enough to be worth it). Called with the GIL. */
static void
run_kernel(gp_kernel fn, char **data, const int64_t *itemsize, int nops, int64_t n)
{
    int64_t parts = n_threads > 1 ? n / min_chunk : 1;
    if (parts > n_threads) {
        parts = n_threads;
    }
#ifdef GP_HAVE_THREADS
    if (parts >= 2) {
        Job job;
        job.fn = fn;
        job.nops = nops;
        for (int k = 0; k < nops; k++) {
            job.data[k] = data[k];
            job.itemsize[k] = itemsize[k];
        }
        job.n = n;
        /* Four chunks per thread, taken in turn: a thread the OS runs late (a busy machine)
         * takes fewer, instead of holding up the call. Chunks of whole 64-element blocks, so
         * that no two threads write one cache line. */
        int64_t nchunks = n / (parts * 4) >= GP_MIN_SHARED_CHUNK ? parts * 4 : parts;
        job.chunk = ((n + nchunks - 1) / nchunks + 63) & ~(int64_t)63;
        job.nchunks = (int)((n + job.chunk - 1) / job.chunk);
        calls_split++;
        Py_BEGIN_ALLOW_THREADS
        pool_run(&job);
        Py_END_ALLOW_THREADS
        return;
    }
#endif
    if (n >= GP_RELEASE_GIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        fn(data, n);
        Py_END_ALLOW_THREADS
    }
    else {
        fn(data, n);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Folding a Python scalar into a kernel parameter (folding.converter in C). */

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

/* The Python scalar x (float, int, bool or complex) as `src` (the precision the policy keeps it
 * in), then as `to` (the kernel's parameter type), written to *slot.  1: done; 0: a conversion
 * this function leaves to the Python converter (float -> int, complex -> real, the narrow floats
 * but float16 from a double, ...); never an error. */
static int
fold_value(PyObject *x, int src, int to, Slot *slot)
{
    PyTypeObject *t = Py_TYPE(x);
    int is_int = t == &PyLong_Type || t == &PyBool_Type;
    Value v = {0, 0, 0, 0.0, 0.0};
    /* 1. value -> src */
    switch (src) {
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
static int
fold_from_python(PyObject *conv, PyObject *x, int to, Slot *slot)
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

/* ---------------------------------------------------------------------------------------------
 * Entries: what one key's calls need, made by opfunctions._make_entry. */

/* cuLaunchKernel(f, gridDim xyz, blockDim xyz, sharedMemBytes, stream, kernelParams, extra), as
 * cuda.h declares it (CUresult is an int-sized enum, the handles are pointers). */
typedef int (*gp_cu_launch)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared_mem, void *stream, void **params, void **extra);

typedef struct {
    PyObject_HEAD
    gp_kernel fn;
    PyObject *keep;            /* the CFunc owning the machine code */
    PyArray_Descr *result;
    PyObject *alloc;           /* _cpu_pool.alloc: outputs of pool_min bytes or more */
    Py_ssize_t pool_min;
    int nin;
    int folded[GP_MAX_IN], src[GP_MAX_IN], to[GP_MAX_IN];
    PyObject *conv[GP_MAX_IN];
    int nbounds;
    int bpos[GP_MAX_IN];
    long long blo[GP_MAX_IN], bhi[GP_MAX_IN];
    int bints[GP_MAX_IN];      /* both bounds are ints: an int operand is compared in C */
    PyObject *blo_obj[GP_MAX_IN], *bhi_obj[GP_MAX_IN];
    int out_ok, inplace_ok;
    /* The CUDA engine's entries (launch != NULL; fn is then NULL): the contiguous kernel, entered
     * through the driver's cuLaunchKernel with CuPy's handles. */
    gp_cu_launch launch;
    void *function;            /* the CUfunction, loaded on `device` (kept alive by `keep`) */
    int device, width, block;
    long long max_blocks;
    int itemsize[GP_MAX_IN];   /* bytes per element of each array operand */
    int align[GP_MAX_IN];      /* the byte alignment each array's data pointer needs */
    int out_align;
    int split[GP_MAX_IN];      /* a complex scalar the kernel takes as (re, im) */
} EntryObject;

static void
entry_dealloc(EntryObject *e)
{
    Py_XDECREF(e->keep);
    Py_XDECREF(e->result);
    Py_XDECREF(e->alloc);
    for (int i = 0; i < GP_MAX_IN; i++) {
        Py_XDECREF(e->conv[i]);
        Py_XDECREF(e->blo_obj[i]);
        Py_XDECREF(e->bhi_obj[i]);
    }
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static long long
clamped_long_long(PyObject *x, int *is_int)
{
    int overflow = 0;
    *is_int = PyLong_Check(x);
    if (!*is_int) {
        return 0;
    }
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    return overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : v;
}

/* A small tuple of ints into `out` (n of them); -1 with an exception when it is not one. */
static int
int_tuple(PyObject *t, int *out, int n, const char *what)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_ValueError, "Entry: launch %s has one int per operand (%d)", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* launch = (cuLaunchKernel's address, CUfunction, device, width, block, max_blocks, itemsizes,
 * aligns, out_align, splits): engines/cuda/launch.native_launch. */
static int
entry_set_launch(EntryObject *e, PyObject *launch)
{
    unsigned long long address, function;
    PyObject *itemsizes, *aligns, *splits;
    if (!PyTuple_Check(launch) || !PyArg_ParseTuple(launch, "KKiiiLOOiO:launch", &address, &function, &e->device,
                                                    &e->width, &e->block, &e->max_blocks, &itemsizes, &aligns,
                                                    &e->out_align, &splits)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "Entry: launch is a tuple (see engines/cuda/launch.native_launch)");
        }
        return -1;
    }
    if (int_tuple(itemsizes, e->itemsize, e->nin, "itemsizes") < 0 || int_tuple(aligns, e->align, e->nin, "aligns") < 0
            || int_tuple(splits, e->split, e->nin, "splits") < 0) {
        return -1;
    }
    if (address == 0 || function == 0 || e->width < 1 || e->block < 1 || e->max_blocks < 1 || e->out_align < 1) {
        PyErr_SetString(PyExc_ValueError, "Entry: a launch needs cuLaunchKernel, a function and a positive configuration");
        return -1;
    }
    for (int i = 0; i < e->nin; i++) {
        if (!e->folded[i] && (e->itemsize[i] < 1 || e->align[i] < 1)) {
            PyErr_SetString(PyExc_ValueError, "Entry: every array operand has an item size and an alignment");
            return -1;
        }
    }
    e->launch = (gp_cu_launch)(uintptr_t)address;
    e->function = (void *)(uintptr_t)function;
    return 0;
}

static PyObject *
entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    unsigned long long address;
    PyObject *keep, *result, *alloc, *folds, *bounds, *launch = Py_None;
    Py_ssize_t pool_min;
    int out_ok, inplace_ok;
    static char *names[] = {"address", "keep", "result", "alloc", "pool_min", "folds", "bounds", "out_ok",
                            "inplace_ok", "launch", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KOO!OnO!O!pp|O:Entry", names, &address, &keep,
                                     &PyArrayDescr_Type, &result, &alloc, &pool_min, &PyTuple_Type, &folds,
                                     &PyTuple_Type, &bounds, &out_ok, &inplace_ok, &launch)) {
        return NULL;
    }
    Py_ssize_t nin = PyTuple_GET_SIZE(folds), nb = PyTuple_GET_SIZE(bounds);
    if ((address == 0) == (launch == Py_None) || nin < 1 || nin > GP_MAX_IN || nb > GP_MAX_IN) {
        PyErr_SetString(PyExc_ValueError, "Entry: a kernel address or a launch, 1 to 3 operands and at most 3 bounds");
        return NULL;
    }
    EntryObject *e = (EntryObject *)type->tp_alloc(type, 0);
    if (e == NULL) {
        return NULL;
    }
    e->fn = address ? (gp_kernel)(uintptr_t)address : NULL;
    e->keep = Py_NewRef(keep);
    e->result = (PyArray_Descr *)Py_NewRef(result);
    e->alloc = Py_NewRef(alloc);
    e->pool_min = pool_min;
    e->nin = (int)nin;
    e->out_ok = out_ok;
    e->inplace_ok = inplace_ok;
    for (int i = 0; i < nin; i++) {
        PyObject *f = PyTuple_GET_ITEM(folds, i);
        if (f == Py_None) {
            continue;
        }
        int src, to;
        PyObject *conv;
        if (!PyTuple_Check(f) || !PyArg_ParseTuple(f, "iiO:fold", &src, &to, &conv)
                || src < -1 || src >= F_COUNT || to < 0 || to >= F_COUNT) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "Entry: a fold is None or (src code, to code, converter)");
            }
            Py_DECREF(e);
            return NULL;
        }
        e->folded[i] = 1;
        e->src[i] = src;
        e->to[i] = to;
        e->conv[i] = Py_NewRef(conv);
    }
    for (int j = 0; j < nb; j++) {
        PyObject *b = PyTuple_GET_ITEM(bounds, j);
        int pos, is_int_lo, is_int_hi;
        PyObject *lo, *hi;
        if (!PyTuple_Check(b) || !PyArg_ParseTuple(b, "iOO:bound", &pos, &lo, &hi) || pos < 0 || pos >= nin) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "Entry: a bound is (position, lo, hi)");
            }
            Py_DECREF(e);
            return NULL;
        }
        e->bpos[j] = pos;
        e->blo_obj[j] = Py_NewRef(lo);
        e->bhi_obj[j] = Py_NewRef(hi);
        e->blo[j] = clamped_long_long(lo, &is_int_lo);
        e->bhi[j] = clamped_long_long(hi, &is_int_hi);
        e->bints[j] = is_int_lo && is_int_hi;   /* else (a float's range): compared as Python does */
    }
    e->nbounds = (int)nb;
    if (launch != Py_None && entry_set_launch(e, launch) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpupromote.dispatch._fastpath.Entry",
    .tp_basicsize = sizeof(EntryObject),
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Entry(address, keep, result, alloc, pool_min, folds, bounds, out_ok, inplace_ok, launch=None)\n--\n\n"
              "How the compiled dispatcher runs the calls of one key (opfunctions._make_entry makes it):\n"
              "through a CPU kernel's C address, or (address 0) a CUDA kernel's launch.",
    .tp_new = entry_new,
};

/* 1 if every bounded Python scalar of the call lies within its bounds, else 0. */
static int
entry_within_bounds(const EntryObject *e, PyObject *const *args)
{
    for (int j = 0; j < e->nbounds; j++) {
        PyObject *x = args[e->bpos[j]];
        if (e->bints[j] && PyLong_Check(x)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
            if (overflow || v < e->blo[j] || v > e->bhi[j]) {
                return 0;
            }
            continue;
        }
        int ok = PyObject_RichCompareBool(e->blo_obj[j], x, Py_LE);
        if (ok == 1) {
            ok = PyObject_RichCompareBool(x, e->bhi_obj[j], Py_LE);
        }
        if (ok != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* [lo, hi) bytes of a non-empty array (any strides). */
static void
byte_range(PyArrayObject *a, char **lo, char **hi)
{
    npy_intp item = PyArray_ITEMSIZE(a);
    *lo = *hi = PyArray_BYTES(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp extent = (PyArray_DIM(a, d) - 1) * PyArray_STRIDE(a, d);
        if (extent > 0) {
            *hi += extent;
        }
        else {
            *lo += extent;
        }
    }
    *hi += item;
}

/* The folded scalars of a call in their kernel parameters' carriers: 1, or 0 (decline). */
static int
entry_fold(const EntryObject *e, PyObject *const *args, Slot *slots)
{
    for (int i = 0; i < e->nin; i++) {
        if (!e->folded[i]) {
            continue;
        }
        int done = fold_value(args[i], e->src[i], e->to[i], &slots[i]);
        if (done == 0) {
            done = fold_from_python(e->conv[i], args[i], e->to[i], &slots[i]);
        }
        if (done != 1) {
            return 0;
        }
    }
    return 1;
}

/* Run one call through entry `e`. A new reference to the result; NULL with no exception set when
 * the call is not one for this path (decline); NULL with an exception when something failed
 * (the caller declines then too, and the Python path meets the same condition). */
static PyObject *
entry_run(EntryObject *e, PyObject *const *args, PyObject *out)
{
    char *data[GP_MAX_OPS];
    int64_t itemsize[GP_MAX_OPS];
    Slot slots[GP_MAX_IN];
    PyArrayObject *first = NULL;
    int nin = e->nin;

    if (e->nbounds && !entry_within_bounds(e, args)) {
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            continue;   /* folded below, once nothing else can decline the call */
        }
        PyArrayObject *a = (PyArrayObject *)args[i];
        if (first == NULL) {
            first = a;
        }
        else if (PyArray_NDIM(a) != PyArray_NDIM(first)
                 || memcmp(PyArray_DIMS(a), PyArray_DIMS(first), PyArray_NDIM(a) * sizeof(npy_intp)) != 0) {
            return NULL;   /* broadcasting: the Python path */
        }
        if (!PyArray_ISALIGNED(a) || !PyArray_IS_C_CONTIGUOUS(a)) {
            return NULL;   /* strided layouts: the Python path's strided kernels */
        }
        data[i] = PyArray_BYTES(a);
        itemsize[i] = PyArray_ITEMSIZE(a);
    }
    if (first == NULL) {
        return NULL;
    }
    int ndim = PyArray_NDIM(first);
    npy_intp *dims = PyArray_DIMS(first);
    int64_t n = PyArray_SIZE(first);
    PyObject *result;
    if (out != Py_None) {
        PyArrayObject *o = (PyArrayObject *)out;
        if (!PyArray_ISWRITEABLE(o) || !PyArray_ISALIGNED(o) || PyArray_NDIM(o) != ndim
                || memcmp(PyArray_DIMS(o), dims, ndim * sizeof(npy_intp)) != 0) {
            return NULL;
        }
        if (n == 0) {
            return NULL;   /* nothing to compute; the Python path applies the store rules all the same */
        }
        if (!PyArray_IS_C_CONTIGUOUS(o)) {
            return NULL;
        }
        int inplace = 0;
        char *olo, *ohi;
        byte_range(o, &olo, &ohi);
        for (int i = 0; i < nin; i++) {
            if (e->folded[i]) {
                continue;
            }
            PyArrayObject *a = (PyArrayObject *)args[i];
            char *alo, *ahi;
            byte_range(a, &alo, &ahi);
            if (alo >= ohi || olo >= ahi) {
                continue;
            }
            if (PyArray_BYTES(a) == PyArray_BYTES(o) && PyArray_ITEMSIZE(a) == PyArray_ITEMSIZE(o)
                    && memcmp(PyArray_STRIDES(a), PyArray_STRIDES(o), ndim * sizeof(npy_intp)) == 0) {
                inplace = 1;   /* the same elements: computed in place */
            }
            else {
                return NULL;   /* another overlap: the Python path goes through a temporary */
            }
        }
        if (!(inplace ? e->inplace_ok : e->out_ok)) {
            return NULL;   /* the store rule refuses: the Python path raises */
        }
        data[nin] = PyArray_BYTES(o);
        itemsize[nin] = PyArray_ITEMSIZE(o);
    }
    /* Folding may call the Python converter, which may warn: only now, so that a call declined
     * (and folded again by the Python path) does not warn twice. */
    if (!entry_fold(e, args, slots)) {
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            data[i] = (char *)&slots[i];
            itemsize[i] = 0;
        }
    }
    if (out != Py_None) {
        result = Py_NewRef(out);
    }
    else {
        Py_ssize_t nbytes = (Py_ssize_t)n * PyDataType_ELSIZE(e->result);
        if (nbytes >= e->pool_min && e->alloc != Py_None) {
            /* Note: large outputs come from the Python pool (_cpu_pool.alloc): one call against
             * a kernel of a millisecond or more */
            PyObject *shape = PyTuple_New(ndim);
            if (shape == NULL) {
                return NULL;
            }
            for (int d = 0; d < ndim; d++) {
                PyObject *extent = PyLong_FromSsize_t(dims[d]);
                if (extent == NULL) {
                    Py_DECREF(shape);
                    return NULL;
                }
                PyTuple_SET_ITEM(shape, d, extent);
            }
            result = PyObject_CallFunctionObjArgs(e->alloc, shape, (PyObject *)e->result, NULL);
            Py_DECREF(shape);
            if (result == NULL) {
                return NULL;
            }
            if (!PyArray_CheckExact(result) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)result)
                    || PyArray_SIZE((PyArrayObject *)result) != n) {
                Py_DECREF(result);
                return NULL;
            }
        }
        else {
            result = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)Py_NewRef(e->result), ndim, dims,
                                          NULL, NULL, 0, NULL);
            if (result == NULL) {
                return NULL;
            }
        }
        data[nin] = PyArray_BYTES((PyArrayObject *)result);
        itemsize[nin] = PyDataType_ELSIZE(e->result);
    }
    if (n > 0) {
        run_kernel(e->fn, data, itemsize, nin + 1, n);
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * CUDA entries: a call on CuPy arrays is one cuLaunchKernel of the plan's contiguous kernel.
 *
 * CuPy provides the handles (bind_device): its ndarray type, cupy.empty for the output, the
 * current device and stream, CUDADriverError for a launch the driver refuses, and a runtime call
 * that makes the device's context current on a thread's first launch there; the entry holds
 * the CUfunction that engines/cuda/modules loaded and the launch configuration of
 * engines/cuda/launch (native_launch), so the grid is the one the Python launcher would choose.
 * What this path takes: arrays of one shape, C-contiguous, on the current device, each data
 * pointer aligned for the vectorized loads; out= under the same rules as on the CPU.  Anything
 * else declines to the Python path, which switches devices, broadcasts, runs the strided kernels
 * or raises. */

static PyTypeObject *device_array_type;   /* cupy.ndarray, exact type only */
static PyObject *device_empty;            /* cupy.empty */
static PyObject *current_device;          /* cupy.cuda.runtime.getDevice */
static PyObject *current_stream;          /* cupy.cuda.get_current_stream */
static PyObject *driver_error;            /* cupy.cuda.driver.CUDADriverError */
static PyObject *ensure_context;          /* cupy.cuda.runtime.memGetInfo: a runtime call, which makes the
                                           * device's primary context current on the calling thread */
/* The devices whose context this thread has made current (bit d: device d), as CuPy's launcher
 * does once per thread and device (runtime._ensure_context) before its first cuLaunchKernel. */
#if defined(_MSC_VER)
static __declspec(thread) unsigned long long contexts_ready;
#else
static _Thread_local unsigned long long contexts_ready;
#endif
static PyObject *str_shape, *str_strides, *str_data, *str_ptr, *str_device_id;

static int
long_attr(PyObject *x, PyObject *name, long long *value)
{
    PyObject *v = PyObject_GetAttr(x, name);
    if (v == NULL) {
        return -1;
    }
    *value = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A device array's shape (a new reference in *shape, the caller's to release), its element count,
 * data pointer and device, when it is C-contiguous with `itemsize`-byte elements and has at least
 * one dimension: 1; 0 when it is not; -1 on an error. */
static int
device_array(PyObject *x, int itemsize, PyObject **shape, int64_t *n, unsigned long long *ptr, long long *device)
{
    PyObject *strides = NULL, *data = NULL;
    int ok = -1;
    *shape = PyObject_GetAttr(x, str_shape);
    if (*shape == NULL) {
        return -1;
    }
    strides = PyObject_GetAttr(x, str_strides);
    if (strides == NULL) {
        goto done;
    }
    Py_ssize_t ndim = PyTuple_Check(*shape) ? PyTuple_GET_SIZE(*shape) : 0;
    if (ndim == 0 || !PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim) {
        ok = 0;   /* 0-d: the Python path (a device scalar), or not a tuple: not CuPy's */
        goto done;
    }
    int64_t count = 1, expected = itemsize;
    ok = 1;
    for (Py_ssize_t d = ndim - 1; d >= 0; d--) {
        long long extent = PyLong_AsLongLong(PyTuple_GET_ITEM(*shape, d));
        long long stride = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, d));
        if ((extent == -1 || stride == -1) && PyErr_Occurred()) {
            ok = -1;
            goto done;
        }
        if (extent != 1 && stride != expected) {
            ok = 0;   /* numpy's rule: a dimension of extent 1 may have any stride */
        }
        expected *= extent;
        count *= extent;
    }
    *n = count;
    if (ok == 1) {
        data = PyObject_GetAttr(x, str_data);
        if (data == NULL || long_attr(data, str_ptr, (long long *)ptr) < 0 || long_attr(data, str_device_id, device) < 0) {
            ok = -1;
        }
    }
done:
    Py_XDECREF(strides);
    Py_XDECREF(data);
    return ok;
}

/* Run one call on CuPy arrays through entry `e`: as entry_run; *raised is set when the launch
 * failed (the error is CUDADriverError's, and the call must not run again). */
static PyObject *
entry_run_device(EntryObject *e, PyObject *const *args, PyObject *out, int *raised)
{
    PyObject *shape = NULL, *result = NULL;
    unsigned long long ptr[GP_MAX_IN] = {0}, out_ptr = 0;
    Slot slots[GP_MAX_IN];
    int64_t n = -1;
    int nin = e->nin, out_itemsize = (int)PyDataType_ELSIZE(e->result);

    if (e->nbounds && !entry_within_bounds(e, args)) {
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            continue;
        }
        PyObject *s;
        int64_t m;
        long long dev;
        int ok = device_array(args[i], e->itemsize[i], &s, &m, &ptr[i], &dev);
        if (ok == 1 && shape != NULL) {
            ok = PyObject_RichCompareBool(shape, s, Py_EQ);
        }
        if (ok != 1 || dev != e->device || ptr[i] % (unsigned)e->align[i]) {
            Py_XDECREF(s);   /* broadcasting, strides, another device, a misaligned view: Python */
            goto decline;
        }
        if (shape == NULL) {
            shape = s;
            n = m;
        }
        else {
            Py_DECREF(s);
        }
    }
    if (shape == NULL || n <= 0) {
        goto decline;   /* no array, or empty: the Python path */
    }
    long long current;
    PyObject *c = PyObject_CallNoArgs(current_device);
    current = c == NULL ? -1 : PyLong_AsLongLong(c);
    Py_XDECREF(c);
    if (current != e->device) {
        goto decline;   /* the kernel is loaded on e->device, and CuPy allocates on the current one */
    }
    unsigned long long device_bit = e->device < 64 ? 1ull << e->device : 0;
    if (!(contexts_ready & device_bit)) {
        PyObject *r = PyObject_CallNoArgs(ensure_context);
        if (r == NULL) {
            goto decline;
        }
        Py_DECREF(r);
        contexts_ready |= device_bit;
    }
    if (out != Py_None) {
        PyObject *s;
        int64_t m;
        long long dev;
        int ok = device_array(out, out_itemsize, &s, &m, &out_ptr, &dev);
        if (ok == 1) {
            ok = PyObject_RichCompareBool(shape, s, Py_EQ);
        }
        Py_XDECREF(s);
        if (ok != 1 || dev != e->device || out_ptr % (unsigned)e->out_align) {
            goto decline;
        }
        int inplace = 0;
        unsigned long long out_end = out_ptr + (unsigned long long)n * out_itemsize;
        for (int i = 0; i < nin; i++) {
            if (e->folded[i]) {
                continue;
            }
            unsigned long long end = ptr[i] + (unsigned long long)n * e->itemsize[i];
            if (ptr[i] >= out_end || out_ptr >= end) {
                continue;
            }
            if (ptr[i] == out_ptr && e->itemsize[i] == out_itemsize) {
                inplace = 1;   /* the same elements: computed in place */
            }
            else {
                goto decline;   /* another overlap: the Python path goes through a temporary */
            }
        }
        if (!(inplace ? e->inplace_ok : e->out_ok)) {
            goto decline;   /* the store rule refuses: the Python path raises */
        }
    }
    if (!entry_fold(e, args, slots)) {
        goto decline;
    }
    if (out != Py_None) {
        result = Py_NewRef(out);
    }
    else {
        long long dev;
        result = PyObject_CallFunctionObjArgs(device_empty, shape, (PyObject *)e->result, NULL);
        if (result == NULL || Py_TYPE(result) != device_array_type) {
            goto decline;
        }
        PyObject *data = PyObject_GetAttr(result, str_data);
        int bad = data == NULL || long_attr(data, str_ptr, (long long *)&out_ptr) < 0
                  || long_attr(data, str_device_id, &dev) < 0 || dev != e->device || out_ptr % (unsigned)e->out_align;
        Py_XDECREF(data);
        if (bad) {
            goto decline;
        }
    }
    /* The kernel's parameters (engines/cuda/source.kernel_code): n, the folded scalars (a
     * complex one as re, im), out, then the arrays, each operand in its own order. */
    void *params[2 + 3 * GP_MAX_IN];
    long long n_param = n;
    int k = 0;
    params[k++] = &n_param;
    for (int i = 0; i < nin; i++) {
        if (!e->folded[i]) {
            continue;
        }
        if (e->split[i]) {
            int wide = e->to[i] == F_C16;
            params[k++] = wide ? (void *)&slots[i].c16[0] : (void *)&slots[i].c8[0];
            params[k++] = wide ? (void *)&slots[i].c16[1] : (void *)&slots[i].c8[1];
        }
        else {
            params[k++] = &slots[i];
        }
    }
    params[k++] = &out_ptr;
    for (int i = 0; i < nin; i++) {
        if (!e->folded[i]) {
            params[k++] = &ptr[i];
        }
    }
    PyObject *stream_obj = PyObject_CallNoArgs(current_stream);
    long long stream = 0;
    int stream_bad = stream_obj == NULL || long_attr(stream_obj, str_ptr, &stream) < 0;
    Py_XDECREF(stream_obj);
    if (stream_bad) {
        goto decline;
    }
    long long work = (n + e->width - 1) / e->width;
    long long grid = (work + e->block - 1) / e->block;
    if (grid > e->max_blocks) {
        grid = e->max_blocks;   /* the kernels loop over the rest (grid-stride) */
    }
    int status = e->launch(e->function, (unsigned)grid, 1, 1, (unsigned)e->block, 1, 1, 0,
                           (void *)(uintptr_t)stream, params, NULL);
    if (status != 0) {
        PyObject *exc = PyObject_CallFunction(driver_error, "i", status);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        *raised = 1;
        Py_CLEAR(result);
    }
    Py_DECREF(shape);
    return result;
decline:
    Py_XDECREF(shape);
    Py_XDECREF(result);
    return NULL;
}

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

/* Memo of (op, policy, operand keys, out key) by identity -> entry, as for result_type. */
#define OP_MEMO_SLOTS 1024
#define OP_MEMO_PROBES 4
#define OP_KEY 6
typedef struct {
    PyObject *key[OP_KEY];
    PyObject *entry;
} OpMemo;
static OpMemo op_memo[OP_MEMO_SLOTS];

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
        OpMemo *m = &op_memo[(slot + probe) & (OP_MEMO_SLOTS - 1)];
        if (m->key[0] == key[0] && m->key[1] == key[1] && m->key[2] == key[2] && m->key[3] == key[3]
                && m->key[4] == key[4] && m->key[5] == key[5]) {
            return m;
        }
    }
    return NULL;
}

static void
op_memo_clear_entry(OpMemo *m)
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
    OpMemo *m = &op_memo[slot];
    for (int probe = 0; probe < OP_MEMO_PROBES; probe++) {
        OpMemo *candidate = &op_memo[(slot + probe) & (OP_MEMO_SLOTS - 1)];
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
    op_memo_clear_entry(&old);
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
    if (entry != Py_None && !Py_IS_TYPE(entry, &EntryType)) {
        Py_DECREF(entry);
        PyErr_SetString(PyExc_TypeError, "the op's maker returned neither an Entry nor None");
        return NULL;
    }
    op_memo_insert(key, entry);   /* may run other threads (a destructor): `entry` stays ours */
    return entry;
}

static PyObject *str_out;
/* Calls the compiled path served and calls it handed to the Python function (op_stats()). */
static unsigned long long calls_served, calls_declined;

/* A CuPy array's dtype, borrowed (the array holds it), or NULL with no exception set. */
static PyObject *
device_dtype(PyObject *x)
{
    PyObject *dtype = PyObject_GetAttr(x, str_dtype);
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
    if (nargs != self->arity || current_policy == NULL) {
        goto fallback;
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (same_name(name, str_policy)) {
                policy = args[nargs + i];
            }
            else if (same_name(name, str_out)) {
                out = args[nargs + i];
            }
            else {
                goto fallback;   /* Python words the TypeError */
            }
        }
    }
    PyObject *key[OP_KEY];
    int host = 0, device = 0;   /* numpy arrays and CuPy arrays among the operands and out */
    key[2] = key[3] = key[4] = Py_None;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *x = args[i];
        PyTypeObject *t = Py_TYPE(x);
        if (t == ndarray_type) {
            if (PyArray_NDIM((PyArrayObject *)x) == 0) {
                goto fallback;   /* 0-d arrays are folded by value: the Python path */
            }
            key[2 + i] = (PyObject *)PyArray_DESCR((PyArrayObject *)x);
            host = 1;
        }
        else if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type) {
            key[2 + i] = (PyObject *)t;
        }
        else if (t == device_array_type && device_array_type != NULL) {
            if ((key[2 + i] = device_dtype(x)) == NULL) {
                goto fallback;
            }
            device = 1;
        }
        else {
            goto fallback;
        }
    }
    if (out == Py_None) {
        key[5] = Py_None;
    }
    else if (Py_TYPE(out) == ndarray_type) {
        key[5] = (PyObject *)PyArray_DESCR((PyArrayObject *)out);
        host = 1;
    }
    else if (Py_TYPE(out) == device_array_type && device_array_type != NULL) {
        if ((key[5] = device_dtype(out)) == NULL) {
            goto fallback;
        }
        device = 1;
    }
    else {
        goto fallback;
    }
    if (host && device) {
        goto fallback;   /* host arrays beside device arrays: the Python path says what to do */
    }
    key[0] = device ? self->device_key : (PyObject *)self;
    /* `policy or current()`, as the Python function reads it */
    if (policy == Py_None || (PyUnicode_CheckExact(policy) && PyUnicode_GET_LENGTH(policy) == 0)) {
        if (PyContextVar_Get(current_policy, NULL, &policy) < 0) {
            PyErr_Clear();
            goto fallback;
        }
    }
    else {
        Py_INCREF(policy);
    }
    if (!PyUnicode_CheckExact(policy)) {
        Py_DECREF(policy);
        goto fallback;
    }
    key[1] = policy;
    PyObject *entry = op_entry(self, key, args, out, device);   /* ours: a memo eviction cannot free it */
    int raised = 0;
    if (entry != NULL && entry != Py_None) {
        EntryObject *e = (EntryObject *)entry;
        if (e->launch == NULL) {
            result = device ? NULL : entry_run(e, args, out);
        }
        else {
            result = device ? entry_run_device(e, args, out, &raised) : NULL;
        }
    }
    Py_XDECREF(entry);
    Py_DECREF(policy);
    if (result != NULL || raised) {
        calls_served++;
        return result;   /* or the launch's error: running the call again would not undo it */
    }
    PyErr_Clear();   /* the Python path meets the same condition and says what it is */
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

static PyTypeObject OpType = {
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

static PyObject *
set_threads(PyObject *module, PyObject *args)
{
    int threads;
    long long chunk = min_chunk;
    if (!PyArg_ParseTuple(args, "i|L:set_threads", &threads, &chunk)) {
        return NULL;
    }
    if (threads < 1 || chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "set_threads: threads >= 1 and chunk >= 1");
        return NULL;
    }
#ifdef GP_HAVE_THREADS
    n_threads = threads < GP_MAX_THREADS ? threads : GP_MAX_THREADS;
#else
    n_threads = 1;
#endif
    min_chunk = chunk;
    return Py_BuildValue("iL", n_threads, (long long)min_chunk);
}

static PyObject *
op_stats(PyObject *module, PyObject *unused)
{
    return Py_BuildValue("{sKsKsK}", "served", calls_served, "declined", calls_declined, "split", calls_split);
}

static PyObject *
bind_ops(PyObject *module, PyObject *args)
{
    PyObject *cv, *nd;
    if (!PyArg_ParseTuple(args, "O!O!:bind_ops", &PyContextVar_Type, &cv, &PyType_Type, &nd)) {
        return NULL;
    }
    Py_XSETREF(current_policy, Py_NewRef(cv));
    Py_XSETREF(ndarray_type, (PyTypeObject *)Py_NewRef(nd));
    Py_RETURN_NONE;
}

static PyObject *
bind_device(PyObject *module, PyObject *args)
{
    PyObject *nd, *empty, *device, *stream, *error, *context;
    if (!PyArg_ParseTuple(args, "O!OOOOO:bind_device", &PyType_Type, &nd, &empty, &device, &stream, &error,
                          &context)) {
        return NULL;
    }
    Py_XSETREF(ensure_context, Py_NewRef(context));
    contexts_ready = 0;
    Py_XSETREF(device_array_type, (PyTypeObject *)Py_NewRef(nd));
    Py_XSETREF(device_empty, Py_NewRef(empty));
    Py_XSETREF(current_device, Py_NewRef(device));
    Py_XSETREF(current_stream, Py_NewRef(stream));
    Py_XSETREF(driver_error, Py_NewRef(error));
    for (size_t i = 0; i < OP_MEMO_SLOTS; i++) {
        op_memo_clear_entry(&op_memo[i]);   /* entries of another CuPy's kernels */
    }
    Py_RETURN_NONE;
}

static PyObject *
forget(PyObject *module, PyObject *unused)
{
    for (size_t i = 0; i < MEMO_SLOTS; i++) {
        memo_clear_entry(&memo[i]);
    }
    for (size_t i = 0; i < OP_MEMO_SLOTS; i++) {
        op_memo_clear_entry(&op_memo[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"result_type", (PyCFunction)(void (*)(void))result_type, METH_FASTCALL | METH_KEYWORDS,
     "result_type($module, /, *operands, op='add', policy=None)\n--\n\n"
     "The result dtype of ``op`` on ``operands`` under ``policy`` (default: the current policy).\n"
     "For ``op=\"where\"`` pass (x, y) or (cond, x, y)."},
    {"bind", bind, METH_VARARGS,
     "bind(plans, current_policy, ndarray, generic, keyed_types, operand_key, python_result_type)\n"
     "Hand the plan cache and the Python fallbacks to result_type (dispatch/api.py does this once)."},
    {"forget", forget, METH_NOARGS,
     "Drop the pointer memos of result_type and of the ops (caches.clear_all does this, with every other cache)."},
    {"bind_ops", bind_ops, METH_VARARGS,
     "bind_ops(current_policy, ndarray)\nHand the policy context variable and numpy.ndarray to the ops (dispatch/eager.py)."},
    {"bind_device", bind_device, METH_VARARGS,
     "bind_device(ndarray, empty, get_device, get_current_stream, driver_error, ensure_context)\n"
     "Hand CuPy's array type and handles to the ops, so calls on CuPy arrays launch from C (dispatch/opfunctions.py)."},
    {"op_stats", op_stats, METH_NOARGS,
     "op_stats() -> {'served': n, 'declined': m, 'split': k}: op calls the compiled path ran, those it handed\n"
     "to Python, and kernel calls it split over threads."},
    {"set_threads", set_threads, METH_VARARGS,
     "set_threads(threads, min_chunk=65536) -> (threads, min_chunk)\n"
     "How many threads a kernel call may use, and the fewest elements each thread gets (engines/cpu/threads sets it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "gpupromote.dispatch._fastpath",
    "The cache-hit paths of gp.result_type and of the ops in C; dispatch/api.py and dispatch/eager.py keep the rules and the caches.",
    -1, methods,
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
    str_out = PyUnicode_InternFromString("out");
    str_shape = PyUnicode_InternFromString("shape");
    str_strides = PyUnicode_InternFromString("strides");
    str_data = PyUnicode_InternFromString("data");
    str_ptr = PyUnicode_InternFromString("ptr");
    str_device_id = PyUnicode_InternFromString("device_id");
    if (!str_op || !str_policy || !str_add || !str_where || !str_key || !str_dtype || !str_out || !str_shape
            || !str_strides || !str_data || !str_ptr || !str_device_id) {
        return NULL;
    }
    import_array();
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&OpType) < 0) {
        return NULL;
    }
#ifdef GP_HAVE_THREADS
    pool.pid = getpid();
    pthread_atfork(NULL, NULL, pool_after_fork_in_child);
#endif
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Entry", (PyObject *)&EntryType) < 0
            || PyModule_AddObjectRef(m, "Op", (PyObject *)&OpType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
