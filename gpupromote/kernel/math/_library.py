"""Imports every module of the library, in dependency order: importing this fills the registry."""
from . import (_core, _f32_fixes, _narrow_entries, complex, complex_entry, complex_inverse, exp_log, fast32, float32,  # noqa: F401
               hyperbolic, inverse_trig, lean32, log, narrow, narrow32, pow, roots, special, trig, trig32)

MODULES = ("_core", "narrow", "exp_log", "log", "roots", "trig", "trig32", "inverse_trig", "hyperbolic", "fast32", "pow", "special",
           "_f32_fixes", "float32", "lean32", "narrow32", "_narrow_entries", "complex", "complex_inverse", "complex_entry")
