"""The activation functions of microtensor.nn.functional beyond relu, gelu, sigmoid, tanh and silu
(ops/activations.py) and their nn modules: a float64 gradient and second-gradient check over
hypothesis' shapes and values (away from the kinks, where no derivative exists), the modules equal
to the functions with their settings, and clear errors.  (Values, dtypes and both gradients against
PyTorch, on edge samples, are tests/test_op_registry.py's.)"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from microtensor import nn
from microtensor.nn import functional as F
from strategies import nonscalar_shapes, tensors

# function, its settings, the points where it has a kink (no derivative: values near them are skipped)
SMOOTH = {'softplus': ({}, ()), 'elu': ({'alpha': 0.7}, (0,)), 'celu': ({'alpha': 2.0}, (0,)),
          'selu': ({}, (0,)), 'mish': ({}, ()), 'leaky_relu': ({'negative_slope': 0.2}, (0,)),
          'hardtanh': ({'min_val': -1.5, 'max_val': 0.5}, (-1.5, 0.5)), 'relu6': ({}, (0, 6)),
          'hardsigmoid': ({}, (-3, 3)), 'hardswish': ({}, (-3, 3)), 'logsigmoid': ({}, ()),
          'softsign': ({}, (0,)), 'quick_gelu': ({}, ())}


@pytest.mark.parametrize('name', SMOOTH)
@given(data=st.data(), scale=st.sampled_from([1.0, 4.0]))
def test_gradients(name, data, scale):
    options, kinks = SMOOTH[name]
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    x = (x * scale).detach().requires_grad_()
    assume(all(np.abs(x.numpy() - k).min() > 1e-3 for k in kinks) if x.numel() else True)
    f = lambda t: getattr(F, name)(t, **options)  # noqa: E731
    assert mt.gradcheck(f, [x])
    if name not in ('softsign',):  # (|x|'s second derivative is a delta at 0)
        assert mt.gradgradcheck(f, [x])


@given(data=st.data())
def test_softmin_gradient(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert mt.gradcheck(lambda t: F.softmin(t, dim), [x]) and mt.gradgradcheck(lambda t: F.softmin(t, dim), [x])


def test_the_formulas_at_known_points():
    x = mt.tensor([-2.0, 0.0, 1.0], dtype='float64')
    np.testing.assert_allclose(F.softplus(x).numpy(), np.log1p(np.exp([-2.0, 0.0, 1.0])), rtol=1e-15)
    assert F.softplus(mt.tensor([100.0])).item() == 100.0 and F.softplus(mt.tensor([-100.0])).item() > 0
    assert F.elu(x).tolist() == pytest.approx([math.expm1(-2), 0.0, 1.0])
    assert F.leaky_relu(x, 0.1).tolist() == pytest.approx([-0.2, 0.0, 1.0])
    assert F.hardswish(mt.tensor([-4.0, 0.0, 1.0, 4.0])).tolist() == pytest.approx([0.0, 0.0, 4 / 6, 4.0])
    assert F.relu6(mt.tensor([-1, 3, 9])).tolist() == [0, 3, 6]  # integers stay integers
    assert F.logsigmoid(mt.tensor([-200.0])).item() == -200.0  # no log of an underflowed sigmoid
    np.testing.assert_allclose(F.selu(x).numpy()[0], 1.0507009873554805 * 1.6732632423543772 * math.expm1(-2))
    assert F.softmin(mt.tensor([1.0, 2.0, 3.0]), dim=0).argmax().item() == 0


def test_no_nan_leaks_into_the_gradient_of_the_branch_not_taken():
    x = mt.tensor([-1e4, -30.0, 30.0, 1e4], requires_grad=True)
    (F.softplus(x) + F.elu(x) + F.celu(x) + F.selu(x) + F.mish(x) + F.hardswish(x)).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize('module, function', [
    (nn.Softplus(beta=2.0, threshold=5.0), lambda x: F.softplus(x, 2.0, 5.0)),
    (nn.LeakyReLU(0.3), lambda x: F.leaky_relu(x, 0.3)), (nn.ELU(alpha=0.5), lambda x: F.elu(x, 0.5)),
    (nn.CELU(), F.celu), (nn.SELU(), F.selu), (nn.Mish(), F.mish),
    (nn.Hardtanh(-2.0, 2.0), lambda x: F.hardtanh(x, -2.0, 2.0)), (nn.ReLU6(), F.relu6),
    (nn.Hardsigmoid(), F.hardsigmoid), (nn.Hardswish(), F.hardswish), (nn.LogSigmoid(), F.logsigmoid),
    (nn.Softsign(), F.softsign), (nn.Softmin(dim=0), lambda x: F.softmin(x, 0)),
    (nn.Softmax(dim=-1), lambda x: F.softmax(x, -1)), (nn.LogSoftmax(dim=1), lambda x: F.log_softmax(x, 1)),
], ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else '')
def test_each_module_is_its_function_with_its_settings(module, function):
    x = mt.randn(3, 4)
    np.testing.assert_array_equal(module(x).numpy(), function(x).numpy())
    assert module.num_parameters() == 0 and type(module).__name__ in repr(module)


def test_module_settings_show_and_bad_ones_are_refused():
    assert repr(nn.Softplus(beta=2.0)) == 'Softplus(beta=2.0, threshold=20.0)'
    assert nn.LeakyReLU(0.2).negative_slope == 0.2
    with pytest.raises(TypeError, match=r"ELU\(\) got unexpected settings \['beta'\]; its settings are \['alpha'\]"):
        nn.ELU(beta=1.0)
    with pytest.raises(TypeError, match=r"SELU\(\) takes at most 0 settings"):
        nn.SELU(1.0)
    with pytest.raises(TypeError, match='softplus'):
        nn.Softplus(beta='2')(mt.ones(2))


@pytest.mark.parametrize('call, error, message', [
    (lambda: F.elu(mt.tensor([1, 2])), mt.DTypeError, r'elu: needs a float tensor, not int64'),
    (lambda: F.hardtanh(mt.ones(2), 1.0, -1.0), ValueError, r'hardtanh: min_val \(1.0\) must not exceed max_val'),
    (lambda: F.celu(mt.ones(2), alpha=0.0), ValueError, r'celu: alpha must not be 0'),
    (lambda: F.leaky_relu(mt.ones(2), inplace=True), ValueError, r'leaky_relu: inplace=True is not supported'),
    (lambda: F.softmin(mt.tensor([1, 2])), mt.DTypeError, r'softmin: needs a float tensor'),
    (lambda: F.softplus([1.0]), TypeError, r'softplus'),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
