"""The integrations wing: gpupromote inside other systems.

dask (lazy graphs over Dask arrays, one gpupromote kernel per block; public as
``gpupromote.dask``). May import every wing below it (core, promotion, kernel, engines,
dispatch); never tools.
"""
