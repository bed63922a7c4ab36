"""The CUDA engine: CUDA C++ generated from the kernel IR, compiled with NVRTC, launched with CuPy.

engine (the backend object), source (the CUDA source generator), nvrtc (the one compile path),
modules (NVRTC compile, disk and memory caches of kernels), launch (layouts, alignment, grids)
and device (CuPy handles, devices, storage dtypes). Reads the IR only: may import the core and
kernel wings and engines/disk_cache; never a policy.
"""
