"""The CPU engine: Numba kernels generated from the kernel IR.

engine (the backend object, its entry points), source (the Numba source generator), kernels
(compile, the memory cache, the row map), modules (the generated modules on disk), cache (the
disk cache's tag and folder), threads and pool
(splitting a call over threads), and the helpers the generated source calls: intrinsics, narrow
(float16/bfloat16/float8 bit conversions), binary, elementwise, owned_math (the owned math
library's functions, kernel/math), unary, helpers. Reads the
IR only: may import the core and kernel wings and engines/disk_cache; never a policy.
"""
