"""No silent wrong answer at the engine's numeric edges.

    operands                 only numbers and numeric arrays; None, str, objects: TypeError
    numerics                 exact values at the edges (relu(-inf), sigmoid far out, x**0,
                             0**x, GELU of huge |x|, exp/log/tanh/abs/max/softmax at +-inf)
    0-d and tiny inputs      iteration, var(ddof=1) of one element, empty reductions

Shared memory: test_edges_mutation.py; buf[idx] = y: test_setitem.py; devices and bounds:
test_edges_devices.py.
"""
import decimal
import math
import warnings

import numpy as np
import pytest

import microtensor as mt


# ---------------------------------------------------------------------------- operands that are not numbers
BINARY = {'add': lambda a, b: a + b, 'radd': lambda a, b: b + a, 'sub': lambda a, b: a - b,
          'mul': lambda a, b: a * b, 'div': lambda a, b: b / a, 'pow': lambda a, b: a ** b,
          'matmul': lambda a, b: a @ b, 'lt': lambda a, b: a < b, 'mt.add': mt.add, 'mt.maximum': mt.maximum,
          'where': lambda a, b: mt.where(a > 0, a, b), 'masked_fill': lambda a, b: a.masked_fill(a > 0, b),
          'setitem': lambda a, b: a.__setitem__(0, b), 'clip': lambda a, b: a.clip(b),
          'fill_': lambda a, b: a.fill_(b), 'copy_': lambda a, b: a.copy_(b)}
NOT_NUMBERS = {'None': None, 'str': 'a', 'numeric str': '1.5', 'bytes': b'1', 'dict': {}, 'object': object(),
               'object array': np.array([None, 1.0]), 'str array': np.array(['1', '2']), 'list of None': [None, 1.0],
               'complex': 1j}


@pytest.mark.parametrize('value', NOT_NUMBERS)
@pytest.mark.parametrize('op', BINARY)
def test_an_operand_that_is_not_a_number_is_a_type_error_naming_the_op_and_type(op, value):
    if op == 'clip' and value == 'None':
        pytest.skip("clip(None) is clip with neither bound: a RuntimeError, as in PyTorch (test_stored_values.py)")
    x = mt.tensor(np.array([1.0, -2.0]))
    bad = NOT_NUMBERS[value]
    with pytest.raises(TypeError) as error:
        BINARY[op](x, bad)
    message = str(error.value)
    assert message.startswith({'radd': 'add'}.get(op, op.removeprefix('mt.')) + ':'), message
    assert type(bad).__name__ in message or str(np.asarray(bad).dtype) in message or 'real number' in message


def test_equality_with_a_non_number_is_false_as_for_any_object():
    x = mt.tensor([1.0])
    assert (x == None) is False and (x != 'a') is True  # noqa: E711


@pytest.mark.parametrize('data', [None, ['a'], np.array([None]), 'a', {1: 2}, {1}, 1 + 2j, 2 ** 70, [1, None],
                                  np.array([1 + 1j])])
def test_tensors_of_non_numbers_are_refused_at_construction(data):
    with pytest.raises(TypeError, match="tensor: "):
        mt.tensor(data)


def test_ragged_lists_and_bad_dtypes_name_the_function():
    with pytest.raises(ValueError, match="tensor: cannot make a tensor from list"):
        mt.tensor([[1.0], [2.0, 3.0]])
    with pytest.raises(TypeError, match="zeros: 'float65' is not a dtype"):
        mt.zeros(2, dtype='float65')
    with pytest.raises(TypeError, match="tensor: a tensor holds numbers .* not <U1"):
        mt.tensor([1.0], dtype='U1')


# ---------------------------------------------------------------------------- numerics at the edges
decimal.getcontext().prec = 50
D = decimal.Decimal


def _sigmoid_exact(x):
    return 1 / (1 + (-D(x)).exp())


@pytest.mark.parametrize('dtype, rtol', [('float32', 2e-7), ('float64', 4e-16)])
@pytest.mark.parametrize('x', [-745.0, -100.0, -40.0, -20.0, -1.5, 0.0, 1e-8, 3.0, 20.0, 40.0, 100.0])
def test_sigmoid_is_accurate_far_out_in_both_dtypes(x, dtype, rtol):
    t = mt.tensor(x, dtype=dtype, requires_grad=True)
    y = t.sigmoid()
    exact = _sigmoid_exact(x)
    tiny = np.finfo(dtype).tiny
    if exact > tiny:
        assert abs(D(float(y.item())) - exact) <= D(rtol) * exact
        assert math.isfinite(t.sigmoid().log().item())
    y.backward()
    e = (-abs(D(x))).exp()
    slope = e / (1 + e) ** 2  # sigmoid'(x) = sigmoid(x) sigmoid(-x), without cancellation
    if slope > tiny:
        assert abs(D(float(t.grad.item())) - slope) <= D(4 * rtol) * slope


def test_log_sigmoid_of_minus_20_is_finite_and_right():
    y = mt.tensor(-20.0, dtype='float64').sigmoid().log().item()
    exact = -(1 + D(20).exp()).ln()
    assert abs(D(y) - exact) < D('1e-14')


def test_relu_of_minus_inf_is_zero_with_a_zero_gradient():
    x = mt.tensor(np.array([-np.inf, -1.0, 0.0, 2.0, np.inf]), requires_grad=True)
    y = x.relu()
    assert y.tolist() == [0.0, 0.0, 0.0, 2.0, np.inf]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert np.isnan(mt.tensor([np.nan]).relu().item())  # NaN stays NaN (as in PyTorch)


def test_pow_gradients_at_zero_follow_pytorch():
    """d/dx x**0 = 0 everywhere (also at 0); d/dx 0**x = 0 for x >= 0; elsewhere the exact formula."""
    x = mt.tensor(np.array([0.0, 2.0, -3.0]), requires_grad=True)
    (x ** 0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    e = mt.tensor(np.array([0.0, 0.5, 2.0]), requires_grad=True)
    (mt.tensor(0.0, dtype='float64') ** e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0, 0.0]
    a = mt.tensor(np.array([0.0, 0.0, 4.0]), requires_grad=True)
    b = mt.tensor(np.array([1.0, 2.0, 0.5]), requires_grad=True)
    (a ** b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 0.25]  # b a^(b-1): 0^0 = 1, 2 * 0, 0.5 / sqrt(4)
    assert b.grad.tolist()[:2] == [0.0, 0.0] and b.grad.tolist()[2] == float(D(2) * D(4).ln())
    assert mt.gradgradcheck(lambda a, b: a ** b, [mt.tensor(np.array([1.0]), requires_grad=True),
                                                  mt.tensor(np.array([0.0]), requires_grad=True)])


@pytest.mark.parametrize('approximate', ['tanh', 'none'])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_gelu_at_huge_and_infinite_inputs(approximate, dtype):
    big = float(np.finfo(dtype).max) / 10
    x = mt.tensor(np.array([-np.inf, -big, -1e6, 1e6, big, np.inf]), dtype=dtype, requires_grad=True)
    with np.errstate(over='ignore'):  # x^3 in the tanh form's forward overflows to inf (and tanh(inf) = 1)
        y, again = x.gelu(approximate), x.gelu(approximate)
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # the slopes compute at x clipped to +-100: not even a warning
        y.sum().backward()
        slope2 = mt.grad(again.sum(), x, create_graph=True)[0]
        (slope2.sum()).backward()
    assert y.tolist()[:3] == [0.0, 0.0, 0.0] and y.tolist()[3:] == x.tolist()[3:]
    assert x.grad is not None and np.all(np.isfinite(x.grad.numpy()))
    assert slope2.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize('approximate', ['tanh', 'none'])
def test_gelu_value_and_slope_against_a_high_precision_reference(approximate):
    """gelu(x) = x Phi(x) (erf) or 0.5 x (1 + tanh(u)); checked with 50-digit decimals at x = +-3."""
    two = D(2)
    sqrt_2_pi = (two / D(math.pi)).sqrt()
    for x in (D(-3), D(3)):
        if approximate == 'none':
            value = x * (1 + D(math.erf(float(x / two.sqrt())))) / 2
        else:
            u = sqrt_2_pi * (x + D('0.044715') * x ** 3)
            value = x * (1 + ((2 * u).exp() - 1) / ((2 * u).exp() + 1)) / 2
        y = mt.tensor(float(x), dtype='float64').gelu(approximate).item()
        assert abs(D(y) - value) < D('1e-15')


@pytest.mark.filterwarnings('ignore::RuntimeWarning')  # numpy's, for inf arithmetic: inf - inf in the sums


@pytest.mark.parametrize('case', ['exp', 'log', 'tanh', 'abs', 'max', 'softmax', 'log_softmax', 'cross_entropy'])
def test_other_ops_at_infinity(case):
    inf = np.inf
    if case == 'exp':
        x = mt.tensor(np.array([-inf, 0.0, 800.0]), requires_grad=True)
        y = x.exp()
        assert y.tolist() == [0.0, 1.0, inf]
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 1.0, inf]
    elif case == 'log':
        x = mt.tensor(np.array([0.0, 1.0, inf]), requires_grad=True)
        assert x.log().tolist() == [-inf, 0.0, inf]
        x.log().sum().backward()
        assert x.grad.tolist() == [inf, 1.0, 0.0]  # 1/x
    elif case == 'tanh':
        x = mt.tensor(np.array([-inf, inf, 1e300]), requires_grad=True)
        y = x.tanh()
        assert y.tolist() == [-1.0, 1.0, 1.0]
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]
    elif case == 'abs':
        x = mt.tensor(np.array([-inf, inf]), requires_grad=True)
        x.abs().sum().backward()
        assert x.grad.tolist() == [-1.0, 1.0]
    elif case == 'max':
        x = mt.tensor(np.array([[-inf, -inf], [1.0, inf]]), requires_grad=True)
        y = x.amax(dim=1)  # values only; ties share the gradient
        assert y.tolist() == [-inf, inf]
        y.sum().backward()
        assert x.grad.tolist() == [[0.5, 0.5], [0.0, 1.0]]
    elif case in ('softmax', 'log_softmax'):
        x = mt.tensor(np.array([[-inf, 0.0, 1e300], [-inf, 0.0, -1e300]]), requires_grad=True)
        y = getattr(mt, case)(x)
        expected = [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]] if case == 'softmax' else [[-inf, -1e300, 0.0], [-inf, 0.0, -1e300]]
        assert y.tolist() == expected
        (y if case == 'softmax' else y[:, 1:]).sum().backward()
        assert np.all(np.isfinite(x.grad.numpy()))
    else:
        logits = mt.tensor(np.array([[1e4, 0.0, -1e4], [-inf, 0.0, 0.0]]), requires_grad=True)
        loss = mt.cross_entropy(logits, [0, 1])
        assert loss.item() == pytest.approx(math.log(2) / 2)
        loss.backward()
        assert np.all(np.isfinite(logits.grad.numpy()))


# ---------------------------------------------------------------------------- 0-d and tiny inputs


@pytest.mark.parametrize('use', ['list', 'sum', 'for', 'len', 'unpack'])
def test_a_0d_tensor_cannot_be_iterated(use):
    x = mt.tensor(5.0)
    call = {'list': list, 'sum': sum, 'for': lambda t: [v for v in t], 'len': len, 'unpack': lambda t: (lambda a: a)(*t)}
    with pytest.raises(TypeError, match="0-d tensor"):
        call[use](x)


def test_iterating_a_tensor_gives_its_rows_in_the_graph():
    x = mt.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    sum(rows).sum().backward()
    assert x.grad.tolist() == [[1, 1], [1, 1], [1, 1]]


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')  # the gradient's 0 * inf, as numpy's x / 0


def test_var_with_no_degrees_of_freedom_follows_numpy():
    x = mt.tensor(np.array([3.0]), requires_grad=True)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        y = x.var(ddof=1)
        expected = np.var(np.array([3.0]), ddof=1)
    assert np.isnan(y.item()) and np.isnan(expected)
    y.backward()  # before: ZeroDivisionError inside backward
    assert np.isnan(x.grad.item())
    x2 = mt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.warns(RuntimeWarning):
        x2.var(ddof=2).backward()
    assert x2.grad.tolist() == [-np.inf, np.inf]  # 2 (x - mean) / 0


@pytest.mark.parametrize('call, error, pattern', [
    (lambda: mt.tensor(5.0).amax(dim=1), IndexError, "Max: .*axis 1 is out of range .*0-d tensor has no axes"),
    (lambda: mt.tensor(5.0).max(dim=1), IndexError, "max: axis 1 is out of range .*0-d tensor has no axes"),
    (lambda: mt.tensor(5.0).sum(axis=-2), IndexError, "Sum: .*0-d tensor has no axes"),
    (lambda: mt.tensor(5.0).mean(axis=1), IndexError, "mean: axis 1"),
    (lambda: mt.tensor(5.0).softmax(dim=1), IndexError, "Softmax: .*0-d tensor has no axes"),  # (dim 0 or -1: 1, as PyTorch)
    (lambda: mt.tensor(5.0).argmax(dim=1), IndexError, "argmax: axis 1"),
    (lambda: mt.cross_entropy(mt.tensor(5.0), 0), ValueError, "cross_entropy: logits must have a class axis"),
    (lambda: mt.concatenate([mt.tensor(1.0), mt.tensor(2.0)]), ValueError, "concatenate: 0-d tensors"),
    (lambda: mt.layer_norm(mt.tensor(1.0), 1, mt.ones(1), mt.zeros(1)), ValueError, "layer_norm: x must have a last axis"),
    (lambda: mt.zeros(0, 3).max(), ValueError, "max: a tensor of shape \\(0, 3\\) has no element"),
    (lambda: mt.zeros(0, 3).amax(), ValueError, "Max: .*empty axis"),
    (lambda: mt.zeros(0).argmax(), IndexError, "argmax: .*no entry"),  # PyTorch's class
    (lambda: mt.tensor(5.0)[0], IndexError, "GetItem: .*too many indices"),
    (lambda: mt.tensor([1.0]).reshape(-2), ValueError, "reshape: shape \\(-2,\\)"),
])
def test_0d_and_empty_inputs_to_ops_that_need_an_axis_or_an_element(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_empty_and_0d_inputs_where_numpy_has_an_answer():
    assert np.isnan(mt.zeros(0).mean().item())
    assert mt.zeros(0, 3).sum(axis=0).tolist() == [0.0, 0.0, 0.0]
    x = mt.tensor(2.0, requires_grad=True)
    (mt.stack([x, x]) * x).sum().backward()  # 0-d tensors stack into a vector
    assert x.grad.item() == 8.0
    assert mt.tensor(5.0).sum(dim=0).item() == 5.0  # dim 0 or -1 of a 0-d tensor, as in PyTorch
    assert mt.tensor(5.0).reshape(1, 1).shape == (1, 1)


@pytest.mark.parametrize('op', ['sum', 'mean', 'var', 'max', 'min', 'argmax', 'argmin', 'softmax', 'log_softmax',
                                'squeeze', 'expand_dims', 'swapaxes', 'split', 'concatenate', 'stack', 'transpose'])
def test_numpy_integers_work_as_axes_everywhere(op):
    x = mt.tensor(np.arange(6.0).reshape(2, 3, 1))
    calls = {
        'sum': lambda a: x.sum(axis=a), 'mean': lambda a: x.mean(axis=a), 'var': lambda a: x.var(axis=a),
        'max': lambda a: x.max(axis=a).values, 'min': lambda a: x.min(dim=a).values,
        'argmax': lambda a: x.argmax(axis=a),
        'argmin': lambda a: x.argmin(axis=a), 'softmax': lambda a: x.softmax(axis=a),
        'log_softmax': lambda a: x.log_softmax(axis=a), 'squeeze': lambda a: x.expand_dims(1).squeeze(a),
        'expand_dims': lambda a: x.expand_dims(a), 'swapaxes': lambda a: x.swapaxes(a, 0),
        'split': lambda a: mt.split(x, 1, axis=a), 'concatenate': lambda a: mt.concatenate([x, x], axis=a),
        'stack': lambda a: mt.stack([x, x], axis=a), 'transpose': lambda a: x.transpose(a, 0, 2)}
    with_python_int, with_numpy_int = calls[op](1), calls[op](np.int64(1))
    if isinstance(with_python_int, tuple):
        with_python_int, with_numpy_int = with_python_int[0], with_numpy_int[0]
    np.testing.assert_array_equal(with_numpy_int.numpy(), with_python_int.numpy())
    for bad, error in [(1.0, TypeError), ('1', TypeError), (True, TypeError), (9, IndexError)]:
        with pytest.raises(error, match="axis"):
            calls[op](bad)
