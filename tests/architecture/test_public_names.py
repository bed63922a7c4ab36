"""The public namespace is declared, not injected; no name shadows a builtin; dtype codes follow
one convention; modules import no cycle and read no other module's private names."""
import ast
import builtins
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import gpupromote as gp

PACKAGE = pathlib.Path(gp.__file__).parent


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name, module_level_only):
    """The gpupromote modules ``name`` imports (at module level, or anywhere)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = f"{base}.{node.module}" if node.level and node.module else (base if node.level else node.module)
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    # a submodule's import of its own package is the package being set up, not a cycle
    return {m for m in found if m in MODULES and m != name and not name.startswith(m + ".")}


def test_every_public_name_is_declared_in_init():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    bound = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    assert not [n for n in gp.__all__ if n not in bound], "names in __all__ that __init__ does not import"
    assert "globals" not in (PACKAGE / "__init__.py").read_text()


# NumPy's own names that Python has as builtins, which numpy.__all__ exports too (np.sum, np.abs,
# np.round, np.pow, ...): the only ones gp has (inside its namespace: the builtins stay as they are)
NUMPY_NAMES_AS_BUILTINS = {"sum", "max", "min", "any", "all", "abs", "round", "pow"}


def test_no_public_name_shadows_a_builtin_but_numpys():
    assert not [n for n in gp.__all__ if hasattr(builtins, n) and n not in NUMPY_NAMES_AS_BUILTINS]
    assert not [n for n in vars(gp) if hasattr(builtins, n) and not n.startswith("__")
                and n not in NUMPY_NAMES_AS_BUILTINS]
    assert {n for n in NUMPY_NAMES_AS_BUILTINS if n in np.__all__} == NUMPY_NAMES_AS_BUILTINS


def test_no_module_updates_its_globals():
    assert not [name for name, path in MODULES.items() if "globals().update" in path.read_text()]


@pytest.mark.parametrize("code, name", [("f2", "float16"), ("f4", "float32"), ("c8", "complex64"),
                                        ("c16", "complex128"), ("u8", "uint64"), ("i1", "int8"), ("bf", "bfloat16")])
def test_dtype_codes_count_bytes_as_numpy_does(code, name):
    assert gp.dtype(code) is gp.dtype(name)


@pytest.mark.parametrize("bits", ["f16", "f32", "c32", "c64", "c128", "s8", "u16", "u64"])
def test_bit_width_spellings_are_refused_with_the_convention(bits):
    with pytest.raises(TypeError, match="counts bytes"):
        gp.dtype(bits)


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "also-inside-functions"])
def test_imports_have_no_cycle(module_level_only):
    # an import inside a function is still a dependency: a cycle through one only moves the
    # half-initialized module from import time to the first call
    graph = {m: _imports(m, module_level_only=module_level_only) for m in MODULES}
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path + [m])
        state[m] = "open"
        for n in sorted(graph[m]):
            visit(n, path + [m])
        state[m] = "done"
    for m in sorted(graph):
        visit(m, [])


def test_array_and_dispatch_do_not_import_each_other():
    assert "gpupromote.dispatch.eager" not in _imports("gpupromote.dispatch.array", module_level_only=False)


def test_import_gpupromote_imports_no_module_through_a_cycle():
    # a module imported through a cycle is seen half-initialized by the module that closes the
    # cycle; with no cycle, each module finishes before its importer reads it
    code = ("import sys, importlib.abc\n"
            "started, finished = [], set()\n"
            "class Watch(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.startswith('gpupromote'):\n"
            "            started.append(name)\n"
            "sys.meta_path.insert(0, Watch())\n"
            "import gpupromote\n"
            "print(len(set(started)) == len(started))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"], out


def _is_module(name, path, node, imported):
    """Whether ``from <node.module> import <imported>`` in module ``name`` imports a submodule (a
    package's private submodules are the package's own business)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for _ in range(node.level - 1):
        package = package.rsplit(".", 1)[0]
    base = f"{package}.{node.module}" if node.module else package
    return f"{base}.{imported}" in MODULES or imported == "_fastpath"   # the compiled extension


def test_no_module_reads_another_modules_private_names():
    offences = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                offences += [f"{name} imports {a.name} from {node.module}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")
                             and not _is_module(name, path, node, a.name)]
    assert not offences


def _module_aliases(name, path, tree):
    """The local names under which module ``name`` binds other gpupromote modules."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
            for _ in range(max(node.level - 1, 0)):
                package = package.rsplit(".", 1)[0]
            base = (f"{package}.{node.module}" if node.module else package) if node.level else node.module
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    aliases[a.asname] = a.name
    return aliases


def test_no_module_reads_another_modules_private_attributes():
    # `module._name` is the same reach into another module's internals as `from module import _name`
    offences = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = _module_aliases(name, path, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                offences.append(f"{name} reads {aliases[node.value.id]}.{node.attr}")
    assert not offences
