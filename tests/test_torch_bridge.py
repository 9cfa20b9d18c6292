"""to_torch / from_torch: every exportable variant computes the same logits and gradients in PyTorch
(1e-5 in float32, 1e-10 in float64), comes back unchanged, and its checkpoints cross over without pickle."""
import os
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import microtensor as mt
import transformer
from microtensor import nn
from transformer import (GPT, EncoderOnly, FeedForward, MultiHeadAttention, Transformer, from_torch,
                         load_microtensor_checkpoint, load_torch_state_dict, save_torch_state_dict, to_torch,
                         use_latent_attention)
from transformer import torch_bridge
from transformer.torch_compare import difference, gradient_differences, side_by_side

torch = pytest.importorskip('torch', reason="the PyTorch bridge needs torch (pip install 'microtensor[torch]')")

TOLERANCE = {'float32': 1e-5, 'float64': 1e-10}
V, D = 11, 8


def replace_attention(model, **options):
    for layer in model.layers:
        layer.self_attn = MultiHeadAttention(D, layer.self_attn.n_heads, **options)
    return model


def gpt(**options):
    return GPT(V, d_model=D, n_layers=2, n_heads=2, max_len=8, init_std=0.3, **options)


def encoder_only(**options):
    return EncoderOnly(V, d_model=D, n_layers=2, n_heads=2, max_len=8, init_std=0.3, pad_id=0, n_classes=3, **options)


def encoder_decoder(**options):
    return Transformer(V, V + 2, d_model=D, n_layers=1, n_heads=2, max_len=8, init_std=0.3, pad_id=0, bos_id=1,
                       **options)


VARIANTS = {
    'gpt': lambda: gpt(),
    'gpt sinusoidal': lambda: gpt(positional='sinusoidal'),
    'gpt rope': lambda: gpt(positional='rope'),
    'gpt alibi': lambda: gpt(positional='alibi'),
    'gpt t5 relative': lambda: gpt(positional='none', relative=True),
    'gpt post-LN': lambda: gpt(norm='post'),
    'gpt RMSNorm': lambda: gpt(norm_type='rms'),
    'gpt post-LN RMSNorm': lambda: gpt(norm='post', norm_type='rms'),
    'gpt BatchNorm': lambda: gpt(norm_type='batch'),
    'gpt GQA': lambda: GPT(V, d_model=D, n_layers=2, n_heads=4, n_kv_heads=2, max_len=8, init_std=0.3),
    'gpt MQA rope': lambda: GPT(V, d_model=D, n_layers=2, n_heads=4, n_kv_heads=1, max_len=8, init_std=0.3,
                                positional='rope'),
    'gpt MLA': lambda: use_latent_attention(gpt(), d_c=4),
    'gpt MLA query latent': lambda: use_latent_attention(gpt(positional='none'), d_c=4, d_rope=2, d_cq=6),
    'gpt shared Q/K': lambda: replace_attention(gpt(), shared_qk=True),
    'gpt learned scale': lambda: replace_attention(gpt(), scale='learned'),
    'gpt scale 1, no bias': lambda: replace_attention(gpt(), scale=1.0, bias=False),
    'gpt gated residual': lambda: gpt(gate=True),
    'gpt scaled residual': lambda: gpt(alpha=0.5),
    'gpt no residual, relu': lambda: gpt(residual=False, activation='relu'),
    'gpt tied': lambda: gpt(tie_weights=True, positional='rope', norm_type='rms', n_kv_heads=1),
    'encoder-only': lambda: encoder_only(),
    'encoder-only alibi post-LN': lambda: encoder_only(positional='alibi', norm='post'),
    'encoder-only rope RMSNorm gated': lambda: encoder_only(positional='rope', norm_type='rms', gate=True),
    'encoder-only t5 relative': lambda: encoder_only(positional='none', relative=True),
    'encoder-decoder': lambda: encoder_decoder(),
    'encoder-decoder rope GQA': lambda: Transformer(V, V + 2, d_model=D, n_layers=1, n_heads=4, n_kv_heads=2,
                                                    max_len=8, init_std=0.3, pad_id=0, positional='rope'),
    'encoder-decoder learned post-LN relative': lambda: encoder_decoder(positional='learned', norm='post',
                                                                        relative=True, alpha=0.7),
}


def batch_for(model):
    """A batch that reaches every parameter: padding where the model has a pad_id, class labels too."""
    if isinstance(model, GPT):
        return mt.randint(0, V, (2, 7))
    ids = mt.tensor([[3, 4, 5, 6, 0, 0], [7, 8, 9, 10, 2, 1]])
    if isinstance(model, EncoderOnly):
        return ids, mt.tensor([[4, 3, -100, 6, -100, -100], [7, 9, 8, 2, 10, 1]]), mt.tensor([2, 0])
    return ids, mt.tensor([[1, 3, 9, 4, 5, 2, 0], [1, 12, 11, 2, 3, 8, 6]])


def check_parity(model, dtype):
    model.to(dtype=dtype)
    result = side_by_side(model, batch_for(model))
    tolerance = TOLERANCE[dtype]
    assert difference(*result['outputs'])[1] <= tolerance
    assert result['unused'] == set()           # the loss reaches every parameter: all of them are compared
    for row in gradient_differences(result['grads']):
        assert row['rel'] <= tolerance, row
    assert result['grads'] and all(abs(theirs).max() > 0 for _, theirs in result['grads'].values())
    return result


@pytest.mark.slow
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('variant', VARIANTS)
def test_every_variant_has_the_same_logits_and_gradients_in_pytorch(variant, dtype):
    check_parity(VARIANTS[variant](), dtype)


@pytest.mark.slow
@pytest.mark.parametrize('variant', VARIANTS)
def test_from_torch_brings_back_the_same_model(variant):
    model = VARIANTS[variant]().double()
    net = to_torch(model)
    back = from_torch(net)
    assert type(back) is type(model) and repr(back) == repr(model)
    assert back.parameters()[0].dtype == mt.float64
    state, again = model.state_dict(), back.state_dict()
    assert list(state) == list(again)
    for name in state:
        assert (state[name].numpy() == again[name].numpy()).all(), name


@given(positional=st.sampled_from(['sinusoidal', 'learned', 'rope', 'alibi', 'none']),
       norm=st.sampled_from(['pre', 'post']), norm_type=st.sampled_from(['layer', 'rms']),
       n_kv_heads=st.sampled_from([None, 1, 2]), gate=st.booleans(), alpha=st.sampled_from([1.0, 0.5]),
       relative=st.booleans(), tie_weights=st.booleans(), n_layers=st.integers(1, 2))
def test_any_combination_of_gpt_options_agrees_in_float64(positional, norm, norm_type, n_kv_heads, gate, alpha,
                                                          relative, tie_weights, n_layers):
    relative = relative and positional != 'alibi'
    model = GPT(V, d_model=D, n_layers=n_layers, n_heads=2, max_len=8, init_std=0.3, positional=positional, norm=norm,
                norm_type=norm_type, n_kv_heads=n_kv_heads, gate=gate, alpha=alpha, relative=relative,
                tie_weights=tie_weights)
    check_parity(model, 'float64')


def test_eval_mode_dtype_and_training_carry_over():
    model = gpt(dropout=0.1, norm_type='batch').eval()
    net = to_torch(model)
    assert not net.training and net.decoder.layers[0].dropout == 0.1
    assert next(net.parameters()).dtype == torch.float32
    ids = mt.randint(0, V, (2, 5))
    assert difference(model(ids).numpy(), net(torch.from_numpy(ids.numpy())).detach().numpy())[1] < 1e-5
    # a step of PyTorch training changes the weights; from_torch brings the new ones
    net.train()
    torch.optim.SGD(net.parameters(), lr=0.1).zero_grad()
    # (the plain sum of the logits has a zero gradient through batch norm: it would change nothing)
    (net(torch.from_numpy(ids.numpy())) ** 2).sum().backward()
    with torch.no_grad():
        for p in net.parameters():
            p -= 0.1 * p.grad
    back = from_torch(net)
    assert back.training
    W = net.decoder.layers[0].self_attn.W_Q.weight.detach().numpy()
    assert (back.layers[0].self_attn.W_Q.weight.numpy() == W.T).all()
    assert not (model.layers[0].self_attn.W_Q.weight.numpy() == W.T).all()


@pytest.mark.slow
def test_layers_that_differ_export_but_do_not_come_back():
    model = gpt()
    model.layers[1].alpha = 0.5
    check_parity(model, 'float64')
    with pytest.raises(ValueError, match=r"differs from what GPT\(\*\*module.config\) builds.*alpha=0.5"):
        from_torch(to_torch(model))


def test_what_cannot_be_exported_is_refused_by_name():
    class MyFeedForward(FeedForward):
        pass

    with pytest.raises(TypeError, match="exports the transformer models GPT, EncoderOnly and Transformer, not Linear"):
        to_torch(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="exports .* not RNN"):
        to_torch(transformer.RNN(2, 3))
    model = gpt()
    model.layers[1].ffn = MyFeedForward(D)
    with pytest.raises(TypeError, match=r"decoder\.layers\.1\.ffn is a MyFeedForward, which has no PyTorch twin"):
        to_torch(model)
    model = gpt()
    model.layers[0].extra = nn.Linear(D, D)   # a module the layer's forward never calls: the twin has no place for it
    with pytest.raises(KeyError, match=r"not in the model \['decoder\.layers\.0\.extra\.weight'"):
        to_torch(model)
    with pytest.raises(TypeError, match="reads modules made by to_torch .* not a torch.nn.modules.linear.Linear"):
        from_torch(torch.nn.Linear(2, 2))


def test_without_torch_the_bridge_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, 'torch', None)   # `import torch` now fails
    with pytest.raises(ImportError, match=r"needs torch.*pip install 'microtensor\[torch\]'"):
        to_torch(gpt())


# ---------------------------------------------------------------------------- the name table
def test_the_documented_table_is_the_table_the_code_uses():
    rows = re.findall(r"^    (\w+) {2,}([\w, ]+?) {2,}([\w, ]+?) {2,}(transposed|the same)",
                      torch_bridge.__doc__, re.M)
    documented = {}
    for module, ours, theirs, values in rows:
        for a, b in zip(ours.split(', '), theirs.split(', ')):
            documented[module, a] = (b, values == 'transposed')
    documented['BatchNorm1d', 'running_mean'] = ('running_mean', False)   # "running_mean, running_var too"
    documented['BatchNorm1d', 'running_var'] = ('running_var', False)
    assert documented == torch_bridge.NAMES


def test_every_name_maps_by_the_table_and_only_linear_weights_are_transposed():
    model = replace_attention(gpt(norm_type='rms', positional='none', relative=True), scale='learned')
    net = to_torch(model)
    modules, names = dict(net.named_modules()), dict(model.named_parameters())
    for name, value in net.state_dict().items():
        path, last = name.rsplit('.', 1)
        ours, = [n for (cls, n), (theirs, _) in torch_bridge.NAMES.items()
                 if torch_bridge.TORCH_CLASSES.get(cls, cls) == type(modules[path]).__name__ and theirs == last]
        mine = names[f"{path}.{ours}"].numpy()
        linear_weight = isinstance(modules[path], torch.nn.Linear) and last == 'weight'
        assert (value.numpy() == (mine.T if linear_weight else mine)).all(), name


# ---------------------------------------------------------------------------- checkpoints
def test_an_mt_save_file_loads_into_the_exported_module(tmp_path):
    model = gpt(positional='rope')
    mt.save({'model': model.state_dict(), 'step': 3}, tmp_path / 'ckpt.npz')
    mt.save(model.state_dict(), tmp_path / 'bare.npz')
    ids = torch.randint(0, V, (2, 6))
    expected = model(mt.tensor(ids.numpy())).numpy()
    for name in ('ckpt.npz', 'bare.npz'):
        net = to_torch(gpt(positional='rope'))          # other weights
        assert difference(net(ids).detach().numpy(), expected)[0] > 1e-2
        assert load_microtensor_checkpoint(net, tmp_path / name) is net
        assert difference(net(ids).detach().numpy(), expected)[1] < 1e-5
    mt.save({'model': GPT(V, d_model=D, n_layers=1, n_heads=2, max_len=8).state_dict()}, tmp_path / 'other.npz')
    with pytest.raises(KeyError, match=r"missing 'decoder\.layers\.1\.self_attn\.W_Q\.weight'"):
        load_microtensor_checkpoint(net, tmp_path / 'other.npz')


def test_a_pytorch_state_dict_saved_as_npz_loads_into_microtensor_without_pickle(tmp_path, monkeypatch):
    import numpy
    net = to_torch(replace_attention(gpt(), shared_qk=True))
    path = tmp_path / 'net.npz'
    save_torch_state_dict(net, path)
    with numpy.load(path, allow_pickle=False) as archive:      # PyTorch's names and layout, plain arrays
        assert sorted(archive.files) == sorted(net.state_dict())
        assert archive['decoder.layers.0.self_attn.W_K.weight'].shape == (D, D)
        assert (archive['lm_head.weight'] == net.lm_head.weight.detach().numpy()).all()
    monkeypatch.setitem(sys.modules, 'torch', None)             # microtensor alone reads it
    model = load_torch_state_dict(replace_attention(gpt(), shared_qk=True), path)
    assert (model.lm_head.weight.numpy() == net.lm_head.weight.detach().numpy().T).all()
    assert (model.layers[1].norm1.gamma.numpy() == net.decoder.layers[1].norm1.weight.detach().numpy()).all()
    # the two names of the shared W_Q = W_K must hold one matrix
    arrays = dict(numpy.load(path, allow_pickle=False))
    arrays['decoder.layers.0.self_attn.W_K.weight'] = arrays['decoder.layers.0.self_attn.W_K.weight'] + 1
    numpy.savez(tmp_path / 'bad.npz', **arrays)
    with pytest.raises(KeyError, match="W_K.weight' differs from the 'decoder.layers.0.self_attn.W_Q.weight'"):
        load_torch_state_dict(model, tmp_path / 'bad.npz')
    numpy.savez(tmp_path / 'pickled.npz', **dict(arrays, extra=numpy.array([{'a': 1}], dtype=object)))
    with pytest.raises(ValueError, match="member 'extra.npy'.*only pickle can read") as refused:
        load_torch_state_dict(model, tmp_path / 'pickled.npz')
    assert 'allow_pickle' not in str(refused.value)  # never advised: a pickle can run any code


def test_the_readme_section_runs_as_printed(tmp_path, monkeypatch, capsys):
    from readme import python_blocks
    monkeypatch.chdir(tmp_path)                           # it writes gpt.npz and net.npz
    blocks = python_blocks('Graduating to PyTorch')
    assert len(blocks) == 3
    from demos import train_gpt
    trained = train_gpt.train(steps=4, ckpt_every=4, out=os.path.join('runs', 'train_gpt'), d_model=16, n_layers=1,
                              n_heads=2, context=16, batch_size=4)  # (a short run: what the README's command writes)
    capsys.readouterr()
    namespace = {}
    for block in blocks:
        exec(compile(block, 'README.md', 'exec'), namespace)
    out = capsys.readouterr().out
    assert 0 < float(out.split('\n')[0]) < 1e-5
    assert 'largest relative difference' in out
    assert isinstance(namespace['back'], GPT) and (tmp_path / 'net.npz').exists()
    sampled = namespace['ids'][0].tolist()
    assert len(sampled) == len('Twinkle') + 60 and namespace['chars'].decode(sampled).startswith('Twinkle')
    assert namespace['chars'].vocab == trained['chars'].vocab
    assert namespace['chars'].decode(sampled) in out
