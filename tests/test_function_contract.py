"""The contract between an op and the engine: what forward, backward and hooks may return.

Each mistake a learner makes writing an op gets an error that names the op (or the hook) and
the input's position, at the op, instead of a failure later, far from it.
"""
import numpy as np
import pytest

import microtensor as mt
from microtensor import nn


class Product(mt.Function):
    """y = a * b, with the backward each test plants."""
    plant = None

    def forward(self, a, b):
        return a * b

    def backward(self, g):
        return type(self).plant(self, g)


def backward_with(plant, a_shape=(3, 4), b_shape=(3, 4), dtype=mt.float64):
    Product.plant = plant
    a = mt.randn(*a_shape, dtype=dtype, requires_grad=True)
    b = mt.randn(*b_shape, dtype=dtype, requires_grad=True)
    Product.apply(a, b).sum().backward()
    return a, b


def test_numpy_arrays_are_refused_naming_the_op_and_the_input():
    with pytest.raises(TypeError, match=r"Product\.backward: the gradient for input 0 is a numpy\.ndarray, "
                                        r"not a Tensor; .*mt\.as_tensor"):
        backward_with(lambda self, g: (g.data * self.inputs[1].data, g * self.inputs[0]))


def test_one_gradient_for_two_inputs_is_refused():
    with pytest.raises(ValueError, match=r"Product\.backward returned 1 gradient for 2 inputs; return one per input"):
        backward_with(lambda self, g: (g * self.inputs[1],))


def test_a_gradient_without_the_tuple_is_refused_for_two_inputs():
    with pytest.raises(TypeError, match=r"Product\.backward returned a microtensor\.Tensor for 2 inputs; "
                                        r"return a tuple"):
        backward_with(lambda self, g: g * self.inputs[1])


def test_a_one_input_op_may_return_its_gradient_alone():
    class Twice(mt.Function):
        def forward(self, x):
            return 2 * x

        def backward(self, g):
            return 2 * g

    x = mt.randn(3, requires_grad=True)
    Twice.apply(x).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full(3, 2, dtype=np.float32))


def test_a_wrong_shape_names_both_shapes_and_not_sum_to():
    with pytest.raises(ValueError, match=r"Product\.backward: the gradient for input 1 has shape \(3,\), but the "
                                         r"input has shape \(4,\)") as error:
        backward_with(lambda self, g: (g * self.inputs[1], (g * self.inputs[0]).sum(axis=1)), (3, 4), (4,))
    assert 'sum_to' not in str(error.value)


def test_a_gradient_at_the_broadcast_shape_is_summed_back():
    a, b = backward_with(lambda self, g: (g * self.inputs[1], g * self.inputs[0]), (3, 4), (4,))
    assert b.grad.shape == (4,)
    np.testing.assert_allclose(b.grad.numpy(), a.data.sum(axis=0))


def test_an_integer_gradient_is_refused():
    with pytest.raises(TypeError, match=r"Product\.backward: the gradient for input 0 is int64, but the input is "
                                        r"float64"):
        backward_with(lambda self, g: (mt.ones(3, 4, dtype=mt.int64), g))


def test_a_less_precise_gradient_is_refused_and_a_more_precise_one_cast_down():
    with pytest.raises(TypeError, match=r"input 1 is float32, but the input is float64"):
        backward_with(lambda self, g: (g, g.float()))
    a, _ = backward_with(lambda self, g: (g.double(), g), dtype=mt.float32)
    assert a.grad.dtype == mt.float32


def test_a_gradient_on_another_device_is_refused(monkeypatch):
    """(No GPU needed: a tensor whose data is another array type stands for one on another device.)"""
    class OtherArray(np.ndarray):
        pass

    def elsewhere(self, g):
        t = mt.Tensor._wrap(np.asarray(g.data).view(OtherArray))
        return g, t

    monkeypatch.setattr(mt.backend, 'device_of', lambda a: 'cuda' if isinstance(a, OtherArray) else 'cpu')
    with pytest.raises(RuntimeError, match=r"Product\.backward: the gradient for input 1 is on 'cuda', but the "
                                           r"input is on 'cpu'"):
        backward_with(elsewhere)


def test_a_forward_that_returns_a_tensor_or_a_tuple_is_refused():
    class Wrong(mt.Function):
        def forward(self, x):
            return self.result(x)

    for result, what in [(mt.Tensor, r"a microtensor\.Tensor"), (lambda x: (x, x), 'a tuple of 2'),
                         (lambda x: None, 'None')]:
        Wrong.result = staticmethod(result)
        with pytest.raises(TypeError, match=rf"Wrong\.forward returned {what}; forward works on arrays"):
            Wrong.apply(mt.ones(2))


def test_a_tensor_hook_returning_a_tuple_or_another_shape_is_named():
    def double_it(g):
        return (g * 2,)

    x = mt.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(double_it)
    with pytest.raises(TypeError, match=r"register_hook: the hook .*double_it returned a tuple of 1 for a "
                                        r"gradient of shape \(3,\)"):
        y.sum().backward()
    x = mt.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(TypeError, match=r"the hook .*<lambda> returned a Tensor of shape \(\), float32"):
        y.sum().backward()


def test_a_module_forward_hook_returning_a_tuple_is_named_at_the_module():
    def probe(module, inputs, output):
        return output, inputs

    layer = nn.Linear(2, 3)
    layer.register_forward_hook(probe)
    with pytest.raises(TypeError, match=r"Linear: the forward hook .*probe returned a tuple of 2 for an output "
                                        r"of shape \(1, 3\)"):
        layer(mt.ones(1, 2))


def test_a_forward_hook_on_a_gpt_layer_is_named_before_the_next_layer_trips_over_its_tuple():
    from transformer import GPT

    def keep_attention(layer, inputs, output):
        return output, 'weights'

    model = GPT(vocab_size=5, d_model=8, n_layers=2, n_heads=2, max_len=4)
    model.layers[0].register_forward_hook(keep_attention)
    with pytest.raises(TypeError, match=r"DecoderLayer: the forward hook .*keep_attention returned a tuple of 2 for "
                                        r"an output of shape \(1, 3, 8\)"):
        model(mt.tensor([[1, 2, 3]]))


def test_a_forward_hook_must_keep_a_tuple_output_a_tuple():
    class Pair(nn.Module):
        def forward(self, x):
            return x, x * 2

    pair = Pair()
    pair.register_forward_hook(lambda module, inputs, output: output[0])
    with pytest.raises(TypeError, match=r"Pair: the forward hook .* returned a Tensor of shape \(2,\) for an output "
                                        r"tuple of 2"):
        pair(mt.ones(2))


def test_hooks_that_return_a_replacement_of_the_right_kind_still_work():
    layer = nn.Linear(2, 3)
    layer.register_forward_hook(lambda module, inputs, output: output * 0)
    assert not layer(mt.ones(1, 2)).any()
    x = mt.randn(3, requires_grad=True)
    y = x * 1
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full(3, 3, dtype=np.float32))
