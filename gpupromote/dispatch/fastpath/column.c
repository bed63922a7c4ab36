/* column.c: a call with one column operand, (M, K) op (M, 1) (x - x.max(axis=-1, keepdims=True),
 * x / x.sum(axis=-1, keepdims=True)), or one value for all, (M, K) op (1, 1) (one row of M * K), through an entry: the kernel of the plan where that operand
 * is a folded scalar, once per row with the row's value folded (gp_fold_raw, folding.c) and the
 * other operand's row.  The row values are folded before any kernel runs, so that a value this
 * path cannot fold declines the call before out= is touched.  Relies on fastpath.h; entry.c's
 * gp_entry_run sends such calls here and gp_entry_output makes their output.
 *
 * The folded kernel computes what the array kernel does only where the two plans agree on the
 * result, the compute dtype and the dtypes the operands are read as; opfunctions._column_kernel,
 * which column_maker is, makes one only then (a zero-dim operand can promote otherwise, PyTorch's
 * float32 - a float64 scalar tensor is float32), else the Python path's row maps run the call. */

#include "fastpath.h"

/* Entry e's kernel with operand `col` folded: 1 made (or made before), 0 none (decline). */
static int
column_kernel(EntryObject *e, int col)
{
    if (e->column_state[col] != 0) {
        return e->column_state[col] > 0;
    }
    if (e->column_maker == NULL) {
        return 0;
    }
    PyObject *made = PyObject_CallFunction(e->column_maker, "i", col);
    unsigned long long address;
    PyObject *keep, *conv;
    int src, to;
    if (made == NULL) {
        PyErr_Clear();   /* made again on the next call: the Python path runs this one */
        return 0;
    }
    if (e->column_state[col] != 0) {   /* another thread made it while the maker ran (a compile) */
        Py_DECREF(made);
        return e->column_state[col] > 0;
    }
    if (made == Py_None || !PyTuple_Check(made)
            || !PyArg_ParseTuple(made, "KOiiO:column", &address, &keep, &src, &to, &conv)
            || address == 0 || src < 0 || src >= F_COUNT || to < 0 || to >= F_COUNT) {
        PyErr_Clear();
        Py_DECREF(made);
        e->column_state[col] = -1;
        return 0;
    }
    e->column_fn[col] = (gp_kernel)(uintptr_t)address;
    e->column_keep[col] = Py_NewRef(keep);
    e->column_conv[col] = Py_NewRef(conv);
    e->column_src[col] = src;
    e->column_to[col] = to;
    e->column_state[col] = 1;
    Py_DECREF(made);
    return 1;
}

/* The value of each of the `rows` elements of `a` in slots: 1, or 0 where one cannot be folded
 * (the Python converter raised, or gave no scalar of the parameter's type). */
static int
fold_rows(EntryObject *e, int col, PyArrayObject *a, int64_t rows, Slot *slots)
{
    PyArray_Descr *descr = PyArray_DESCR(a);
    const char *p = PyArray_BYTES(a);
    npy_intp step = PyArray_ITEMSIZE(a);
    for (int64_t r = 0; r < rows; r++, p += step) {
        if (gp_fold_raw(p, descr, e->column_src[col], e->column_to[col], &slots[r])) {
            continue;
        }
        PyObject *value = PyArray_Scalar((void *)p, descr, (PyObject *)a);   /* a NaN, an overflow: Python */
        int done = value == NULL ? -1 : gp_fold_from_python(e->column_conv[col], value, e->column_to[col], &slots[r]);
        Py_XDECREF(value);
        if (done != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

PyObject *
gp_entry_run_column(EntryObject *e, PyObject *const *args, PyObject *out, int col, int ndim, const npy_intp *dims,
                    int64_t n, int64_t width)
{
    int64_t rows = width > 0 ? n / width : 0;
    int other = 1 - col, repeats[GP_MAX_IN] = {0, 0, 0};
    PyArrayObject *a = (PyArrayObject *)args[col];
    if (e->nin != 2 || e->folded[0] || e->folded[1] || rows == 0 || rows > GP_MAX_BLOCKS || n >= 2 * gp_min_chunk
            || n > e->max_n || !gp_plain_numeric(PyArray_DESCR(a)) || !column_kernel(e, col)) {
        return NULL;   /* (ml_dtypes' formats would fold through Python, a row at a time) */
    }
    repeats[col] = 1;   /* out= may not overlap the column */
    char *data[GP_MAX_OPS], *at[GP_MAX_OPS];
    PyObject *result = gp_entry_output(e, args, out, ndim, dims, repeats, &data[2]);
    if (result == NULL) {
        return NULL;
    }
    Slot *slots = PyMem_Malloc((size_t)rows * sizeof(Slot));
    if (slots == NULL || !fold_rows(e, col, a, rows, slots)) {
        PyMem_Free(slots);
        Py_DECREF(result);
        return NULL;
    }
    npy_intp in_step = width * PyArray_ITEMSIZE((PyArrayObject *)args[other]);
    npy_intp out_step = width * PyDataType_ELSIZE(e->result);
    data[other] = PyArray_BYTES((PyArrayObject *)args[other]);
    for (int64_t r = 0; r < rows; r++) {
        at[col] = (char *)&slots[r];
        at[other] = data[other] + r * in_step;
        at[2] = data[2] + r * out_step;
        e->column_fn[col](at, width);
    }
    PyMem_Free(slots);
    return result;
}
