"""The dispatch wing: from a user's call to a plan and a kernel launch.

Owns the op functions (functions, opfunctions: ``gp.add`` and its fast paths), the operands
(operands, foreign: NumPy, CuPy, torch and JAX arrays through DLPack), Python-scalar folding
(folding), the checks made before a launch (checks), the eager call (eager), the public
promotion API over arrays and the one plan cache (api), ``gp.Array`` and NumPy's protocols on it
(array, operators; host_arrays: a host Array's call as its storage's), gp.astype and its fast path
(astype), NumPy's ufunc keywords dtype= / casting= / where= (conventions),
``gp.fuse`` and its tracing (fuse, traced), ``gp.sanitize`` (sanitize: lossy-promotion reports)
and the compiled dispatcher (the C extension ``_fastpath``, built from fastpath/). Resolves each
step, so it sits above the promotion, kernel and engine wings: may import core, promotion, kernel
and engines; never integrations or tools (Dask reaches it through ``register_lazy_operands``).
"""
