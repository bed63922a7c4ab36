"""The package's version, in this one place: pyproject.toml reads it ([tool.setuptools.dynamic]),
``gpupromote.__version__`` and ``python -m gpupromote --version`` show it. Kept free of imports so
that the build reads it without importing the package."""
__version__ = "0.1.0"
