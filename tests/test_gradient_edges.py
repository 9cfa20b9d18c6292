"""Gradients and errors at the edges, as PyTorch gives them.

    max / min         over every element: ties and NaNs share the gradient; amax keeps NaN; max(dim) picks one
    powers at 0       x**c: no 0 * inf in the derivative, to second order
    bool add          mask.add(other, alpha=2) stays bool; bool subtraction is refused first
    cross_entropy     class weights summing to 0: a NaN gradient, as the NaN value
    gradient dtype    backward(gradient) and mt.grad(grad_outputs) cast it to the output's dtype
    shapes            a wrong shape raises mt.ShapeError (a RuntimeError), or IndexError where PyTorch does
    devices           targets, weights, masks and conditions on another device: an error naming both
"""
import math

import numpy as np
import pytest

import microtensor as mt
from tests.test_edges_devices import fake_gpu  # noqa: F401  (the fixture: numpy arrays the backend calls 'cuda')
from transformer.attention import KVCache, MultiHeadAttention, scaled_dot_product_attention

nan, inf = math.nan, math.inf


def torch_or_skip():
    return pytest.importorskip('torch', reason='PyTorch (the reference) is not installed')


def torch_grad(torch, f, array):
    """d(f(x).sum())/dx of PyTorch, float64."""
    x = torch.tensor(array, dtype=torch.float64, requires_grad=True)
    f(x).sum().backward()
    return x.grad.numpy()


def our_grad(f, array):
    x = mt.tensor(array, dtype='float64', requires_grad=True)
    f(x).sum().backward()
    return x.grad.numpy()


# ---------------------------------------------------------------------------- max and min
ALL_ELEMENTS = [  # (x, the gradient of x.max() as PyTorch gives it)
    ([1.0, nan, 3.0], [0, 1, 0]),                           # the NaN is the max: all of the gradient
    ([1.0, nan, 3.0, nan], [0, 0.5, 0, 0.5]),               # two NaNs share it
    ([1.0, 3.0, 3.0], [0, 0.5, 0.5]),                       # ties share it
    ([[1.0, 2.0], [inf, nan]], [[0, 0], [0, 1]]),           # NaN beats inf
    ([[nan, nan], [nan, nan]], [[0.25, 0.25], [0.25, 0.25]]),
]


@pytest.mark.parametrize('op', ['max', 'min'])
@pytest.mark.parametrize('x, expected', ALL_ELEMENTS)
def test_max_over_every_element_gives_the_gradient_to_the_nans_and_ties(op, x, expected):
    if op == 'min':
        x = [[-v for v in row] if isinstance(row, list) else -row for row in x]
    np.testing.assert_array_equal(our_grad(lambda t: getattr(t, op)(), x), expected)


@pytest.mark.parametrize('op', ['max', 'min', 'amax', 'amin'])
@pytest.mark.parametrize('x', [x for x, _ in ALL_ELEMENTS])
def test_max_over_every_element_as_pytorch(op, x):
    torch = torch_or_skip()
    np.testing.assert_array_equal(our_grad(lambda t: getattr(t, op)(), x),
                                  torch_grad(torch, lambda t: getattr(t, op)(), x))


ROWS = [[1.0, nan, 3.0, nan], [3.0, 1.0, 3.0, 2.0]]  # a row with NaNs, a row with a tie


def test_amax_keeps_nan_rows_nan_and_shares_ties():
    np.testing.assert_array_equal(our_grad(lambda t: t.amax(dim=1), ROWS), [[nan] * 4, [0.5, 0, 0.5, 0]])
    np.testing.assert_array_equal(our_grad(lambda t: t.amin(dim=1), ROWS), [[nan] * 4, [0, 1, 0, 0]])


def test_max_over_a_dim_gives_the_gradient_to_the_index_it_returns():
    values, indices = mt.tensor(ROWS).max(dim=1)
    assert indices.tolist() == [1, 0] and np.isnan(values.numpy()[0]) and values.numpy()[1] == 3
    np.testing.assert_array_equal(our_grad(lambda t: t.max(dim=1).values, ROWS), [[0, 1, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_array_equal(our_grad(lambda t: t.min(dim=1).values, ROWS), [[0, 1, 0, 0], [0, 1, 0, 0]])


@pytest.mark.parametrize('call', ['max(dim=1)', 'min(dim=1)', 'max(dim=0)', 'amax(dim=1)', 'amin(dim=0)',
                                  'amax(dim=(0, 1))', 'max()'])
def test_max_over_dims_with_nans_and_ties_as_pytorch(call):
    torch = torch_or_skip()

    def f(t):
        out = eval('t.' + call)
        return out[0] if isinstance(out, tuple) else out  # max(dim): the values
    np.testing.assert_array_equal(our_grad(f, ROWS), torch_grad(torch, f, ROWS))


# ---------------------------------------------------------------------------- powers at 0
POWERS = {  # c: (d/dx x**c, d2/dx2 x**c), at x = 0 and x = 2
    0: ([0, 0], [0, 0]),
    1: ([1, 1], [0, 0]),
    2: ([0, 4], [2, 2]),
    0.5: ([inf, 0.5 / math.sqrt(2)], [-inf, -0.25 * 2 ** -1.5]),
}


def derivatives(grad, x, f):
    """(df/dx, d2f/dx2) of f summed, by the library's grad with create_graph=True."""
    (g,) = grad(f(x).sum(), x, create_graph=True)
    (gg,) = grad(g.sum(), x)
    return g.detach().numpy(), gg.numpy()


@pytest.mark.parametrize('c', POWERS)
def test_first_and_second_derivatives_of_a_power_at_0(c):
    x = mt.tensor([0.0, 2.0], dtype='float64', requires_grad=True)
    g, gg = derivatives(mt.grad, x, lambda t: t ** c + t ** 2)  # (+ t**2: PyTorch's x**0 has no graph to grad)
    np.testing.assert_allclose(g, np.array(POWERS[c][0]) + [0, 4], rtol=1e-12)
    np.testing.assert_allclose(gg, np.array(POWERS[c][1]) + 2, rtol=1e-12)


def test_the_second_derivative_of_x_squared_plus_one_at_0_is_2():
    x = mt.tensor(0.0, dtype='float64', requires_grad=True)
    assert derivatives(mt.grad, x, lambda t: t ** 2 + t ** 0) == (0.0, 2.0)


@pytest.mark.parametrize('c', POWERS)
def test_derivatives_of_a_power_at_0_as_pytorch(c):
    torch = torch_or_skip()
    f = lambda t: t ** c + t ** 2  # noqa: E731
    ours = derivatives(mt.grad, mt.tensor([0.0, 2.0], dtype='float64', requires_grad=True), f)
    theirs = derivatives(torch.autograd.grad, torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True), f)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ---------------------------------------------------------------------------- bool add
@pytest.mark.parametrize('alpha', [2, 0, -1, True, False, 1])
def test_bool_add_with_alpha_stays_bool(alpha):
    a, b = [True, False, False], [True, True, False]
    out = mt.tensor(a).add(mt.tensor(b), alpha=alpha)
    assert out.dtype == mt.bool_
    assert out.tolist() == [x or (bool(alpha) and y) for x, y in zip(a, b)]
    torch = torch_or_skip()
    theirs = torch.tensor(a).add(torch.tensor(b), alpha=alpha)
    assert theirs.dtype == torch.bool and theirs.tolist() == out.tolist()


def test_bool_add_of_a_number_with_alpha_follows_the_numbers_dtype():
    assert mt.add(mt.tensor([True, False]), True, alpha=2).tolist() == [True, True]
    out = mt.add(mt.tensor([True, False]), 3, alpha=2)
    assert out.dtype == mt.int64 and out.tolist() == [7, 6]


@pytest.mark.parametrize('alpha', [1, 2, 1.5, True])
def test_bool_subtraction_is_refused_before_alpha_is_looked_at(alpha):
    with pytest.raises(TypeError, match="sub: subtraction with a bool tensor is not defined"):
        mt.tensor([True]).sub(mt.tensor([True]), alpha=alpha)


def test_a_float_alpha_for_bools_is_refused():
    with pytest.raises(TypeError, match="add: alpha=1.5 does not fit operands of dtype bool"):
        mt.tensor([True]).add(mt.tensor([True]), alpha=1.5)


# ---------------------------------------------------------------------------- cross_entropy, weights summing to 0
LOGITS = [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]
ZERO_SUM = [  # (weight, targets (-100: ignored), the gradient of the mean)
    ([0.0, 0.0, 1.0], [0, 1], [[nan] * 3, [nan] * 3]),
    ([0.0, 0.0, 1.0], [0, -100], [[nan] * 3, [0.0] * 3]),  # the ignored row gets none
    (None, [-100, -100], [[0.0] * 3, [0.0] * 3]),  # every target ignored: nan, and no gradient
]


@pytest.mark.parametrize('smoothing', [0.0, 0.1])
@pytest.mark.parametrize('weight, targets, expected', ZERO_SUM)
def test_cross_entropy_with_weights_summing_to_0_has_a_nan_gradient(weight, targets, expected, smoothing):
    x = mt.tensor(LOGITS, dtype='float64', requires_grad=True)
    w = None if weight is None else mt.tensor(weight, dtype='float64')
    loss = mt.cross_entropy(x, mt.tensor(targets), weight=w, ignore_index=-100, label_smoothing=smoothing)
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)


@pytest.mark.parametrize('weight, picked', [([0.0, 0.0, 1.0], [nan, nan]), ([1.0, -1.0, 1.0], [-inf, inf])])
def test_nll_loss_with_weights_summing_to_0_divides_by_0_as_pytorch(weight, picked):
    """The gradient at (i, t_i) is -w_i / sum_i w_i: -0 / 0, -1 / 0, 1 / 0; 0 elsewhere."""
    logp = mt.tensor(LOGITS, dtype='float64', requires_grad=True)
    mt.nll_loss(logp, mt.tensor([0, 1]), weight=mt.tensor(weight, dtype='float64')).backward()
    np.testing.assert_array_equal(logp.grad.numpy(), [[picked[0], 0, 0], [0, picked[1], 0]])


@pytest.mark.parametrize('loss', ['cross_entropy', 'nll_loss'])
@pytest.mark.parametrize('weight, targets', [(w, t) for w, t, _ in ZERO_SUM] + [([1.0, -1.0, 1.0], [0, 1])])
def test_weights_summing_to_0_as_pytorch(loss, weight, targets):
    torch = torch_or_skip()
    w = None if weight is None else np.array(weight)

    def f(t, lib, as_tensor):
        return getattr(lib, loss)(t, as_tensor(targets), weight=None if w is None else as_tensor(w),
                                  ignore_index=-100)
    with np.errstate(all='ignore'):
        ours = our_grad(lambda t: f(t, mt, mt.tensor), LOGITS)
    theirs = torch_grad(torch, lambda t: f(t, torch.nn.functional, torch.tensor), LOGITS)
    np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------------------- the gradient's dtype
LAST_OPS = {'mul': lambda x: x * 2, 'exp': lambda x: x.exp(), 'tanh': lambda x: x.tanh(),
            'reshape': lambda x: x.reshape(2, 1), 'slice': lambda x: x[::1], 'relu': lambda x: x.relu()}
GRADIENT_DTYPES = ['float32', 'float16', 'int64', 'uint8', 'bool']


@pytest.mark.parametrize('through', ['backward', 'mt.grad'])
@pytest.mark.parametrize('dtype', GRADIENT_DTYPES)
@pytest.mark.parametrize('last', LAST_OPS)
def test_a_gradient_of_another_dtype_is_cast_to_the_outputs(last, dtype, through):
    x = mt.tensor([0.5, 2.0], dtype='float64', requires_grad=True)
    y = LAST_OPS[last](x)
    gradient = mt.ones(*y.shape, dtype=dtype)
    if through == 'backward':
        y.backward(gradient)
        got = x.grad
    else:
        got = mt.grad(y, x, grad_outputs=[gradient])[0]
    (expected,) = mt.grad(LAST_OPS[last](x), x, grad_outputs=mt.ones(*y.shape, dtype='float64'))
    assert got.dtype == mt.float64
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize('dtype', GRADIENT_DTYPES)
def test_a_gradient_of_another_dtype_as_pytorch(dtype):
    torch = torch_or_skip()
    x = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    (x * 2).backward(torch.ones(2, dtype=getattr(torch, dtype)))
    ours = mt.tensor([0.5, 2.0], dtype='float64', requires_grad=True)
    (ours * 2).backward(mt.ones(2, dtype=dtype))
    assert x.grad.dtype == torch.float64 and ours.grad.dtype == mt.float64
    np.testing.assert_array_equal(ours.grad.numpy(), x.grad.numpy())


def test_a_cast_gradient_that_requires_grad_still_gets_one():
    x = mt.tensor([1.0, 2.0], dtype='float64', requires_grad=True)
    v = mt.tensor([1.5, 2.5], requires_grad=True)  # float32
    (g,) = mt.grad(x * 3, x, grad_outputs=v, create_graph=True)
    assert g.dtype == mt.float64 and g.tolist() == [4.5, 7.5]
    (gv,) = mt.grad(g.sum(), v)
    assert gv.dtype == mt.float32 and gv.tolist() == [3.0, 3.0]


@pytest.mark.parametrize('through, name', [('backward', 'gradient'), ('mt.grad', r'grad_outputs\[0\]')])
def test_a_complex_gradient_is_refused_by_name(through, name):
    x = mt.tensor([1.0, 2.0], dtype='float64', requires_grad=True)
    g = np.ones(2, dtype=np.complex64)
    with pytest.raises(TypeError, match=f"{through}: the {name} must hold numbers.*complex64"):
        (x * 2).backward(g) if through == 'backward' else mt.grad(x * 2, x, grad_outputs=[g])


def test_pytorch_refuses_a_complex_gradient_for_a_real_output_too():
    torch = torch_or_skip()
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward(torch.ones(2, dtype=torch.complex64))


def test_a_gradient_of_another_shape_is_a_shape_error():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(mt.ShapeError, match=r"backward: gradient has shape \(3,\) but the output has shape \(2,\)"):
        (x * 2).backward(gradient=mt.ones(3))


# ---------------------------------------------------------------------------- shapes
def _filled_cache():
    cache = KVCache()
    MultiHeadAttention(8, 2)(mt.ones(1, 2, 8), cache=cache)
    return cache


def _mha(**kwargs):
    return MultiHeadAttention(8, 2)(mt.ones(2, 3, 8), **kwargs)


X = np.arange(6.0).reshape(2, 3)
# name: (our call on mt, the class we raise, PyTorch's call on torch or None, words our message holds)
SHAPE_CASES = {
    # ops/reduce.py: a dim out of range is an IndexError, as in PyTorch
    'sum dim': (lambda m: m.tensor(X).sum(2), IndexError, lambda t: t.tensor(X).sum(2), 'Sum'),
    'sum dim twice': (lambda m: m.tensor(X).sum((0, 0)), mt.ShapeError, lambda t: t.tensor(X).sum((0, 0)), 'twice'),
    'mean dim': (lambda m: m.tensor(X).mean(-3), IndexError, lambda t: t.tensor(X).mean(-3), 'mean'),
    'var dim': (lambda m: m.tensor(X).var(2), IndexError, lambda t: t.tensor(X).var(2), 'Var'),
    'std dim': (lambda m: m.tensor(X).std(2), IndexError, lambda t: t.tensor(X).std(2), 'Std'),
    'max dim': (lambda m: m.tensor(X).max(2), IndexError, lambda t: t.tensor(X).max(2), 'max'),
    'min dim': (lambda m: m.tensor(X).min(2), IndexError, lambda t: t.tensor(X).min(2), 'min'),
    'amax dim': (lambda m: m.tensor(X).amax(2), IndexError, lambda t: t.tensor(X).amax(2), 'Max'),
    'amin dim': (lambda m: m.tensor(X).amin(2), IndexError, lambda t: t.tensor(X).amin(2), 'Min'),
    'argmax dim': (lambda m: m.tensor(X).argmax(2), IndexError, lambda t: t.tensor(X).argmax(2), 'argmax'),
    'argmin dim': (lambda m: m.tensor(X).argmin(2), IndexError, lambda t: t.tensor(X).argmin(2), 'argmin'),
    'norm dim': (lambda m: m.tensor(X).norm(dim=2), IndexError, lambda t: t.tensor(X).norm(dim=2), 'norm'),
    'logsumexp dim': (lambda m: m.tensor(X).logsumexp(2), IndexError, lambda t: t.tensor(X).logsumexp(2),
                      'logsumexp'),
    'max empty': (lambda m: m.zeros(0, 3).max(), mt.ShapeError, lambda t: t.zeros(0, 3).max(), 'max'),
    'amax empty': (lambda m: m.zeros(0, 3).amax(), mt.ShapeError, lambda t: t.zeros(0, 3).amax(), 'Max'),
    'max empty dim': (lambda m: m.zeros(0, 3).max(0), IndexError, lambda t: t.zeros(0, 3).max(0), 'max'),
    'amin empty dim': (lambda m: m.zeros(0, 3).amin(0), IndexError, lambda t: t.zeros(0, 3).amin(0), 'Min'),
    'argmax empty': (lambda m: m.zeros(0, 3).argmax(), IndexError, lambda t: t.zeros(0, 3).argmax(), 'argmax'),
    'argmin empty dim': (lambda m: m.zeros(0, 3).argmin(0), IndexError, lambda t: t.zeros(0, 3).argmin(0),
                         'argmin'),
    'sum_to': (lambda m: m.tensor(X).sum_to((2,)), mt.ShapeError, lambda t: t.tensor(X).sum_to_size((2,)), 'sum_to'),
    'norm ord of 3-d': (lambda m: m.zeros(2, 2, 2).norm(ord=1), mt.ShapeError,
                        lambda t: t.linalg.norm(t.zeros(2, 2, 2), ord=1), 'norm'),
    # ops/elementwise.py: shapes that do not broadcast
    'add': (lambda m: m.tensor(X) + m.ones(4), mt.ShapeError, lambda t: t.tensor(X) + t.ones(4), 'Add'),
    'add alpha': (lambda m: m.tensor(X).add(m.ones(4), alpha=2), mt.ShapeError,
                  lambda t: t.tensor(X).add(t.ones(4), alpha=2), 'Add'),
    'sub': (lambda m: m.tensor(X).sub(m.ones(4), alpha=2), mt.ShapeError,
            lambda t: t.tensor(X).sub(t.ones(4), alpha=2), 'Sub'),
    'mul': (lambda m: m.tensor(X) * m.ones(4), mt.ShapeError, lambda t: t.tensor(X) * t.ones(4), 'Mul'),
    'div': (lambda m: m.tensor(X) / m.ones(4), mt.ShapeError, lambda t: t.tensor(X) / t.ones(4), 'Div'),
    'pow': (lambda m: m.tensor(X) ** m.ones(4), mt.ShapeError, lambda t: t.tensor(X) ** t.ones(4), 'Pow'),
    'maximum': (lambda m: m.maximum(m.tensor(X), m.ones(4)), mt.ShapeError,
                lambda t: t.maximum(t.tensor(X), t.ones(4)), 'Maximum'),
    'minimum': (lambda m: m.minimum(m.tensor(X), m.ones(4)), mt.ShapeError,
                lambda t: t.minimum(t.tensor(X), t.ones(4)), 'Minimum'),
    # ops/nn.py
    'softmax dim': (lambda m: m.tensor(X).softmax(2), IndexError, lambda t: t.tensor(X).softmax(2), 'Softmax'),
    'log_softmax dim': (lambda m: m.tensor(X).log_softmax(-3), IndexError, lambda t: t.tensor(X).log_softmax(-3),
                        'LogSoftmax'),
    'cross_entropy targets': (lambda m: m.cross_entropy(m.tensor(X), m.tensor([0, 1, 2])), mt.ShapeError,
                              lambda t: t.nn.functional.cross_entropy(t.tensor(X), t.tensor([0, 1, 2])),
                              'cross_entropy'),
    'cross_entropy weight': (lambda m: m.cross_entropy(m.tensor(X), m.tensor([0, 1]), weight=m.ones(2)),
                             mt.ShapeError, lambda t: t.nn.functional.cross_entropy(
                                 t.tensor(X), t.tensor([0, 1]), weight=t.ones(2, dtype=t.float64)), 'cross_entropy'),
    'cross_entropy 0-d': (lambda m: m.cross_entropy(m.tensor(1.0), m.tensor(0)), mt.ShapeError,
                          lambda t: t.nn.functional.cross_entropy(t.tensor(1.0), t.tensor(0)), 'cross_entropy'),
    'cross_entropy probabilities': (lambda m: m.cross_entropy(m.tensor(X), m.ones(2, 4) / 4), mt.ShapeError,
                                    lambda t: t.nn.functional.cross_entropy(t.tensor(X), t.ones(2, 4) / 4),
                                    'cross_entropy'),
    'nll_loss targets': (lambda m: m.nll_loss(m.tensor(X), m.tensor([0, 1, 2])), mt.ShapeError,
                         lambda t: t.nn.functional.nll_loss(t.tensor(X), t.tensor([0, 1, 2])), 'nll_loss'),
    'nll_loss weight': (lambda m: m.nll_loss(m.tensor(X), m.tensor([0, 1]), weight=m.ones(4)), mt.ShapeError,
                        lambda t: t.nn.functional.nll_loss(t.tensor(X), t.tensor([0, 1]),
                                                           weight=t.ones(4, dtype=t.float64)), 'nll_loss'),
    'layer_norm gamma': (lambda m: m.layer_norm(m.tensor(X), (3,), m.ones(2), m.zeros(3)), mt.ShapeError,
                         lambda t: t.nn.functional.layer_norm(t.tensor(X), (3,), t.ones(2), t.zeros(3)), 'layer_norm'),
    'layer_norm 0-d': (lambda m: m.layer_norm(m.tensor(1.0), (1,), m.ones(1), m.zeros(1)), mt.ShapeError,
                       lambda t: t.nn.functional.layer_norm(t.tensor(1.0), (1,), t.ones(1), t.zeros(1)), 'layer_norm'),
    # ops/einsum.py
    'einsum axes': (lambda m: m.einsum('ij,jk->ik', m.tensor(X), m.ones(3)), mt.ShapeError,
                    lambda t: t.einsum('ij,jk->ik', t.tensor(X), t.ones(3, dtype=t.float64)), 'einsum'),
    'einsum sizes': (lambda m: m.einsum('ij,jk->ik', m.tensor(X), m.ones(4, 2)), mt.ShapeError,
                     lambda t: t.einsum('ij,jk->ik', t.tensor(X), t.ones(4, 2, dtype=t.float64)), 'einsum'),
    'einsum operands': (lambda m: m.einsum('ij,jk->ik', m.tensor(X)), mt.ShapeError,
                        lambda t: t.einsum('ij,jk->ik', t.tensor(X)), 'einsum'),
    # microtensor/nn
    'Linear': (lambda m: m.nn.Linear(5, 2)(m.ones(2, 3)), mt.ShapeError,
               lambda t: t.nn.Linear(5, 2)(t.ones(2, 3)), 'Linear(5, 2)'),
    'Linear 0-d': (lambda m: m.nn.Linear(5, 2)(m.tensor(1.0)), mt.ShapeError,
                   lambda t: t.nn.Linear(5, 2)(t.tensor(1.0)), 'Linear(5, 2)'),
    'Sequential': (lambda m: m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(5, 2))(m.ones(2, 3)),
                   mt.ShapeError, lambda t: t.nn.Sequential(t.nn.Linear(3, 4), t.nn.ReLU(), t.nn.Linear(5, 2))(
                       t.ones(2, 3)), 'Linear(5, 2)'),
    # transformer/attention.py (PyTorch's MultiheadAttention asserts: no reference for those)
    'attention q k': (lambda m: scaled_dot_product_attention(m.ones(2, 3, 4), m.ones(2, 3, 5), m.ones(2, 3, 4)),
                      mt.ShapeError, lambda t: t.nn.functional.scaled_dot_product_attention(
                          t.ones(2, 3, 4), t.ones(2, 3, 5), t.ones(2, 3, 4)), 'attention'),
    'attention k v': (lambda m: scaled_dot_product_attention(m.ones(2, 3, 4), m.ones(2, 3, 4), m.ones(2, 5, 4)),
                      mt.ShapeError, lambda t: t.nn.functional.scaled_dot_product_attention(
                          t.ones(2, 3, 4), t.ones(2, 3, 4), t.ones(2, 5, 4)), 'attention'),
    'attention 1-d': (lambda m: scaled_dot_product_attention(m.ones(4), m.ones(4), m.ones(4)), mt.ShapeError,
                      lambda t: t.nn.functional.scaled_dot_product_attention(t.ones(4), t.ones(4), t.ones(4)),
                      'attention'),
    'attention mask': (lambda m: scaled_dot_product_attention(m.ones(2, 3, 4), m.ones(2, 3, 4), m.ones(2, 3, 4),
                                                              mask=m.ones(2, 4, dtype='bool')), mt.ShapeError,
                       lambda t: t.nn.functional.scaled_dot_product_attention(
                           t.ones(2, 3, 4), t.ones(2, 3, 4), t.ones(2, 3, 4), attn_mask=t.ones(2, 4, dtype=t.bool)),
                       'attention'),
    'MultiHeadAttention x': (lambda m: MultiHeadAttention(8, 2)(m.ones(2, 3, 4)), mt.ShapeError, None,
                             'MultiHeadAttention'),
    'MultiHeadAttention x 2-d': (lambda m: MultiHeadAttention(8, 2)(m.ones(3, 8)), mt.ShapeError, None,
                                 'MultiHeadAttention'),
    'MultiHeadAttention context': (lambda m: _mha(context=m.ones(2, 5, 4)), mt.ShapeError, None, 'context'),
    'MultiHeadAttention context 2-d': (lambda m: _mha(context=m.ones(5, 8)), mt.ShapeError, None, 'context'),
    'MultiHeadAttention context batch': (lambda m: _mha(context=m.ones(3, 5, 8)), mt.ShapeError, None, 'context'),
    'MultiHeadAttention mask': (lambda m: _mha(mask=m.ones(4, 4, dtype='bool')), mt.ShapeError, None, 'mask'),
    'MultiHeadAttention cache batch': (lambda m: _mha(cache=_filled_cache()), mt.ShapeError, None, 'KVCache'),
}


@pytest.mark.parametrize('case', SHAPE_CASES)
def test_a_wrong_shape_raises_a_shape_error_or_what_pytorch_raises(case):
    call, kind, _, words = SHAPE_CASES[case]
    with pytest.raises(kind) as error:  # mt.ShapeError is a RuntimeError: a PyTorch habit catches it
        call(mt)
    assert words in str(error.value)


@pytest.mark.parametrize('case', [name for name, (_, _, reference, _) in SHAPE_CASES.items() if reference])
def test_pytorch_raises_a_class_ours_is_an_instance_of(case):
    torch = torch_or_skip()
    call, _, reference, _ = SHAPE_CASES[case]
    with pytest.raises(Exception) as ours:
        call(mt)
    with pytest.raises(Exception) as theirs:
        reference(torch)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)


# ---------------------------------------------------------------------------- devices
DEVICE_CASES = {  # op on scores x (2, 3) of one device, given a tensor p of the other: (op, what, call)
    'cross_entropy targets': ('cross_entropy', 'targets', lambda x, p: mt.cross_entropy(x, p(np.array([0, 1])))),
    'cross_entropy probabilities': ('cross_entropy', 'targets',
                                    lambda x, p: mt.cross_entropy(x, p(np.full((2, 3), 1 / 3)))),
    'cross_entropy weight': ('cross_entropy', 'weight',
                             lambda x, p: mt.cross_entropy(x, mt.Tensor._wrap(x.data[:, 0].astype(int) * 0),
                                                           weight=p(np.ones(3)))),
    'nll_loss targets': ('nll_loss', 'targets', lambda x, p: mt.nll_loss(x, p(np.array([0, 1])))),
    'masked_fill mask': ('masked_fill', 'mask', lambda x, p: x.masked_fill(p(np.eye(2, 3, dtype=bool)), 0.0)),
    'where condition': ('where', 'condition', lambda x, p: mt.where(p(np.eye(2, 3, dtype=bool)), x, 0.0)),
}


@pytest.mark.parametrize('case', DEVICE_CASES)
def test_a_parameter_tensor_on_another_device_is_an_error_naming_both(case, fake_gpu):  # noqa: F811
    op, what, call = DEVICE_CASES[case]
    on_gpu = lambda a: mt.Tensor._wrap(fake_gpu(a))  # noqa: E731
    with pytest.raises(RuntimeError, match=f"{op}: the {what} is on 'cpu' but the tensor is on 'cuda'.*to\\('cuda'\\)"):
        call(on_gpu(np.ones((2, 3))), mt.tensor)
    with pytest.raises(RuntimeError, match=f"{op}: the {what} is on 'cuda' but the tensor is on 'cpu'"):
        call(mt.tensor(np.ones((2, 3))), on_gpu)
