/* fastpath.h: what the files of the one extension gpupromote.dispatch._fastpath share.
 *
 * The files, one job each (setup.py compiles every .c file of this folder into the one module):
 *   result_type.c  gp.result_type's cache-hit path and its pointer memo;
 *   pool.c         the thread pool that runs one kernel call's chunks (gp_run_kernel);
 *   folding.c      Python scalars into kernel-parameter carriers (gp_fold_value);
 *   entry.c        the Entry type (one key's cached call plan) and a CPU call through it;
 *   device.c       a call on CuPy arrays through an Entry: cupy.empty + one cuLaunchKernel;
 *   ops.c          the Op type (gp.add and the others), its memo of entries, op_stats;
 *   host_array.c   gp.Array operands of the ops: the storage read, the result wrapped;
 *   column.c       a call with a column operand ((M, K) - (M, 1)) through an entry, a row at a time;
 *   rows.c         a call on views whose rows are contiguous (x[:, 1:] - x[:, :-1]), a row at a time;
 *   reduce_op.c    the ReduceOp type (gp.sum and the other whole-array / last-axis reductions),
 *                  ReduceEntry, their memo, reduce_stats;
 *   module.c       the method table, bind / bind_ops / bind_device / forget / set_threads, and
 *                  PyInit__fastpath (which interns the strings below and imports NumPy's C API).
 * Here: the types more than one file reads (Slot, EntryObject, the memos' entries, the fold
 * codes), the declarations of the functions shared between files (prefixed gp_) and of the
 * globals (each defined in exactly one file, named beside it). All of them are hidden: the
 * module exports PyInit__fastpath alone, as when it was one file of statics.
 */
#ifndef GP_FASTPATH_H
#define GP_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* T_OBJECT_EX, the kind of a __slots__ entry */
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
/* NumPy's C API table is one symbol of the module: module.c fills it (import_array), and every
 * other file reads that one (NO_IMPORT_ARRAY) instead of a NULL copy of its own. */
#define PY_ARRAY_UNIQUE_SYMBOL gp_fastpath_ARRAY_API
#ifndef GP_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(_WIN32)
#define GP_INTERNAL __attribute__((visibility("hidden")))
#else
#define GP_INTERNAL
#endif

#if defined(_MSC_VER)
#define GP_THREAD_LOCAL __declspec(thread)
#else
#define GP_THREAD_LOCAL _Thread_local
#endif

#if !defined(_WIN32)
#define GP_HAVE_THREADS 1   /* pool.c's pthreads; on Windows every kernel call runs in the caller's thread */
#endif

/* Interned names, made by PyInit__fastpath (module.c). */
extern GP_INTERNAL PyObject *gp_str_op, *gp_str_policy, *gp_str_add, *gp_str_where, *gp_str_key, *gp_str_dtype;
extern GP_INTERNAL PyObject *gp_str_out;
extern GP_INTERNAL PyObject *gp_str_shape, *gp_str_strides, *gp_str_data, *gp_str_ptr, *gp_str_device_id;

/* ---------------------------------------------------------------------------------------------
 * result_type.c */

/* Set once by bind() (module.c; gp_current_policy and gp_ndarray_type by bind_ops too). */
extern GP_INTERNAL PyObject *gp_plans;              /* api._plans */
extern GP_INTERNAL PyObject *gp_current_policy;     /* api._current, a ContextVar */
extern GP_INTERNAL PyTypeObject *gp_ndarray_type;   /* numpy.ndarray, exact type only */
extern GP_INTERNAL PyTypeObject *gp_generic_type;   /* numpy.generic: numpy scalars key as 0-d arrays */
#define MAX_KEYED_TYPES 4
extern GP_INTERNAL PyTypeObject *gp_keyed_types[MAX_KEYED_TYPES];
extern GP_INTERNAL Py_ssize_t gp_key_offsets[MAX_KEYED_TYPES];
extern GP_INTERNAL int gp_n_keyed_types;
extern GP_INTERNAL int gp_sanitizing;   /* gp.sanitize is on somewhere: ops.c declines every call (module.c) */
extern GP_INTERNAL PyObject *gp_operand_key;        /* api._operand_key, for every other operand */
extern GP_INTERNAL PyObject *gp_python_result_type; /* api._py_result_type, for everything but a hit */

/* result_type's memo (see result_type.c); forget() (module.c) empties it. */
#define MEMO_SLOTS 2048
typedef struct {
    PyObject *key[6];  /* policy, op, a main, a detail, b main, b detail; key[0] NULL when empty */
    PyObject *bounds, *result;
} MemoEntry;
extern GP_INTERNAL MemoEntry gp_memo[MEMO_SLOTS];
GP_INTERNAL void gp_memo_clear_entry(MemoEntry *e);

GP_INTERNAL int gp_same_name(PyObject *name, PyObject *interned);
GP_INTERNAL PyObject *gp_result_type(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* ---------------------------------------------------------------------------------------------
 * What a kernel call is made of (pool.c, folding.c, entry.c, device.c) */

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
 * pool.c; set_threads and op_stats (module.c, ops.c) read and set these. */

#define GP_MAX_THREADS 256
extern GP_INTERNAL int gp_n_threads;                 /* set by _cpu_threads (GPUPROMOTE_NUM_THREADS) */
extern GP_INTERNAL unsigned long long gp_calls_split; /* kernel calls split over threads (op_stats()) */
extern GP_INTERNAL int64_t gp_min_chunk;             /* elements per thread at least */

GP_INTERNAL void gp_run_kernel(gp_kernel fn, char **data, const int64_t *itemsize, int nops, int64_t n);
#ifdef GP_HAVE_THREADS
GP_INTERNAL void gp_pool_at_import(void);
#endif

/* ---------------------------------------------------------------------------------------------
 * folding.c */

GP_INTERNAL int gp_fold_value(PyObject *x, int src, int to, Slot *slot);
GP_INTERNAL int gp_plain_numeric(const PyArray_Descr *descr);
GP_INTERNAL int gp_fold_from_python(PyObject *conv, PyObject *x, int to, Slot *slot);

/* ---------------------------------------------------------------------------------------------
 * Entries: what one key's calls need, made by opfunctions._make_entry (entry.c). */

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
    long long max_n;           /* calls of more elements decline: the Python path has a faster way (a table) */
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
    /* A column operand ((M, K) - (M, 1)): the kernel of the plan with operand i folded, which
     * column.c calls once per row with that row's value; made on first need by column_maker(i)
     * (opfunctions._column_kernel; state 0 not asked, 1 made, -1 none: the Python path). */
    PyObject *column_maker;
    signed char column_state[GP_MAX_IN];
    gp_kernel column_fn[GP_MAX_IN];
    PyObject *column_keep[GP_MAX_IN], *column_conv[GP_MAX_IN];
    int column_src[GP_MAX_IN], column_to[GP_MAX_IN];
} EntryObject;

extern GP_INTERNAL PyTypeObject gp_EntryType;
GP_INTERNAL int gp_entry_within_bounds(const EntryObject *e, PyObject *const *args);
GP_INTERNAL int gp_entry_fold(const EntryObject *e, PyObject *const *args, Slot *slots);
GP_INTERNAL PyObject *gp_entry_run(EntryObject *e, PyObject *const *args, PyObject *out);
/* The output of a call of shape (ndim, dims) through e: out itself, checked (writable, aligned,
 * C-contiguous, disjoint from the operands but one read element for element, which `repeats`
 * excludes), or a new array; its data in *data. A new reference, or NULL (decline). */
GP_INTERNAL PyObject *gp_entry_output(EntryObject *e, PyObject *const *args, PyObject *out, int ndim,
                                      const npy_intp *dims, const int *repeats, char **data);

/* The most kernel calls one call makes over a repeated block or the rows of a column operand:
 * each costs ~3 ns, the Python path's row maps 5-15 us in all (a (4000, 1) - (1,) call: 11.6 us
 * there, 11.8 in 4000 blocks here). */
#define GP_MAX_BLOCKS 4096

/* column.c: (M, K) op (M, 1), the column operand `col` folded per row of `width`; NULL: decline. */
GP_INTERNAL PyObject *gp_entry_run_column(EntryObject *e, PyObject *const *args, PyObject *out, int col,
                                          int ndim, const npy_intp *dims, int64_t n, int64_t width);
GP_INTERNAL int gp_fold_raw(const char *p, PyArray_Descr *descr, int src, int to, Slot *slot);
/* rows.c: arrays whose last axis is contiguous or broadcast whole (views, x[:, 1:] - x[:, :-1], a
 * block and a view), a kernel call per row of the output; NULL: decline. */
GP_INTERNAL PyObject *gp_entry_run_rows(EntryObject *e, PyObject *const *args, PyObject *out, int ndim,
                                        const npy_intp *dims, int64_t n);

/* ---------------------------------------------------------------------------------------------
 * device.c: CuPy's handles, set by bind_device (module.c); ops.c reads gp_device_array_type. */

extern GP_INTERNAL PyTypeObject *gp_device_array_type;   /* cupy.ndarray, exact type only */
extern GP_INTERNAL PyObject *gp_device_empty;            /* cupy.empty */
extern GP_INTERNAL PyObject *gp_current_device;          /* cupy.cuda.runtime.getDevice */
extern GP_INTERNAL PyObject *gp_current_stream;          /* cupy.cuda.get_current_stream */
extern GP_INTERNAL PyObject *gp_driver_error;            /* cupy.cuda.driver.CUDADriverError */
extern GP_INTERNAL PyObject *gp_ensure_context;          /* cupy.cuda.runtime.memGetInfo */
/* The devices whose context this thread has made current (bit d: device d): one per thread. */
extern GP_INTERNAL GP_THREAD_LOCAL unsigned long long gp_contexts_ready;

GP_INTERNAL PyObject *gp_entry_run_device(EntryObject *e, PyObject *const *args, PyObject *out, int *raised);
GP_INTERNAL PyObject *gp_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* ---------------------------------------------------------------------------------------------
 * ops.c */

/* Memo of (op, policy, operand keys, out key) by identity -> entry, as for result_type. */
#define OP_MEMO_SLOTS 1024
#define OP_KEY 6
typedef struct {
    PyObject *key[OP_KEY];
    PyObject *entry;
} OpMemo;
extern GP_INTERNAL OpMemo gp_op_memo[OP_MEMO_SLOTS];
GP_INTERNAL void gp_op_memo_clear_entry(OpMemo *m);

extern GP_INTERNAL PyTypeObject gp_OpType;
GP_INTERNAL PyObject *gp_op_stats(PyObject *module, PyObject *unused);
GP_INTERNAL PyObject *gp_call_policy(PyObject *policy);   /* `policy or current()`: a str, or NULL (decline) */

/* ---------------------------------------------------------------------------------------------
 * host_array.c: gp.Array operands of the ops (bind_array, module.c's method table, hands over the type) */

GP_INTERNAL PyObject *gp_bind_array(PyObject *module, PyObject *args);
GP_INTERNAL int gp_is_array(PyObject *x);
GP_INTERNAL PyObject *gp_array_storage(PyObject *x);   /* borrowed; NULL: not one the storage stands for */
GP_INTERNAL PyObject *gp_array_wrap(PyObject *result); /* steals result */

/* ---------------------------------------------------------------------------------------------
 * reduce_op.c */

extern GP_INTERNAL PyTypeObject gp_ReduceOpType, gp_ReduceEntryType;
GP_INTERNAL void gp_reduce_memo_clear(void);
GP_INTERNAL PyObject *gp_reduce_stats(PyObject *module, PyObject *unused);

#endif /* GP_FASTPATH_H */
