"""The integrations wing: gpupromote inside other systems.

dask (lazy graphs over Dask arrays, one gpupromote kernel per block; public as
``gpupromote.dask``) and dask_reduce (reductions of Dask arrays: dask's tree reduction,
gpupromote kernels per block and per combine). May import every wing below it (core, promotion, kernel, engines,
dispatch); never tools.
"""
