"""Graduating to PyTorch: the same model, the same weights, in the other engine.

    net = to_torch(model)          # a torch.nn.Module (transformer/torch_modules.py), same weights
    model = from_torch(net)        # back: a microtensor model, the weights net has now

to_torch rebuilds the model module by module from each module's settings (GPT, EncoderOnly
and Transformer; every positional encoding, norm placement and type, GQA/MQA, MLA, shared
W_Q = W_K, fixed or learned scales, scaled and gated residuals, BatchNorm too), in the
model's dtype, on the CPU (net.to('cuda') moves it), in the model's train/eval mode.  A
module it has no PyTorch twin for (your own class, a subclass, an RNN) is refused by name.
The twin has no KV cache; hooks and probes stay behind.

Parameter names: a parameter has the same dotted path in both engines
('decoder.layers.0.self_attn.W_Q.weight'); the last part of the name and the layout change
as this table says, and nothing else does:

    module                      microtensor      PyTorch          values
    Projection                  weight           weight           transposed: (in, out) here, (out, in) there
    Projection                  bias             bias             the same
    LayerNorm                   gamma, beta      weight, bias     the same
    RMSNorm                     gamma            weight           the same
    BatchNorm1d                 gamma, beta      weight, bias     the same (running_mean, running_var too)
    TokenEmbedding              weight           weight           the same (vocab_size, d_model)
    LearnedPositionalEmbedding  weight           weight           the same (max_len, d_model)
    RelativePositionBias        weight           weight           the same (num_buckets, n_heads)
    MultiHeadAttention          log_scale        log_scale        the same (n_heads, 1, 1)

PyTorch's twin of a Projection is nn.Linear.  A shared W_Q = W_K is one projection in both engines;
PyTorch's state_dict lists it under both names, microtensor's once (under W_Q).

Checkpoints, never through pickle:
    load_microtensor_checkpoint(net, 'ckpt.npz')   an mt.save file (a state_dict, or a dict with one
                                                   under 'model') into the exported module
    save_torch_state_dict(net, 'net.npz')          PyTorch's state_dict as .npz (PyTorch's names and
                                                   layout; numpy.load(path) reads it)
    load_torch_state_dict(model, 'net.npz')        such a file into a microtensor model (no torch needed)
"""
import os
from itertools import zip_longest

import microtensor as mt
from microtensor import nn
from microtensor.atomic_write import write_atomically
from microtensor.npy_format import read_npz

from .attention import MultiHeadAttention
from .embedding import TokenEmbedding
from .feedforward import FeedForward
from .layers import DecoderLayer, EncoderLayer
from .mla import MultiHeadLatentAttention
from .models import GPT, Decoder, Embed, Encoder, EncoderOnly, Transformer
from .norm import BatchNorm1d, LayerNorm, RMSNorm
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .projection import Projection
from .residual import ResidualGate

# (module class, microtensor name): (PyTorch name, transposed) -- the table in the docstring
NAMES = {
    ('Projection', 'weight'): ('weight', True),
    ('Projection', 'bias'): ('bias', False),
    ('LayerNorm', 'gamma'): ('weight', False),
    ('LayerNorm', 'beta'): ('bias', False),
    ('RMSNorm', 'gamma'): ('weight', False),
    ('BatchNorm1d', 'gamma'): ('weight', False),
    ('BatchNorm1d', 'beta'): ('bias', False),
    ('BatchNorm1d', 'running_mean'): ('running_mean', False),
    ('BatchNorm1d', 'running_var'): ('running_var', False),
    ('TokenEmbedding', 'weight'): ('weight', False),
    ('LearnedPositionalEmbedding', 'weight'): ('weight', False),
    ('RelativePositionBias', 'weight'): ('weight', False),
    ('MultiHeadAttention', 'log_scale'): ('log_scale', False),
}
TORCH_CLASSES = {'Projection': 'Linear'}  # the class names that differ (PyTorch's twin of a Projection: nn.Linear)
TORCH_NAMES = {(TORCH_CLASSES.get(cls, cls), torch_name): (name, transposed)
               for (cls, name), (torch_name, transposed) in NAMES.items()}
MODELS = (GPT, EncoderOnly, Transformer)


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("the PyTorch bridge needs torch, which is not installed: pip install 'microtensor[torch]' "
                          "(or pip install torch)") from None
    return torch


# ---------------------------------------------------------------------------- microtensor -> PyTorch
def to_torch(model):
    """A torch.nn.Module computing what `model` computes, with a copy of its weights (and buffers)."""
    torch = _torch()
    if type(model) not in MODELS:
        raise TypeError(f"to_torch: exports the transformer models GPT, EncoderOnly and Transformer, "
                        f"not {type(model).__name__}")
    net = _twin(model)
    net.to(getattr(torch, str(model.parameters()[0].dtype)))
    net.load_state_dict(state_for_torch(net, model.state_dict(), 'to_torch'))
    return net.train(model.training)


def _twin(model):
    """The PyTorch module tree of `model` (weights not copied), built from each module's settings."""
    import torch
    from . import torch_modules as T

    def build(m, path):
        if m is None:
            return None
        maker = makers.get(type(m))
        if maker is None:
            raise TypeError(f"to_torch: {path or 'the model'} is a {type(m).__name__}, which has no PyTorch twin; "
                            f"to_torch knows {', '.join(sorted(c.__name__ for c in makers))}")
        return maker(m, lambda name: build(_submodule(m, name), f"{path}.{name}" if path else name))

    def attention(m, child):
        r = m.relative_bias
        relative = None if r is None else dict(num_buckets=r.num_buckets, max_distance=r.max_distance,
                                               bidirectional=r.bidirectional)
        return T.MultiHeadAttention(attention_config(m), None if m.rope is None else m.rope.base, relative)

    def layer(m, child):
        settings = dict(norm=m.norm, residual=m.residual, alpha=m.alpha, dropout=m.dropout)
        if isinstance(m, DecoderLayer):
            return T.DecoderLayer(settings, *map(child, ('self_attn', 'cross_attn', 'ffn', 'norm1', 'norm2', 'norm3',
                                                         'gate_self_attn', 'gate_ffn', 'gate_cross_attn')))
        return T.EncoderLayer(settings, *map(child, ('self_attn', 'ffn', 'norm1', 'norm2', 'gate_self_attn',
                                                     'gate_ffn')))

    makers = {
        Projection: lambda m, child: torch.nn.Linear(m.in_features, m.out_features, bias=m.bias is not None),
        LayerNorm: lambda m, child: torch.nn.LayerNorm(m.d_model, eps=m.eps),
        RMSNorm: lambda m, child: torch.nn.RMSNorm(m.d_model, eps=m.eps),
        BatchNorm1d: lambda m, child: T.BatchNorm1d(m.num_features, m.eps, m.momentum),
        TokenEmbedding: lambda m, child: T.TokenEmbedding(m.vocab_size, m.d_model, m.scale),
        SinusoidalPositionalEncoding: lambda m, child: T.SinusoidalPositionalEncoding(m.d_model),
        LearnedPositionalEmbedding: lambda m, child: T.LearnedPositionalEmbedding(m.max_len, m.d_model),
        Embed: lambda m, child: T.Embed(child('tok'), child('pos'), m.dropout),
        MultiHeadAttention: attention,
        MultiHeadLatentAttention: lambda m, child: T.MultiHeadLatentAttention(attention_config(m), m.rope.base),
        FeedForward: lambda m, child: T.FeedForward(m.d_model, m.d_ff, m.activation, m.dropout.p),
        ResidualGate: lambda m, child: T.ResidualGate(m.W_g.in_features),
        EncoderLayer: layer, DecoderLayer: layer,
        Encoder: lambda m, child: T.Encoder([child(f"layers.{i}") for i in range(len(m.layers))], child('final_norm')),
        Decoder: lambda m, child: T.Decoder([child(f"layers.{i}") for i in range(len(m.layers))], child('final_norm')),
        GPT: lambda m, child: T.GPT(model_config(m), child('embed'), child('decoder'), child('lm_head')),
        EncoderOnly: lambda m, child: T.EncoderOnly(model_config(m), child('embed'), child('encoder'),
                                                    child('mlm_head'), child('classifier')),
        Transformer: lambda m, child: T.Transformer(model_config(m), child('src_embed'), child('tgt_embed'),
                                                    child('encoder'), child('decoder'), child('generator')),
    }
    return build(model, '')


def attention_config(m):
    """The constructor's keyword arguments of a MultiHeadAttention or MultiHeadLatentAttention."""
    if isinstance(m, MultiHeadLatentAttention):
        return dict(d_model=m.d_model, n_heads=m.n_heads, d_c=m.d_c, d_rope=m.d_rope, d_head=m.d_head, d_cq=m.d_cq,
                    bias=m.W_O.bias is not None, dropout=m.dropout)
    return dict(d_model=m.d_model, n_heads=m.n_heads, n_kv_heads=m.n_kv_heads, bias=m.W_Q.bias is not None,
                dropout=m.dropout, rope=m.rope is not None, alibi=m.alibi,
                scale='learned' if m.log_scale is not None else m.scale, shared_qk=m.W_K is m.W_Q,
                relative=m.relative_bias is not None)


def model_config(model):
    """The keyword arguments of model's constructor (GPT, EncoderOnly or Transformer) that rebuild it,
    read from its first layer (from_torch checks that every layer is alike)."""
    layer = model.layers[0]
    attention = layer.self_attn
    mha = isinstance(attention, MultiHeadAttention)
    config = dict(d_model=layer.d_model, n_heads=attention.n_heads, d_ff=layer.ffn.d_ff, max_len=model.max_len,
                  dropout=layer.dropout, norm=layer.norm, residual=layer.residual, alpha=layer.alpha,
                  activation=layer.ffn.activation, norm_type=layer.norm_type, gate=layer.gated,
                  n_kv_heads=attention.n_kv_heads if mha else None, relative=mha and attention.relative_bias is not None)
    if isinstance(model, Transformer):
        return dict(src_vocab=model.src_vocab, tgt_vocab=model.tgt_vocab, n_layers=len(model.encoder.layers),
                    pad_id=model.pad_id, bos_id=model.bos_id, positional=model.src_embed.positional, **config)
    config.update(vocab_size=model.vocab_size, n_layers=len(model.layers), positional=model.embed.positional)
    if isinstance(model, GPT):
        return dict(config, tie_weights=model.lm_head is None)
    return dict(config, pad_id=model.pad_id, n_classes=model.n_classes)


# ---------------------------------------------------------------------------- PyTorch -> microtensor
def from_torch(module):
    """The microtensor model (GPT, EncoderOnly or Transformer) of a module made by to_torch, with its
    current weights: built by the model's constructor from module.config, attention modules as
    module's (MLA, shared W_Q = W_K, ...).  A DistributedDataParallel wrapper is looked through."""
    _torch()
    from . import torch_modules as T
    net = getattr(module, 'module', module) if type(module).__name__ == 'DistributedDataParallel' else module
    kinds = {T.GPT: GPT, T.EncoderOnly: EncoderOnly, T.Transformer: Transformer}
    if type(net) not in kinds:
        raise TypeError(f"from_torch: reads modules made by to_torch (transformer.torch_modules.GPT, EncoderOnly, "
                        f"Transformer), not a {type(net).__module__}.{type(net).__name__}; for a model of your own, "
                        "build the microtensor model and load its weights with load_torch_state_dict")
    model = kinds[type(net)](**net.config)
    attention_types = {T.MultiHeadAttention: MultiHeadAttention, T.MultiHeadLatentAttention: MultiHeadLatentAttention}
    for name, twin in net.named_modules():   # attention modules replaced after construction (MLA, shared W_Q = W_K)
        if type(twin) in attention_types:
            owner, attribute = name.rsplit('.', 1)
            built = getattr(_submodule(model, owner), attribute)
            if type(built) is not attention_types[type(twin)] or attention_config(built) != twin.config:
                setattr(_submodule(model, owner), attribute, attention_types[type(twin)](**twin.config))
    model.to(dtype=str(next(net.parameters()).dtype).replace('torch.', ''))
    nothing = ('', 'nothing')
    for (path, want), (other_path, have) in zip_longest(_structure(_twin(model)), _structure(net), fillvalue=nothing):
        if (path, want) != (other_path, have):
            raise ValueError(f"from_torch: the module differs from what {type(model).__name__}(**module.config) "
                             f"builds, at {path or other_path or 'the top'}: {have} where the constructor gives {want}; "
                             "from_torch rebuilds models whose layers are alike (as the constructors make them, "
                             "attention modules aside)")
    model.load_state_dict(state_for_microtensor(model, net.state_dict(), 'from_torch'))
    return model.train(net.training)


def _structure(net):
    """[(path, 'Class(settings)')] of every module of a PyTorch module tree, one per path."""
    return [(name, f"{type(m).__name__}({m.extra_repr()})") for name, m in net.named_modules(remove_duplicate=False)]


def _submodule(module, dotted):
    """module's sub-module at a dotted path such as 'decoder.layers.0' (either engine)."""
    for part in dotted.split('.'):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module


# ---------------------------------------------------------------------------- names
def _tensors(module, prefix='', buffers=True):
    """(dotted name, tensor, class of its module, attribute) of every parameter and buffer, depth first,
    a tensor reached by two paths (a shared W_Q = W_K) under both.  The same walk in both engines:
    their modules keep `_parameters`, `_buffers` and `_modules` dicts."""
    for attribute, tensor in list(module._parameters.items()) + list(module._buffers.items() if buffers else ()):
        if tensor is not None:
            yield prefix + attribute, tensor, type(module).__name__, attribute
    for name, child in module._modules.items():
        if child is not None:
            yield from _tensors(child, f"{prefix}{name}.", buffers)


def translate(module, state, where, buffers=True):
    """Rename `state` (arrays under the other engine's names) to `module`'s names, transposing the Linear
    weights; `module` is a microtensor model (state: PyTorch names) or a PyTorch one (state: microtensor
    names).  Returns {name: host array} for every name module's state_dict has; anything missing or left
    over is an error that lists it.  buffers=False: the parameters only (to translate gradients)."""
    microtensor = isinstance(module, nn.Module)
    to_other = NAMES if microtensor else TORCH_NAMES
    own_engine, other_engine = ('microtensor', 'PyTorch') if microtensor else ('PyTorch', 'microtensor')
    out, first, used, missing, differ = {}, {}, set(), [], []
    for name, tensor, cls, attribute in _tensors(module, buffers=buffers):
        if (cls, attribute) not in to_other:
            raise TypeError(f"{where}: {name!r} belongs to a {cls}, which has no entry in the name table "
                            "(transformer/torch_bridge.py)")
        other_attribute, transposed = to_other[cls, attribute]
        other = name[:len(name) - len(attribute)] + other_attribute
        if id(tensor) in first:   # the second path to a shared tensor: PyTorch lists it, microtensor does not
            own_name, value = first[id(tensor)]
            if other in state:
                used.add(other)
                alias = _host(state[other]).T if transposed else _host(state[other])
                if alias.shape != value.shape or (alias != value).any():
                    differ.append(f"{other!r} differs from the {own_name!r} it shares its values with")
            if not microtensor:
                out[name] = value
            continue
        if other not in state:
            missing.append(f"{other!r} (for {own_engine}'s {name!r})")
            continue
        used.add(other)
        value = _host(state[other])
        value = value.T.copy() if transposed else value
        first[id(tensor)] = name, value
        out[name] = value
    unexpected = [name for name in state if name not in used]
    if missing or unexpected or differ:
        raise KeyError(f"{where}: the {other_engine} weights do not fit this model: "
                       + '; '.join(filter(None, [missing and f"missing {', '.join(missing)}",
                                                 unexpected and f"not in the model {unexpected}",
                                                 ', '.join(differ)])))
    return out


def _host(value):
    """A host array of a microtensor Tensor, a torch tensor or an array."""
    if isinstance(value, mt.Tensor):
        return value.numpy()
    if hasattr(value, 'detach'):
        return value.detach().cpu().numpy()
    return value


def state_for_torch(net, state, where='state_for_torch'):
    """A microtensor state_dict (names and layout as model.state_dict()) as the state_dict of the exported
    module `net`: {PyTorch name: torch tensor}, ready for net.load_state_dict."""
    torch = _torch()
    return {name: torch.from_numpy(value) for name, value in translate(net, state, where).items()}


def state_for_microtensor(model, state, where='state_for_microtensor'):
    """PyTorch's state_dict of the exported module (tensors or arrays) as microtensor's, for
    model.load_state_dict."""
    return translate(model, state, where)


# ---------------------------------------------------------------------------- files
def load_microtensor_checkpoint(net, path):
    """Load an mt.save file into the exported module `net`: the file holds model.state_dict(), or a dict
    with it under 'model' (as the lessons' checkpoints do).  Returns net."""
    checkpoint = mt.load(path)
    state = checkpoint['model'] if isinstance(checkpoint, dict) and isinstance(checkpoint.get('model'), dict) \
        else checkpoint
    if not isinstance(state, dict):
        raise TypeError(f"load_microtensor_checkpoint: {path!r} holds a {type(state).__name__}, not a state_dict")
    net.load_state_dict(state_for_torch(net, state, f"load_microtensor_checkpoint({path!r})"))
    return net


def save_torch_state_dict(net, path):
    """Write net.state_dict() (or a state_dict) to `path` as .npz: PyTorch's names and layouts, one array
    each, no pickle; written to a temporary name, then renamed."""
    import numpy
    state = net.state_dict() if hasattr(net, 'state_dict') else net
    arrays = {name: _host(value) for name, value in state.items()}
    write_atomically(path, lambda f: numpy.savez(f, **arrays), who='save_torch_state_dict')


def load_torch_state_dict(model, path):
    """Load a .npz written by save_torch_state_dict (PyTorch's names) into the microtensor `model`.
    Never unpickles; any other file (a single .npy, a pickle, text, a header that declares more than
    the file holds) is a ValueError saying what it is.  Returns model."""
    state = read_npz(os.fspath(path), 'load_torch_state_dict',
                     hint='save_torch_state_dict(net, path) writes the file it reads')
    model.load_state_dict(state_for_microtensor(model, state, f"load_torch_state_dict({path!r})"))
    return model
