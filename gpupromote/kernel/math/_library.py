"""Imports every module of the library, in dependency order: importing this fills the registry."""
from . import _core, exp_log  # noqa: F401

MODULES = ("_core", "exp_log")
