"""``gpupromote.dask``: the public home of the Dask integration, whose code is
gpupromote/integrations/dask.py (this module only keeps the documented import path)."""
from .integrations.dask import call, call_fused, kernel_cache_stats

__all__ = ["call", "call_fused", "kernel_cache_stats"]
