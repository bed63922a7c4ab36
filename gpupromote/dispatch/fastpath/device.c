/* device.c: the CUDA launch path, gp_entry_run_device (ops.c calls it for calls on CuPy arrays),
 * and CuPy's handles it launches with (defined here, set by bind_device in module.c; ops.c reads
 * gp_device_array_type to tell a CuPy array).  Relies on fastpath.h (EntryObject, Slot, the
 * interned attribute names module.c makes) and entry.c (gp_entry_within_bounds, gp_entry_fold).
 *
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

#include "fastpath.h"

PyTypeObject *gp_device_array_type;   /* cupy.ndarray, exact type only */
PyObject *gp_device_empty;            /* cupy.empty */
PyObject *gp_current_device;          /* cupy.cuda.runtime.getDevice */
PyObject *gp_current_stream;          /* cupy.cuda.get_current_stream */
PyObject *gp_driver_error;            /* cupy.cuda.driver.CUDADriverError */
PyObject *gp_ensure_context;          /* cupy.cuda.runtime.memGetInfo: a runtime call, which makes the
                                       * device's primary context current on the calling thread */
/* The devices whose context this thread has made current (bit d: device d), as CuPy's launcher
 * does once per thread and device (runtime._ensure_context) before its first cuLaunchKernel.
 * Thread-local (GP_THREAD_LOCAL: __declspec(thread) with MSVC, else _Thread_local), here and in
 * its extern declaration in fastpath.h; bind_device resets the calling thread's copy. */
GP_THREAD_LOCAL unsigned long long gp_contexts_ready;

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
    *shape = PyObject_GetAttr(x, gp_str_shape);
    if (*shape == NULL) {
        return -1;
    }
    strides = PyObject_GetAttr(x, gp_str_strides);
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
        data = PyObject_GetAttr(x, gp_str_data);
        if (data == NULL || long_attr(data, gp_str_ptr, (long long *)ptr) < 0
                || long_attr(data, gp_str_device_id, device) < 0) {
            ok = -1;
        }
    }
done:
    Py_XDECREF(strides);
    Py_XDECREF(data);
    return ok;
}

/* Run one call on CuPy arrays through entry `e`: as gp_entry_run; *raised is set when the launch
 * failed (the error is CUDADriverError's, and the call must not run again). */
PyObject *
gp_entry_run_device(EntryObject *e, PyObject *const *args, PyObject *out, int *raised)
{
    PyObject *shape = NULL, *result = NULL;
    unsigned long long ptr[GP_MAX_IN] = {0}, out_ptr = 0;
    Slot slots[GP_MAX_IN];
    int64_t n = -1;
    int nin = e->nin, out_itemsize = (int)PyDataType_ELSIZE(e->result);

    if (e->nbounds && !gp_entry_within_bounds(e, args)) {
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
    PyObject *c = PyObject_CallNoArgs(gp_current_device);
    current = c == NULL ? -1 : PyLong_AsLongLong(c);
    Py_XDECREF(c);
    if (current != e->device) {
        goto decline;   /* the kernel is loaded on e->device, and CuPy allocates on the current one */
    }
    unsigned long long device_bit = e->device < 64 ? 1ull << e->device : 0;
    if (!(gp_contexts_ready & device_bit)) {
        PyObject *r = PyObject_CallNoArgs(gp_ensure_context);
        if (r == NULL) {
            goto decline;
        }
        Py_DECREF(r);
        gp_contexts_ready |= device_bit;
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
    if (!gp_entry_fold(e, args, slots)) {
        goto decline;
    }
    if (out != Py_None) {
        result = Py_NewRef(out);
    }
    else {
        long long dev;
        result = PyObject_CallFunctionObjArgs(gp_device_empty, shape, (PyObject *)e->result, NULL);
        if (result == NULL || Py_TYPE(result) != gp_device_array_type) {
            goto decline;
        }
        PyObject *data = PyObject_GetAttr(result, gp_str_data);
        int bad = data == NULL || long_attr(data, gp_str_ptr, (long long *)&out_ptr) < 0
                  || long_attr(data, gp_str_device_id, &dev) < 0 || dev != e->device
                  || out_ptr % (unsigned)e->out_align;
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
    PyObject *stream_obj = PyObject_CallNoArgs(gp_current_stream);
    long long stream = 0;
    int stream_bad = stream_obj == NULL || long_attr(stream_obj, gp_str_ptr, &stream) < 0;
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
        PyObject *exc = PyObject_CallFunction(gp_driver_error, "i", status);
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

/* launch(address, function, grid, block, stream, fmt, *values): one cuLaunchKernel (at `address`)
 * of CUfunction `function` on a 1-d grid, its parameters `values` packed as `fmt` says, one
 * character each: q / Q 64-bit (a pointer is Q), i / I 32-bit, h / H 16-bit, b / B 8-bit
 * integers, d double, f float, ? a bool byte.  For the Python launchers whose kernels' parameters
 * are known (engines/cuda/reduce.py): a call through CuPy's RawKernel costs ~10 us of host time
 * (H200 host, 2026-11-27), this one the conversions.  The caller makes the device's context current
 * on its thread first (CuPy's allocations and launches do); a refused launch raises
 * CUDADriverError once bind_device has run, RuntimeError before. */
#define GP_LAUNCH_MAX 64

PyObject *
gp_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 6) {
        PyErr_SetString(PyExc_TypeError, "launch(address, function, grid, block, stream, fmt, *values)");
        return NULL;
    }
    unsigned long long address = PyLong_AsUnsignedLongLong(args[0]);
    unsigned long long function = PyLong_AsUnsignedLongLong(args[1]);
    long long grid = PyLong_AsLongLong(args[2]), block = PyLong_AsLongLong(args[3]);
    unsigned long long stream = PyLong_AsUnsignedLongLong(args[4]);
    Py_ssize_t nfmt;
    const char *fmt = PyUnicode_Check(args[5]) ? PyUnicode_AsUTF8AndSize(args[5], &nfmt) : NULL;
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (fmt == NULL || nfmt != nargs - 6 || nfmt > GP_LAUNCH_MAX || address == 0 || grid < 1
            || grid > 0x7fffffffLL || block < 1 || block > 1024) {
        PyErr_Format(PyExc_ValueError, "launch: %zd values for a format of %zd (at most %d), grid %lld, block %lld, "
                     "address %llu", nargs - 6, fmt ? nfmt : (Py_ssize_t)-1, GP_LAUNCH_MAX, grid, block, address);
        return NULL;
    }
    union {
        unsigned long long q; double d; float f; unsigned int i; unsigned short h; unsigned char b;
    } store[GP_LAUNCH_MAX];
    void *params[GP_LAUNCH_MAX];
    for (Py_ssize_t j = 0; j < nfmt; j++) {
        PyObject *v = args[6 + j];
        switch (fmt[j]) {
        case 'q': store[j].q = (unsigned long long)PyLong_AsLongLong(v); break;
        case 'Q': store[j].q = PyLong_AsUnsignedLongLong(v); break;
        case 'i': case 'I': store[j].i = (unsigned int)PyLong_AsLongLong(v); break;
        case 'h': case 'H': store[j].h = (unsigned short)PyLong_AsLongLong(v); break;
        case 'b': case 'B': store[j].b = (unsigned char)PyLong_AsLongLong(v); break;
        case 'd': store[j].d = PyFloat_AsDouble(v); break;
        case 'f': store[j].f = (float)PyFloat_AsDouble(v); break;
        case '?': {
            int t = PyObject_IsTrue(v);
            store[j].b = (unsigned char)(t > 0);
            break;
        }
        default:
            PyErr_Format(PyExc_ValueError, "launch: no parameter type '%c'", fmt[j]);
            return NULL;
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
        params[j] = &store[j];
    }
    int status = ((gp_cu_launch)(uintptr_t)address)((void *)(uintptr_t)function, (unsigned)grid, 1, 1,
                                                     (unsigned)block, 1, 1, 0, (void *)(uintptr_t)stream,
                                                     params, NULL);
    if (status != 0) {
        if (gp_driver_error != NULL) {
            PyObject *exc = PyObject_CallFunction(gp_driver_error, "i", status);
            if (exc != NULL) {
                PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
                Py_DECREF(exc);
            }
        }
        else {
            PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUresult %d", status);
        }
        return NULL;
    }
    Py_RETURN_NONE;
}
