"""Imports every module of the library, in dependency order: importing this fills the registry."""
from . import (_core, _f32_fixes, complex, exp_log, float32, hyperbolic, inverse_trig, narrow, pow, roots,  # noqa: F401
               special, trig)

MODULES = ("_core", "narrow", "exp_log", "roots", "trig", "inverse_trig", "hyperbolic", "pow", "special", "_f32_fixes",
           "float32", "complex")
