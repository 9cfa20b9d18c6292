"""Every module, given an input whose shape does not fit, raises mt.ShapeError: a RuntimeError, as
PyTorch's modules raise, and a ValueError, as numpy's; the message names the module and the shapes.

One case per module (and per tensor argument a module takes), at a tiny size; a module with no
case fails the last test, so a new module cannot arrive with a numpy error for a wrong shape."""
import pytest

import microtensor as mt
import transformer
from microtensor import nn

D, H = 8, 2  # d_model, n_heads


def x(*shape):
    return mt.randn(*shape)


def ids(*shape):
    return mt.randint(0, 5, shape)


# (name, module factory, call(module) with a wrong shape)
CASES = [
    ('Linear', lambda: nn.Linear(4, 3), lambda m: m(x(2, 5))),
    ('Conv1d', lambda: nn.Conv1d(3, 2, 2), lambda m: m(x(2, 4, 5))),
    ('Conv2d', lambda: nn.Conv2d(3, 2, 2), lambda m: m(x(2, 3, 5))),
    ('Conv3d', lambda: nn.Conv3d(3, 2, 2), lambda m: m(x(2, 3, 1, 5, 5))),
    ('MaxPool2d', lambda: nn.MaxPool2d(2), lambda m: m(x(5))),
    ('AvgPool2d', lambda: nn.AvgPool2d(2), lambda m: m(x(2, 3, 1, 1))),
    ('AvgPool3d', lambda: nn.AvgPool3d(2), lambda m: m(x(2, 3, 4))),
    ('Projection', lambda: transformer.Projection(4, 3), lambda m: m(x(2, 5))),
    ('CrossEntropyLoss', lambda: nn.CrossEntropyLoss(), lambda m: m(x(2, 5, 3), ids(2, 4))),
    ('NLLLoss', lambda: nn.NLLLoss(), lambda m: m(x(2, 5), ids(3))),
    ('Sequential', lambda: nn.Sequential(nn.Linear(4, 3), nn.ReLU()), lambda m: m(x(2, 5))),
    ('ModuleList', lambda: nn.ModuleList([nn.Linear(4, 3)]), lambda m: m[0](x(2, 5))),
    ('LayerNorm', lambda: transformer.LayerNorm(D), lambda m: m(x(2, 3, D + 1))),
    ('RMSNorm', lambda: transformer.RMSNorm(D), lambda m: m(x(2, 3, D + 1))),
    ('BatchNorm1d', lambda: transformer.BatchNorm1d(D), lambda m: m(x(4, D + 1))),
    ('FeedForward', lambda: transformer.FeedForward(D), lambda m: m(x(2, 3, D + 1))),
    ('ResidualGate', lambda: transformer.ResidualGate(D), lambda m: m(x(2, 3, D + 1))),
    ('MultiHeadAttention', lambda: transformer.MultiHeadAttention(D, H), lambda m: m(x(2, 3, D + 1))),
    ('MultiHeadAttention context', lambda: transformer.MultiHeadAttention(D, H),
     lambda m: m(x(2, 3, D), context=x(2, 4, D + 1))),
    ('MultiHeadAttention mask', lambda: transformer.MultiHeadAttention(D, H),
     lambda m: m(x(2, 3, D), mask=mt.ones(5, 5, dtype='bool'))),
    ('MultiHeadLatentAttention', lambda: transformer.MultiHeadLatentAttention(D, H, d_c=4),
     lambda m: m(x(2, 3, D + 1))),
    ('EncoderLayer', lambda: transformer.EncoderLayer(D, H), lambda m: m(x(2, 3, D + 1))),
    ('EncoderLayer mask', lambda: transformer.EncoderLayer(D, H),
     lambda m: m(x(2, 3, D), mask=mt.ones(4, 4, dtype='bool'))),
    ('DecoderLayer', lambda: transformer.DecoderLayer(D, H), lambda m: m(x(2, 3, D + 1), memory=x(2, 4, D))),
    ('DecoderLayer memory', lambda: transformer.DecoderLayer(D, H), lambda m: m(x(2, 3, D), memory=x(2, 4, D + 1))),
    ('Encoder', lambda: transformer.Encoder(1, D, H), lambda m: m(x(2, 3, D + 1))),
    ('Decoder', lambda: transformer.Decoder(1, D, H), lambda m: m(x(2, 3, D + 1), memory=x(2, 4, D))),
    ('RNNCell', lambda: transformer.RNNCell(4, D), lambda m: m(x(2, 5))),
    ('RNNCell h', lambda: transformer.RNNCell(4, D), lambda m: m(x(2, 4), x(2, D + 1))),
    ('RNN', lambda: transformer.RNN(4, D), lambda m: m(x(2, 3, 5))),
    ('RNN h0', lambda: transformer.RNN(4, D), lambda m: m(x(2, 3, 4), x(2, D + 1))),
    ('SinusoidalPositionalEncoding', lambda: transformer.SinusoidalPositionalEncoding(D), lambda m: m(x(2, 3, D + 1))),
    ('LearnedPositionalEmbedding', lambda: transformer.LearnedPositionalEmbedding(16, D),
     lambda m: m(x(2, 3, D + 1))),
    ('RotaryEmbedding', lambda: transformer.RotaryEmbedding(4), lambda m: m(x(2, H, 3, 6))),
    ('GPT', lambda: transformer.GPT(5, D, 1, H, max_len=16), lambda m: m(ids(2, 3, 4))),
    ('EncoderOnly', lambda: transformer.EncoderOnly(5, D, 1, H, max_len=16), lambda m: m(ids(6))),
    ('Transformer', lambda: transformer.Transformer(5, 5, D, H, 1, max_len=16), lambda m: m(ids(2, 3), ids(3, 3))),
]


@pytest.mark.parametrize('name, make, call', CASES, ids=[c[0] for c in CASES])
def test_a_wrong_shape_is_a_shape_error(name, make, call):
    module = make()
    with pytest.raises(mt.ShapeError) as caught:
        call(module)
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, ValueError)
    assert name.split()[0] in str(caught.value) or 'shape' in str(caught.value), caught.value


def modules():
    """The module classes a user builds: microtensor.nn's and transformer's."""
    found = {n for n in dir(nn) if isinstance(getattr(nn, n), type) and issubclass(getattr(nn, n), nn.Module)}
    found |= {n for n in dir(transformer) if isinstance(getattr(transformer, n), type)
              and issubclass(getattr(transformer, n), nn.Module)}
    return found


# modules whose input has no shape to get wrong: they act elementwise on any shape, take sizes, look up
# ids of any shape (as PyTorch's nn.Embedding), or have no forward (ModuleDict: its modules have cases)
ANY_SHAPE = {'Module', 'Dropout', 'GELU', 'ReLU', 'Sigmoid', 'SiLU', 'Tanh', 'RelativePositionBias', 'TokenEmbedding',
             'Embed', 'Embedding', 'ModuleDict', 'Identity', 'Flatten', 'Unflatten',
             # the losses: their functions refuse an input and a target of two shapes (tests/test_losses.py)
             'BCELoss', 'BCEWithLogitsLoss', 'HuberLoss', 'KLDivLoss', 'L1Loss', 'MSELoss', 'SmoothL1Loss', 'Softplus', 'LeakyReLU', 'ELU', 'CELU', 'SELU', 'Mish', 'Hardtanh', 'ReLU6', 'Hardsigmoid', 'Hardswish', 'LogSigmoid', 'Softsign', 'Softmin', 'Softmax', 'LogSoftmax'}


def test_every_module_has_a_case():
    covered = {name.split()[0] for name, _, _ in CASES}
    missing = sorted(modules() - covered - ANY_SHAPE)
    assert not missing, f"modules without a wrong-shape case in {__file__}: {missing}"
