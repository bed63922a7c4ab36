"""Imports every module of the library, in dependency order: importing this fills the registry."""
from . import (_core, _f32_fixes, complex, complex_entry, complex_inverse, exp_log, float32, hyperbolic,  # noqa: F401
               inverse_trig, log, narrow, pow, roots, special, trig)

MODULES = ("_core", "narrow", "exp_log", "log", "roots", "trig", "inverse_trig", "hyperbolic", "pow", "special", "_f32_fixes",
           "float32", "complex", "complex_inverse", "complex_entry")
