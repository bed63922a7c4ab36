/* entry.c: the Entry type (what one key's calls need, made by opfunctions._make_entry: a CPU
 * kernel's C address, or a CUDA launch), its bounds check and folding, and gp_entry_run, a call
 * on numpy arrays through it.  EntryObject is in fastpath.h, which device.c (the CUDA calls
 * through an Entry) and ops.c (which finds the entry and runs it) read too.  Relies on
 * folding.c (gp_fold_value, gp_fold_from_python) and pool.c (gp_run_kernel). */

#include "fastpath.h"

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
        Py_XDECREF(e->column_keep[i]);
        Py_XDECREF(e->column_conv[i]);
    }
    Py_XDECREF(e->column_maker);
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
    PyObject *keep, *result, *alloc, *folds, *bounds, *launch = Py_None, *column = Py_None;
    Py_ssize_t pool_min;
    int out_ok, inplace_ok;
    long long max_n = LLONG_MAX;
    static char *names[] = {"address", "keep", "result", "alloc", "pool_min", "folds", "bounds", "out_ok",
                            "inplace_ok", "launch", "max_n", "column", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KOO!OnO!O!pp|OLO:Entry", names, &address, &keep,
                                     &PyArrayDescr_Type, &result, &alloc, &pool_min, &PyTuple_Type, &folds,
                                     &PyTuple_Type, &bounds, &out_ok, &inplace_ok, &launch, &max_n, &column)) {
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
    e->max_n = max_n;
    e->column_maker = column == Py_None ? NULL : Py_NewRef(column);
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

PyTypeObject gp_EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpupromote.dispatch._fastpath.Entry",
    .tp_basicsize = sizeof(EntryObject),
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Entry(address, keep, result, alloc, pool_min, folds, bounds, out_ok, inplace_ok, launch=None, max_n=LLONG_MAX, column=None)\n--\n\n"
              "How the compiled dispatcher runs the calls of one key (opfunctions._make_entry makes it):\n"
              "through a CPU kernel's C address, or (address 0) a CUDA kernel's launch.",
    .tp_new = entry_new,
};

/* 1 if every bounded Python scalar of the call lies within its bounds, else 0. */
int
gp_entry_within_bounds(const EntryObject *e, PyObject *const *args)
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
int
gp_entry_fold(const EntryObject *e, PyObject *const *args, Slot *slots)
{
    for (int i = 0; i < e->nin; i++) {
        if (!e->folded[i]) {
            continue;
        }
        int done = gp_fold_value(args[i], e->src[i], e->to[i], &slots[i]);
        if (done == 0) {
            done = gp_fold_from_python(e->conv[i], args[i], e->to[i], &slots[i]);
        }
        if (done != 1) {
            return 0;
        }
    }
    return 1;
}

/* The shape the arrays broadcast to (NumPy's rule) in dims: its rank, or -1 where they do not. */
static int
broadcast_shape(PyArrayObject *const *arrays, int narrays, npy_intp *dims)
{
    int ndim = 0;
    for (int j = 0; j < narrays; j++) {
        ndim = PyArray_NDIM(arrays[j]) > ndim ? PyArray_NDIM(arrays[j]) : ndim;
    }
    for (int d = 0; d < ndim; d++) {
        dims[d] = 1;
    }
    for (int j = 0; j < narrays; j++) {
        int pad = ndim - PyArray_NDIM(arrays[j]);
        for (int d = 0; d < PyArray_NDIM(arrays[j]); d++) {
            npy_intp m = PyArray_DIM(arrays[j], d);
            if (m != 1 && dims[pad + d] != m) {
                if (dims[pad + d] != 1) {
                    return -1;
                }
                dims[pad + d] = m;
            }
        }
    }
    return ndim;
}

/* Whether C-contiguous `a`, its leading 1s left out, is the last dimensions of the shape (ndim,
 * dims): broadcast to it, a repeats over the leading ones (a bias row, (M, K) + (K,)). */
static int
is_trailing_block(PyArrayObject *a, int ndim, const npy_intp *dims)
{
    int first = 0;
    while (first < PyArray_NDIM(a) && PyArray_DIM(a, first) == 1) {
        first++;
    }
    int k = PyArray_NDIM(a) - first;
    return k <= ndim && memcmp(PyArray_DIMS(a) + first, dims + ndim - k, k * sizeof(npy_intp)) == 0;
}

/* Run one call through entry `e`. A new reference to the result; NULL with no exception set when
 * the call is not one for this path (decline); NULL with an exception when something failed
 * (the caller declines then too, and the Python path meets the same condition).
 * The arrays are aligned; C-contiguous, each of the call's shape, or a block of its last
 * dimensions (`repeats`: a bias row), which the kernel reads again for each block of the output,
 * or one column (column.c); or views and broadcasts whose rows are contiguous, a kernel call per
 * row (rows.c). All but the first stay below the size the thread pool splits (gp_min_chunk),
 * where one thread runs them anyway. */
PyObject *
gp_entry_run(EntryObject *e, PyObject *const *args, PyObject *out)
{
    char *data[GP_MAX_OPS];
    int64_t itemsize[GP_MAX_OPS];
    Slot slots[GP_MAX_IN];
    PyArrayObject *arrays[GP_MAX_IN];
    int narrays = 0, nin = e->nin, repeats[GP_MAX_IN] = {0, 0, 0}, blocked = 0, column = -1, strided = 0;
    npy_intp dims[NPY_MAXDIMS];

    if (e->nbounds && !gp_entry_within_bounds(e, args)) {
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            continue;   /* folded below, once nothing else can decline the call */
        }
        PyArrayObject *a = arrays[narrays++] = (PyArrayObject *)args[i];
        if (!PyArray_ISALIGNED(a)) {
            return NULL;   /* the Python path's kernels read unaligned data */
        }
        strided |= !PyArray_IS_C_CONTIGUOUS(a);
        data[i] = PyArray_BYTES(a);
        itemsize[i] = PyArray_ITEMSIZE(a);
    }
    if (narrays == 0) {
        return NULL;
    }
    int ndim = broadcast_shape(arrays, narrays, dims);
    if (ndim < 0) {
        return NULL;   /* shapes that do not broadcast: the Python path says so */
    }
    int64_t n = 1, block = -1, width = 0;
    for (int d = 0; d < ndim; d++) {
        n *= dims[d];
    }
    if (strided) {
        return gp_entry_run_rows(e, args, out, ndim, dims, n);   /* views: a row at a time (rows.c) */
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i] || PyArray_SIZE((PyArrayObject *)args[i]) == n) {
            continue;
        }
        PyArrayObject *a = (PyArrayObject *)args[i];
        if (n > 0 && column < 0 && !blocked && PyArray_NDIM(a) >= 1 && (PyArray_SIZE(a) == 1
                || (PyArray_DIM(a, PyArray_NDIM(a) - 1) == 1 && PyArray_SIZE(a) * dims[ndim - 1] == n))) {
            column = i;   /* one value per row, (M, K) - (M, 1); or one for all, (M, K) - (1, 1): one row */
            width = PyArray_SIZE(a) == 1 ? n : dims[ndim - 1];
            continue;
        }
        if (column >= 0 || !is_trailing_block(a, ndim, dims) || (block >= 0 && PyArray_SIZE(a) != block)) {
            return gp_entry_run_rows(e, args, out, ndim, dims, n);   /* other broadcasts: a row at a time */
        }
        block = PyArray_SIZE(a);
        repeats[i] = blocked = 1;
    }
    if (column >= 0) {
        return gp_entry_run_column(e, args, out, column, ndim, dims, n, width);
    }
    if (blocked && (block == 0 || n == 0 || n >= 2 * gp_min_chunk || n / block > GP_MAX_BLOCKS)) {
        return NULL;   /* empty, long enough for threads, or many short blocks: the Python path */
    }
    if (n > e->max_n) {
        return NULL;   /* a tabulated kernel's long call: the Python path gathers from its table */
    }
    PyObject *result = gp_entry_output(e, args, out, ndim, dims, repeats, &data[nin]);
    if (result == NULL) {
        return NULL;
    }
    /* Folding may call the Python converter, which may warn: only now, so that a call declined
     * (and folded again by the Python path) does not warn twice. */
    if (!gp_entry_fold(e, args, slots)) {
        Py_DECREF(result);
        return NULL;
    }
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            data[i] = (char *)&slots[i];
            itemsize[i] = 0;
        }
    }
    itemsize[nin] = PyDataType_ELSIZE(e->result);
    if (n > 0 && !blocked) {
        gp_run_kernel(e->fn, data, itemsize, nin + 1, n);
    }
    else if (n > 0) {
        char *at[GP_MAX_OPS];
        for (int64_t start = 0; start < n; start += block) {
            for (int i = 0; i <= nin; i++) {
                at[i] = i < nin && repeats[i] ? data[i] : data[i] + start * itemsize[i];
            }
            e->fn(at, block);
        }
    }
    return result;
}

PyObject *
gp_entry_output(EntryObject *e, PyObject *const *args, PyObject *out, int ndim, const npy_intp *dims,
                const int *repeats, char **data)
{
    int nin = e->nin;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= dims[d];
    }
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
            if (!repeats[i] && PyArray_NDIM(a) == ndim && PyArray_BYTES(a) == PyArray_BYTES(o)
                    && PyArray_ITEMSIZE(a) == PyArray_ITEMSIZE(o)
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
        *data = PyArray_BYTES(o);
        return Py_NewRef(out);
    }
    PyObject *result;
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
        result = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)Py_NewRef(e->result), ndim, (npy_intp *)dims,
                                      NULL, NULL, 0, NULL);
        if (result == NULL) {
            return NULL;
        }
    }
    *data = PyArray_BYTES((PyArrayObject *)result);
    return result;
}
