"""A clone stands alone: nothing the product, the tests or the docs need lies outside the
repository. The workspace this project grew in has a ../shared folder beside the checkout (records,
source documents, a scoring tool); a user's clone has none, so the suite is collected in a copy of
the repository's files with no ../shared beside it, and the docs are read for links that leave the
repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _repository_files() -> list[str]:
    """The files a clone would hold: tracked ones, and new ones git does not ignore (what the next
    commit of this working tree can hold); build outputs, caches and .venv are ignored."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("this test copies the repository's files (git ls-files): run it in a git checkout")
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def test_the_suite_is_collected_in_a_copy_with_no_shared_folder_beside_it(tmp_path):
    clone = tmp_path / "workspace" / "gpupromote"     # tmp_path/workspace has no `shared` folder
    for name in _repository_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                         cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"collection failed in a clone without ../shared:\n{output[-4000:]}"
    assert re.search(r"^(\d+) tests collected", output, flags=re.MULTILINE), output[-2000:]
    assert int(re.search(r"^(\d+) tests collected", output, flags=re.MULTILINE)[1]) > 1000
    # the copy's own package was collected against, not this checkout's
    assert str(ROOT) not in output, f"the copy reached back into {ROOT}:\n{output[-2000:]}"


# ---------------------------------------------------------------------------------------------
# links

_LINK = re.compile(r"\]\(([^)\s]+)\)")      # [text](target)


def _markdown_files():
    return [name for name in _repository_files() if name.endswith(".md")]


def test_no_markdown_file_links_outside_the_repository():
    escaping = []
    for name in _markdown_files():
        page = ROOT / name
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue   # a URL (https:, mailto:) or an anchor on the same page
            resolved = (page.parent / target.split("#")[0]).resolve()
            if ROOT not in resolved.parents and resolved != ROOT:
                escaping.append(f"{name}: {target}")
    assert not escaping, "links that leave the repository:\n" + "\n".join(escaping)


def test_the_policy_pages_link_each_source_documents_public_home():
    from gpupromote.tools import docs
    for name in ("torch", "jax", "paddle", "tf-all", "ascend", "numpy", "array-api"):
        page = (ROOT / "docs" / "policies" / f"{name}.md").read_text(encoding="utf-8")
        spec_key = docs.LINKS[name][0]
        title, url = docs.SPECIFICATIONS[spec_key]
        assert url.startswith("https://") and f"[{title}]({url}) (the document this policy follows)" in page
        assert "shared/seeds" not in page
