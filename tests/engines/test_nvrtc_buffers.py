"""NVRTC's output buffers never alias CPython's shared bytes objects (found by issue 25's device check).

cuda-bindings writes a C string (the compile log, the cubin) into a bytes object the caller makes.
``b" " * 1`` is CPython's one shared one-byte object: an empty log (1 byte, its NUL) written into it
turned b" " into b"\\x00" for the whole process - spaces printed as NULs, torch unable to parse its
own operator schemas afterwards. A compile must leave the process's constants as they were.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings' NVRTC binding is not installed")


def test_a_compile_with_an_empty_log_leaves_the_shared_bytes_alone():
    # a fresh process: a corrupted constant must not leak into this one's other tests
    code = textwrap.dedent("""
        import os
        os.environ["GP_NVRTC_BINDING"] = "cuda-bindings"
        from gpupromote.engines.cuda import nvrtc
        src = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
        binary = nvrtc.compile_cuda(src, name="t.cu", arch="sm_90", cubin=True, options=(), include_cupy=False)
        assert binary[:4] == b"\\x7fELF", binary[:8]
        print(repr(chr(32).encode()), repr(b" " * 1), repr(bytes([32])), repr(b"" * 5), "a b")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "b' ' b' ' b' ' b'' a b", repr(done.stdout)


def test_writable_bytes_are_fresh_objects():
    from gpupromote.engines.cuda.nvrtc import _writable_bytes
    for size in (0, 1, 2, 7):
        buf = _writable_bytes(size)
        assert len(buf) >= max(size, 2)
        shared = (b" " * 1, b"" * 1)   # CPython's one-byte and empty singletons
        assert all(buf is not s for s in shared)
