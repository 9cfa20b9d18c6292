"""Numbers an op stores, adds up or is bounded by, taken as PyTorch takes them.

    pad's and scatter's value   stored by fill_'s rule (promotion.fit): a number that does not fit
                                the dtype is refused, naming the op and the number; -1 into uint8
                                is 255 where PyTorch wraps it (scatter), refused where it refuses (pad)
    pad's cuts                  the cuts come first: they may leave 0 elements of an axis, not fewer
    cumsum, cumprod             float16 adds up in float32, float32 in float64 on the CPU, forward
                                and backward, and the result comes back in the input's dtype
    clip                        with neither bound it is refused
    gather, scatter             an index or src that does not fit x's shape is a ShapeError

Each case states its expected values (the default run has no torch); where torch is installed,
the same cases are run through PyTorch to show that the expected values are its own.
"""
import math
import re

import numpy as np
import pytest

import microtensor as mt
from microtensor import promotion


def _torch():
    return pytest.importorskip('torch', reason='PyTorch is the reference for these values')


# ---------------------------------------------------------------------------- a number stored as an element
STORED = {  # (op, dtype of x, the number): the element stored, or None where the op refuses the number
    ('pad', 'uint8', 255): 255,
    ('pad', 'uint8', 2.7): 2,
    ('pad', 'uint8', 300): None,
    ('pad', 'uint8', -1): None,
    ('pad', 'float16', 1e5): None,
    ('pad', 'float16', math.inf): math.inf,
    ('pad', 'int64', math.nan): None,
    ('scatter', 'uint8', -1): 255,
    ('scatter', 'uint8', -255): 1,
    ('scatter', 'uint8', 300): None,
    ('scatter', 'uint8', -256): None,
    ('scatter', 'int64', 1e20): None,
    ('scatter', 'int64', math.nan): None,
    ('scatter', 'float16', 1e5): None,
    ('scatter', 'float16', 65504.0): 65504.0,
    ('scatter_add', 'uint8', 2): 2,
    ('scatter_add', 'uint8', 300): None,
}
OURS = {  # the element the number lands on, in a copy of x = zeros(2)
    'pad': lambda x, v: mt.pad(x, (1, 0), value=v)[0],
    'scatter': lambda x, v: x.scatter(0, mt.tensor([0]), v)[0],
    'scatter_add': lambda x, v: x.scatter_add(0, mt.tensor([0]), v)[0],
}


def theirs(op, x, value):
    torch = _torch()
    if op == 'pad':
        return torch.nn.functional.pad(x, (1, 0), value=value)[0]
    if op == 'scatter':
        return x.scatter(0, torch.tensor([0]), value)[0]
    return x.scatter_add(0, torch.tensor([0]), torch.full((1,), value, dtype=x.dtype))[0]  # (a tensor: no number)


@pytest.mark.parametrize('op, dtype, value', STORED)
def test_a_stored_number_must_fit_the_dtype(op, dtype, value):
    expected = STORED[op, dtype, value]
    x = mt.zeros(2, dtype=dtype)
    if expected is None:
        with pytest.raises(RuntimeError, match=f"^{op}: the value {re.escape(repr(value))} "):
            OURS[op](x, value)
    else:
        stored = OURS[op](x, value)
        assert stored.dtype == dtype and stored.item() == expected


@pytest.mark.parametrize('op, dtype, value', STORED)
def test_the_stored_numbers_are_pytorchs(op, dtype, value):
    torch = _torch()
    try:
        stored = theirs(op, torch.zeros(2, dtype=getattr(torch, dtype)), value).item()
    except RuntimeError:
        stored = None
    assert stored == STORED[op, dtype, value]


# ---------------------------------------------------------------------------- pad's cuts
CUTS = {  # widths on the axis of x = [1, 2]: the result, or None where the cuts leave fewer than 0 elements
    (0, -2): [],
    (-2, 0): [],
    (-1, -1): [],
    (1, -2): [0.0],
    (-1, 1): [2.0, 0.0],
    (1, -3): None,
    (-2, -1): None,
    (-3, 3): None,
}


@pytest.mark.parametrize('widths', CUTS)
def test_pad_cuts_may_leave_nothing_but_not_less(widths):
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    expected = CUTS[widths]
    if expected is None:
        cut = -min(widths[0], 0) - min(widths[1], 0)
        with pytest.raises(mt.ShapeError, match=rf"^pad: widths \({widths[0]}, {widths[1]}\) on axis 0 of size 2 "
                                                rf"leave a negative size: they cut {cut} elements .* cut at most 2"):
            mt.pad(x, widths)
        return
    y = mt.pad(x, widths)
    assert y.tolist() == expected
    y.sum().backward()
    kept = list(range(max(-widths[0], 0), 2 - max(-widths[1], 0)))
    assert x.grad.tolist() == [1.0 if i in kept else 0.0 for i in range(2)]


def test_pad_names_the_axis_whose_cut_is_too_long():
    with pytest.raises(RuntimeError, match=r"pad: widths \(-3, 1\) on axis 0 of size 2 leave a negative size"):
        mt.pad(mt.zeros(2, 3), (0, 0, -3, 1))
    assert mt.pad(mt.zeros(2, 3), (0, 0, -2, 1)).shape == (1, 3)


@pytest.mark.parametrize('widths', CUTS)
def test_pad_cuts_are_pytorchs(widths):
    torch = _torch()
    try:
        result = torch.nn.functional.pad(torch.tensor([1.0, 2.0]), widths).tolist()
    except RuntimeError:
        result = None
    assert result == CUTS[widths]


# ---------------------------------------------------------------------------- cumsum and cumprod accumulate wide
@pytest.mark.parametrize('dtype, device, wide', [
    ('float16', 'cpu', 'float32'), ('float32', 'cpu', 'float64'), ('float64', 'cpu', 'float64'),
    ('float16', 'cuda', 'float32'), ('float32', 'cuda', 'float32'), ('int64', 'cpu', 'int64'),
])
def test_scans_accumulate_in_pytorchs_dtype_on_each_device(dtype, device, wide):
    assert promotion.scan_dtype(np.dtype(dtype), device) == np.dtype(wide)


def test_float16_cumsum_adds_up_in_float32_forward_and_backward(device):
    x = mt.tensor(np.ones(3000, np.float16), device=device, requires_grad=True)
    y = x.cumsum(0)
    y.backward(mt.ones(3000, dtype='float16', device=device))
    assert y.dtype == x.grad.dtype == mt.float16
    np.testing.assert_array_equal(y.numpy(), np.arange(1, 3001).astype(np.float16))  # float16 adding stops at 2048
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(3000, 0, -1).astype(np.float16))


def test_float32_cumsum_adds_up_in_float64_on_the_cpu_forward_and_backward():
    tenths = np.full(20000, 0.1, np.float32)
    x = mt.tensor(tenths, requires_grad=True)
    y = x.cumsum(0)
    y.backward(mt.tensor(tenths))
    assert y.dtype == x.grad.dtype == mt.float32
    assert y[-1].item() == 2000.0 and x.grad[0].item() == 2000.0  # float32 adding ends at 1999.6588
    np.testing.assert_array_equal(y.numpy(), np.cumsum(tenths, dtype=np.float64).astype(np.float32))


def test_float32_cumsum_is_pytorchs_on_the_cpu():
    torch = _torch()
    tenths = np.full(20000, 0.1, np.float32)
    x, t = mt.tensor(tenths, requires_grad=True), torch.tensor(tenths, requires_grad=True)
    x.cumsum(0).backward(mt.tensor(tenths))
    t.cumsum(0).backward(torch.from_numpy(tenths))
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(x.cumsum(0).numpy(), t.cumsum(0).detach().numpy(), rtol=eps)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=eps)


def _float16_product(n):
    """x = n float16 copies of 1.001, and in float64 its cumprod and the gradient of cumprod(x).sum():
    dL/dx_i = sum_{j >= i} c^j (the product up to j, with one factor c left out)."""
    x = np.full(n, 1.001, np.float16)
    powers = x.astype(np.float64)[0] ** np.arange(n + 1)
    return x, powers[1:], powers[:-1][::-1].cumsum()[::-1]


def test_float16_cumprod_multiplies_in_float32_forward_and_backward(device):
    a, product, gradient = _float16_product(300)
    x = mt.tensor(a, device=device, requires_grad=True)
    y = x.cumprod(0)
    y.backward(mt.ones(300, dtype='float16', device=device))
    assert y.dtype == x.grad.dtype == mt.float16
    half_ulp = 2.0 ** -11  # float16 multiplying drifts 4% off over these 300 factors
    np.testing.assert_allclose(y.numpy().astype(np.float64), product, rtol=half_ulp * 1.1)
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), gradient, rtol=half_ulp * 1.1)


def test_float16_cumprod_is_pytorchs():
    torch = _torch()
    a, _, _ = _float16_product(300)
    x, t = mt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x.cumprod(0), t.cumprod(0)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    y.backward(mt.ones(300, dtype='float16'))
    ty.backward(torch.ones(300, dtype=torch.float16))
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), t.grad.numpy().astype(np.float64), rtol=2e-3)


# ---------------------------------------------------------------------------- clip needs a bound
NO_BOUND = {  # each as microtensor's (L = mt) and as PyTorch's (L = torch) spelling
    'x.clip()': lambda L, x: x.clip(),
    'x.clip(None, None)': lambda L, x: x.clip(None, None),
    'x.clamp()': lambda L, x: x.clamp(),
    'x.clamp_()': lambda L, x: x.clamp_(),
    'L.clip(x)': lambda L, x: L.clip(x),
}


@pytest.mark.parametrize('call', NO_BOUND)
def test_clip_with_neither_bound_is_refused(call):
    x = mt.tensor([-2.0, 0.5, 3.0])
    with pytest.raises(RuntimeError, match=r"^clip: at least one of min and max must be given, .* x\.clone\(\)"):
        NO_BOUND[call](mt, x)
    assert x.tolist() == [-2.0, 0.5, 3.0]


@pytest.mark.parametrize('call', NO_BOUND)
def test_pytorch_refuses_clip_with_neither_bound_by_the_same_class(call):
    torch = _torch()
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        NO_BOUND[call](torch, torch.tensor([-2.0, 0.5, 3.0]))


# ---------------------------------------------------------------------------- shapes of gather and scatter
MISFITS = {  # x = zeros(2, 3): an index or src that does not fit
    'gather, an index of fewer axes': lambda L, x: x.gather(1, L.tensor([0, 1])),
    'gather, an index longer than x off dim': lambda L, x: x.gather(1, L.tensor([[0], [1], [2]])),
    'scatter, an index of more axes': lambda L, x: x.scatter(1, L.tensor([[[0]]]), 0.0),
    'scatter, src smaller than the index': lambda L, x: x.scatter(1, L.tensor([[0, 1]]), L.zeros(1, 1)),
    'scatter_add, src smaller than the index': lambda L, x: x.scatter_add(1, L.tensor([[0, 1]]), L.zeros(1, 1)),
}


@pytest.mark.parametrize('case', MISFITS)
def test_gather_and_scatter_shapes_that_do_not_fit_are_a_shape_error(case):
    op = case.split(',')[0]
    with pytest.raises(mt.ShapeError, match=rf"^{op}: .*\(2, 3\)|^{op}: src of shape \(1, 1\) .* index \(1, 2\)"):
        MISFITS[case](mt, mt.zeros(2, 3))


@pytest.mark.parametrize('case', MISFITS)
def test_pytorch_refuses_the_same_shapes_with_a_runtime_error(case):
    torch = _torch()
    with pytest.raises(RuntimeError):
        MISFITS[case](torch, torch.zeros(2, 3))
