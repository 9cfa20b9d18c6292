"""Every misuse gives a clear error: what went wrong, where (op, shapes, device),
and what to do.  Each test checks the message, not just the exception type."""
import os

import numpy as np
import pytest

import microtensor as mt
from microtensor import backend


def t(*shape, requires_grad=False):
    return mt.tensor(np.arange(float(np.prod(shape))).reshape(shape) + 1.0, requires_grad=requires_grad)


# ---------------------------------------------------------------------------- bad input to an op
BAD_CALLS = {  # name: (call, exception, message pattern); shapes are part of every message
    'add': (lambda: t(2, 3) + t(4), ValueError, r"Add: .*\(2, 3\), \(4,\)"),
    'mul': (lambda: t(2, 3) * t(3, 2), ValueError, r"Mul: .*\(2, 3\), \(3, 2\)"),
    'matmul': (lambda: t(2, 3) @ t(2, 3), ValueError, r"MatMul: .*\(2, 3\) @ \(2, 3\).*3 != 2"),
    'matmul 1-D': (lambda: t(3) @ t(2), ValueError, r"MatMul: .*\(3,\) @ \(2,\).*3 != 2"),
    'matmul batch': (lambda: t(2, 3, 4) @ t(5, 4, 2), ValueError, r"MatMul: .*\(2, 3, 4\), \(5, 4, 2\)"),
    'matmul 0-d': (lambda: t() @ t(3), ValueError, r"MatMul: scalars .*\(\) and \(3,\).*use \*"),
    'maximum': (lambda: mt.maximum(t(2), t(3)), ValueError, r"Maximum: .*\(2,\), \(3,\)"),
    'where': (lambda: mt.where(t(2) > 1, t(2), t(3)), ValueError, r"Where: .*\(2,\), \(3,\)"),
    'where cond': (lambda: mt.where(t(2), t(2), t(2)), TypeError, r"where: the condition must be boolean"),
    'sum axis': (lambda: t(2, 3).sum(axis=2), IndexError, r"Sum: .*\(2, 3\).*axis 2 is out of range"),
    'mean axis': (lambda: t(2, 3).mean(axis=-3), IndexError, r"mean: axis -3 is out of range .*\(2, 3\)"),
    'var axis': (lambda: t(2, 3).var(axis=5), IndexError, r"Var: .*\(2, 3\).*axis 5"),
    'amax axis': (lambda: t(2, 3).amax(axis=(0, 7)), IndexError, r"Max: .*\(2, 3\).*axis 7"),
    'max dims': (lambda: t(2, 3).max(dim=(0, 1)), TypeError, r"max: dim=\(0, 1\).*one dim.*amax"),
    'amax empty': (lambda: t(0, 3).amax(axis=0), IndexError, r"Max: .*\(0, 3\).*empty axis"),  # PyTorch's class
    'max empty': (lambda: t(0, 3).max(dim=0), IndexError, r"max: dim 0 of shape \(0, 3\) is empty"),
    'reshape': (lambda: t(2, 3).reshape(4), ValueError, r"Reshape: .*\(2, 3\).*size 6 into shape \(4,\)"),
    'permute': (lambda: t(2, 3).permute(0, 0), ValueError, r"permute: dims \(0, 0\) are not a permutation.*\(2, 3\)"),
    'transpose range': (lambda: t(2, 3).transpose(0, 5), IndexError, r"transpose: axis 5 .*\(2, 3\)"),
    'transpose one dim': (lambda: t(2, 3).transpose(1), TypeError, r"transpose: takes two dims.*permute"),
    'swapaxes': (lambda: t(2, 3).swapaxes(0, 5), IndexError, r"swapaxes: axis 5 .*\(2, 3\)"),
    'expand_dims': (lambda: t(2, 3).expand_dims(3), IndexError, r"expand_dims: axis 3 .*\(2, 3\)"),
    'squeeze range': (lambda: t(2, 1).squeeze(2), IndexError, r"squeeze: axis 2 .*\(2, 1\)"),
    'broadcast_to': (lambda: t(2, 3).broadcast_to((3, 3)), ValueError, r"BroadcastTo: .*\(2, 3\)"),
    'getitem': (lambda: t(2, 3)[5], IndexError, r"GetItem: .*\(2, 3\).*index 5 is out of bounds"),
    'getitem array': (lambda: t(2, 3)[:, [0, 3]], IndexError, r"GetItem: index 3 is out of bounds for axis 1 .*\(2, 3\)"),
    'getitem mask': (lambda: t(2, 3)[np.ones(3, bool)], IndexError, r"GetItem: a boolean mask of shape \(3,\).*\(2, 3\)"),
    'concatenate': (lambda: mt.concatenate([t(2, 3), t(2, 2)]), ValueError, r"Concatenate: .*\(2, 3\), \(2, 2\)"),
    'concatenate none': (lambda: mt.concatenate([]), ValueError, r"concatenate: needs at least one tensor"),
    'stack': (lambda: mt.stack([t(2, 3), t(2, 2)]), ValueError, r"stack: .*same shape.*\(2, 3\), \(2, 2\)"),
    'split': (lambda: mt.split(t(2, 3), [1, 1], dim=1), ValueError, r"split: sizes \[1, 1\] add up to 2, but dim 1 "
                                                                     r"of shape \(2, 3\) has size 3.*numpy"),
    'split axis': (lambda: mt.split(t(2, 3), 2, axis=2), IndexError, r"split: axis 2 .*\(2, 3\)"),
    'softmax axis': (lambda: mt.softmax(t(2, 3), axis=2), IndexError, r"Softmax: .*\(2, 3\).*axis 2"),
    'cross_entropy target': (lambda: mt.cross_entropy(t(2, 3), [0, 3]), IndexError,
                             r"cross_entropy: .*target id is outside \[0, 3\) \(e.g. 3\).*\(2, 3\).*ignore_index"),
    'cross_entropy negative': (lambda: mt.cross_entropy(t(2, 3), [-100, 1]), IndexError,
                               r"outside \[0, 3\) \(e.g. -100\)"),
    'cross_entropy shape': (lambda: mt.cross_entropy(t(2, 3), [0, 1, 2]), ValueError,
                            r"cross_entropy: targets of shape \(3,\) do not match logits \(2, 3\)"),
    'cross_entropy dtype': (lambda: mt.cross_entropy(t(2, 3), [0.0, 1.0]), TypeError,
                            r"cross_entropy: targets must be integer class ids, not float64"),
    'masked_fill': (lambda: t(2, 3).masked_fill(t(3, 2) > 0, 0.0), ValueError,
                    r"masked_fill: mask of shape \(3, 2\) does not broadcast to the tensor's shape \(2, 3\)"),
    'masked_fill grow': (lambda: t(3).masked_fill(t(2, 3) > 0, 0.0), ValueError,
                         r"masked_fill: mask of shape \(2, 3\) does not broadcast to the tensor's shape \(3,\)"),
    'layer_norm': (lambda: mt.layer_norm(t(2, 3), 3, t(2), t(3)), ValueError,
                   r"layer_norm: weight \(2,\) and bias \(3,\) must have the normalized_shape \(3,\).*\(2, 3\)"),
    'dropout p': (lambda: mt.dropout(t(2), 1.5), ValueError, r"dropout: p must be in \[0, 1\], not 1.5"),
    'gelu': (lambda: mt.gelu(t(2), approximate='erf'), ValueError, r"gelu: approximate must be 'tanh' or 'none'"),
    'to': (lambda: t(2).to('tpu'), TypeError, r"to\(\): 'tpu' is neither a device \('cpu' or 'cuda'\) nor"),
    'to dtype': (lambda: t(2).to(dtype='float65'), TypeError, r"to\(\): 'float65' is neither a device"),
    'item': (lambda: t(2).item(), ValueError, r"item\(\): .*shape \(2,\)"),
    'bool': (lambda: bool(t(2)), ValueError, r"tensor of shape \(2,\) is ambiguous"),
}


@pytest.mark.parametrize('name', BAD_CALLS)
def test_bad_input_names_the_op_and_shapes(name):
    call, error, pattern = BAD_CALLS[name]
    with pytest.raises(error, match=pattern):
        call()


# ---------------------------------------------------------------------------- backward misuse
def test_backward_from_a_non_scalar_needs_a_gradient():
    y = t(2, 3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"backward: the output has shape \(2, 3\), not a scalar.*\.sum\(\)"):
        y.backward()
    with pytest.raises(ValueError, match=r"backward: gradient has shape \(3,\) but the output has shape \(2, 3\)"):
        y.backward(np.ones(3))


def test_backward_without_a_graph():
    with pytest.raises(RuntimeError, match="does not require grad.*no_grad"):
        (t(2) * 2).sum().backward()


def test_second_backward_through_a_freed_graph():
    x = t(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"already freed \(at Sum\).*retain_graph=True"):
        y.backward()


def test_requires_grad_on_an_integer_tensor():
    with pytest.raises(TypeError, match="only floating-point tensors can require grad, not int64"):
        mt.tensor(np.array([1, 2]), requires_grad=True)
    with pytest.raises(TypeError, match="only floating-point tensors can require grad, not int32"):
        mt.tensor(np.array([1, 2], dtype=np.int32)).requires_grad_()


def test_hook_on_a_tensor_without_grad():
    with pytest.raises(RuntimeError, match="register_hook: this tensor does not require grad"):
        t(2).register_hook(lambda g: g)


def test_grad_of_an_input_without_requires_grad():
    x = t(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"mt.grad: an input of shape \(2,\) does not require grad"):
        mt.grad((x * 2).sum(), [t(2)])


# ---------------------------------------------------------------------------- in-place changes
@pytest.mark.parametrize('modify', [
    lambda c: c.__setitem__(0, 5.0),
    lambda c: c.__setitem__(Ellipsis, 0.0),
    lambda c: c.fill_(3.0),
    lambda c: c.zero_(),
    lambda c: c.copy_(np.ones(3)),
], ids=['setitem', 'setitem ...', 'fill_', 'zero_', 'copy_'])
def test_in_place_change_of_a_saved_tensor_is_caught_by_backward(modify):
    x = t(3, requires_grad=True)
    c = t(3)  # a constant that Mul saves for x's gradient
    y = (x * c).sum()
    modify(c)
    with pytest.raises(RuntimeError, match=r"Mul: an input of shape \(3,\) was modified in place .*version 0 -> 1"
                                           r".*out-of-place"):
        y.backward()


def test_in_place_update_of_a_parameter_before_backward_is_caught():
    w = t(3, requires_grad=True)
    loss = (w * w).sum()
    with mt.no_grad():
        w.copy_(w - 0.1)  # an optimizer step taken too early
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


@pytest.mark.parametrize('modify', [
    lambda x, c: c.detach().fill_(5.0),                # detach() shares memory with c
    lambda x, c: c.reshape(3, 1).__setitem__(0, 5.0),  # so does a view
    lambda x, c: c[1:].zero_(),                         # and a slice
], ids=['detach', 'reshape view', 'slice view'])
def test_in_place_change_through_a_view_is_caught_by_backward(modify):
    x = t(3, requires_grad=True)
    c = t(3)
    y = (x * c).sum()
    with mt.no_grad():
        modify(x, c)
    with pytest.raises(RuntimeError, match=r"Mul: an input of shape \(3,\) was modified in place"):
        y.backward()


def test_in_place_change_of_the_base_of_a_saved_view_is_caught():
    x = t(6, requires_grad=True)
    c = t(6)
    view = c.reshape(2, 3)                # Mul below saves the view...
    y = (x.reshape(2, 3) * view).sum()
    c.fill_(0.0)                          # ...and this changes its memory
    with pytest.raises(RuntimeError, match="Mul: an input of shape \\(2, 3\\) was modified in place"):
        y.backward()


def test_in_place_change_of_a_saved_output_is_caught():
    """Exp's backward is g * y: changing y in place would make it silently wrong."""
    x = t(3, requires_grad=True)
    y = x.exp()
    with mt.no_grad():
        y.fill_(0.0)
    with pytest.raises(RuntimeError, match=r"Exp: its output of shape \(3,\) was modified in place"):
        y.sum().backward()


def test_out_of_place_ops_and_fresh_copies_do_not_trip_the_check():
    x = t(3, requires_grad=True)
    c = t(3)
    y = (x * (c * 1.0)).sum()
    c.fill_(0.0)                          # c * 1.0 is a new array: Mul saved that, not c
    y.backward()
    assert x.grad is not None


def test_in_place_change_of_a_leaf_requiring_grad():
    w = t(3, requires_grad=True)
    for modify in [lambda: w.__setitem__(0, 1.0), lambda: w.fill_(0.0), lambda: w.copy_(np.zeros(3))]:
        with pytest.raises(RuntimeError, match=r"in-place change of a tensor that requires grad.*mt.no_grad\(\)"):
            modify()
    with mt.no_grad():
        w.fill_(2.0)  # allowed: this is how optimizers update parameters
    assert w.numpy().tolist() == [2.0, 2.0, 2.0] and w._version[0] == 1


# ---------------------------------------------------------------------------- anomaly mode
def test_log_of_zero_is_minus_inf_and_anomaly_mode_names_the_op_and_the_line():
    x = mt.tensor(np.array([0.0, 1.0]), requires_grad=True)
    y = x.log()
    assert y.numpy()[0] == -np.inf and y.numpy()[1] == 0.0
    with np.errstate(divide='ignore'):
        y.sum().backward()  # without anomaly mode: an inf gradient, silently
    assert x.grad.numpy()[0] == np.inf
    with mt.detect_anomaly():
        y = x.log()
        with pytest.raises(FloatingPointError) as info:
            with np.errstate(divide='ignore'):
                y.sum().backward()
    message = str(info.value)
    assert "Log.backward produced Inf" in message and "shape (2,)" in message
    assert f"{os.path.basename(__file__)}:" in message  # where the op was created (this file, a line number)
    assert not mt.autograd._anomaly_mode  # the context restores the mode


def test_anomaly_mode_reports_nan():
    x = mt.tensor(np.array([-1.0, 4.0]), requires_grad=True)
    with mt.detect_anomaly():
        with np.errstate(invalid='ignore', divide='ignore'):
            y = x.sqrt()
            with pytest.raises(FloatingPointError, match=r"Sqrt.backward produced NaN .*test_errors.py:\d+"):
                y.sum().backward()


# ---------------------------------------------------------------------------- devices
def test_unknown_device():
    with pytest.raises(ValueError, match="unknown device 'tpu': use 'cpu' or 'cuda'"):
        mt.zeros(2, device='tpu')


@pytest.mark.skipif(mt.cuda.is_available(), reason="checks the message shown when no GPU is present")
def test_cuda_without_a_gpu():
    with pytest.raises(RuntimeError, match="no GPU is available"):
        t(2).to('cuda')


@pytest.mark.skipif(not mt.cuda.is_available(), reason="needs a GPU (cupy) to hold tensors on two devices")
def test_mixing_real_devices():
    with pytest.raises(RuntimeError, match=r"Add: inputs are on different devices \(cpu and cuda\).*\.to\("):
        t(2) + t(2).to('cuda')


class _FakeGpuArray(np.ndarray):
    """A numpy array that the patched backend reports as living on 'cuda'."""


def test_mixing_devices_is_caught_in_function_apply(monkeypatch):
    """Without a GPU: a stand-in array type that the backend calls 'cuda' reaches the
    device check every op goes through (Function.apply), as a cupy array would."""
    real_device_of = backend.device_of
    monkeypatch.setattr(backend, 'device_of',
                        lambda a: 'cuda' if isinstance(a, _FakeGpuArray) else real_device_of(a))
    on_gpu = mt.Tensor._wrap(np.ones(2).view(_FakeGpuArray))
    assert on_gpu.device == 'cuda'
    with pytest.raises(RuntimeError, match=r"Add: inputs are on different devices \(cpu and cuda\).*\.to\("):
        t(2) + on_gpu
    with pytest.raises(RuntimeError, match=r"MatMul: inputs are on different devices \(cuda and cpu\)"):
        on_gpu.reshape(1, 2) @ t(2, 1)
