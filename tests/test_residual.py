"""ResidualAdd: the "+1" road and the F road of a residual connection."""
from hypothesis import given, strategies as st

import microtensor as mt
from transformer import DecoderLayer
from transformer.residual import ResidualAdd

from strategies import assert_forward, broadcastable_shapes, devices, tensors


@devices
@given(data=st.data(), alpha=st.sampled_from([1.0, 0.5, -2.0, 0.0]))
def test_residual_add_gradcheck(device, data, alpha):
    x_shape, fx_shape = data.draw(broadcastable_shapes())
    x, fx = data.draw(tensors(x_shape, device=device)), data.draw(tensors(fx_shape, device=device))
    assert_forward(ResidualAdd.apply(x, fx, alpha=alpha), x.numpy() + alpha * fx.numpy())
    assert mt.gradcheck(lambda a, b: ResidualAdd.apply(a, b, alpha=alpha), [x, fx])
    assert mt.gradgradcheck(lambda a, b: ResidualAdd.apply(a, b, alpha=alpha) ** 2, [x, fx])


def test_residual_add_sends_g_and_alpha_g():
    x = mt.randn(3, 4, requires_grad=True)
    fx = mt.randn(3, 4, requires_grad=True)
    g = mt.randn(3, 4)
    ResidualAdd.apply(x, fx, alpha=0.25).backward(g)
    assert (x.grad.numpy() == g.numpy()).all()
    assert abs(fx.grad.numpy() - 0.25 * g.numpy()).max() < 1e-7


def test_layers_use_residual_add_once_per_sublayer():
    layer = DecoderLayer(d_model=8, n_heads=2, cross_attention=False)
    y = layer(mt.randn(2, 4, 8))
    ops = [step.op for step in mt.backward_steps(y.sum())]
    assert sum(isinstance(op, ResidualAdd) for op in ops) == 2
    plain = DecoderLayer(d_model=8, n_heads=2, cross_attention=False, residual=False)
    ops = [step.op for step in mt.backward_steps(plain(mt.randn(2, 4, 8)).sum())]
    assert not any(isinstance(op, ResidualAdd) for op in ops)
