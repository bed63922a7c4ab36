"""The engines wing: where a plan is executed, and the registry of its backends.

cpu/ (Numba) and cuda/ (NVRTC and CuPy) each generate their code from the kernel IR; disk_cache is
the cache-folder logic both share. An engine may import the core and kernel wings only: it
never promotes, never looks at a policy and never imports the dispatcher.

A backend executes plans; it never promotes and never looks at a policy. The dispatcher
(gpupromote/dispatch/eager.py) has already resolved the plan, broadcast the shapes, checked ``out=``
and allocated the output when a backend is called. The interface, shared by ``cpu`` (Numba,
engines/cpu/engine.py) and ``cuda`` (CuPy, engines/cuda/engine.py):

``empty(shape, dtype) -> array``
    A new storage array for the DType ``dtype`` (numpy: ``dtype.numpy``, an ml_dtypes array for
    bfloat16 and float8).
``run(plan, args, out) -> None``
    Evaluate ``plan`` elementwise into ``out``. ``args[i]`` is a storage array when
    ``plan.folded[i]`` is false (any strides, shape broadcastable to ``out.shape``), else the
    folded scalar already converted by ``folding.fold_scalar`` (a numpy scalar of
    ``plan.compute``; ``np.bool_`` for ``where``'s condition). ``out`` has the broadcast shape and
    ``plan.result``'s storage dtype, and never overlaps an input except element for element
    (identical views: safe for an elementwise loop). Empty outputs are never passed.
``copyto(dst, src) -> None``
    Cast ``src`` into ``dst`` elementwise (same shape), as the framework's astype does.
``asarray(x) -> array``
    Host or device storage for an array-like operand this backend owns.

Backends are created lazily: importing gpupromote never imports numba or cupy.
"""
from __future__ import annotations

import importlib

__all__ = ["get_backend", "register", "backend_names"]

# name -> (module, attribute of the backend object there)
_FACTORIES = {
    "cpu": ("gpupromote.engines.cpu.engine", "BACKEND"),
    "cuda": ("gpupromote.engines.cuda.engine", "BACKEND"),
}
_loaded: dict = {}


def register(name: str, module: str, attribute: str = "BACKEND") -> None:
    """Register (or replace) backend ``name`` as ``module.attribute``, imported on first use."""
    _FACTORIES[name] = (module, attribute)
    _loaded.pop(name, None)


def backend_names() -> list[str]:
    return list(_FACTORIES)


def get_backend(name: str):
    backend = _loaded.get(name)
    if backend is not None:
        return backend
    if name not in _FACTORIES:
        raise ValueError(f"unknown backend {name!r}: use one of {', '.join(_FACTORIES)}")
    module, attribute = _FACTORIES[name]
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise RuntimeError(f"the {name!r} backend is not available: {exc}") from exc
    backend = _loaded[name] = getattr(mod, attribute)
    return backend
