"""float16 as on PyTorch's CPU: sums, means, variances, norms, softmaxes, layer norm, cross-entropy
and GELU compute in float32 and return float16, forward and backward, in the textbook and in
the fused layer; random numbers come in float16.  Generated over ops x float16/32/64 against
PyTorch.  (bfloat16 is not offered: numpy, hence microtensor, has no such dtype.)"""
import contextlib

import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip('torch', reason='PyTorch is the reference for float16 arithmetic')
F = torch.nn.functional

DTYPES = ['float16', 'float32', 'float64']
CORRECTION = 0 if mt.tensor([0.0, 2.0]).var().item() == 1.0 else 1  # x.var()'s default: divide by n or n - 1
TARGETS = np.array([[1, 0, 4, 2, 3], [0, 0, 1, 4, 2]])

OPS = {  # name: (microtensor's, torch's), each from one tensor x of shape (2, 5, 7)
    'sum': (lambda x: x.sum(axis=-1), lambda x: x.sum(-1)),
    'sum_all': (lambda x: x.sum(), lambda x: x.sum()),
    'mean': (lambda x: x.mean(axis=-1), lambda x: x.mean(-1)),
    'var': (lambda x: x.var(axis=-1), lambda x: x.var(-1, correction=CORRECTION)),
    'norm': (lambda x: x.norm(), lambda x: x.norm()),
    'softmax': (lambda x: mt.softmax(x, axis=-1), lambda x: F.softmax(x, -1)),
    'log_softmax': (lambda x: mt.log_softmax(x, axis=-1), lambda x: F.log_softmax(x, -1)),
    'layer_norm': (lambda x: mt.layer_norm(x, mt.ones(7, dtype=x.dtype) * 1.5, mt.ones(7, dtype=x.dtype) * 0.25),
                   lambda x: F.layer_norm(x, (7,), torch.full((7,), 1.5, dtype=x.dtype),
                                          torch.full((7,), 0.25, dtype=x.dtype))),
    'layer_norm_float32_parameters': (
        lambda x: mt.layer_norm(x, mt.ones(7) * 1.5, mt.ones(7) * 0.25),
        lambda x: F.layer_norm(x, (7,), torch.full((7,), 1.5), torch.full((7,), 0.25))),
    'cross_entropy': (lambda x: mt.cross_entropy(x, TARGETS), lambda x: F.cross_entropy(x.transpose(1, 2),
                                                                                          torch.from_numpy(TARGETS))),
    'gelu': (lambda x: mt.gelu(x, approximate='tanh'), lambda x: F.gelu(x, approximate='tanh')),
    'gelu_erf': (lambda x: mt.gelu(x), lambda x: F.gelu(x)),
}
SCALES = {'small': (0.0, 2.0), 'large': (300.0, 3.0), 'far': (0.0, 60.0)}  # (centre, spread) of x


def _tolerance(dtype):
    return {'float16': 4e-3, 'float32': 2e-5, 'float64': 1e-10}[dtype]


def _close(ours, theirs, exact, dtype, what):
    """PyTorch's dtype, and PyTorch's values to the dtype's precision; or, where PyTorch rounds an
    intermediate to float16 (var's backward takes x - mean(x) in float16), values at least as
    close to the exact answer (PyTorch's in float64) as PyTorch's own."""
    assert str(ours.dtype) == str(theirs.dtype).replace('torch.', ''), f"{what}: {ours.dtype}, PyTorch {theirs.dtype}"
    a, b, c = (v.numpy().astype('float64') for v in (ours, theirs.detach(), exact.detach()))
    scale = max(1.0, float(np.abs(b).max()))
    if np.allclose(a, b, rtol=_tolerance(dtype), atol=_tolerance(dtype) * scale):
        return
    assert np.abs(a - c).max() <= np.abs(b - c).max(), f"{what}: {a} is further from the exact {c} than PyTorch's {b}"


CASES = [(name, dtype) for name in sorted(OPS) for dtype in DTYPES  # PyTorch mixes only float16 x, float32 parameters
         if name != 'layer_norm_float32_parameters' or dtype == 'float16']


@pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])
@pytest.mark.parametrize('scale', sorted(SCALES))
@pytest.mark.parametrize('name, dtype', CASES)
def test_op_forward_and_backward_match_pytorch_in_each_float_dtype(name, dtype, scale, fused):
    centre, spread = SCALES[scale]
    rng = np.random.default_rng(0)
    values = (centre + spread * rng.standard_normal((2, 5, 7))).astype(dtype)
    weights = rng.standard_normal(OPS[name][1](torch.from_numpy(values)).shape).astype(dtype)
    with mt.fused() if fused else contextlib.nullcontext():
        x = mt.tensor(values, requires_grad=True)
        y = OPS[name][0](x)
        (y * mt.tensor(weights)).sum().backward()
    expected, grad = _torch_result(name, values, weights)
    exact, exact_grad = _torch_result(name.replace('_float32_parameters', ''),  # (all float64 there)
                                      values.astype('float64'), weights.astype('float64'))
    _close(y, expected, exact, dtype, f"{name} forward")
    _close(x.grad, grad, exact_grad, dtype, f"{name} gradient")


def _torch_result(name, values, weights):
    t = torch.from_numpy(values).requires_grad_()
    y = OPS[name][1](t)
    (y * torch.from_numpy(weights)).sum().backward()
    return y, t.grad


def test_the_examples_that_went_wrong():
    assert mt.ones(70000, dtype='float16').mean().item() == 1.0
    p = mt.softmax(mt.zeros(100000, dtype='float16'))
    assert p.dtype == mt.float16 and abs(p[0].item() - 1e-5) < 1e-7
    x = mt.tensor(np.array([299.0, 301.0, 300.0, 298.0, 302.0, 300.5], dtype='float16'))
    y = mt.layer_norm(x, mt.ones(6, dtype='float16'), mt.zeros(6, dtype='float16'))
    expected = F.layer_norm(torch.from_numpy(x.numpy()), (6,))
    np.testing.assert_allclose(y.numpy().astype('float64'), expected.numpy().astype('float64'), atol=3e-3)
    assert np.abs(y.numpy()).max() > 1  # not all zeros
    assert mt.layer_norm(x, mt.ones(6), mt.zeros(6)).dtype == mt.float16  # as PyTorch's mixed dtypes


@pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])
def test_gelu_slope_far_from_zero_is_finite_in_float16(fused):
    x = mt.tensor(np.array([-1e4, -100, -70, 70, 100, 200, 1e4], dtype='float16'), requires_grad=True)
    with mt.fused() if fused else contextlib.nullcontext():
        mt.gelu(x, approximate='tanh').sum().backward()  # the fused GELU is GPT-2's tanh form
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 1, 1, 1, 1])


def test_random_numbers_dropout_and_initialisers_work_in_float16():
    mt.manual_seed(0)
    u = mt.rand(10000, dtype='float16')
    assert u.dtype == mt.float16 and 0 <= u.min().item() and u.max().item() < 1
    assert abs(u.mean().item() - 0.5) < 0.02
    n = mt.randn(10000, dtype='float16')
    assert n.dtype == mt.float16 and abs(n.var().item() ** 0.5 - 1) < 0.05
    kept = mt.dropout(mt.ones(10000, dtype='float16'), p=0.25)
    assert kept.dtype == mt.float16 and abs((kept.numpy() > 0).mean() - 0.75) < 0.03
    w = mt.zeros(200, 300, dtype='float16')
    mt.nn.init.normal_(w, std=0.02)
    assert w.dtype == mt.float16 and abs(float(w.numpy().astype('float64').std()) - 0.02) < 0.002
    mt.nn.init.uniform_(w, -1, 1)
    assert -1 <= w.min().item() and w.max().item() <= 1 and w.var().item() > 0.3


def test_a_float16_gpt_samples():
    from transformer.generate import pick_next
    mt.manual_seed(0)
    logits = mt.tensor(np.random.default_rng(0).standard_normal((3, 11)).astype('float16'))
    ids = pick_next(logits, temperature=1.0, top_k=None, greedy=False)
    assert ids.shape == (3, 1) and 0 <= ids.min().item() and ids.max().item() < 11


def test_a_float16_gpt_trains_the_same_in_both_layers_and_generates():
    from transformer.generate import generate
    from transformer.models import GPT
    from transformer.losses import next_token_loss
    grads = []
    for fused in (False, True):
        mt.manual_seed(0)
        model = GPT(11, d_model=8, n_layers=2, n_heads=2, max_len=6).to(dtype='float16')
        ids = mt.randint(0, 11, (2, 6))
        with mt.fused(fused):
            loss = next_token_loss(model(ids), ids)
            loss.backward()
        assert loss.dtype == mt.float16 and np.isfinite(loss.item())
        grads.append({name: p.grad.numpy() for name, p in model.named_parameters()})
    for name, grad in grads[0].items():
        assert grads[1][name].dtype == grad.dtype
        np.testing.assert_allclose(grads[1][name].astype("float64"), grad.astype("float64"), atol=5e-3, err_msg=name)
    out = generate(model, mt.tensor([[1, 2]]), max_new_tokens=3, seed=0)
    assert out.shape == (1, 5) and 0 <= out.min().item() and out.max().item() < 11
