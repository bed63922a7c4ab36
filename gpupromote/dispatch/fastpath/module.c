/* module.c: the module gpupromote.dispatch._fastpath itself: its method table, the functions that
 * hand it Python's objects (bind for result_type.c, bind_ops for ops.c, bind_device for device.c),
 * forget (empties the memos of result_type.c, ops.c and reduce_op.c), set_threads (pool.c's settings), and
 * PyInit__fastpath, which interns the names every file reads (defined here), imports NumPy's C
 * API for all of them (the one file that defines GP_IMPORT_ARRAY), readies entry.c's Entry and
 * ops.c's Op and starts pool.c's fork handling.  Relies on fastpath.h for everything else. */

#define GP_IMPORT_ARRAY   /* this file fills NumPy's API table; the others read it (fastpath.h) */
#include "fastpath.h"

PyObject *gp_str_op, *gp_str_policy, *gp_str_add, *gp_str_where, *gp_str_key, *gp_str_dtype;
PyObject *gp_str_out;
PyObject *gp_str_shape, *gp_str_strides, *gp_str_data, *gp_str_ptr, *gp_str_device_id;

static PyObject *
bind(PyObject *module, PyObject *args)
{
    PyObject *p, *cv, *nd, *gen, *keyed, *ok_fn, *py_fn;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO:bind", &PyDict_Type, &p, &PyContextVar_Type, &cv,
                          &PyType_Type, &nd, &PyType_Type, &gen, &PyTuple_Type, &keyed, &ok_fn, &py_fn)) {
        return NULL;
    }
    Py_XSETREF(gp_plans, Py_NewRef(p));
    Py_XSETREF(gp_current_policy, Py_NewRef(cv));
    Py_XSETREF(gp_ndarray_type, (PyTypeObject *)Py_NewRef(nd));
    if (PyTuple_GET_SIZE(keyed) > MAX_KEYED_TYPES) {
        PyErr_SetString(PyExc_ValueError, "bind: too many keyed types");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keyed); k++) {
        PyObject *type = PyTuple_GET_ITEM(keyed, k);
        PyObject *slot = PyType_Check(type)
            ? PyDict_GetItemWithError(((PyTypeObject *)type)->tp_dict, gp_str_key) : NULL;
        if (slot == NULL || !Py_IS_TYPE(slot, &PyMemberDescr_Type)
                || ((PyMemberDescrObject *)slot)->d_member->type != T_OBJECT_EX) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "bind: %R needs a `_key` entry in its __slots__", type);
            }
            return NULL;
        }
    }
    for (int k = 0; k < gp_n_keyed_types; k++) {
        Py_CLEAR(gp_keyed_types[k]);
    }
    gp_n_keyed_types = (int)PyTuple_GET_SIZE(keyed);
    for (int k = 0; k < gp_n_keyed_types; k++) {
        PyObject *type = PyTuple_GET_ITEM(keyed, k);
        PyObject *slot = PyDict_GetItem(((PyTypeObject *)type)->tp_dict, gp_str_key);
        gp_keyed_types[k] = (PyTypeObject *)Py_NewRef(type);
        gp_key_offsets[k] = ((PyMemberDescrObject *)slot)->d_member->offset;
    }
    Py_XSETREF(gp_generic_type, (PyTypeObject *)Py_NewRef(gen));
    Py_XSETREF(gp_operand_key, Py_NewRef(ok_fn));
    Py_XSETREF(gp_python_result_type, Py_NewRef(py_fn));
    Py_RETURN_NONE;
}

static PyObject *
set_threads(PyObject *module, PyObject *args)
{
    int threads;
    long long chunk = gp_min_chunk;
    if (!PyArg_ParseTuple(args, "i|L:set_threads", &threads, &chunk)) {
        return NULL;
    }
    if (threads < 1 || chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "set_threads: threads >= 1 and chunk >= 1");
        return NULL;
    }
#ifdef GP_HAVE_THREADS
    gp_n_threads = threads < GP_MAX_THREADS ? threads : GP_MAX_THREADS;
#else
    gp_n_threads = 1;
#endif
    gp_min_chunk = chunk;
    return Py_BuildValue("iL", gp_n_threads, (long long)gp_min_chunk);
}

int gp_sanitizing;

static PyObject *
set_sanitizing(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    gp_sanitizing = on;
    Py_RETURN_NONE;
}

static PyObject *
bind_ops(PyObject *module, PyObject *args)
{
    PyObject *cv, *nd;
    if (!PyArg_ParseTuple(args, "O!O!:bind_ops", &PyContextVar_Type, &cv, &PyType_Type, &nd)) {
        return NULL;
    }
    Py_XSETREF(gp_current_policy, Py_NewRef(cv));
    Py_XSETREF(gp_ndarray_type, (PyTypeObject *)Py_NewRef(nd));
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
    Py_XSETREF(gp_ensure_context, Py_NewRef(context));
    gp_contexts_ready = 0;
    Py_XSETREF(gp_device_array_type, (PyTypeObject *)Py_NewRef(nd));
    Py_XSETREF(gp_device_empty, Py_NewRef(empty));
    Py_XSETREF(gp_current_device, Py_NewRef(device));
    Py_XSETREF(gp_current_stream, Py_NewRef(stream));
    Py_XSETREF(gp_driver_error, Py_NewRef(error));
    for (size_t i = 0; i < OP_MEMO_SLOTS; i++) {
        gp_op_memo_clear_entry(&gp_op_memo[i]);   /* entries of another CuPy's kernels */
    }
    Py_RETURN_NONE;
}

static PyObject *
forget(PyObject *module, PyObject *unused)
{
    for (size_t i = 0; i < MEMO_SLOTS; i++) {
        gp_memo_clear_entry(&gp_memo[i]);
    }
    for (size_t i = 0; i < OP_MEMO_SLOTS; i++) {
        gp_op_memo_clear_entry(&gp_op_memo[i]);
    }
    gp_reduce_memo_clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"result_type", (PyCFunction)(void (*)(void))gp_result_type, METH_FASTCALL | METH_KEYWORDS,
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
    {"bind_array", gp_bind_array, METH_VARARGS,
     "bind_array(Array, dtype)\nHand gp.Array and gpupromote's dtype() to the ops, so host Arrays are operands there (host_array.c)."},
    {"launch", (PyCFunction)(void (*)(void))gp_launch, METH_FASTCALL,
     "launch(address, function, grid, block, stream, fmt, *values)\n"
     "One cuLaunchKernel of a 1-d grid, the parameters packed as fmt says (q Q i I h H b B d f ?; device.c)."},
    {"op_stats", gp_op_stats, METH_NOARGS,
     "op_stats() -> {'served': n, 'declined': m, 'split': k}: op calls the compiled path ran, those it handed\n"
     "to Python, and kernel calls it split over threads."},
    {"reduce_stats", gp_reduce_stats, METH_NOARGS,
     "reduce_stats() -> {'served': n, 'declined': m}: reduction calls the compiled path ran, those it handed to Python."},
    {"set_sanitizing", set_sanitizing, METH_O,
     "set_sanitizing(on)\nWhile on (gp.sanitize in any thread), every op call goes to the Python function (dispatch/sanitize.py)."},
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
    gp_str_op = PyUnicode_InternFromString("op");
    gp_str_policy = PyUnicode_InternFromString("policy");
    gp_str_add = PyUnicode_InternFromString("add");
    gp_str_where = PyUnicode_InternFromString("where");
    gp_str_key = PyUnicode_InternFromString("_key");
    gp_str_dtype = PyUnicode_InternFromString("dtype");
    gp_str_out = PyUnicode_InternFromString("out");
    gp_str_shape = PyUnicode_InternFromString("shape");
    gp_str_strides = PyUnicode_InternFromString("strides");
    gp_str_data = PyUnicode_InternFromString("data");
    gp_str_ptr = PyUnicode_InternFromString("ptr");
    gp_str_device_id = PyUnicode_InternFromString("device_id");
    if (!gp_str_op || !gp_str_policy || !gp_str_add || !gp_str_where || !gp_str_key || !gp_str_dtype || !gp_str_out
            || !gp_str_shape || !gp_str_strides || !gp_str_data || !gp_str_ptr || !gp_str_device_id) {
        return NULL;
    }
    import_array();
    if (PyType_Ready(&gp_EntryType) < 0 || PyType_Ready(&gp_OpType) < 0 || PyType_Ready(&gp_ReduceEntryType) < 0
            || PyType_Ready(&gp_ReduceOpType) < 0) {
        return NULL;
    }
#ifdef GP_HAVE_THREADS
    gp_pool_at_import();
#endif
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Entry", (PyObject *)&gp_EntryType) < 0
            || PyModule_AddObjectRef(m, "Op", (PyObject *)&gp_OpType) < 0
            || PyModule_AddObjectRef(m, "ReduceOp", (PyObject *)&gp_ReduceOpType) < 0
            || PyModule_AddObjectRef(m, "ReduceEntry", (PyObject *)&gp_ReduceEntryType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
