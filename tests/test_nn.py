"""microtensor.nn: module registration, state_dict, devices, layers, init, gradient clipping."""
import math
import re

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn
import transformer
from module_check import gradcheck_module


class MLP(nn.Module):
    def __init__(self, d_in=3, d_hidden=5, d_out=2, dtype=None):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden, dtype=dtype)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(d_hidden, d_out, dtype=dtype)
        self.register_buffer('seen', mt.zeros((), dtype=dtype))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Nesting: a ModuleList of MLPs, a Sequential, a loose Parameter, a buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(mt.ones(2))
        self.layers = nn.ModuleList([MLP(), MLP(2, 4, 2)])
        self.head = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        self.register_buffer('running_mean', mt.zeros(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x) * self.scale


# ---------------------------------------------------------------------- registration
def test_named_parameters_are_dotted_and_in_registration_order():
    names = [n for n, _ in Block().named_parameters()]
    assert names == ['scale',
                     'layers.0.fc1.weight', 'layers.0.fc1.bias', 'layers.0.fc2.weight', 'layers.0.fc2.bias',
                     'layers.1.fc1.weight', 'layers.1.fc1.bias', 'layers.1.fc2.weight', 'layers.1.fc2.bias',
                     'head.0.weight', 'head.0.bias']
    block = Block()
    assert [id(p) for p in block.parameters()] == [id(p) for _, p in block.named_parameters()]
    assert [n for n, _ in block.named_buffers()] == ['running_mean', 'layers.0.seen', 'layers.1.seen']
    assert [n for n, _ in block.named_modules()] == ['', 'layers', 'layers.0', 'layers.0.fc1', 'layers.0.act',
                                                       'layers.0.fc2', 'layers.1', 'layers.1.fc1', 'layers.1.act',
                                                       'layers.1.fc2', 'head', 'head.0', 'head.1']
    assert len(block.modules()) == 13 and block.modules()[0] is block
    assert [n for n, _ in block.named_children()] == ['layers', 'head']


def test_num_parameters_counts_shared_parameters_once():
    model = MLP(3, 5, 2)
    assert model.num_parameters() == 3 * 5 + 5 + 5 * 2 + 2
    model.fc3 = model.fc1  # the same layer twice: its parameters count once
    assert model.num_parameters() == 3 * 5 + 5 + 5 * 2 + 2
    model.fc1.bias.requires_grad_(False)
    assert model.num_parameters(trainable_only=True) == 3 * 5 + 5 * 2 + 2


def test_reassigning_or_deleting_an_attribute_updates_registration():
    model = MLP()
    model.fc2 = nn.Linear(5, 7)
    assert model(mt.randn(4, 3)).shape == (4, 7)
    model.fc2 = None  # no longer a sub-module
    assert [n for n, _ in model.named_parameters()] == ['fc1.weight', 'fc1.bias']
    del model.fc1
    assert model.parameters() == [] and not hasattr(model, 'fc1')
    model.seen = mt.ones(())  # a registered buffer stays a buffer when reassigned
    assert [n for n, _ in model.named_buffers()] == ['seen']


def test_module_misuse_gives_clear_errors():
    class Forgot(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match='super\\(\\).__init__'):
        Forgot()
    model = MLP()
    with pytest.raises(TypeError, match="buffer 'seen' must be a Tensor"):
        model.seen = np.zeros(())
    with pytest.raises(NotImplementedError, match='must define forward'):
        nn.Module()(mt.ones(1))
    with pytest.raises(ValueError, match=r'Linear\(3, 5\): input has last dimension 4'):
        model(mt.ones(2, 4))


def test_repr_shows_tree_and_parameter_counts():
    text = repr(MLP(3, 5, 2))
    assert text.splitlines() == ['MLP(',
                                 '  (fc1): Linear(in_features=3, out_features=5, bias=True)',
                                 '  (act): Tanh()',
                                 '  (fc2): Linear(in_features=5, out_features=2, bias=True)',
                                 ')  # 32 parameters']
    assert '    (1): ReLU()\n  )  # 6 parameters\n)  # 62 parameters' in repr(Block())
    assert repr(nn.Dropout(0.1)) == 'Dropout(p=0.1)'


def test_zero_grad_and_requires_grad():
    model = MLP()
    model(mt.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_forward_hook_sees_and_can_replace_output():
    model, seen = MLP(), []
    handle = model.fc1.register_forward_hook(lambda m, args, out: seen.append((m, out.shape)))
    model(mt.randn(4, 3))
    assert seen == [(model.fc1, (4, 5))]
    handle.remove()
    model(mt.randn(4, 3))
    assert len(seen) == 1
    model.fc2.register_forward_hook(lambda m, args, out: out * 0)
    assert np.all(model(mt.randn(4, 3)).numpy() == 0)


def test_train_eval_reach_every_submodule_and_drive_dropout():
    model = nn.Sequential(nn.Linear(4, 64), nn.Dropout(0.5))
    assert model.training and model[1].training
    x = mt.ones(8, 4)
    with mt.no_grad():
        assert model.eval() is model and not model[1].training
        np.testing.assert_array_equal(model(x).numpy(), model[0](x).numpy())  # eval: identity
        model.train()
        y, clean = model(x).numpy(), model[0](x).numpy()
    assert all(m.training for m in model.modules())
    dropped = y == 0
    assert 0.3 < dropped.mean() < 0.7  # about half zeroed; the rest scaled by 1/(1-p)
    np.testing.assert_allclose(y[~dropped], 2 * clean[~dropped], rtol=1e-6)
    with pytest.raises(ValueError, match=r'Dropout: p must be a finite number in \[0, 1\], not 1.5'):
        nn.Dropout(1.5)


# ---------------------------------------------------------------------- state_dict
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_state_dict_round_trip_is_bit_exact_and_copies(dtype):
    source, target = MLP(dtype=dtype), MLP(dtype=dtype)
    source.seen = mt.full((), 7.0, dtype=dtype)
    state = source.state_dict()
    assert list(state) == ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'seen']
    assert all(not t.requires_grad for t in state.values())  # detached
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items()):
        assert a.dtype == b.dtype == np.dtype(dtype)
        assert a.numpy().tobytes() == b.numpy().tobytes(), name
    x = mt.randn(4, 3, dtype=dtype)
    assert source(x).numpy().tobytes() == target(x).numpy().tobytes()
    target.fc1.weight.data[0, 0] += 1  # loaded values are copies, not views of the source
    assert source.fc1.weight.data[0, 0] != target.fc1.weight.data[0, 0]


def test_load_state_dict_accepts_arrays_and_casts_to_the_models_dtype():
    model = MLP(dtype='float32')
    state = {k: v.numpy().astype(np.float64) + 1 for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    assert model.fc1.weight.dtype == np.float32
    np.testing.assert_allclose(model.fc1.weight.numpy(), state['fc1.weight'], rtol=1e-6)


def test_load_state_dict_lists_missing_and_unexpected_keys_and_changes_nothing():
    model = MLP()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    state = {k: v + 1 for k, v in MLP().state_dict().items()}
    del state['fc2.bias'], state['seen']
    state['fc3.weight'] = mt.zeros(2, 2)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "missing keys (in the model, not in the state): ['fc2.bias', 'seen']" in message
    assert "unexpected keys (in the state, not in the model): ['fc3.weight']" in message
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ['fc2.bias', 'seen'] and result.unexpected_keys == ['fc3.weight']
    np.testing.assert_array_equal(model.fc1.weight.numpy(), state['fc1.weight'].numpy())


def test_load_state_dict_names_the_key_and_both_shapes_on_mismatch():
    model = MLP(3, 5, 2)
    state = MLP(3, 6, 2).state_dict()
    with pytest.raises(RuntimeError, match=r"size mismatch for 'fc1.weight': shape \(6, 3\) in the state, "
                                           r"\(5, 3\) in the model"):
        model.load_state_dict(state)
    with pytest.raises(RuntimeError, match=r"size mismatch for 'fc1.weight'"):
        model.load_state_dict(state, strict=False)  # shapes are checked even when not strict
    with pytest.raises(RuntimeError, match="'seen': expected a tensor or an array of numbers, got str"):
        model.load_state_dict({**model.state_dict(), 'seen': 'zero'})


# ---------------------------------------------------------------------- devices and dtypes
def test_to_moves_parameters_buffers_and_grads_in_place(device):
    model = Block()
    params = model.parameters()
    model(mt.randn(4, 3)).sum().backward()
    assert model.to(device) is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]  # same objects
    for t in model.parameters() + model.buffers():
        assert t.device == device
    assert all(p.grad.device == device for p in model.parameters())
    out = model(mt.randn(4, 3, device=device))
    assert out.device == device
    out.sum().backward()
    model.to('cpu')
    assert all(t.device == 'cpu' for t in model.parameters() + model.buffers())


def test_to_dtype_casts_floating_parameters_and_buffers_only():
    model = MLP()
    model.register_buffer('counts', mt.zeros(3, dtype='int64'))
    model.double()
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert model.seen.dtype == np.float64 and model.counts.dtype == np.int64
    assert model(mt.randn(2, 3, dtype='float64')).dtype == np.float64
    model.float()
    assert all(p.dtype == np.float32 for p in model.parameters())
    with pytest.raises(TypeError, match='floating-point'):
        model.to(dtype='int32')


# ---------------------------------------------------------------------- layers
@pytest.mark.parametrize('layout', ['linear', 'projection'])
def test_linear_computes_x_at_W_plus_b_with_weight_out_in(device, layout):
    """nn.Linear: PyTorch's (out, in) weight, y = x @ W^T + b; transformer's Projection: the articles'
    (in, out), y = x @ W + b.  Non-square, so that a wrong layout cannot hide."""
    layer = (nn.Linear if layout == 'linear' else transformer.Projection)(3, 4, device=device)
    assert layer.weight.shape == ((4, 3) if layout == 'linear' else (3, 4)) and layer.bias.shape == (4,)
    bound = 1 / math.sqrt(3)
    assert np.abs(layer.weight.numpy()).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    x = mt.randn(2, 5, 3, device=device)
    W = layer.weight.numpy().T if layout == 'linear' else layer.weight.numpy()
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() @ W + layer.bias.numpy(), rtol=1e-5, atol=1e-6)
    x.requires_grad_()
    y = layer(x)
    assert [type(y.creator).__name__, type(y.creator.inputs[0].creator).__name__] == ['Add', 'MatMul']
    assert y.creator.inputs[0].creator.inputs[1] is layer.weight  # one MatMul node on the weight: no Transpose
    no_bias = nn.Linear(3, 4, bias=False)
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ['weight']


def test_mlp_gradcheck_end_to_end_in_float64():
    model = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2),
                          nn.Sigmoid(), nn.Linear(2, 2), nn.ReLU()).double()
    assert gradcheck_module(model, mt.randn(2, 3))


def test_activation_modules_match_the_functions():
    x = mt.randn(4, 5)
    for module, fn in [(nn.ReLU(), mt.relu), (nn.Tanh(), mt.tanh), (nn.Sigmoid(), mt.sigmoid),
                       (nn.GELU('none'), lambda t: mt.gelu(t, approximate='none'))]:
        np.testing.assert_array_equal(module(x).numpy(), fn(x).numpy())
    with pytest.raises(ValueError, match="approximate must be"):
        nn.GELU('fast')


def test_sequential_and_module_list_behave_like_lists():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and seq[-1] is seq[2]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    x = mt.randn(4, 2)
    np.testing.assert_array_equal(seq(x).numpy(), seq[2](seq[1](seq[0](x))).numpy())
    layers = nn.ModuleList()
    layers.append(nn.Linear(2, 2)).extend([nn.Linear(2, 2)])
    assert [n for n, _ in layers.named_parameters()] == ['0.weight', '0.bias', '1.weight', '1.bias']
    assert list(layers) == [layers[0], layers[1]]
    with pytest.raises(TypeError, match='can only hold Modules'):
        layers.append(lambda x: x)
    with pytest.raises(IndexError, match='index 2 out of range'):
        layers[2]


# ---------------------------------------------------------------------- init
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_init_distributions_have_the_documented_scale(device, dtype):
    fan_in, fan_out = 200, 300  # weight (out, in), PyTorch's layout
    w = mt.zeros(fan_out, fan_in, dtype=dtype, device=device)
    cases = [
        (lambda t: nn.init.uniform_(t, -0.5, 0.5), 1 / math.sqrt(12), 0.5),
        (lambda t: nn.init.normal_(t, 0.0, 0.02), 0.02, None),
        (nn.init.xavier_uniform_, math.sqrt(2 / (fan_in + fan_out)), math.sqrt(6 / (fan_in + fan_out))),
        (nn.init.glorot_normal_, math.sqrt(2 / (fan_in + fan_out)), None),
        (nn.init.kaiming_uniform_, math.sqrt(2 / fan_in), math.sqrt(6 / fan_in)),
        (nn.init.he_normal_, math.sqrt(2 / fan_in), None),
        (lambda t: nn.init.kaiming_normal_(t, mode='fan_out', nonlinearity='tanh'), 5 / 3 / math.sqrt(fan_out), None),
    ]
    for fill, std, bound in cases:
        assert fill(w) is w and w.dtype == np.dtype(dtype) and w.device == device
        values = w.numpy()
        assert abs(values.mean()) < 5 * std / math.sqrt(values.size)
        assert abs(values.std() / std - 1) < 0.02
        if bound is not None:
            assert np.abs(values).max() <= bound
    assert nn.init.zeros_(w).numpy().sum() == 0 and nn.init.ones_(w).numpy().min() == 1
    assert np.all(nn.init.constant_(w, 0.25).numpy() == 0.25)


def test_init_is_reproducible_records_no_graph_and_rejects_bad_input():
    p = nn.Parameter(mt.zeros(4, 4))
    mt.manual_seed(1)
    a = nn.init.normal_(p).numpy().copy()
    mt.manual_seed(1)
    np.testing.assert_array_equal(nn.init.normal_(p).numpy(), a)
    assert p.is_leaf and p.requires_grad
    with pytest.raises(TypeError, match='floating-point'):
        nn.init.normal_(mt.zeros(3, dtype='int64'))
    with pytest.raises(ValueError, match='unknown nonlinearity'):
        nn.init.kaiming_normal_(p, nonlinearity='swish')
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_normal_(p, mode='fan_avg')
    assert nn.init.fans(mt.zeros(2, 3)) == (3, 2) and nn.init.fans(mt.zeros(2, 3, 5)) == (15, 10)  # PyTorch's
    with pytest.raises(ValueError, match='2 or more dims'):
        nn.init.fans(mt.zeros(7))
    assert nn.init.calculate_gain('leaky_relu', 0.2) == pytest.approx(math.sqrt(2 / 1.04))


@pytest.mark.filterwarnings('error::RuntimeWarning')  # refused with an error, not numpy's overflow warning
def test_init_values_beyond_the_dtype_are_refused_and_leave_the_tensor_as_it_was():
    p = nn.Parameter(mt.ones(3, 4))
    for fill, kwargs in [(nn.init.normal_, dict(mean=0.0, std=1e300)), (nn.init.normal_, dict(mean=-1e300, std=1e300)),
                         (nn.init.uniform_, dict(a=-1e308, b=1e308))]:
        said = f"nn.init.{fill.__name__}: {', '.join(f'{k}={v}' for k, v in kwargs.items())}: the values overflow"
        with pytest.raises(ValueError, match=re.escape(said + ' float32')):
            fill(p, **kwargs)
        assert p.tolist() == [[1.0] * 4] * 3
    assert np.isfinite(nn.init.normal_(mt.zeros(3, dtype='float64'), std=1e300).numpy()).all()  # float64 holds them


@pytest.mark.filterwarnings('error::RuntimeWarning')
def test_clip_grad_norm_with_a_norm_type_near_zero_is_inf_without_a_warning():
    p = nn.Parameter(mt.zeros(2))
    p.grad = mt.tensor([1.0, 2.0])
    assert nn.utils.clip_grad_norm_([p], max_norm=1.0, norm_type=1e-300) == math.inf  # ||g||_p grows without bound


# ---------------------------------------------------------------------- clip_grad_norm_
def test_clip_grad_norm_scales_all_gradients_to_max_norm():
    a, b = nn.Parameter(mt.zeros(2)), nn.Parameter(mt.zeros(3))
    ga, gb = np.array([3.0, 0.0], np.float32), np.array([0.0, 4.0, 12.0], np.float32)  # norm 13
    a.grad = mt.tensor(ga.copy())
    readonly = gb.copy()
    readonly.flags.writeable = False  # gradient arrays may be read-only views: never written
    b.grad = mt.Tensor._wrap(readonly)
    c = nn.Parameter(mt.zeros(1))  # no gradient: skipped
    total = nn.utils.clip_grad_norm_([a, b, c], max_norm=1.3)
    assert total == pytest.approx(13.0)
    np.testing.assert_allclose(a.grad.numpy(), ga / 10, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), gb / 10, rtol=1e-5)
    np.testing.assert_array_equal(readonly, gb)
    assert c.grad is None and a.grad.dtype == np.float32
    new_norm = math.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in (a, b)))
    assert new_norm == pytest.approx(1.3, rel=1e-5)


def test_clip_grad_norm_leaves_small_gradients_and_supports_inf_norm():
    p = nn.Parameter(mt.zeros(3))
    p.grad = mt.tensor([0.1, -0.2, 0.05])
    grad_before = p.grad
    assert nn.utils.clip_grad_norm_(p, max_norm=1.0) == pytest.approx(math.sqrt(0.0525))
    assert p.grad is grad_before
    p.grad = mt.tensor([0.5, -4.0, 1.0])
    assert nn.utils.clip_grad_norm_([p], max_norm=2.0, norm_type=math.inf) == pytest.approx(4.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.25, -2.0, 0.5], rtol=1e-5)
    assert nn.utils.clip_grad_norm_([nn.Parameter(mt.zeros(2))], 1.0) == 0.0
    with pytest.raises(ValueError, match='clip_grad_norm_: max_norm must be a number >= 0, not -1.0'):
        nn.utils.clip_grad_norm_([p], -1.0)
    with pytest.raises(ValueError, match='norm_type'):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type=0)


# ---------------------------------------------------------------------- writers bump the version
def pending_backward(model):
    """A loss whose backward (retain_graph=True) has run once and needs the model's weights again."""
    loss = (model(mt.tensor([[0.5, -1.0, 2.0]], dtype=model.fc1.weight.dtype)) ** 2).sum()
    loss.backward(retain_graph=True)
    return loss


@pytest.mark.parametrize('write', [
    lambda m: m.load_state_dict(MLP().state_dict()),
    lambda m: m.load_state_dict(m.state_dict()),  # the same values: still a write
    lambda m: nn.init.normal_(m.fc1.weight),
    lambda m: nn.init.xavier_uniform_(m.fc2.weight),
    lambda m: nn.init.zeros_(m.fc1.bias),
    lambda m: m.to(dtype='float64'),
], ids=['load_state_dict', 'load_same_values', 'normal_', 'xavier_uniform_', 'zeros_', 'to(float64)'])
def test_writing_weights_between_two_backward_passes_is_refused(write):
    model = MLP()
    loss = pending_backward(model)
    write(model)
    with pytest.raises(RuntimeError, match='modified in place after the forward pass'):
        loss.backward()


def test_moving_to_the_same_dtype_or_clipping_gradients_writes_no_weight():
    """to() with nothing to change and clip_grad_norm_ (it replaces .grad, never writes an
    array a graph saved) leave a pending backward valid, and it gives the same gradient."""
    model = MLP()
    loss = pending_backward(model)
    first = model.fc1.weight.grad.numpy().copy()
    model.to(dtype='float32')
    nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
    clipped = model.fc1.weight.grad
    model.zero_grad()
    loss.backward()
    np.testing.assert_array_equal(model.fc1.weight.grad.numpy(), first)
    assert np.abs(clipped.numpy()).max() < np.abs(first).max()


@pytest.mark.parametrize('bad', [None, [('fc1.weight', mt.ones(3, 5))], 'weights.npz', 3])
def test_load_state_dict_of_something_else_than_a_dict_is_a_type_error(bad):
    model = MLP()
    before = model.fc1.weight.numpy().copy()
    with pytest.raises(TypeError, match=r"MLP.load_state_dict: expected a dict of \{name: tensor\}"):
        model.load_state_dict(bad)
    np.testing.assert_array_equal(model.fc1.weight.numpy(), before)
    with pytest.raises(TypeError, match='MLP.load_state_dict: strict must be True or False'):
        model.load_state_dict(model.state_dict(), strict='no')


def test_clip_grad_norm_of_a_large_p_is_close_to_the_max_norm():
    """||g||_p -> max |g| as p -> inf; computed as m ||g / m||_p, no |g|**p overflows on the way."""
    p, q = nn.Parameter(mt.zeros(3)), nn.Parameter(mt.zeros(2, dtype='float64'))
    p.grad, q.grad = mt.tensor([3.0, -40.0, 0.5]), mt.tensor([1e-30, 39.0], dtype='float64')
    for norm_type, expected in ((1e300, 40.0), (400.0, 40.0 * (1 + (39 / 40) ** 400) ** (1 / 400)), (1.0, 82.5)):
        assert nn.utils.clip_grad_norm_([p, q], math.inf, norm_type) == pytest.approx(expected, rel=1e-12)
