"""Arguments that used to end in an internal error (a comparison of str and int, a KeyError, a
concatenate deep inside attention) now give a clear error naming the function and the argument,
or work as in PyTorch.

Every public constructor and helper of microtensor.nn and transformer is called here with each of
its parameters replaced by bad values of every kind (hypothesis): the outcome is the object, or
a ValueError / TypeError / IndexError that names the callee and the argument, never another
exception.  A new public name that is not in the table fails the test, so none is left out.
"""
import inspect

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import microtensor as mt
import transformer
from microtensor import nn
from module_check import gradcheck_module
from transformer import GPT, KVCache, MultiHeadAttention, Transformer, generate
from transformer.mla import use_latent_attention

TINY = dict(d_model=8, n_heads=2, n_layers=1, max_len=8)
# a valid call of every public callable: {callable: its keyword arguments}
VALID = {
    nn.Linear: dict(in_features=2, out_features=3), nn.Dropout: {}, nn.GELU: {}, nn.ModuleList: {}, nn.ModuleDict: {},
    nn.CrossEntropyLoss: {}, nn.NLLLoss: {}, nn.BCELoss: {}, nn.BCEWithLogitsLoss: {}, nn.Flatten: {},
    nn.Unflatten: dict(dim=1, unflattened_size=(2, 2)),
    nn.Conv1d: dict(in_channels=2, out_channels=4, kernel_size=3), nn.Conv2d: dict(in_channels=2, out_channels=4,
                                                                                   kernel_size=3),
    nn.Conv3d: dict(in_channels=2, out_channels=4, kernel_size=3), nn.Embedding: dict(num_embeddings=5, embedding_dim=3),
    nn.LayerNorm: dict(normalized_shape=4), nn.RMSNorm: dict(normalized_shape=4),
    transformer.TokenEmbedding: dict(vocab_size=5, d_model=4), transformer.FeedForward: dict(d_model=4),
    transformer.LayerNorm: dict(d_model=4), transformer.RMSNorm: dict(d_model=4),
    transformer.BatchNorm1d: dict(num_features=4), transformer.SinusoidalPositionalEncoding: dict(d_model=4),
    transformer.LearnedPositionalEmbedding: dict(max_len=4, d_model=4), transformer.RotaryEmbedding: dict(d_k=4),
    transformer.RelativePositionBias: dict(n_heads=2), transformer.ResidualGate: dict(d_model=4),
    transformer.Projection: dict(in_features=2, out_features=3),
    transformer.MultiHeadAttention: dict(d_model=8, n_heads=2),
    transformer.MultiHeadLatentAttention: dict(d_model=8, n_heads=2, d_c=4),
    transformer.EncoderLayer: dict(d_model=8, n_heads=2), transformer.DecoderLayer: dict(d_model=8, n_heads=2),
    transformer.Encoder: dict(n_layers=1, d_model=8, n_heads=2),
    transformer.Decoder: dict(n_layers=1, d_model=8, n_heads=2),
    transformer.GPT: dict(vocab_size=7, **TINY), transformer.EncoderOnly: dict(vocab_size=7, **TINY),
    transformer.Transformer: dict(src_vocab=5, tgt_vocab=6, **TINY),
    transformer.Embed: dict(vocab_size=5, d_model=4, max_len=4, positional='learned'),
    transformer.RNNCell: dict(d_in=2, d_hidden=3), transformer.RNN: dict(d_in=2, d_hidden=3),
    transformer.alibi_bias: dict(n_heads=2, T_q=3, T_k=3), transformer.alibi_slopes: dict(n_heads=2),
    transformer.relative_position_bucket: dict(n=3), transformer.causal_mask: dict(T_q=3),
    transformer.padding_mask: dict(ids=[[1, 0]], pad_id=0),
    transformer.mlm_mask: dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8),
    transformer.shift_right: dict(tgt=mt.tensor([[1, 2, 3]]), bos_id=0),
    transformer.top_k_filter: dict(logits=mt.randn(1, 5), k=2), transformer.pick_next: dict(logits=mt.randn(1, 5)),
    transformer.gpt2_init: dict(model=nn.Linear(2, 2), n_layers=1),
    nn.init.calculate_gain: {}, nn.init.uniform_: dict(tensor=mt.zeros(2, 2)),
    nn.init.normal_: dict(tensor=mt.zeros(2, 2)), nn.init.constant_: dict(tensor=mt.zeros(2, 2), value=1.0),
    nn.init.xavier_uniform_: dict(tensor=mt.zeros(2, 2)), nn.init.xavier_normal_: dict(tensor=mt.zeros(2, 2)),
    nn.init.kaiming_uniform_: dict(tensor=mt.zeros(2, 2)), nn.init.kaiming_normal_: dict(tensor=mt.zeros(2, 2)),
}
# public names that take no size, rate or option of their own (or are tested with their own inputs elsewhere)
ELSEWHERE = {'KVCache', 'Module', 'Parameter', 'Sequential', 'ReLU', 'Tanh', 'Sigmoid', 'SiLU', 'combine', 'generate',
             'next_token_loss', 'seq2seq_loss', 'mlm_loss', 'masked_accuracy', 'residual_connection',
             'scaled_dot_product_attention', 'use_latent_attention', 'fans', 'zeros_', 'ones_', 'article_data',
             'article_checks',
             # the PyTorch bridge: needs torch; tests/test_torch_bridge.py and test_compare_with_torch.py check it
             'compare_with_torch', 'from_torch', 'to_torch', 'load_torch_state_dict', 'save_torch_state_dict',
             'load_microtensor_checkpoint',
             # the modules made by nn.activations.from_function: their settings are the F functions',
             # checked when called (tests/test_activations.py), as PyTorch's modules do
             'from_function', 'MaxPool2d', 'AvgPool2d', 'AvgPool3d', 'MSELoss', 'L1Loss', 'SmoothL1Loss', 'HuberLoss', 'KLDivLoss',
             'Identity',  # (takes any arguments and ignores them, as PyTorch's)
             'Softplus', 'LeakyReLU', 'ELU', 'CELU', 'SELU', 'Mish', 'Hardtanh', 'ReLU6', 'Hardsigmoid', 'Hardswish', 'LogSigmoid', 'Softsign', 'Softmin', 'Softmax', 'LogSoftmax'}
BAD = st.sampled_from(['0.5', '', None, 2.5, -1, 0, True, [1], (1, 2), {}, float('nan'), float('inf'), 1j,
                       np.float64(0.5), mt.tensor(2), object()])


def public_callables():
    found = {}
    for module in (transformer, nn, nn.init):
        for name in getattr(module, '__all__', dir(module)):
            value = getattr(module, name)
            if not name.startswith('_') and callable(value) and getattr(value, '__module__', '').startswith(
                    ('transformer', 'microtensor.nn')):
                found[name] = value
    return found


def test_the_table_covers_every_public_constructor_and_helper():
    missing = sorted(name for name, f in public_callables().items() if f not in VALID and name not in ELSEWHERE)
    assert not missing, f"add these to VALID (or ELSEWHERE, saying why): {missing}"


def parameters(f):
    return [p.name for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in ('self', 'dtype', 'device')]


CASES = [(f, name) for f in VALID for name in parameters(f)]


@settings(max_examples=8, deadline=None)
@pytest.mark.parametrize('f, argument', CASES, ids=[f"{f.__name__}-{a}" for f, a in CASES])
@given(value=BAD)
def test_a_bad_argument_is_a_clear_error_naming_it(f, argument, value):
    try:
        f(**{**VALID[f], argument: value})
    except (ValueError, TypeError, IndexError) as error:
        message = str(error)
        assert f.__name__.strip('_') in message or 'nn.init' in message, message
        assert argument in message or argument.replace('_', ' ') in message or (
            argument == 'tensor' and 'Tensor' in message), message


# ---------------------------------------------------------------------------- the named examples
def test_module_list_indices_follow_a_lists_rule():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Tanh()])
    assert layers[-1] is layers[1] and layers[np.int64(0)] is layers[0] and len(layers[0:1]) == 1
    for index in (0.5, '0', True, None):
        with pytest.raises(TypeError, match=r"ModuleList: index must be an integer, not"):
            layers[index]
    with pytest.raises(IndexError, match='index 2 out of range for 2 modules'):
        layers[2]
    with pytest.raises(TypeError, match=r"ModuleList: modules must be an iterable of Modules .*not None"):
        nn.ModuleList(None)


@pytest.mark.parametrize('p, error', [('0.5', TypeError), (None, TypeError), (1.5, ValueError),
                                      (float('nan'), ValueError)])
def test_dropout_names_p(p, error):
    with pytest.raises(error, match=r"Dropout: p must be a finite number in \[0, 1\], not"):
        nn.Dropout(p)


@pytest.mark.parametrize('options, message', [
    (dict(n_heads=0), 'n_heads must be an integer >= 1, not 0'),
    (dict(n_heads=2.5), 'n_heads must be an integer >= 1, not float 2.5'),
    (dict(n_heads=-1), 'n_heads must be an integer >= 1, not -1'),
    (dict(n_heads=2, num_buckets='32'), "num_buckets must be an integer >= 4, not str '32'"),
    (dict(n_heads=2, num_buckets=None), 'num_buckets must be an integer >= 4, not None'),
    (dict(n_heads=2, max_distance='far'), "max_distance must be an integer >= 1, not str 'far'"),
    (dict(n_heads=2, max_distance=8), 'max_distance must be beyond the 8 exact distances of num_buckets=32, not 8'),
])
def test_relative_position_bias_names_its_argument(options, message):
    with pytest.raises((TypeError, ValueError), match='RelativePositionBias: ' + message):
        transformer.RelativePositionBias(**options)


@pytest.mark.parametrize('options, message', [
    (dict(p='0.15'), "p must be a finite number in \\[0, 1\\], not str '0.15'"),
    (dict(vocab_size='8'), "vocab_size must be an integer >= 1, not str '8'"),
    (dict(vocab_size=8.5), 'vocab_size must be an integer >= 1, not float 8.5'),
    (dict(mask_id=-1), 'mask_id must be an integer >= 0, not -1'),
])
def test_mlm_mask_names_its_argument(options, message):
    with pytest.raises((TypeError, ValueError), match='mlm_mask: ' + message):
        transformer.mlm_mask(mt.tensor([[1, 2, 3]]), **{'mask_id': 9, 'vocab_size': 8, **options})


def test_a_kv_cache_serves_one_batch_size():
    model = GPT(10, **TINY)
    cache = model.new_cache()
    model(mt.tensor([[1, 2], [3, 4]]), cache=cache)
    with pytest.raises(ValueError, match=r"GPT: cache\[0\] \(layer 0's KVCache\) holds the keys of a batch of 2, "
                                         r"but this input is a batch of 3"):
        model(mt.tensor([[1], [2], [3]]), cache=cache)
    attention, own = MultiHeadAttention(8, 2), KVCache()
    attention(mt.randn(2, 3, 8), cache=own)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: cache \(a KVCache\) holds the keys of a batch of 2, "
                                         r"but this input is a batch of 1"):
        attention(mt.randn(1, 1, 8), cache=own)
    with pytest.raises(TypeError, match='MultiHeadAttention: cache must be a KVCache, not list'):
        attention(mt.randn(1, 1, 8), cache=[own])
    seq2seq = Transformer(5, 6, **TINY)
    memory, mask = seq2seq.encode(mt.tensor([[1, 2]]))
    cache = seq2seq.new_cache()
    seq2seq.decode(mt.tensor([[0]]), memory, mask, cache=cache)
    with pytest.raises(ValueError, match=r"Transformer.decode: cache\[0\] .* a batch of 1, but this input is a "
                                         r"batch of 2"):
        seq2seq.decode(mt.tensor([[0], [1]]), memory, mask, cache=cache)
    latent = use_latent_attention(GPT(10, **TINY), d_c=4)
    cache = latent.new_cache()
    latent(mt.tensor([[1, 2]]), cache=cache)
    with pytest.raises(ValueError, match='a batch of 1, but this input is a batch of 2'):
        latent(mt.tensor([[1], [2]]), cache=cache)
    assert generate(model, [[1, 2], [3, 4]], 3).shape == (2, 5)  # a fresh cache per call still works


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 3), max_size=3).map(tuple),
       form=st.sampled_from(['tensor', 'array', 'list']), through=st.sampled_from(['backward', 'mt.grad']))
def test_a_bool_gradient_is_cast_to_the_outputs_dtype(shape, form, through):
    """As PyTorch: True counts as 1.0 (numpy cannot negate a bool array: once an internal TypeError)."""
    if through == 'mt.grad':
        form = 'tensor'  # mt.grad takes Tensors (a list is one gradient per output)
    x = mt.randn(*shape, requires_grad=True)
    y = -x
    mask = np.ones(shape, dtype=bool)
    g = {'tensor': mt.tensor(mask), 'array': mask, 'list': mask.tolist()}[form]
    if through == 'backward':
        y.backward(g)
        grad = x.grad
    else:
        grad = mt.grad(y, x, grad_outputs=g)[0]
    assert grad.dtype == mt.float32
    np.testing.assert_array_equal(grad.numpy(), -np.ones(shape))


@settings(deadline=None)
@given(rows=st.integers(0, 4), cols=st.integers(0, 3), shape=st.sampled_from([(0,), (2, 0), (0, 3)]),
       dtype=st.sampled_from(['int64', 'int32', 'uint8']))
def test_empty_ids_give_a_zero_gradient_as_in_pytorch(rows, cols, shape, dtype):
    """x[ids] with no ids (a (0, 3) table included), then backward: zeros, the shape of x."""
    torch = pytest.importorskip('torch', reason='PyTorch (the reference) is not installed')
    table = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    ids = np.zeros(shape, dtype=dtype)
    x = mt.tensor(table, requires_grad=True)
    out = x[mt.tensor(ids)]
    (out * 2).sum().backward()
    reference = torch.tensor(table, requires_grad=True)
    picked = reference[torch.from_numpy(ids.astype(np.int64))]
    (picked * 2).sum().backward()
    assert out.shape == tuple(picked.shape)
    np.testing.assert_array_equal(x.grad.numpy(), reference.grad.numpy())


@pytest.mark.slow
def test_shared_qk_works_through_the_models():
    ids = mt.tensor([[1, 2, 3]])
    for model in (GPT(10, shared_qk=True, **TINY), transformer.EncoderOnly(10, shared_qk=True, **TINY),
                  Transformer(10, 10, shared_qk=True, **TINY)):
        for layer in model.layers:
            assert layer.self_attn.W_K is layer.self_attn.W_Q
            cross = getattr(layer, 'cross_attn', None)
            assert cross is None or cross.W_K is not cross.W_Q   # its Q and K read different sequences
    assert gradcheck_module(GPT(10, shared_qk=True, **TINY), ids, check_inputs=False)
    with pytest.raises(ValueError, match='shared_qk=True needs n_kv_heads == n_heads'):
        GPT(10, shared_qk=True, n_kv_heads=1, **TINY)


@pytest.mark.parametrize('options, message', [
    (dict(foo=1), "GPT: unexpected keyword argument 'foo'; the extra keywords a model passes to its layers are "
                  "activation, alpha, gate, n_kv_heads, norm_type, relative, residual, shared_qk"),
    (dict(rope=True), "GPT: rope is chosen by positional='rope'"),
    (dict(cross_attention=True), "GPT: unexpected keyword argument 'cross_attention'"),
])
def test_models_name_a_keyword_their_layers_do_not_take(options, message):
    with pytest.raises(TypeError, match=message.replace('(', r'\(')):
        GPT(10, **TINY, **options)


@pytest.mark.parametrize('make, where', [
    (lambda: GPT(10, d_model=8, n_heads=2, n_layers=10 ** 12), 'GPT: vocab_size=10, d_model=8, n_layers=1000000000000'),
    (lambda: GPT(10 ** 12, d_model=8, n_heads=2), 'GPT: vocab_size=1000000000000'),
    (lambda: transformer.EncoderOnly(10, d_model=8, n_heads=2, max_len=10 ** 12), 'EncoderOnly: '),
    (lambda: Transformer(5, 6, d_model=8, n_heads=2, d_ff=10 ** 12), 'Transformer: '),
    (lambda: transformer.Encoder(10 ** 10, 8, 2), 'Encoder: n_layers=10000000000'),
    (lambda: transformer.Decoder(10 ** 10, 8, 2), 'Decoder: n_layers=10000000000'),
    (lambda: nn.Linear(10 ** 6, 10 ** 6), 'Linear: in_features=1000000, out_features=1000000'),
    (lambda: MultiHeadAttention(10 ** 6, 2), 'Projection: in_features=1000000'),
    (lambda: transformer.TokenEmbedding(10 ** 10, 8), 'TokenEmbedding: vocab_size=10000000000, d_model=8'),
    (lambda: transformer.LearnedPositionalEmbedding(10 ** 10, 8), 'LearnedPositionalEmbedding: max_len=10000000000'),
])
def test_a_model_too_large_for_memory_is_refused_before_anything_is_made(make, where):
    with pytest.raises(ValueError, match=where + r".*parameters \(.* GiB at 4 bytes each\), more than this machine's "
                                                 r".* GiB of memory"):
        make()


def test_module_to_and_linear_name_a_bad_dtype_or_device():
    with pytest.raises(TypeError, match=r"Linear.to: 'far' is not a dtype"):
        nn.Linear(2, 2).to(dtype='far')
    with pytest.raises(ValueError, match=r"Linear.to: unknown device 'gpu'"):
        nn.Linear(2, 2).to('gpu')
    with pytest.raises(TypeError, match='Linear: dtype must be a floating-point dtype'):
        nn.Linear(2, 2, dtype='int64')
    with pytest.raises(ValueError, match="Linear: unknown device 'gpu'"):
        nn.Linear(2, 2, device='gpu')
