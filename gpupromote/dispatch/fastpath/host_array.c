/* host_array.c: gp.Array on the host as an operand of the compiled ops (ops.c): its numpy storage
 * read where it stands for the Array, the result wrapped as an Array.  What dispatch/host_arrays.py
 * does in Python (host_storages, as_host_array), in C: gp.Array + gp.Array of 1024 float32 took
 * 1.35 us through it.  bind_array (module.c's method table) hands over the Array type and
 * gpupromote's dtype(); until then no operand is an Array here.  Relies on fastpath.h. */

#include "fastpath.h"

static PyTypeObject *array_type;               /* gpupromote.dispatch.array.Array, exact type only */
static Py_ssize_t storage_at, dtype_at, device_at;   /* its __slots__ _storage, _gp_dtype, _device */
static PyObject *dtype_of;                     /* gpupromote.core.dtypes.dtype */
static PyObject *dtypes;                       /* numpy dtype -> gpupromote DType, filled by dtype_of */
static PyObject *str_cpu;

static int
slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *slot = PyDict_GetItemString(type->tp_dict, name);
    if (slot == NULL || !Py_IS_TYPE(slot, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)slot)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "bind_array: %R needs a `%s` entry in its __slots__", type, name);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)slot)->d_member->offset;
    return 0;
}

PyObject *
gp_bind_array(PyObject *module, PyObject *args)
{
    PyObject *type, *fn;
    if (!PyArg_ParseTuple(args, "O!O:bind_array", &PyType_Type, &type, &fn)) {
        return NULL;
    }
    Py_ssize_t s, d, v;
    if (slot_offset((PyTypeObject *)type, "_storage", &s) < 0 || slot_offset((PyTypeObject *)type, "_gp_dtype", &d) < 0
            || slot_offset((PyTypeObject *)type, "_device", &v) < 0) {
        return NULL;
    }
    if (str_cpu == NULL && (str_cpu = PyUnicode_InternFromString("cpu")) == NULL) {
        return NULL;
    }
    PyObject *memo = PyDict_New();
    if (memo == NULL) {
        return NULL;
    }
    Py_XSETREF(dtypes, memo);
    Py_XSETREF(dtype_of, Py_NewRef(fn));
    Py_XSETREF(array_type, (PyTypeObject *)Py_NewRef(type));
    storage_at = s, dtype_at = d, device_at = v;
    Py_RETURN_NONE;
}

#define SLOT(x, at) (*(PyObject **)((char *)(x) + (at)))

/* The gpupromote dtype of numpy dtype `descr`, borrowed (the memo holds it); NULL with no
 * exception set where there is none. */
static PyObject *
dtype_for(PyObject *descr)
{
    PyObject *d = PyDict_GetItemWithError(dtypes, descr);
    if (d != NULL || PyErr_Occurred()) {
        PyErr_Clear();
        return d;
    }
    d = PyObject_CallOneArg(dtype_of, descr);
    if (d == NULL || PyDict_SetItem(dtypes, descr, d) < 0) {
        Py_XDECREF(d);
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(d);
    return d;
}

int
gp_is_array(PyObject *x)
{
    return array_type != NULL && Py_TYPE(x) == array_type;
}

/* The numpy storage that stands for host Array `x` (borrowed): an ndarray of the Array's own
 * dtype (not bit patterns) on the CPU; NULL otherwise (the Python path). */
PyObject *
gp_array_storage(PyObject *x)
{
    PyObject *storage = SLOT(x, storage_at), *device = SLOT(x, device_at);
    if (storage == NULL || device == NULL || Py_TYPE(storage) != gp_ndarray_type
            || (device != str_cpu && (!PyUnicode_Check(device) || PyUnicode_Compare(device, str_cpu) != 0))) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *d = dtype_for((PyObject *)PyArray_DESCR((PyArrayObject *)storage));
    return d != NULL && d == SLOT(x, dtype_at) ? storage : NULL;
}

/* `result` (a numpy array: stolen) as a host Array of its own dtype, as as_host_array makes it;
 * NULL with an exception set where that fails. */
PyObject *
gp_array_wrap(PyObject *result)
{
    PyObject *d = dtype_for((PyObject *)PyArray_DESCR((PyArrayObject *)result));
    PyObject *wrapped = d == NULL ? NULL : array_type->tp_alloc(array_type, 0);
    if (wrapped == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a result of no gpupromote dtype");
        }
        Py_DECREF(result);
        return NULL;
    }
    SLOT(wrapped, storage_at) = result;
    SLOT(wrapped, dtype_at) = Py_NewRef(d);
    SLOT(wrapped, device_at) = Py_NewRef(str_cpu);
    return wrapped;
}
