"""gp.asarray of a foreign array adopts it through DLPack (no copy), as the ops do: dtypes NumPy's
own conversion cannot read (a torch bfloat16 tensor: torch raises "Got unsupported ScalarType
BFloat16") come in by their bit patterns."""
import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype, name", [(torch.bfloat16, "bfloat16"), (torch.float8_e4m3fn, "float8_e4m3fn"),
                                         (torch.float32, "float32"), (torch.int16, "int16")])
def test_asarray_of_a_torch_tensor_keeps_its_dtype_and_memory(dtype, name):
    t = torch.arange(5, dtype=torch.float32).to(dtype)
    x = gp.asarray(t)
    assert isinstance(x, gp.Array) and x.dtype is gp.dtype(name)
    assert x.storage.ctypes.data == t.data_ptr()   # a view, not a copy
    assert np.array_equal(x.numpy().astype(np.float32), np.arange(5, dtype=np.float32))


def test_asarray_of_a_bfloat16_tensor_with_a_dtype_and_a_copy():
    t = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    x = gp.asarray(t, dtype="float32", copy=True)
    assert x.dtype is gp.float32 and x.numpy().tolist() == [1.5, -2.25, 3.0]
    y = gp.asarray(t, copy=True)
    assert y.dtype is gp.bfloat16 and y.storage.ctypes.data != t.data_ptr()
    assert y.numpy().dtype == ml_dtypes.bfloat16


def test_the_adopted_tensor_computes_as_the_op_would():
    t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    assert gp.multiply(gp.asarray(t), 3, policy="torch").dtype is gp.bfloat16


def test_a_tensor_that_requires_grad_is_refused_with_torchs_reason():
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(Exception, match="(?i)grad"):
        gp.asarray(t)
