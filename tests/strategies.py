"""hypothesis strategies shared by the tests: shapes, broadcastable pairs, float64 data."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


@st.composite
def broadcastable_shapes(draw, min_dims=0):
    """A pair of shapes numpy can broadcast together: (a_shape, b_shape)."""
    a, b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=min_dims, max_dims=3, max_side=4)).input_shapes
    return a, b


@st.composite
def arrays(draw, shape, low=-3.0, high=3.0):
    """float64 values, moderate so finite differences stay accurate."""
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False, allow_infinity=False)))


@st.composite
def tensors(draw, shape=None, low=-3.0, high=3.0, device='cpu', transposed=None):
    """A float64 leaf tensor requiring grad; sometimes built from a transposed
    (non-contiguous) array, to check ops do not assume C order."""
    shape = draw(shapes) if shape is None else shape
    transposed = draw(st.booleans()) if transposed is None else transposed
    if transposed and len(shape) >= 2:
        data = draw(arrays(shape[::-1], low, high)).T
    else:
        data = draw(arrays(shape, low, high))
    return mt.tensor(data, device=device, requires_grad=True)
