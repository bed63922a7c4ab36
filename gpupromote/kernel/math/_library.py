"""Imports every module of the library, in dependency order: importing this fills the registry."""
from . import _core, complex, exp_log, hyperbolic, inverse_trig, narrow, pow, roots, special, trig  # noqa: F401

MODULES = ("_core", "narrow", "exp_log", "roots", "trig", "inverse_trig", "hyperbolic", "pow", "special", "complex")
