"""Model files written for PyTorch (tests/pytorch_models/: nanoGPT's, minGPT's, llama2.c's and the "let's
build GPT" lecture's ways of writing a GPT) run on microtensor with only their import lines changed, and
give PyTorch's loss, every parameter's gradient, one AdamW step and greedy generation, from the same
weights: float64 to 1e-10 and float32 to 1e-5, relative to each tensor's largest magnitude."""
import functools
import os
import re
import sys
import types

import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip('torch', reason="the comparison runs the same file on PyTorch: pip install torch "
                                            "--index-url https://download.pytorch.org/whl/cpu")

FOLDER = os.path.join(os.path.dirname(__file__), 'pytorch_models')
# the only lines that change: each import of torch becomes the same import of microtensor
IMPORTS = {'import torch\n': 'import microtensor as torch\n',
           'import torch.nn as nn\n': 'import microtensor.nn as nn\n',
           'from torch import nn\n': 'from microtensor import nn\n',
           'import torch.nn.functional as F\n': 'import microtensor.nn.functional as F\n',
           'from torch.nn import functional as F\n': 'from microtensor.nn import functional as F\n'}
TOLERANCE = {'float64': 1e-10, 'float32': 1e-5}


def load(name, engine):
    """The model file as a module, run on 'torch' or on 'microtensor' (its imports changed, nothing else)."""
    path = os.path.join(FOLDER, name + '.py')
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    if engine == 'microtensor':
        changed = [IMPORTS.get(line, line) for line in lines]
        assert all(new == old or old in IMPORTS for old, new in zip(lines, changed))
        assert any(new != old for old, new in zip(lines, changed)), f"{name}: no import of torch to change"
        lines = changed
    module = types.ModuleType(f"{engine}_{name}")
    module.__file__ = path
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(''.join(lines), path, 'exec'), module.__dict__)
    return module


def tensor_at(model, name):
    return functools.reduce(getattr, name.split('.'), model) if name else model


def to_numpy(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def assert_close(ours, theirs, dtype, what):
    ours, theirs = to_numpy(ours), to_numpy(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch's {theirs.shape}"
    scale = max(float(np.abs(theirs).max()), 1e-30)
    error = float(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)).max()) / scale
    assert error <= TOLERANCE[dtype], f"{what}: off by {error:.2e} of its largest magnitude (tolerance {TOLERANCE[dtype]})"


def twins(name, build, dtype):
    """(PyTorch's model, microtensor's model with the same weights), both in dtype."""
    files = {engine: load(name, engine) for engine in ('torch', 'microtensor')}
    torch.manual_seed(0)
    theirs = build(files['torch']).to(getattr(torch, dtype))
    mt.manual_seed(0)
    ours = build(files['microtensor']).to(dtype=dtype)
    ours.load_state_dict({k: mt.tensor(to_numpy(v)) for k, v in theirs.state_dict().items()})
    for k, v in theirs.named_buffers():  # the unsaved ones too (llama's cos/sin, computed in float32)
        *path, last = k.split('.')
        setattr(tensor_at(ours, '.'.join(path)), last, mt.tensor(to_numpy(v)))
    return files, theirs, ours


MODELS = {
    'nanogpt_style': lambda m: m.GPT(m.GPTConfig()),
    'nanogpt_style, manual attention': lambda m: m.GPT(m.GPTConfig(flash=False, bias=False)),
    'mingpt_style': lambda m: m.GPT(m.GPT.get_default_config()),
    'llama_style': lambda m: m.Transformer(m.ModelArgs()),
    'lecture_style': lambda m: m.GPTLanguageModel(),
}


def file_of(model):
    return model.split(',')[0]


def loss_of(model_name, model, ids, targets):
    out = model(ids, targets)
    return model.last_loss if model_name == 'llama_style' else out[1]


@pytest.mark.parametrize('dtype', ['float64', 'float32'])
@pytest.mark.parametrize('model_name', MODELS)
def test_loss_and_every_gradient_match_pytorch(model_name, dtype):
    files, theirs, ours = twins(file_of(model_name), MODELS[model_name], dtype)
    rng = np.random.default_rng(1)
    vocab = ours.vocab_size if hasattr(ours, 'vocab_size') else getattr(files['microtensor'], 'vocab_size', 37)
    ids = rng.integers(0, vocab, (3, 8))
    targets = rng.integers(0, vocab, (3, 8))
    targets[0, :2] = -1 if model_name != 'lecture_style' else targets[0, :2]  # ignore_index=-1 where the file uses it
    loss_theirs = loss_of(model_name, theirs, torch.tensor(ids), torch.tensor(targets))
    loss_ours = loss_of(model_name, ours, mt.tensor(ids), mt.tensor(targets))
    assert_close(loss_ours, loss_theirs, dtype, 'the loss')
    loss_theirs.backward()
    loss_ours.backward()
    names = [n for n, _ in theirs.named_parameters()]
    assert len(names) == len(list(ours.parameters()))
    for n in names:
        assert_close(tensor_at(ours, n).grad, tensor_at(theirs, n).grad, dtype, f"the gradient of {n}")


# configure_optimizers(...) of each file, and the sizes of its two groups (decay, no decay)
OPTIMIZERS = {
    # nanoGPT: decay for every matrix (2 blocks of 4; wte, tied, once; wpe), none for the 8 vectors of a block, ln_f's
    'nanogpt_style': (lambda files, model: model.configure_optimizers(weight_decay=0.1, learning_rate=1e-2,
                                                                      betas=(0.9, 0.95), device_type='cpu'), [10, 18]),
    # minGPT: decay for the Linear weights only (2 blocks of 4, lm_head), by module type
    'mingpt_style': (lambda files, model: model.configure_optimizers(files.CfgNode(
        weight_decay=0.1, learning_rate=1e-2, betas=(0.9, 0.95))), [9, 20]),
}


@pytest.mark.parametrize('name', OPTIMIZERS)
def test_one_adamw_step_from_configure_optimizers_matches_pytorch(name):
    """The files' own configure_optimizers: parameter groups with and without weight decay."""
    files, theirs, ours = twins(name, MODELS[name], 'float64')
    configure, sizes = OPTIMIZERS[name]
    ids = np.random.default_rng(2).integers(0, 37, (2, 10))
    for engine, model, lib in (('torch', theirs, torch), ('microtensor', ours, mt)):
        opt = configure(files[engine], model)
        assert [len(g['params']) for g in opt.param_groups] == sizes
        _, loss = model(lib.tensor(ids[:, :-1]), lib.tensor(ids[:, 1:]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    for n, p in theirs.named_parameters():
        assert_close(tensor_at(ours, n), p, 'float64', f"{n} after one AdamW step")


@pytest.mark.parametrize('name, greedy', [('nanogpt_style', dict(top_k=1)), ('mingpt_style', dict(do_sample=False)),
                                          ('llama_style', dict(temperature=0.0))])
def test_greedy_generation_gives_pytorchs_tokens(name, greedy):
    files, theirs, ours = twins(name, MODELS[name], 'float64')
    start = np.array([[3, 1, 4], [1, 5, 9]])
    tokens_theirs = theirs.generate(torch.tensor(start), 12, **greedy)
    tokens_ours = ours.generate(mt.tensor(start), 12, **greedy)
    assert tokens_ours.tolist() == tokens_theirs.tolist()
    assert tokens_ours.shape == (2, 15)


def test_the_lecture_loop_trains_and_prints_its_losses(capsys):
    files = load('lecture_style', 'microtensor')
    mt.manual_seed(1337)
    model = files.GPTLanguageModel()
    last = files.train(model, max_iters=30, eval_interval=29)
    printed = capsys.readouterr().out
    steps = re.findall(r"step (\d+): train loss (\d\.\d{4}), val loss (\d\.\d{4})", printed)
    assert [s for s, _, _ in steps] == ['0', '29'] and 'M parameters' in printed
    start = float(steps[0][1])
    assert start == pytest.approx(np.log(files.vocab_size), abs=0.1)  # the initial loss: log(vocab), uniform
    assert last < start - 0.5  # it learns (the exact value is the run's own)
    text = files.decode(model.generate(mt.zeros((1, 1), dtype=mt.long), max_new_tokens=20)[0].tolist())
    assert len(text) == 21 and set(text) <= set(files.chars)


# ---------------------------------------------------------------------------- the learner's tools on these files
# the stack of blocks, the branches of each, where the softmaxes are (named by the innermost module called
# through __call__: llama's attention is called as .forward), heads per block
PROBED = {'nanogpt_style': ('transformer.h', ['attn', 'mlp'], 'transformer.h.{i}.attn', 2),
          'mingpt_style': ('transformer.h', ['attn', 'mlp'], 'transformer.h.{i}.attn', 2),  # mlp: through a lambda
          'llama_style': ('layers', ['attention', 'feed_forward'], 'layers.{i}', 4),
          'lecture_style': ('blocks', ['sa', 'ffwd'], 'blocks.{i}.sa.heads.{h}', 3)}  # a module per head


@pytest.mark.parametrize('name', PROBED)
def test_the_probes_find_the_residual_adds_and_softmaxes_of_a_file_that_names_nothing_as_ours(name):
    from transformer.probes import ResidualProbe, SaturationProbe
    stack, branches, attention, heads = PROBED[name]
    files = {'microtensor': load(name, 'microtensor')}
    mt.manual_seed(0)
    model = MODELS[name](files['microtensor']).to(dtype='float64')
    ids = mt.tensor(np.random.default_rng(3).integers(0, 20, (2, 8)))
    block_outputs = []

    def keep(block, args, out):
        out.retain_grad()
        block_outputs.append(out)
    handles = [block.register_forward_hook(keep) for block in tensor_at(model, stack)]
    with ResidualProbe(model) as residual, SaturationProbe(model) as saturation:
        loss = loss_of(name, model, ids, ids)
        loss.backward()
    for handle in handles:
        handle.remove()
    n_layers = len(tensor_at(model, stack))
    # two residual adds per block, and nothing else (not tok + pos, not the rotation's sums)
    assert [(r.layer, r.branch) for r in residual.records] == [
        (f"{stack}.{i}", b) for i in range(n_layers) for b in branches]
    for i, out in enumerate(block_outputs):  # the second add's y is the block's output: |dL/dy| is via +1
        record = residual.records[2 * i + 1]
        assert record.via_identity == pytest.approx(float(np.linalg.norm(out.grad.numpy())), rel=1e-12)
        assert 0 < record.via_F < record.via_identity
    rows = saturation.rows()
    assert len(rows) == n_layers * heads
    assert {r.attention for r in rows} == {attention.format(i=i, h=h) for i in range(n_layers) for h in range(heads)}
    for r in rows:  # at initialisation the attention is near uniform over the causal prefix
        assert 0 < r.stats.mean_p1p < 0.25 and r.grad_scores is not None and r.grad_scores > 0
        assert r.stats.score_var is not None and np.isfinite(r.stats.score_var)


def test_the_viewer_shows_the_files_own_module_names():
    files = {'microtensor': load('nanogpt_style', 'microtensor')}
    mt.manual_seed(0)
    model = MODELS['nanogpt_style'](files['microtensor'])
    ids = mt.tensor(np.random.default_rng(4).integers(0, 37, (2, 8)))
    with mt.record_modules(model):
        _, loss = model(ids, ids)
    viewer = mt.BackpropViewer(loss, params=model)
    modules = {node.module for node in viewer.nodes}
    assert {'transformer.h.0.attn', 'transformer.h.1.mlp.c_fc', 'transformer.ln_f', 'lm_head'} <= modules
    names = {node.name for node in viewer.nodes if node.kind == 'param'}
    assert 'transformer.h.0.attn.c_attn.weight' in names
    softmaxes = [n for n in viewer.nodes if n.title == 'Softmax']
    assert len(softmaxes) == 2 and {n.module for n in softmaxes} == {'transformer.h.0.attn', 'transformer.h.1.attn'}


def test_a_planted_wrong_gradient_is_caught(monkeypatch):
    """The comparison can fail: Softmax's backward without its "- sum(g p)" term is caught in a file's grads."""
    from microtensor.ops.nn import Softmax
    monkeypatch.setattr(Softmax, 'backward', lambda self, g: (self.output * g,))
    with pytest.raises(AssertionError, match='the gradient of'):
        test_loss_and_every_gradient_match_pytorch('nanogpt_style, manual attention', 'float64')
