"""Which wing of gpupromote may import which: the rules, and the checker that reads every module.

A wing is a folder under gpupromote/ (the package's root files, __init__, __main__ and the public
dask shim, may import anything). An import counts wherever it stands: at module level, inside a
function, under ``if TYPE_CHECKING``. The table is the architecture in one place: ARCHITECTURE.md
draws it, and tests/architecture/test_import_rules.py holds the package to it.
"""
from __future__ import annotations

import ast
from pathlib import Path

# wing -> the wings its modules may import (itself included)
ALLOWED = {
    "core":         {"core"},
    "promotion":    {"core", "promotion"},
    "kernel":       {"core", "kernel"},
    "engines":      {"core", "kernel", "engines"},
    "dispatch":     {"core", "promotion", "kernel", "engines", "dispatch"},
    "integrations": {"core", "promotion", "kernel", "engines", "dispatch", "integrations"},
    "tools":        {"core", "promotion", "kernel", "engines", "dispatch", "integrations", "tools"},
}

# Within a wing: (importer prefix, forbidden prefix). The two engines share disk_cache only.
APART = [("engines.cpu", "engines.cuda"), ("engines.cuda", "engines.cpu")]

# Third-party libraries a wing may not touch: the promotion rules and the kernel description
# know no arrays libraries beyond NumPy's dtypes, and no compilers.
FOREIGN = {"numba", "llvmlite", "cupy", "cupyx", "cuda", "dask", "distributed", "torch", "jax", "jaxlib",
           "matplotlib"}
NO_FOREIGN = {"core", "promotion", "kernel"}
# ... except in a module that exists to bind the kernel description to an engine's compiler
FOREIGN_BINDINGS = {"kernel.math.numba_binding", "kernel.math.llvm_binding"}


def modules(root: Path) -> dict[str, Path]:
    """'gpupromote.x.y' -> path, for every module under ``root`` (the package folder)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the module, functions included.
    ``from pkg import x`` names ``pkg.x`` where that is a module of ``known``, else ``pkg``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{a.name}" if f"{module}.{a.name}" in known else module)
                      for a in node.names]
    return sorted(set(found))


def wing_of(name: str) -> str | None:
    """The wing a gpupromote module belongs to; None for the package root's own files."""
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else None


def violations(root: Path) -> list[str]:
    """Every import that breaks a rule, as 'path:line: module imports target (why)'."""
    mods = modules(root)
    out = []
    for name, path in mods.items():
        wing = wing_of(name)
        if wing is None:
            continue
        inner = name.split(".", 1)[1]
        for line, target in imports(name, path, mods):
            where = f"{path.relative_to(root.parent)}:{line}: {name} imports {target}"
            top = target.split(".")[0]
            if top == "gpupromote":
                other = wing_of(target)
                if other is None:
                    if target != "gpupromote":
                        out.append(f"{where} (the package root is above every wing)")
                    continue
                if other not in ALLOWED[wing]:
                    out.append(f"{where} ({wing} may import {', '.join(sorted(ALLOWED[wing]))})")
                t_inner = target.split(".", 1)[1]
                for importer, forbidden in APART:
                    if inner.startswith(importer) and (t_inner + ".").startswith(forbidden + "."):
                        out.append(f"{where} ({importer} and {forbidden} stay apart)")
            elif wing in NO_FOREIGN and top in FOREIGN and inner not in FOREIGN_BINDINGS:
                out.append(f"{where} ({wing} imports no array library or compiler)")
    return sorted(set(out))
