"""Dtype names mean what NumPy means by them (np.dtype(name)), PyTorch's spellings what PyTorch
means, and names that mean a dtype gpupromote lacks are refused with what NumPy reads them as."""
import numpy as np
import pytest

import gpupromote as gp

# Every name np.dtype knows for a dtype gpupromote has: the answer must be NumPy's, on this platform.
NUMPY_NAMES = ["float", "int", "complex", "double", "long", "uint", "single", "half", "short", "byte", "ubyte",
               "ushort", "intc", "uintc", "longlong", "ulonglong", "intp", "uintp", "ulong", "int_", "cdouble",
               "csingle", "bool", "bool_", "f", "d", "e", "l", "q", "b", "B", "h", "H", "i", "I", "F", "D", "?",
               "<f4", ">f8", "=i2", "float32", "int16"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_a_name_means_what_numpy_means(name):
    assert gp.dtype(name) == np.dtype(name).newbyteorder("=")
    assert gp.dtype(name).numpy == np.dtype(name).newbyteorder("=")


def test_the_names_numpy_users_write_most():
    assert (gp.dtype("float"), gp.dtype("int"), gp.dtype("complex")) == (gp.float64, gp.int64, gp.complex128)
    assert (gp.dtype("double"), gp.dtype("single"), gp.dtype("half")) == (gp.float64, gp.float32, gp.float16)
    assert (gp.dtype("uint"), gp.dtype("byte"), gp.dtype("ubyte")) == (gp.uint64, gp.int8, gp.uint8)


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax-x64"])
def test_promote_types_reads_names_as_numpy(policy):
    assert gp.promote_types("float", "int8", policy="numpy") is gp.float64
    # the same name under every policy: the policy changes the promotion, not what a name means
    assert gp.promote_types("float", "float", policy=policy) is gp.float64


@pytest.mark.parametrize("name, want", [("torch.float", "float32"), ("torch.int", "int32"), ("torch.long", "int64"),
                                        ("torch.byte", "uint8"), ("torch.char", "int8"), ("torch.half", "float16"),
                                        ("torch.double", "float64"), ("torch.cfloat", "complex64"),
                                        ("torch.chalf", "complex32"), ("torch.bfloat16", "bfloat16")])
def test_torch_spellings_keep_torchs_meaning(name, want):
    assert gp.dtype(name) is gp.dtype(want)


def test_torch_dtype_objects_keep_torchs_meaning():
    torch = pytest.importorskip("torch")
    assert gp.dtype(torch.float) is gp.float32 and gp.dtype(torch.int) is gp.int32 and gp.dtype(torch.long) is gp.int64


@pytest.mark.parametrize("name, want", [("bf16", "bfloat16"), ("fp16", "float16"), ("e4m3", "float8_e4m3fn"),
                                        ("chalf", "complex32"), ("cfloat", "complex64")])
def test_names_numpy_lacks_keep_their_one_meaning(name, want):
    assert gp.dtype(name) is gp.dtype(want)


@pytest.mark.parametrize("name, numpy_reads", [("longdouble", "float128"), ("clongdouble", "complex256"),
                                               ("S", "|S0"), ("datetime64", "datetime64")])
def test_a_numpy_dtype_gpupromote_lacks_is_refused_naming_it(name, numpy_reads):
    if np.dtype(name).str != np.dtype(numpy_reads).str:
        pytest.skip(f"np.dtype({name!r}) is {np.dtype(name)} on this platform")
    with pytest.raises(TypeError, match=f"NumPy reads it as {numpy_reads}"):
        gp.dtype(name)
