"""The names a PyTorch model file reaches for beyond the ops: dtype names (torch.long), f-string
formatting of a loss, a 0-d integer tensor as an index, inference_mode, nn.ModuleDict and
torch.cuda.manual_seed_all, each meaning what it means in PyTorch."""
import numpy as np
import pytest

import microtensor as mt
from microtensor import nn


@pytest.mark.parametrize('name, dtype', [('long', 'int64'), ('int', 'int32'), ('short', 'int16'), ('float', 'float32'),
                                         ('double', 'float64'), ('half', 'float16'), ('bool', 'bool')])
def test_pytorchs_dtype_names(name, dtype):
    assert getattr(mt, name) == np.dtype(dtype)
    assert mt.zeros(2, dtype=getattr(mt, name)).dtype == dtype
    torch = pytest.importorskip('torch', reason='PyTorch names the same dtype')
    assert str(getattr(torch, name)) == f'torch.{dtype}'


def test_a_0d_tensor_formats_as_its_number():
    loss = mt.tensor(1.234567)
    assert f"{loss:.4f}" == '1.2346' and f"step 3: loss {loss:8.2f}" == 'step 3: loss     1.23'
    assert f"{mt.tensor(7):03d}" == '007' and f"{loss}" == str(loss)
    with pytest.raises(TypeError, match=r"format: the spec '.2f' needs a 0-d tensor .*shape \(2,\)"):
        f"{mt.ones(2):.2f}"


def test_a_one_element_integer_tensor_is_an_index():
    i = mt.tensor(2)
    data = list(range(10))
    assert data[i:i + 3] == [2, 3, 4] and data[mt.tensor([4])] == 4 and len(range(mt.tensor(3, dtype='uint8'))) == 3
    assert data[mt.tensor(True)] == 1  # as in PyTorch
    for bad in (mt.tensor(1.0), mt.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element can be an index"):
            data[bad]


def test_inference_mode_records_no_graph_as_no_grad_does():
    x = mt.ones(2, requires_grad=True)
    with mt.inference_mode():
        assert not (x * 2).requires_grad
    with mt.inference_mode(False):  # changes nothing
        assert (x * 2).requires_grad

    @mt.inference_mode
    def bare():
        return mt.is_grad_enabled()

    @mt.inference_mode()
    def called():
        return mt.is_grad_enabled()
    assert bare() is False and called() is False and mt.is_grad_enabled()
    with mt.no_grad(), mt.inference_mode(False):
        assert not mt.is_grad_enabled()  # (False leaves the mode as it was: off here)
    with pytest.raises(TypeError, match="inference_mode: mode must be True or False"):
        mt.inference_mode('yes')


def test_module_dict_registers_its_modules_by_name():
    blocks = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])
    d = nn.ModuleDict(dict(wte=nn.Linear(2, 3), h=blocks))
    assert d.wte is d['wte'] and d.h is blocks and 'h' in d and len(d) == 2 and list(d) == ['wte', 'h']
    assert [n for n, _ in d.named_parameters()] == ['wte.weight', 'wte.bias', 'h.0.weight', 'h.0.bias',
                                                   'h.1.weight', 'h.1.bias']
    d.update([('ln_f', nn.Linear(3, 3))])
    d['head'] = nn.Linear(3, 1)
    del d['ln_f']
    assert list(d.keys()) == ['wte', 'h', 'head'] and [k for k, _ in d.items()] == list(d)
    model = nn.Module()
    model.transformer = d
    assert 'transformer.h.1.bias' in model.state_dict() and 'transformer.ln_f.weight' not in model.state_dict()


def test_module_dict_refuses_what_is_not_a_module_by_name():
    with pytest.raises(TypeError, match=r"ModuleDict: modules\['w'\] is .*, not a Module"):
        nn.ModuleDict(dict(w=mt.ones(2)))
    with pytest.raises(TypeError, match=r"ModuleDict: modules\[0\] is .*, not a \(name, Module\) pair"):
        nn.ModuleDict([nn.Linear(2, 2)])
    with pytest.raises(TypeError, match="ModuleDict: modules must be a dict of name: Module"):
        nn.ModuleDict(nn.Linear(2, 2))
    with pytest.raises(KeyError, match=r"ModuleDict has no module 'x'; it has \['a'\]"):
        nn.ModuleDict(dict(a=nn.Linear(2, 2)))['x']
    with pytest.raises(NotImplementedError, match="ModuleDict has no forward"):
        nn.ModuleDict()(mt.ones(2))


def test_cuda_manual_seed_all_seeds_what_manual_seed_seeds():
    mt.cuda.manual_seed_all(5)
    first = mt.randn(4).numpy()
    mt.manual_seed(5)
    np.testing.assert_array_equal(first, mt.randn(4).numpy())


def test_multinomial_draws_by_weight_and_refuses_what_is_no_distribution():
    mt.manual_seed(0)
    first = mt.multinomial(mt.tensor([[0.0, 1.0, 3.0]]).expand(4000, 3), 2)
    assert first.shape == (4000, 2) and first.dtype == 'int64'
    ids = first.numpy()
    assert (ids != 0).all() and (ids[:, 0] != ids[:, 1]).all()  # weight 0 never; no id twice in a row
    assert abs((ids[:, 0] == 2).mean() - 0.75) < 0.03  # the first draw: class 2 with probability 3/4
    assert mt.multinomial(mt.tensor([1.0, 1.0]), 5, replacement=True).shape == (5,)
    for weights, n, message in ((mt.tensor([1.0, -1.0]), 1, 'finite, >= 0'), (mt.tensor([0.0, 0.0]), 1, 'positive sum'),
                                (mt.tensor([1.0, 0.0]), 2, 'need at least 2 classes of weight > 0')):
        with pytest.raises(RuntimeError, match=message):
            mt.multinomial(weights, n)
    with pytest.raises(mt.DTypeError, match="multinomial: the weights must be floating-point"):
        mt.multinomial(mt.tensor([1, 2]), 1)
    with pytest.raises(mt.ShapeError, match=r"multinomial: the weights must be \(C,\) or \(rows, C\)"):
        mt.multinomial(mt.ones(2, 2, 2), 1)


def walk(fn, seen):
    """The names of the nodes reachable from fn through next_functions, each once (as torchviz walks)."""
    if fn is None or id(fn) in seen:
        return []
    seen.add(id(fn))
    return [fn.name()] + [n for child, _ in fn.next_functions for n in walk(child, seen)]


def test_grad_fn_and_next_functions_walk_the_graph_as_in_pytorch():
    w = mt.ones(3, 2, requires_grad=True)
    x = mt.ones(4, 3)
    y = (x @ w).tanh().sum()
    assert y.grad_fn is y.creator and y.grad_fn.name() == 'Sum' and w.grad_fn is None
    assert walk(y.grad_fn, set()) == ['Sum', 'Tanh', 'MatMul', 'AccumulateGrad']
    (matmul_x, _), (leaf, _) = y.grad_fn.next_functions[0][0].next_functions[0][0].next_functions
    assert matmul_x is None and leaf.variable is w  # x is a constant: None, as in PyTorch
    z = w * w  # a leaf used twice meets one node
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]
    torch = pytest.importorskip('torch', reason='PyTorch walks the same graph')
    tw = torch.ones(3, 2, requires_grad=True)
    ty = (torch.ones(4, 3) @ tw).tanh().sum()
    torch_names = {'SumBackward0': 'Sum', 'TanhBackward0': 'Tanh', 'MmBackward0': 'MatMul',
                   'torch::autograd::AccumulateGrad': 'AccumulateGrad'}
    names = [torch_names[n] for n in walk(ty.grad_fn, set())]
    assert names == walk(y.grad_fn, set())


def test_the_loss_modules_are_pytorchs():
    torch = pytest.importorskip('torch', reason="PyTorch's loss modules are the reference")
    rng = np.random.default_rng(0)
    logits, targets, weight = rng.standard_normal((4, 5, 3)), rng.integers(0, 5, (4, 3)), rng.random(5)
    targets[0, 1] = -100  # ignored by default, as in PyTorch
    for options in ({}, dict(reduction='sum'), dict(label_smoothing=0.2), dict(reduction='none')):
        ours = nn.CrossEntropyLoss(weight=mt.tensor(weight), **options)(mt.tensor(logits), mt.tensor(targets))
        theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight), **options)(torch.tensor(logits),
                                                                                  torch.tensor(targets))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    logp = mt.tensor(logits).log_softmax(1)
    np.testing.assert_allclose(nn.NLLLoss()(logp, mt.tensor(targets)).item(),
                               torch.nn.NLLLoss()(torch.tensor(logits).log_softmax(1), torch.tensor(targets)).item())
    np.testing.assert_allclose(nn.SiLU()(mt.tensor([-2.0, 0.5])).numpy(),
                               torch.nn.SiLU()(torch.tensor([-2.0, 0.5])).numpy(), rtol=1e-6)


@pytest.mark.parametrize('fused, layer, runs', [(True, False, True), (False, True, False), (None, True, True),
                                                (None, False, False)])
def test_adams_fused_argument_chooses_the_compiled_loop(monkeypatch, fused, layer, runs):
    """AdamW(fused=True) runs the fused Adam loop whatever mt.fused() says, fused=False never does, and
    None follows mt.fused(), as PyTorch's fused= (where the compiled loop can run)."""
    from microtensor.fused import compiled
    if compiled.library() is None or not compiled.enabled:
        pytest.skip("no C compiler (cc, or $CC) here, or MICROTENSOR_COMPILED=0: Adam runs its formulas")
    calls = []
    real = compiled.run_for_each
    monkeypatch.setattr(compiled, 'run_for_each', lambda name, *a, **k: calls.append(name) or real(name, *a, **k))
    p = nn.Parameter(mt.ones(3))
    opt = mt.optim.AdamW([p], lr=0.1, fused=fused)
    p.grad = mt.ones(3)
    with mt.fused(layer):
        opt.step()
    assert (calls == ['adam']) is runs
    np.testing.assert_allclose(p.numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-6)  # decay, then one Adam step of -lr
    with pytest.raises(TypeError, match="AdamW: fused must be True or False"):
        mt.optim.AdamW([p], fused='yes')


class Tied(nn.Module):
    """nanoGPT's tying: the output layer's weight is the embedding's."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Linear(3, 4)
        self.lm_head = nn.Linear(3, 4)
        self.lm_head.weight = self.wte.weight


def test_a_tied_weight_is_in_the_state_dict_under_each_name_and_loads_from_either():
    model = Tied()
    state = model.state_dict()
    assert set(state) == {'wte.weight', 'wte.bias', 'lm_head.weight', 'lm_head.bias'}
    assert state['wte.weight'].data is state['lm_head.weight'].data  # one tensor, two names, as in PyTorch
    assert [n for n, _ in model.named_parameters()] == ['wte.weight', 'wte.bias', 'lm_head.bias']  # trained once
    other = Tied()
    assert other.load_state_dict(state) == ([], [])  # PyTorch's state_dict of a tied model: both names
    np.testing.assert_array_equal(other.lm_head.weight.numpy(), model.wte.weight.numpy())
    del state['lm_head.weight']
    assert other.load_state_dict(state) == ([], [])  # (one name of the tied tensor is enough)
    del state['wte.weight']
    with pytest.raises(RuntimeError, match=r"missing keys .*'wte.weight', 'lm_head.weight'"):
        other.load_state_dict(state)


@pytest.mark.parametrize('make', [
    lambda lib: lib.nn.LayerNorm((4, 5)), lambda lib: lib.nn.LayerNorm(5, eps=1e-3, bias=False),
    lambda lib: lib.nn.LayerNorm(5, elementwise_affine=False), lambda lib: lib.nn.RMSNorm(5),
    lambda lib: lib.nn.RMSNorm((4, 5), eps=1e-3), lambda lib: lib.nn.RMSNorm(5, elementwise_affine=False),
], ids=['LayerNorm (4, 5)', 'LayerNorm no bias', 'LayerNorm not affine', 'RMSNorm eps None', 'RMSNorm (4, 5)',
        'RMSNorm not affine'])
def test_the_norm_layers_are_pytorchs(make):
    """Values and every gradient as PyTorch's layer with the same parameters, and a gradient check."""
    from module_check import gradcheck_module
    torch = pytest.importorskip('torch', reason="PyTorch's layers are the reference")
    rng = np.random.default_rng(1)
    x, up = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 4, 5))
    ours, theirs = make(mt).to(dtype='float64'), make(torch).double()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        value = rng.standard_normal(p.shape)
        p.data[...] = value
        q.data.copy_(torch.from_numpy(value))
    a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ours(a) * mt.tensor(up)).sum().backward()
    (theirs(b) * torch.from_numpy(up)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    assert gradcheck_module(ours, mt.tensor(x[:1, :1]))


def test_embedding_is_pytorchs_and_its_padding_row_learns_nothing():
    torch = pytest.importorskip('torch', reason="PyTorch's Embedding is the reference")
    ours, theirs = nn.Embedding(6, 3, padding_idx=-1), torch.nn.Embedding(6, 3, padding_idx=-1).double()
    assert ours.padding_idx == theirs.padding_idx == 5 and not ours.weight.numpy()[5].any()
    theirs.weight.data.copy_(torch.from_numpy(ours.weight.numpy()))
    ids = np.array([[0, 5, 2], [5, 5, 1]])
    (ours(mt.tensor(ids)) * 2).sum().backward()
    (theirs(torch.from_numpy(ids)) * 2).sum().backward()
    np.testing.assert_array_equal(ours.weight.grad.numpy(), theirs.weight.grad.numpy())
    assert not ours.weight.grad.numpy()[5].any()
