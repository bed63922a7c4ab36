/* rows.c: a call through an entry on arrays whose rows are contiguous but not the arrays
 * (x[:, :k] * 2.0, x[:, 1:] - x[:, :-1], x[::2] + x[1::2], a view beside a broadcast row): each
 * operand is read through its strides over the call's leading dimensions, and the entry's flat
 * kernel runs once per row of the output, over the row's contiguous elements.  Such calls took
 * the Python path's coalescing and strided kernels (x[:, :32] * 2.0 of a 64 x 64 float32: 25.7 us).
 * Relies on fastpath.h; entry.c's gp_entry_run sends them here and gp_entry_output makes their
 * output (C-contiguous, so row r is written at r times its width). */

#include "fastpath.h"

PyObject *
gp_entry_run_rows(EntryObject *e, PyObject *const *args, PyObject *out, int ndim, const npy_intp *dims, int64_t n)
{
    int nin = e->nin, repeats[GP_MAX_IN] = {0, 0, 0};
    if (ndim < 1 || n == 0 || n >= 2 * gp_min_chunk || n > e->max_n) {
        return NULL;
    }
    int64_t width = dims[ndim - 1], rows = n / width;
    if (rows > GP_MAX_BLOCKS) {
        return NULL;   /* short rows: the Python path's strided kernels */
    }
    /* each operand's byte step along each dimension of the call (0 where it is broadcast) */
    npy_intp step[GP_MAX_IN][NPY_MAXDIMS];
    char *at[GP_MAX_OPS], *data[GP_MAX_OPS];
    Slot slots[GP_MAX_IN];
    for (int i = 0; i < nin; i++) {
        if (e->folded[i]) {
            continue;
        }
        PyArrayObject *a = (PyArrayObject *)args[i];
        int pad = ndim - PyArray_NDIM(a);
        for (int d = 0; d < ndim; d++) {
            step[i][d] = d < pad || PyArray_DIM(a, d - pad) == 1 ? 0 : PyArray_STRIDE(a, d - pad);
        }
        if (width > 1 && step[i][ndim - 1] != PyArray_ITEMSIZE(a)) {
            return NULL;   /* a strided or broadcast row: the Python path's strided kernels and row maps */
        }
        data[i] = PyArray_BYTES(a);
    }
    PyObject *result = gp_entry_output(e, args, out, ndim, dims, repeats, &data[nin]);
    if (result == NULL) {
        return NULL;
    }
    if (!gp_entry_fold(e, args, slots)) {   /* after the last decline: the Python converter may warn */
        Py_DECREF(result);
        return NULL;
    }
    npy_intp out_row = width * PyDataType_ELSIZE(e->result), index[NPY_MAXDIMS];
    for (int i = 0; i < nin; i++) {
        at[i] = e->folded[i] ? (char *)&slots[i] : data[i];
    }
    for (int d = 0; d < ndim; d++) {
        index[d] = 0;
    }
    for (int64_t r = 0; r < rows; r++) {
        at[nin] = data[nin] + r * out_row;
        e->fn(at, width);
        for (int d = ndim - 2; d >= 0; d--) {   /* the next row: an odometer over the leading dimensions */
            for (int i = 0; i < nin; i++) {
                at[i] += e->folded[i] ? 0 : step[i][d];
            }
            if (++index[d] < dims[d]) {
                break;
            }
            for (int i = 0; i < nin; i++) {
                at[i] -= e->folded[i] ? 0 : step[i][d] * dims[d];
            }
            index[d] = 0;
        }
    }
    return result;
}
