"""A clear error for every bad argument of the models, layers, optimizers, schedules and generation.

Each family draws values of every kind (ints, numpy ints, floats, NaN, inf, bools, None,
strings, lists, tensors) for one argument and checks the outcome against the argument's rule:
a value the rule accepts builds the object and is stored as a plain Python value equal to it;
any other raises ValueError or TypeError whose message names the class or function and the
argument.  Forward passes get generated token ids (1-D, 3-D, lists, floats, bools, out of the
vocabulary, longer than max_len): a correct result, or an error that names the model and
comes before any of its arithmetic.  Optimizers' load_state_dict gets damaged state dicts:
it loads a valid one, refuses the rest and then has changed nothing.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import nn, optim
from transformer import (GPT, RNN, BatchNorm1d, Decoder, DecoderLayer, Encoder, EncoderLayer, EncoderOnly, FeedForward,
                         LayerNorm, LearnedPositionalEmbedding, MultiHeadAttention, MultiHeadLatentAttention, RMSNorm,
                         RelativePositionBias, ResidualGate, RNNCell, RotaryEmbedding, SinusoidalPositionalEncoding,
                         TokenEmbedding, Transformer, alibi_bias, generate, mlm_mask, pick_next,
                         relative_position_bucket, top_k_filter)

WORDS = ['pre', 'post', 'layer', 'rms', 'batch', 'gelu', 'relu', 'learned', 'sinusoidal', 'rope', 'alibi', 'none',
         'fan_in', '', '4']
ANY_VALUE = st.one_of(
    st.integers(-3, 9), st.integers(-3, 9).map(np.int64), st.integers(0, 9).map(np.int32),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e-39, -0.0, 0.999]),
    st.floats(0, 1).map(np.float32), st.booleans(), st.none(), st.sampled_from(WORDS),
    st.lists(st.integers(0, 3), max_size=2), st.tuples(st.floats(0, 1), st.floats(0, 1)),
    st.builds(lambda: mt.tensor(2)), st.builds(object))


def is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and math.isfinite(float(v))


def size(v):
    return is_int(v) and v >= 1


def optional_size(v):
    return v is None or size(v)


def probability(v):
    return is_number(v) and 0 <= v <= 1


def non_negative(v):
    return is_number(v) and v >= 0


def flag(v):
    return isinstance(v, bool)


def one_of(*options):
    return lambda v: isinstance(v, str) and v in options


def even_size(v):
    return size(v) and v % 2 == 0


def positive(v):
    return is_number(v) and v > 0


def positive_or_none(v):
    return v is None or positive(v)


def attention_scale(v):
    """MultiHeadAttention's scale: None (1/sqrt(d_k)), a positive number, or 'learned'."""
    return positive_or_none(v) or (isinstance(v, str) and v == 'learned')


NUMBER_RULES = (probability, non_negative, is_number, positive, positive_or_none, attention_scale)  # stored as floats


TINY = dict(d_model=8, n_heads=2, n_layers=1, max_len=8)
# (what to build, its keyword arguments, the argument to vary, its rule, the attribute that stores it)
CONSTRUCTORS = [
    (GPT, dict(vocab_size=7, **TINY), 'vocab_size', size, 'vocab_size'),
    (GPT, dict(vocab_size=7, **TINY), 'n_layers', size, None),
    (GPT, dict(vocab_size=7, **TINY), 'd_model', even_size, None),                       # n_heads=2 divides it
    (GPT, dict(vocab_size=7, **TINY), 'n_heads', lambda v: size(v) and 8 % v == 0, None),
    (GPT, dict(vocab_size=7, **TINY), 'max_len', size, 'max_len'),
    (GPT, dict(vocab_size=7, **TINY), 'd_ff', optional_size, None),
    (GPT, dict(vocab_size=7, **TINY), 'n_kv_heads', lambda v: v is None or (size(v) and 2 % v == 0), None),
    (GPT, dict(vocab_size=7, **TINY), 'dropout', probability, None),
    (GPT, dict(vocab_size=7, **TINY), 'init_std', lambda v: non_negative(v) and v <= 3.4e37, None),
    (GPT, dict(vocab_size=7, **TINY), 'tie_weights', flag, None),
    (GPT, dict(vocab_size=7, **TINY), 'norm', one_of('pre', 'post'), None),
    (GPT, dict(vocab_size=7, **TINY), 'positional', one_of('sinusoidal', 'learned', 'rope', 'alibi', 'none'), None),
    (GPT, dict(vocab_size=7, **TINY), 'alpha', is_number, None),                          # a layer option
    (Transformer, dict(src_vocab=5, tgt_vocab=6, **TINY), 'src_vocab', size, 'src_vocab'),
    (Transformer, dict(src_vocab=5, tgt_vocab=6, **TINY), 'tgt_vocab', size, 'tgt_vocab'),
    (Transformer, dict(src_vocab=5, tgt_vocab=6, **TINY), 'pad_id', lambda v: v is None or (is_int(v) and 0 <= v < 5),
     'pad_id'),
    (Transformer, dict(src_vocab=5, tgt_vocab=6, **TINY), 'bos_id', lambda v: v is None or (is_int(v) and 0 <= v < 6),
     'bos_id'),
    (EncoderOnly, dict(vocab_size=7, **TINY), 'n_classes', optional_size, 'n_classes'),
    (EncoderOnly, dict(vocab_size=7, **TINY), 'pad_id', lambda v: v is None or (is_int(v) and 0 <= v < 7), 'pad_id'),
    (Encoder, dict(n_layers=1, d_model=8, n_heads=2), 'n_layers', size, None),
    (Decoder, dict(n_layers=1, d_model=8, n_heads=2), 'd_model', even_size, None),
    (EncoderLayer, dict(d_model=8, n_heads=2), 'n_heads', lambda v: size(v) and 8 % v == 0, 'self_attn.n_heads'),
    (EncoderLayer, dict(d_model=8, n_heads=2), 'alpha', is_number, 'alpha'),
    (EncoderLayer, dict(d_model=8, n_heads=2), 'residual', flag, 'residual'),
    (EncoderLayer, dict(d_model=8, n_heads=2), 'norm_type', one_of('layer', 'rms', 'batch'), 'norm_type'),
    (DecoderLayer, dict(d_model=8, n_heads=2), 'dropout', probability, 'dropout'),
    (DecoderLayer, dict(d_model=8, n_heads=2), 'cross_attention', flag, None),
    (DecoderLayer, dict(d_model=8, n_heads=2), 'activation', one_of('gelu', 'relu'), 'ffn.activation'),
    (MultiHeadAttention, dict(d_model=8, n_heads=2), 'd_model', even_size, 'd_model'),
    (MultiHeadAttention, dict(d_model=8, n_heads=2), 'n_kv_heads', lambda v: v is None or (size(v) and 2 % v == 0),
     None),
    (MultiHeadAttention, dict(d_model=8, n_heads=2), 'scale', attention_scale, 'scale'),
    (MultiHeadAttention, dict(d_model=8, n_heads=2), 'bias', flag, None),
    (MultiHeadLatentAttention, dict(d_model=8, n_heads=2, d_c=4), 'd_c', size, 'd_c'),
    (MultiHeadLatentAttention, dict(d_model=8, n_heads=2, d_c=4), 'd_cq', optional_size, 'd_cq'),
    (FeedForward, dict(d_model=4), 'd_ff', optional_size, None),
    (LayerNorm, dict(d_model=4), 'eps', non_negative, 'eps'),
    (RMSNorm, dict(d_model=4), 'd_model', size, 'd_model'),
    (BatchNorm1d, dict(num_features=4), 'momentum', probability, 'momentum'),
    (TokenEmbedding, dict(vocab_size=5, d_model=4), 'vocab_size', size, 'vocab_size'),
    (TokenEmbedding, dict(vocab_size=5, d_model=4), 'scale', flag, 'scale'),
    (SinusoidalPositionalEncoding, dict(d_model=4), 'd_model', even_size, 'd_model'),
    (SinusoidalPositionalEncoding, dict(d_model=4), 'max_len', optional_size, 'max_len'),
    (LearnedPositionalEmbedding, dict(max_len=4, d_model=4), 'max_len', size, 'max_len'),
    (RotaryEmbedding, dict(d_k=4), 'd_k', even_size, 'd_k'),
    (RotaryEmbedding, dict(d_k=4), 'base', positive, 'base'),
    (RNNCell, dict(d_in=2, d_hidden=3), 'd_hidden', size, 'd_hidden'),
    (RNN, dict(d_in=2, d_hidden=3), 'd_in', size, 'cell.d_in'),
    (nn.Linear, dict(in_features=2, out_features=3), 'in_features', size, 'in_features'),
    (nn.Linear, dict(in_features=2, out_features=3), 'bias', flag, None),
    (nn.Dropout, {}, 'p', probability, 'p'),
    (GPT, dict(vocab_size=7, **TINY), 'shared_qk', flag, None),                          # a layer option
    (EncoderOnly, dict(vocab_size=7, **TINY), 'shared_qk', flag, None),
    (EncoderLayer, dict(d_model=8, n_heads=2), 'shared_qk', flag, None),
    (ResidualGate, dict(d_model=4), 'd_model', size, 'W_g.in_features'),
    (RelativePositionBias, dict(n_heads=2), 'n_heads', size, 'n_heads'),
    (RelativePositionBias, dict(n_heads=2), 'num_buckets', lambda v: is_int(v) and v >= 4 and 128 > v // 4,
     'num_buckets'),
    (RelativePositionBias, dict(n_heads=2), 'max_distance', lambda v: is_int(v) and v > 32 // 4, 'max_distance'),
    (RelativePositionBias, dict(n_heads=2, bidirectional=False), 'num_buckets',
     lambda v: is_int(v) and v >= 2 and 128 > v // 2, 'num_buckets'),
    (RelativePositionBias, dict(n_heads=2), 'bidirectional', flag, 'bidirectional'),
]


def attribute(obj, dotted):
    for name in dotted.split('.'):
        obj = getattr(obj, name)
    return obj


def plain(v, number=False):
    """The Python value a checked argument becomes (a float where the rule wants a number)."""
    return v if v is None or isinstance(v, (bool, str)) else (int(v) if is_int(v) and not number else float(v))


def assert_clear_error(error, where, argument):
    assert type(error) in (ValueError, TypeError), repr(error)
    assert str(error).startswith(f"{where}"), f"{error} (expected it to start with {where!r})"
    assert argument in str(error), f"{error} (expected it to name {argument!r})"


def follows_rule(call, where, argument, value, rule, named=None):
    """call() passes `value` as `argument`: it must refuse it with a clear error (starting with
    `where`, naming `named`, default the argument) exactly when rule(value) is false.
    Returns (accepted, what call() returned)."""
    try:
        result = call()
    except (ValueError, TypeError) as error:
        assert not rule(value), f"{where}({argument}={value!r}) was refused: {error}"
        assert_clear_error(error, where, named or argument)
        return False, None
    assert rule(value), f"{where}({argument}={value!r}) was accepted"
    return True, result


@pytest.mark.parametrize('make, kwargs, argument, rule, stored', CONSTRUCTORS,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in CONSTRUCTORS])
@given(value=ANY_VALUE)
def test_constructors_accept_what_the_rule_allows_and_name_the_rest(make, kwargs, argument, rule, stored, value):
    accepted, built = follows_rule(lambda: make(**{**kwargs, argument: value}), make.__name__, argument, value, rule)
    if accepted and stored:
        got, expected = attribute(built, stored), plain(value, rule in NUMBER_RULES)
        assert got == expected and type(got) is type(expected), (got, value)


# ---------------------------------------------------------------------- optimizers and schedules
def parameter():
    p = nn.Parameter(mt.tensor([1.0, -2.0]))
    p.grad = mt.tensor([0.5, 0.25])
    return p


OPTIMIZER_ARGUMENTS = [
    (optim.SGD, dict(lr=0.1, momentum=0.5), 'lr', non_negative),
    (optim.SGD, dict(lr=0.1, momentum=0.5), 'momentum', lambda v: is_number(v) and 0 <= v < 1),
    (optim.SGD, dict(lr=0.1, momentum=0.5), 'weight_decay', non_negative),
    (optim.SGD, dict(lr=0.1, momentum=0.5), 'nesterov', flag),
    (optim.Adam, {}, 'lr', non_negative),
    (optim.Adam, {}, 'eps', non_negative),
    (optim.AdamW, {}, 'weight_decay', non_negative),
    (optim.Adam, {}, 'betas', lambda v: isinstance(v, (tuple, list)) and len(v) == 2
     and all(is_number(b) and 0 <= b < 1 for b in v)),
]


@pytest.mark.filterwarnings('ignore:overflow encountered:RuntimeWarning')  # weight_decay=1e40 is valid, and diverges
@pytest.mark.parametrize('make, kwargs, argument, rule', OPTIMIZER_ARGUMENTS,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in OPTIMIZER_ARGUMENTS])
@given(value=st.one_of(ANY_VALUE, st.tuples(ANY_VALUE, ANY_VALUE), st.tuples(st.floats(0, 1), st.floats(0, 1))))
def test_optimizer_hyperparameters_are_checked(make, kwargs, argument, rule, value):
    p = parameter()
    accepted, opt = follows_rule(lambda: make([p], **{**kwargs, argument: value}), make.__name__, argument, value, rule)
    if not accepted:
        return
    group = opt.param_groups[0][argument]
    assert group == (tuple(map(float, value)) if argument == 'betas' else plain(value))
    opt.step()  # (absurd but valid values, e.g. weight_decay=1e40, may well diverge: that is not an error)
    assert opt.state[id(p)]['step'] == 1
    # the learning rate can be set later, by the same rule
    if follows_rule(lambda: setattr(opt, 'lr', value), make.__name__, 'lr', value, non_negative)[0]:
        assert opt.lr == float(value)


SCHEDULE_CALLS = [
    (optim.linear_warmup, dict(step=3, warmup_steps=5, base_lr=0.1), 'step', lambda v: is_int(v) and v >= 0),
    (optim.linear_warmup, dict(step=3, warmup_steps=5, base_lr=0.1), 'warmup_steps', lambda v: is_int(v) and v >= 0),
    (optim.linear_warmup, dict(step=3, warmup_steps=5, base_lr=0.1), 'base_lr', non_negative),
    (optim.cosine_decay, dict(step=3, total_steps=10, base_lr=0.1), 'total_steps', size),
    (optim.cosine_decay, dict(step=3, total_steps=10, base_lr=0.1), 'min_lr', non_negative),
    (optim.warmup_cosine, dict(step=3, warmup_steps=2, total_steps=10, base_lr=0.1), 'warmup_steps',
     lambda v: is_int(v) and 0 <= v < 10),
    (relative_position_bucket, dict(n=-5), 'n', is_int),
    (relative_position_bucket, dict(n=-5), 'num_buckets', lambda v: is_int(v) and v >= 4 and 128 > v // 4),
    (relative_position_bucket, dict(n=-5), 'max_distance', lambda v: is_int(v) and v > 32 // 4),
    (alibi_bias, dict(n_heads=2, T_q=3, T_k=4), 'n_heads', size),
    (alibi_bias, dict(n_heads=2, T_q=3, T_k=4), 'T_q', lambda v: is_int(v) and v >= 0),
    (alibi_bias, dict(n_heads=2, T_q=3, T_k=4), 'T_k', lambda v: is_int(v) and v >= 0),
    (alibi_bias, dict(n_heads=2, T_q=3, T_k=4), 'offset', lambda v: is_int(v) and v >= 0),
    (mlm_mask, dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8), 'p', probability),
    (mlm_mask, dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8), 'mask_share',
     lambda v: probability(v) and v <= 0.9),                                                  # random_share is 0.1
    (mlm_mask, dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8), 'vocab_size', size),
    (mlm_mask, dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8), 'mask_id', lambda v: is_int(v) and v >= 0),
    (mlm_mask, dict(ids=mt.tensor([[1, 2, 3]]), mask_id=9, vocab_size=8), 'pad_id', lambda v: v is None or is_int(v)),
    (nn.utils.clip_grad_norm_, dict(parameters=None, max_norm=1.0), 'max_norm',
     lambda v: is_number(v) and v >= 0 or v == math.inf),
    (nn.utils.clip_grad_norm_, dict(parameters=None, max_norm=1.0), 'norm_type',
     lambda v: is_number(v) and v > 0 or v == math.inf),
]


@pytest.mark.parametrize('function, kwargs, argument, rule', SCHEDULE_CALLS,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in SCHEDULE_CALLS])
@given(value=ANY_VALUE)
def test_schedules_clipping_and_helpers_check_their_arguments(function, kwargs, argument, rule, value):
    if 'parameters' in kwargs:
        kwargs = {**kwargs, 'parameters': [parameter()]}
    accepted, result = follows_rule(lambda: function(**{**kwargs, argument: value}), function.__name__, argument,
                                    value, rule)
    schedules = (optim.linear_warmup, optim.cosine_decay, optim.warmup_cosine, nn.utils.clip_grad_norm_)
    if accepted and function in schedules:
        assert isinstance(result, float) and (math.isfinite(result) or argument == 'norm_type')


def state_dict_variants():
    """A valid Adam state dict, and damaged copies of it: (description, state_dict, loads)."""
    p = parameter()
    opt = optim.Adam([p], lr=0.01)
    opt.step()
    good = opt.state_dict()
    sgd = optim.SGD([parameter()], lr=0.1, momentum=0.9)
    sgd.step()
    wrong_shape = {**good, 'state': {0: {**good['state'][0], 'exp_avg': mt.zeros(3)}}}
    return [
        ('valid', good, True),
        ('None', None, False), ('a list', [good], False), ('SGD state', sgd.state_dict(), False),
        ('another class name', {**good, 'optimizer': 'AdamW'}, False),
        ('no optimizer key', {k: v for k, v in good.items() if k != 'optimizer'}, False),
        ('no state', {k: v for k, v in good.items() if k != 'state'}, False),
        ('no param_groups', {k: v for k, v in good.items() if k != 'param_groups'}, False),
        ('param_groups None', {**good, 'param_groups': None}, False),
        ('two groups', {**good, 'param_groups': good['param_groups'] * 2}, False),
        ('a missing hyper-parameter', {**good, 'param_groups': [{k: v for k, v in good['param_groups'][0].items()
                                                               if k != 'eps'}]}, False),
        ('an extra hyper-parameter', {**good, 'param_groups': [{**good['param_groups'][0], 'momentum': 0.9}]}, False),
        ('negative lr', {**good, 'param_groups': [{**good['param_groups'][0], 'lr': -1.0}]}, False),
        ('betas as a number', {**good, 'param_groups': [{**good['param_groups'][0], 'betas': 0.9}]}, False),
        ('params [1]', {**good, 'param_groups': [{**good['param_groups'][0], 'params': [1]}]}, False),
        ('wrong moment shape', wrong_shape, False),
        ('one moment missing', {**good, 'state': {0: {k: v for k, v in good['state'][0].items()
                                                      if k != 'exp_avg_sq'}}}, False),
        ('step as a string', {**good, 'state': {0: {**good['state'][0], 'step': 'one'}}}, False),
        ('state for parameter 5', {**good, 'state': {5: good['state'][0]}}, False),
        ('state key 1.5', {**good, 'state': {'1.5': good['state'][0]}}, False),
        ('state None', {**good, 'state': None}, False),
        ('moment as a list', {**good, 'state': {0: {**good['state'][0], 'exp_avg': [0.0, 0.0]}}}, False),
    ]


VARIANTS = state_dict_variants()


@pytest.mark.parametrize('description, state_dict, loads', VARIANTS, ids=[v[0] for v in VARIANTS])
def test_optimizer_load_state_dict_is_all_or_nothing(description, state_dict, loads):
    opt = optim.Adam([parameter()], lr=0.5, betas=(0.8, 0.9))
    opt.step()
    before = opt.state_dict()
    if loads:
        opt.load_state_dict(state_dict)
        assert opt.lr == 0.01 and opt.state_dict()['state'][0]['step'] == 1
        return
    with pytest.raises((ValueError, TypeError)) as info:
        opt.load_state_dict(state_dict)
    assert str(info.value).startswith('Adam.load_state_dict: '), info.value
    after = opt.state_dict()
    assert after['param_groups'] == before['param_groups']
    assert after['state'][0]['step'] == 1 and all(
        after['state'][0][k].numpy().tobytes() == before['state'][0][k].numpy().tobytes()
        for k in ('exp_avg', 'exp_avg_sq'))


# ---------------------------------------------------------------------- token ids
V, MAX_LEN = 7, 6
id_values = st.integers(-2, V + 1)
ids_inputs = st.one_of(
    st.lists(st.lists(id_values, min_size=1, max_size=MAX_LEN + 2), min_size=1, max_size=2),      # maybe ragged
    st.lists(id_values, min_size=0, max_size=4),                                                   # 1-D
    st.lists(st.lists(st.floats(0, V - 1), min_size=1, max_size=3), min_size=1, max_size=2),       # float ids
    st.lists(st.lists(st.booleans(), min_size=1, max_size=3), min_size=1, max_size=2),
    st.integers(0, V - 1), st.none(), st.text(max_size=3),
    st.builds(lambda shape, seed: np.random.default_rng(seed).integers(-1, V + 1, size=shape),
              st.sampled_from([(1, 3), (2, 4), (2, MAX_LEN + 1), (1, 0), (0, 3), (2, 2, 2)]), st.integers(0, 9)),
)


def valid_ids(ids):
    try:
        array = np.asarray(ids)
    except ValueError:  # ragged
        return False
    return (array.ndim == 2 and array.size > 0 and array.dtype.kind in 'iu' and array.shape[1] <= MAX_LEN
            and array.min() >= 0 and array.max() < V)


MODELS = {
    'GPT': lambda: GPT(V, d_model=8, n_heads=2, n_layers=1, max_len=MAX_LEN),
    'EncoderOnly': lambda: EncoderOnly(V, d_model=8, n_heads=2, n_layers=1, max_len=MAX_LEN),
}


@pytest.mark.slow
@pytest.mark.parametrize('name', MODELS)
@given(ids=ids_inputs, as_tensor=st.booleans())
def test_models_check_token_ids_before_any_arithmetic(name, ids, as_tensor):
    model = MODELS[name]()
    lookups = []
    model.embed.tok.register_forward_hook(lambda module, args, out: lookups.append(1))
    if as_tensor and valid_ids(ids):
        ids = mt.tensor(np.asarray(ids))
    try:
        out = model(ids)
    except (ValueError, TypeError, IndexError) as error:
        assert not valid_ids(ids if not isinstance(ids, mt.Tensor) else ids.numpy()), error
        assert str(error).startswith(name + ':'), error
        assert lookups == []  # refused before the model computed anything
        return
    array = np.asarray(ids.numpy() if isinstance(ids, mt.Tensor) else ids)
    assert valid_ids(array) and out.shape[:2] == array.shape
    np.testing.assert_array_equal(out.numpy(), model(mt.tensor(array)).numpy())


# ---------------------------------------------------------------------- generation
def sharp_gpt():
    model = GPT(V, d_model=8, n_heads=2, n_layers=1, max_len=MAX_LEN)
    nn.init.normal_(model.lm_head.weight, 0.0, 1.0)
    return model


GENERATE_ARGUMENTS = {
    'max_new_tokens': lambda v: is_int(v) and 0 <= v <= MAX_LEN - 2,  # the prompt has 3 tokens
    'temperature': non_negative,
    'top_k': optional_size,
    'seed': lambda v: v is None or (is_int(v) and v >= 0),
    'greedy': flag,
}


@pytest.mark.parametrize('argument', GENERATE_ARGUMENTS)
@given(value=ANY_VALUE)
def test_generate_checks_its_options(argument, value):
    model = sharp_gpt()
    prompt = mt.tensor([[1, 2, 3]])
    options = dict(max_new_tokens=2, seed=0)
    too_long = argument == 'max_new_tokens' and is_int(value) and value > MAX_LEN - 2
    accepted, out = follows_rule(lambda: generate(model, prompt, **{**options, argument: value}), 'generate', argument,
                                 value, GENERATE_ARGUMENTS[argument], named='max_len' if too_long else None)
    if not accepted:
        return
    if is_int(value) or isinstance(value, np.floating):  # numpy numbers act as the Python numbers they equal
        again = generate(model, prompt, **{**options, argument: plain(value)})
        assert out.tolist() == again.tolist()
    assert out.shape[1] == 3 + (plain(value) if argument == 'max_new_tokens' else 2)
    assert out[:, :3].tolist() == [[1, 2, 3]] and 0 <= out.numpy().min() and out.numpy().max() < V


@given(temperature=st.floats(1e-300, 1e-3) | st.sampled_from([1e-39, 1e-45, 5e-324, 1e-30]),
       logits=st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=6, unique=True), dtype=st.sampled_from(['float32',
                                                                                                       'float64']))
def test_a_tiny_positive_temperature_picks_the_argmax(temperature, logits, dtype):
    x = mt.tensor([logits], dtype=dtype)
    best, second = sorted(x.numpy()[0].tolist())[:-3:-1]
    if not best - second > 50 * temperature:  # the second token is not (yet) e^-50 times less likely
        return
    assert pick_next(x, temperature).item() == int(np.argmax(x.numpy()))
    assert pick_next(x, temperature, top_k=2).item() == int(np.argmax(x.numpy()))


def test_nan_or_impossible_logits_are_clear_errors():
    with pytest.raises(ValueError, match='pick_next: the logits contain NaN'):
        pick_next(mt.tensor([[0.5, math.nan, 1.0]]))
    with pytest.raises(ValueError, match='pick_next: a row of logits is -inf everywhere'):
        pick_next(mt.tensor([[0.5, 1.0], [-math.inf, -math.inf]]))
    with pytest.raises(ValueError, match=r'top_k_filter: logits must be a floating-point Tensor of shape \(B, V\)'):
        top_k_filter(mt.tensor([1, 2]), 1)
    model = sharp_gpt()
    with mt.no_grad():
        model.lm_head.weight.fill_(math.nan)
    with pytest.raises(ValueError, match='generate: the logits contain NaN'):
        generate(model, [[1, 2]], 1)
    assert pick_next(mt.tensor([[-math.inf, 0.0, -math.inf]]), 0.5).item() == 1


def valid_prompt(prompt):
    """(B, T) or (T,) ids in the vocabulary, with room for one more token in the position table."""
    try:
        array = np.asarray(prompt)
    except ValueError:  # ragged
        return False
    return valid_ids(array[None] if array.ndim == 1 else array)


@given(prompt=ids_inputs)
def test_generate_checks_the_prompt(prompt):
    model = sharp_gpt()
    try:
        out = generate(model, prompt, 1, greedy=True)
    except (ValueError, TypeError, IndexError) as error:
        assert not valid_prompt(prompt), error
        assert str(error).startswith('generate:'), error
        return
    array = np.asarray(prompt)
    assert valid_prompt(prompt) and out.shape == array.shape[:-1] + (array.shape[-1] + 1,)
    assert out.numpy()[..., :-1].tolist() == array.tolist()


def test_the_encoder_decoder_checks_source_and_target_ids_and_its_cache():
    model = Transformer(5, 6, d_model=8, n_heads=2, n_layers=1, max_len=4, positional='learned', bos_id=1)
    good = [[1, 2, 3]]
    assert model(good, good).shape == (1, 3, 6)
    for src, tgt, error, message in [
            ([[1.0, 2.0]], good, TypeError, r'Transformer.encode: ids must be integer token ids, not float'),
            ([[1, 5]], good, IndexError, r'Transformer.encode: token ids must be in \[0, 5\), got values from 1 to 5'),
            (good, [[1, 6]], IndexError, r'Transformer.decode: token ids must be in \[0, 6\)'),
            ([1, 2], good, ValueError, r'Transformer.encode: ids must have shape \(B, T\) with B, T >= 1, got \(2,\); '
                                       r'for one sequence use ids.reshape\(1, -1\)'),
            (good, [[1, 2, 3, 4, 5]], ValueError, r'Transformer.decode: positions 0..4 were asked for, but the learned '
                                                  r'position table only has max_len=4 rows')]:
        with pytest.raises(error, match=message):
            model(src, tgt)
    memory, mask = model.encode(good)
    with pytest.raises(TypeError, match='Transformer.decode: cache must be the list of KVCaches made by'):
        model.decode(good, memory, mask, cache={})
    with pytest.raises(ValueError, match='Transformer.decode: cache has 2 entries but there are 1 layers'):
        model.decode(good, memory, mask, cache=model.new_cache() * 2)
