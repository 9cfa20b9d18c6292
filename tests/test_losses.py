"""The losses of microtensor.nn.functional beyond cross-entropy (ops/losses.py) and their modules: a
float64 gradient and second-gradient check over hypothesis' shapes for every reduction, the formulas
at known points, the modules equal to the functions, and clear errors.  (Values, dtypes and both
gradients against PyTorch, on edge samples, are tests/test_op_registry.py's.)"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from microtensor import nn
from microtensor.nn import functional as F
from strategies import nonscalar_shapes, tensors

REGRESSION = {'mse_loss': {}, 'l1_loss': {}, 'smooth_l1_loss': {'beta': 0.7}, 'huber_loss': {'delta': 0.6},
              'binary_cross_entropy_with_logits': {}}


@pytest.mark.parametrize('name', REGRESSION)
@given(data=st.data(), reduction=st.sampled_from(['mean', 'sum', 'none']))
def test_gradients(name, data, reduction):
    shape = data.draw(nonscalar_shapes)
    x, y = data.draw(tensors(shape)), data.draw(tensors(shape))
    d = np.abs(x.numpy() - y.numpy())
    kink = {'l1_loss': 0.0, 'smooth_l1_loss': 0.7, 'huber_loss': 0.6}.get(name)
    assume(kink is None or not d.size or np.abs(d - kink).min() > 1e-3)  # no derivative at |x - y| = the kink
    f = lambda a, b: getattr(F, name)(a, b, reduction=reduction, **REGRESSION[name])  # noqa: E731
    assert mt.gradcheck(f, [x, y])
    if name != 'l1_loss':  # (|d|'s second derivative is a delta at 0)
        assert mt.gradgradcheck(f, [x, y])


@given(data=st.data(), reduction=st.sampled_from(['mean', 'sum', 'none']))
def test_binary_cross_entropy_gradient(data, reduction):
    shape = data.draw(nonscalar_shapes)
    p, y = data.draw(tensors(shape, low=0.1, high=0.9)), data.draw(tensors(shape, low=0.0, high=1.0))
    f = lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction)  # noqa: E731
    assert mt.gradcheck(f, [p, y]) and mt.gradgradcheck(f, [p, y])


@given(data=st.data(), reduction=st.sampled_from(['mean', 'sum', 'batchmean']), log_target=st.booleans())
def test_kl_div_gradient(data, reduction, log_target):
    shape = data.draw(nonscalar_shapes)
    logq = data.draw(tensors(shape)).log_softmax(-1).detach().requires_grad_()
    p = data.draw(tensors(shape, low=0.1, high=1.0))
    target = p.log().detach().requires_grad_() if log_target else p
    f = lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target)  # noqa: E731
    assert mt.gradcheck(f, [logq, target]) and mt.gradgradcheck(f, [logq, target])


def test_the_formulas_at_known_points():
    x, y = mt.tensor([0.0, 1.0, 3.0]), mt.tensor([0.0, 0.5, 1.0])
    assert F.mse_loss(x, y).item() == pytest.approx((0.25 + 4) / 3)
    assert F.l1_loss(x, y, reduction='sum').item() == pytest.approx(2.5)
    assert F.smooth_l1_loss(x, y, reduction='none').tolist() == pytest.approx([0.0, 0.125, 1.5])
    assert F.huber_loss(x, y, reduction='none', delta=0.5).tolist() == pytest.approx([0.0, 0.125, 0.875])
    p = mt.tensor([0.0, 1.0, 0.25])
    assert F.binary_cross_entropy(p, mt.tensor([1.0, 0.0, 1.0]), reduction='none').tolist() == pytest.approx(
        [100.0, 100.0, -math.log(0.25)])  # each log at least -100: finite where p is 0 or 1
    logits = mt.tensor([-200.0, 0.0, 200.0])
    assert F.binary_cross_entropy_with_logits(logits, mt.tensor([1.0, 1.0, 0.0]), reduction='none').tolist() == \
        pytest.approx([200.0, math.log(2), 200.0])  # from softplus: no log of an underflowed sigmoid
    weighted = F.binary_cross_entropy_with_logits(mt.zeros(2), mt.ones(2), pos_weight=mt.tensor([1.0, 3.0]),
                                                  reduction='none')
    assert weighted.tolist() == pytest.approx([math.log(2), 3 * math.log(2)])
    q, t = mt.tensor([[0.5, 0.5]]).log(), mt.tensor([[1.0, 0.0]])
    assert F.kl_div(q, t, reduction='batchmean').item() == pytest.approx(math.log(2))  # KL(t || q), the t = 0 term 0


@pytest.mark.parametrize('module, function', [
    (nn.MSELoss(), F.mse_loss), (nn.L1Loss(reduction='sum'), lambda x, y: F.l1_loss(x, y, reduction='sum')),
    (nn.SmoothL1Loss(beta=0.5), lambda x, y: F.smooth_l1_loss(x, y, beta=0.5)),
    (nn.HuberLoss(delta=2.0), lambda x, y: F.huber_loss(x, y, delta=2.0)),
    (nn.BCEWithLogitsLoss(pos_weight=mt.tensor([2.0, 1.0, 1.0, 0.5])),
     lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=mt.tensor([2.0, 1.0, 1.0, 0.5]))),
    (nn.BCELoss(), lambda x, y: F.binary_cross_entropy(x.sigmoid(), y)),
    (nn.KLDivLoss(reduction='batchmean'), lambda x, y: F.kl_div(x, y, reduction='batchmean')),
], ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else '')
def test_each_loss_module_is_its_function(module, function):
    x, y = mt.randn(3, 4), mt.rand(3, 4)
    args = (x.sigmoid(), y) if isinstance(module, nn.BCELoss) else (x, y)
    np.testing.assert_array_equal(module(*args).numpy(), function(x, y).numpy())


def test_identity_flatten_unflatten():
    x = mt.randn(2, 3, 4)
    assert nn.Identity(54, unused='ok')(x) is x
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert repr(nn.Unflatten(1, [3, 1])) == 'Unflatten(dim=1, unflattened_size=(3, 1))'


@pytest.mark.parametrize('call, error, message', [
    (lambda: F.mse_loss(mt.ones(3), mt.ones(3, 1)), mt.ShapeError, r'mse_loss: input \(3,\) and target \(3, 1\) must'),
    (lambda: F.l1_loss(mt.ones(2), mt.ones(2), reduction='avg'), ValueError, r"l1_loss: reduction must be one of"),
    (lambda: F.binary_cross_entropy(mt.tensor([1.5]), mt.ones(1)), ValueError, r'every input must be a probability'),
    (lambda: F.huber_loss(mt.ones(2), mt.ones(2), delta=0.0), ValueError, r'huber_loss: delta must be > 0'),
    (lambda: F.mse_loss(mt.tensor([1, 2]), mt.tensor([1, 2])), mt.DTypeError, r'mse_loss: needs a float input'),
    (lambda: nn.MSELoss(reduce=True), TypeError, r"MSELoss\(\) got unexpected settings \['reduce'\]"),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
