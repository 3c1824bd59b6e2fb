"""The type converter and its numpy views: one mapping, one set of limits."""

from __future__ import annotations

import numpy as np
import pytest

from no64.ir.types import (
    F32_MAX,
    F64_MAX,
    I32,
    I64,
    NARROWED_DTYPE_NAMES,
    NARROWED_DTYPES,
    U32,
    U64,
    TypeConverter,
    is_64bit_element,
    is_int64_tensor,
)
from support import ir, make_context

#: numpy dtype name -> MLIR element type, for the types the mapping names.
_MLIR = {
    "int64": "i64",
    "int32": "i32",
    "uint64": "ui64",
    "uint32": "ui32",
    "float64": "f64",
    "float32": "f32",
    "complex128": "complex<f64>",
    "complex64": "complex<f32>",
}


def test_the_numpy_views_are_the_converters_mapping() -> None:
    with make_context(), ir.Location.unknown():
        conv = TypeConverter()
        wide = {str(t) for t in map(ir.Type.parse, _MLIR.values()) if is_64bit_element(t)}
        assert wide == {_MLIR[name] for name in NARROWED_DTYPE_NAMES}
        for name, narrow in NARROWED_DTYPE_NAMES.items():
            t = ir.RankedTensorType.get([3], ir.Type.parse(_MLIR[name]))
            assert str(conv.convert(t)) == f"tensor<3x{_MLIR[narrow]}>"
    assert {str(k): str(v) for k, v in NARROWED_DTYPES.items()} == dict(NARROWED_DTYPE_NAMES)
    for wide_dt, narrow_dt in NARROWED_DTYPES.items():
        assert wide_dt.itemsize == 2 * narrow_dt.itemsize and wide_dt.kind == narrow_dt.kind


def test_the_limits() -> None:
    assert (I32.min, I32.max, U32.max) == (-(2**31), 2**31 - 1, 2**32 - 1)
    assert (I64.min, I64.max, U64.max) == (-(2**63), 2**63 - 1, 2**64 - 1)
    assert F32_MAX == float(np.float32(3.4028234663852886e38)) and np.isinf(np.float32(F32_MAX) * 2)
    assert F64_MAX == np.finfo(np.float64).max


@pytest.mark.parametrize(
    "text, expected",
    [
        ("tensor<4xi64>", True),
        ("tensor<ui64>", True),
        ("tensor<2x3xsi64>", True),
        ("tensor<4xi32>", False),
        ("tensor<4xf64>", False),
        ("i64", False),
        ("tensor<*xi64>", False),
    ],
)
def test_is_int64_tensor(text: str, expected: bool) -> None:
    with make_context():
        assert is_int64_tensor(ir.Type.parse(text)) is expected
