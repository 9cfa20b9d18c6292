"""PyTorch habits, typed without thinking, give PyTorch's answer: a differential check.

Each case builds one computation twice, in microtensor and in torch, on the same float64
data (or integers, or booleans), and compares what a PyTorch user would read off: the
values, the dtype, the shape, and the gradient of every input (backward of a random
weighted sum of the output).  The cases are the argument forms PyTorch users write
(positional and negative dims, keepdim, dim tuples and lists, F.* and torch.* spellings,
methods and functions, every indexing form, the in-place forms) and the habits around the
ops: hooks, retain_grad, .data, no_grad, conversions, creation, optimizers.  Each op's own
values, dtypes, gradients and refusals on edge samples are the op registry's
(tests/op_registry.py), as are the calls PyTorch answers and microtensor refuses.  A call
that means something else in microtensor on purpose is in README's table of deliberate
differences.
"""
import math

import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip('torch')

# Some cases are edges on purpose (the variance of one element, sqrt at 0, x.T of a vector, float() of a
# tensor that requires grad): numpy and PyTorch warn about them, and the answers are what is compared.
pytestmark = [pytest.mark.filterwarnings('ignore::RuntimeWarning'),
              pytest.mark.filterwarnings('ignore::UserWarning')]
F = torch.nn.functional


class Lib:
    """One library's names, so a case is written once: L.tensor, L.sum, L.F.softmax, ..."""

    def __init__(self, name):
        self.name = name
        self.mod = mt if name == 'mt' else torch
        self.F = mt if name == 'mt' else F
        self.float64 = self.mod.float64
        self.int64 = self.mod.int64
        self.float32 = self.mod.float32

    def __getattr__(self, attr):
        return getattr(self.mod, attr)

    def t(self, array, requires_grad=None):
        """A tensor of this library holding `array` (float arrays require grad)."""
        array = np.asarray(array)
        grad = array.dtype.kind == 'f' if requires_grad is None else requires_grad
        if self.name == 'mt':
            return mt.tensor(array, requires_grad=grad)
        return torch.tensor(array, requires_grad=grad)


MT, TORCH = Lib('mt'), Lib('torch')
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.uniform(-2, 2, size=shape)


def ints(*shape, low=-5, high=6):
    return RNG.integers(low, high, size=shape)


def bools(*shape):
    return RNG.random(shape) < 0.5


def as_numpy(out):
    return out.detach().numpy() if isinstance(out, torch.Tensor) else out.numpy()


def dtype_name(out):
    """'float32', 'int64', 'bool', ... of a tensor of either library, or of a dtype."""
    dtype = out if isinstance(out, torch.dtype) else out.dtype
    return str(dtype).replace('torch.', '')


def flat(out):
    """A tensor, or the tensors of a tuple/list/named tuple, as a list."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [out]


def compare_outputs(got, want, where):
    got_list, want_list = flat(got), flat(want)
    assert len(got_list) == len(want_list), f"{where}: {len(got_list)} outputs, torch gives {len(want_list)}"
    for i, (g, w) in enumerate(zip(got_list, want_list)):
        if isinstance(w, torch.Tensor):
            assert isinstance(g, mt.Tensor), f"{where}[{i}]: a {type(g).__name__}, torch gives a Tensor"
            assert tuple(g.shape) == tuple(w.shape), f"{where}[{i}]: shape {tuple(g.shape)}, torch {tuple(w.shape)}"
            assert dtype_name(g) == dtype_name(w), f"{where}[{i}]: dtype {g.dtype}, torch {w.dtype}"
            np.testing.assert_allclose(as_numpy(g), as_numpy(w), rtol=1e-9, atol=1e-12, equal_nan=True,
                                       err_msg=f"{where}[{i}]: values")
        else:
            if isinstance(w, torch.dtype):  # a dtype read off a tensor: the same name
                g, w = str(np.dtype(g)), dtype_name(w)
            elif isinstance(w, float):  # a number read off a tensor: the same up to rounding
                assert isinstance(g, float), f"{where}[{i}]: a {type(g).__name__}, torch gives a float"
                g, w = round(g, 9), round(w, 9)
            assert type(g) is type(w), f"{where}[{i}]: a {type(g).__name__}, torch gives a {type(w).__name__}"
            assert g == w or (g != g and w != w), f"{where}[{i}]: {g!r}, torch {w!r}"


def check(fn, *arrays, grad=True):
    """fn(L, *tensors) in both libraries: same outputs; same gradients of a random weighted sum."""
    mts = [MT.t(a) for a in arrays]
    ths = [TORCH.t(a) for a in arrays]
    got, want = fn(MT, *mts), fn(TORCH, *ths)
    compare_outputs(got, want, 'forward')
    # (an output torch keeps in the graph with a zero gradient, as x // y, may be a constant here)
    outs = [(g, w) for g, w in zip(flat(got), flat(want))
            if isinstance(w, torch.Tensor) and w.requires_grad and w.dtype.is_floating_point and g.requires_grad]
    if not grad or not outs:
        return
    loss_mt, loss_th = 0, 0
    for g, w in outs:
        weight = rand(*w.shape)
        loss_mt = loss_mt + (g * mt.tensor(weight)).sum()
        loss_th = loss_th + (w * torch.tensor(weight)).sum()
    loss_th.backward()
    if isinstance(loss_mt, mt.Tensor):
        loss_mt.backward()
    for i, (m, t) in enumerate(zip(mts, ths)):
        if not t.requires_grad:
            continue
        want_grad = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got_grad = np.zeros(m.shape) if m.grad is None else m.grad.numpy()
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-7, atol=1e-9, equal_nan=True,
                                   err_msg=f"gradient of input {i}")


# ---- the cases: (id, fn(L, *tensors), arrays) --------------------------------------------------

X, Y, Z = rand(3, 4), rand(3, 4), rand(2, 3, 4)
CASES = [
    # elementwise, numbers on either side, broadcasting, 0-d
    ('add', lambda L, x, y: x + y, (X, Y)),
    ('add broadcast', lambda L, x, y: x + y, (rand(3, 1), rand(4))),
    ('radd number', lambda L, x: 2 + x, (X,)),
    ('rsub number', lambda L, x: 2 - x, (X,)),
    ('rtruediv number', lambda L, x: 2 / x, (X,)),
    ('rpow number', lambda L, x: 2.0 ** x, (X,)),
    ('pow number', lambda L, x: x ** 3, (X,)),
    ('pow tensor', lambda L, x, y: x.abs() ** y, (X, Y)),
    ('pow method', lambda L, x: x.pow(2), (X,)),
    ('0-d times matrix', lambda L, x, y: x * y, (rand(), X)),
    ('0-d ops', lambda L, x: (x * 2 - 1) / 3, (rand(),)),
    ('mul method', lambda L, x, y: x.mul(y), (X, Y)),
    ('add alpha', lambda L, x, y: x.add(y, alpha=2), (X, Y)),
    ('sub alpha', lambda L, x, y: x.sub(y, alpha=0.5), (X, Y)),
    ('div', lambda L, x, y: x.div(y), (X, Y)),
    ('div floor', lambda L, x, y: x.div(y, rounding_mode='floor'), (X * 5, Y)),
    ('div trunc', lambda L, x, y: x.div(y, rounding_mode='trunc'), (X * 5, Y)),
    ('neg', lambda L, x: -x, (X,)),
    ('F.relu', lambda L, x: L.F.relu(x), (X,)),
    ('exp', lambda L, x: x.exp(), (X,)),
    ('log', lambda L, x: x.abs().log(), (X,)),
    ('sin cos tanh', lambda L, x: x.sin() + x.cos() * x.tanh(), (X,)),
    ('L.sigmoid', lambda L, x: L.sigmoid(x), (X,)),
    ('L.exp L.log', lambda L, x: L.log(L.exp(x)), (X,)),
    ('L.abs L.sqrt', lambda L, x: L.sqrt(L.abs(x)), (X,)),
    ('L.tanh L.sin L.cos', lambda L, x: L.tanh(x) + L.sin(x) * L.cos(x), (X,)),
    ('L.neg', lambda L, x: L.neg(x), (X,)),
    ('L.erf', lambda L, x: L.erf(x), (X,)),
    ('F.gelu default', lambda L, x: L.F.gelu(x), (X,)),
    ('F.gelu tanh', lambda L, x: L.F.gelu(x, approximate='tanh'), (X,)),
    ('F.gelu none', lambda L, x: L.F.gelu(x, approximate='none'), (X,)),
    ('maximum broadcast', lambda L, x, y: L.maximum(x, y), (X, rand(4))),
    ('L.add L.sub L.mul L.div', lambda L, x, y: L.div(L.mul(L.add(x, y), L.sub(x, y)), y), (X, Y)),
    ('L.add number', lambda L, x: L.add(x, 3), (X,)),
    ('L.pow', lambda L, x: L.pow(x, 2), (X,)),
    ('L.pow number base', lambda L, x: L.pow(2, x), (X,)),
    ('remainder', lambda L, x: x % 1.5, (X * 3,)),
    ('rmod', lambda L, x: 100.5 % x.detach(), (X,)),
    ('floordiv', lambda L, x: x // 0.7, (X * 3,)),
    ('int truediv', lambda L, x, y: x / y, ([5, 6, 7], [1, 2, 3])),
    ('int tensor plus float tensor', lambda L, x, y: x + y, (ints(3, 4), X)),
    ('bool plus bool', lambda L, x, y: x & y, (bools(5), bools(5))),
    ('bool or, xor, not', lambda L, x, y: (x | y) ^ ~x, (bools(5), bools(5))),
    ('int and or xor', lambda L, x, y: (x & y) | (x ^ y), (ints(6), ints(6))),
    ('int shifts', lambda L, x: (x << 2) >> 1, (ints(6, low=0, high=100),)),
    ('int invert', lambda L, x: ~x, (ints(6),)),
    ('L.bitwise_and', lambda L, x, y: L.bitwise_and(x, y), (ints(6), ints(6))),
    ('L.bitwise_or xor not', lambda L, x, y: (L.bitwise_or(x, y), L.bitwise_xor(x, 3), L.bitwise_not(x)), (ints(6), ints(6))),
    ('L.bitwise shifts', lambda L, x: (L.bitwise_left_shift(x, 2), L.bitwise_right_shift(x, 1)), (ints(6, low=0),)),
    ('L.floor_divide L.remainder', lambda L, x, y: (L.floor_divide(x, y), L.remainder(x, y)),
     ([-4, 7, 5, -7], [2, -3, 8, 3])),
    ('floor_divide remainder methods', lambda L, x: (x.floor_divide(0.7), x.detach().remainder(-1.5)), (X * 3,)),
    ('bool any all', lambda L, x: (x.any(), x.all(), x.any(1), x.all(0, keepdim=True)), (bools(3, 4),)),
    ('comparison sum', lambda L, x: (x > 0).sum(), (X,)),
    ('comparison mean', lambda L, x: (x > 0).float().mean(), (X,)),
    ('comparisons', lambda L, x, y: (x < y, x <= y, x > y, x >= y, x == y, x != y), (X, Y)),
    ('comparison number', lambda L, x: (x > 0.5, 0.5 < x, x == 1, x != 1), (X,)),
    ('comparison masks grad', lambda L, x: x * (x > 0), (X,)),
    ('where', lambda L, x, y: L.where(x > 0, x, y), (X, Y)),
    ('where number', lambda L, x: L.where(x > 0, x, 0.0), (X,)),
    ('where numbers', lambda L, x: L.where(x > 0, 1.0, -1.0), (X,)),
    ('where broadcast', lambda L, x, y: L.where(x > 0, x, y), (X, rand(4))),
    ('masked_fill', lambda L, x: x.masked_fill(x > 0, -1.0), (X,)),
    ('masked_fill inf', lambda L, x: x.masked_fill(x < 0, float('-inf')).softmax(-1), (X,)),
    ('masked_fill broadcast mask', lambda L, x, m: x.masked_fill(m, 0.0), (X, bools(4))),
    ('masked_fill 0-d tensor value', lambda L, x: x.masked_fill(x > 0, L.tensor(2.0, dtype=L.float64)), (X,)),
    ('clamp', lambda L, x: x.clamp(-0.5, 0.5), (X,)),
    ('clamp min only', lambda L, x: x.clamp(min=0), (X,)),
    ('clamp max only', lambda L, x: x.clamp(max=0), (X,)),
    ('clip', lambda L, x: x.clip(-0.5, 0.5), (X,)),
    ('L.clip', lambda L, x: L.clip(x, -0.5, 0.5), (X,)),
    # reductions
    ('sum', lambda L, x: x.sum(), (Z,)),
    ('sum dim', lambda L, x: x.sum(1), (Z,)),
    ('sum negative dim', lambda L, x: x.sum(-1), (Z,)),
    ('sum keepdim', lambda L, x: x.sum(1, keepdim=True), (Z,)),
    ('sum positional keepdim', lambda L, x: x.sum(1, True), (Z,)),
    ('sum dim tuple', lambda L, x: x.sum((0, 2)), (Z,)),
    ('sum dim list', lambda L, x: x.sum([0, 2]), (Z,)),
    ('sum dim= keepdim tuple', lambda L, x: x.sum(dim=(-1, 0), keepdim=True), (Z,)),
    ('sum axis=', lambda L, x: x.sum(axis=1), (Z,)),
    ('sum 0-d dim 0', lambda L, x: (x.sum(0), x.sum(-1), x.mean(0)), (rand(),)),
    ('L.sum', lambda L, x: L.sum(x, 1), (Z,)),
    ('L.sum dim=', lambda L, x: L.sum(x, dim=(0, 1)), (Z,)),
    ('L.mean keepdim', lambda L, x: L.mean(x, -1, keepdim=True), (Z,)),
    ('mean', lambda L, x: (x.mean(), x.mean(0), x.mean((1, 2))), (Z,)),
    ('var', lambda L, x: x.var(), (Z,)),
    ('var dim', lambda L, x: (x.var(0), x.var(-1, keepdim=True), x.var([1, 2])), (Z,)),
    ('var unbiased False', lambda L, x: (x.var(unbiased=False), x.var(1, False), x.var(1, unbiased=True)), (Z,)),
    ('var correction', lambda L, x: (x.var(correction=0), x.var(1, correction=2)), (Z,)),
    ('std', lambda L, x: (x.std(), x.std(0), x.std(-1, keepdim=True), x.std(correction=0)), (Z,)),
    ('L.var L.std', lambda L, x: (L.var(x), L.std(x, 1)), (Z,)),
    ('max', lambda L, x: x.max(), (X,)),
    ('max dim', lambda L, x: x.max(1), (X,)),
    ('max dim values', lambda L, x: x.max(1)[0], (X,)),
    ('max dim .values .indices', lambda L, x: (x.max(dim=0).values, x.max(dim=0).indices), (X,)),
    ('max dim keepdim', lambda L, x: x.max(-1, keepdim=True), (X,)),
    ('min dim', lambda L, x: x.min(0), (X,)),
    ('min', lambda L, x: x.min(), (X,)),
    ('max of two tensors', lambda L, x, y: L.max(x, y), (X, Y)),
    ('min of two tensors', lambda L, x, y: L.min(x, y), (X, Y)),
    ('x.max(other)', lambda L, x, y: x.max(y), (X, Y)),
    ('L.max dim', lambda L, x: L.max(x, 1), (X,)),
    ('L.max', lambda L, x: L.max(x), (X,)),
    ('amax amin', lambda L, x: (x.amax(1), x.amin((0, 1)), x.amax(), x.amin(-1, keepdim=True)), (Z,)),
    ('argmax', lambda L, x: (x.argmax(), x.argmax(1), x.argmax(0, keepdim=True), x.argmax(dim=-1)), (X,)),
    ('argmin', lambda L, x: (x.argmin(), x.argmin(1), x.argmin(0, True)), (X,)),
    ('L.argmax', lambda L, x: L.argmax(x, dim=1), (X,)),
    ('norm', lambda L, x: x.norm(), (X,)),
    ('norm p', lambda L, x: (x.norm(1), x.norm(2), x.norm(3), x.norm(float('inf'))), (X,)),
    ('norm dim', lambda L, x: (x.norm(dim=1), x.norm(2, -1, keepdim=True), x.norm(p=1, dim=0)), (X,)),
    ('norm 3-d', lambda L, x: (x.norm(), x.norm(dim=(1, 2))), (Z,)),
    ('logsumexp', lambda L, x: (x.logsumexp(1), x.logsumexp(0, True), L.logsumexp(x, -1)), (X,)),
    ('cumsum', lambda L, x: (x.cumsum(0), x.cumsum(-1), L.cumsum(x, dim=1)), (X,)),
    ('cumprod', lambda L, x: (x.cumprod(1), L.cumprod(x, 0)), (X,)),
    ('any all dim', lambda L, x: ((x > 0).any(1), (x > 0).all(-1, keepdim=True)), (X,)),
    ('any of floats', lambda L, x: (x.any(), x.all()), ([0., 1., 2.],)),
    # softmax and losses
    ('softmax', lambda L, x: x.softmax(-1), (Z,)),
    ('softmax dim 0', lambda L, x: x.softmax(0), (Z,)),
    ('softmax dim=1', lambda L, x: x.softmax(dim=1), (Z,)),
    ('F.softmax', lambda L, x: L.F.softmax(x, dim=1), (Z,)),
    ('F.softmax positional', lambda L, x: L.F.softmax(x, 0), (Z,)),
    ('F.log_softmax', lambda L, x: L.F.log_softmax(x, dim=-1), (Z,)),
    ('log_softmax positional', lambda L, x: x.log_softmax(1), (Z,)),
    ('cross_entropy 2-d', lambda L, x: L.F.cross_entropy(x, L.tensor([1, 0, 3])), (X,)),
    ('cross_entropy sum', lambda L, x: L.F.cross_entropy(x, L.tensor([1, 0, 3]), reduction='sum'), (X,)),
    ('cross_entropy none', lambda L, x: L.F.cross_entropy(x, L.tensor([1, 0, 3]), reduction='none'), (X,)),
    ('nll_loss', lambda L, x: L.F.nll_loss(x.log_softmax(-1), L.tensor([1, 0, 3])), (X,)),
    ('nll_loss sum', lambda L, x: L.F.nll_loss(x, L.tensor([1, 0, 3]), reduction='sum'), (X,)),
    ('F.dropout p=0', lambda L, x: L.F.dropout(x, 0.0), (X,)),
    ('F.dropout eval', lambda L, x: L.F.dropout(x, 0.5, training=False), (X,)),
    ('F.linear', lambda L, x, w, b: L.F.linear(x, w, b), (rand(2, 4), rand(4, 4), rand(4))),
    ('F.one_hot', lambda L: L.F.one_hot(L.tensor([0, 2, 1]), 3), ()),
    ('F.one_hot classes', lambda L: L.F.one_hot(L.tensor([0, 2, 1])), ()),
    ('F.pad last dim', lambda L, x: L.F.pad(x, (1, 2)), (X,)),
    ('F.pad two dims', lambda L, x: L.F.pad(x, (1, 2, 0, 1)), (Z,)),
    ('F.pad value', lambda L, x: L.F.pad(x, (1, 1), value=5.0), (X,)),
    # matmul
    ('matmul 2-d', lambda L, x, y: x @ y, (X, rand(4, 5))),
    ('matmul batched @ 1-d', lambda L, x, y: x @ y, (Z, rand(4))),
    ('matmul 1-d @ batched', lambda L, x, y: x @ y, (rand(3), Z)),
    ('L.matmul', lambda L, x, y: L.matmul(x, y), (X, rand(4, 2))),
    ('matmul method', lambda L, x, y: x.matmul(y), (X, rand(4, 2))),
    ('rmatmul array', lambda L, x: x.T @ x, (X,)),
    ('einsum', lambda L, x, y: L.einsum('ij,jk->ik', x, y), (X, rand(4, 2))),
    ('einsum list', lambda L, x, y: L.einsum('bij,bjk->bik', [x, y]), (Z, rand(2, 4, 3))),
    # shapes
    ('T', lambda L, x: x.T, (X,)),
    ('T of 1-d', lambda L, x: x.T, (rand(4),)),
    ('mT', lambda L, x: x.mT, (Z,)),
    ('t()', lambda L, x: x.t(), (X,)),
    ('transpose', lambda L, x: (x.transpose(0, 1), x.transpose(-1, -2), x.transpose(2, 0)), (Z,)),
    ('L.transpose', lambda L, x: L.transpose(x, 0, 1), (X,)),
    ('swapaxes', lambda L, x: x.swapaxes(0, 2), (Z,)),
    ('permute', lambda L, x: (x.permute(2, 0, 1), x.permute((1, 0, 2)), x.permute(-1, 0, 1)), (Z,)),
    ('L.permute', lambda L, x: L.permute(x, (2, 0, 1)), (Z,)),
    ('reshape', lambda L, x: (x.reshape(4, 6), x.reshape((-1, 2)), x.reshape(-1), x.reshape([2, -1])), (Z,)),
    ('reshape 0-d', lambda L, x: (x.reshape(1, 1), x.reshape(()), x.reshape(-1)), (rand(),)),
    ('L.reshape', lambda L, x: L.reshape(x, (4, -1)), (Z,)),
    ('view', lambda L, x: (x.view(4, 6), x.view(-1), x.view((6, 4)), x.view([2, 12])), (Z,)),
    ('flatten', lambda L, x: (x.flatten(), x.flatten(1), x.flatten(0, 1), x.flatten(start_dim=-2)), (Z,)),
    ('L.flatten', lambda L, x: L.flatten(x, 1), (Z,)),
    ('flatten 0-d', lambda L, x: x.flatten(), (rand(),)),
    ('unflatten', lambda L, x: (x.unflatten(2, (2, 2)), x.unflatten(-1, (2, -1))), (Z,)),
    ('unsqueeze', lambda L, x: (x.unsqueeze(0), x.unsqueeze(-1), x.unsqueeze(1), L.unsqueeze(x, 2)), (X,)),
    ('squeeze', lambda L, x: (x.squeeze(), x.squeeze(0), x.squeeze(1), x.squeeze(-1)), (rand(1, 3, 1),)),
    ('squeeze size not 1', lambda L, x: x.squeeze(1), (X,)),
    ('squeeze dim tuple', lambda L, x: x.squeeze((0, 2)), (rand(1, 3, 1),)),
    ('L.squeeze', lambda L, x: (L.squeeze(x), L.squeeze(x, 0)), (rand(1, 3, 1),)),
    ('squeeze 0-d', lambda L, x: (x.squeeze(), x.squeeze(0), x.squeeze(-1)), (rand(),)),
    ('expand', lambda L, x: (x.expand(3, 4), x.expand(2, 3, 4), x.expand(-1, 4), x.expand((3, 4))), (rand(3, 1),)),
    ('broadcast_to', lambda L, x: (x.broadcast_to((2, 3, 4)), L.broadcast_to(x, (3, 4))), (rand(3, 1),)),
    ('expand 0-d', lambda L, x: x.expand(2, 3), (rand(),)),
    ('cat', lambda L, x, y: (L.cat([x, y]), L.cat([x, y], dim=1), L.cat((x, y), -1), L.cat([x, y], 0)), (X, Y)),
    ('cat with an empty', lambda L, x, y: L.cat([x, y]), (X, rand(0, 4))),
    ('concatenate', lambda L, x, y: L.concatenate([x, y], 1), (X, Y)),
    ('stack', lambda L, x, y: (L.stack([x, y]), L.stack([x, y], dim=1), L.stack((x, y), -1)), (X, Y)),
    ('stack 0-d', lambda L, x, y: L.stack([x, y]), (rand(), rand())),
    ('split size', lambda L, x: (x.split(2), x.split(3, dim=1), L.split(x, 2, 1)), (rand(5, 4),)),
    ('split sizes', lambda L, x: (x.split([1, 4]), x.split([1, 3], dim=-1)), (rand(5, 4),)),
    ('chunk', lambda L, x: (x.chunk(2), x.chunk(3, 1), L.chunk(x, 2, dim=-1), x.chunk(4)), (rand(5, 4),)),
    ('chunk more than size', lambda L, x: x.chunk(6, 1), (rand(3, 13),)),
    ('flip', lambda L, x: (x.flip(0), x.flip((0, 2)), x.flip(-1), L.flip(x, [1])), (Z,)),
    ('roll', lambda L, x: (x.roll(1), x.roll(1, 0), x.roll((2, -1), (0, 1)), x.roll(-5, 1), L.roll(x, 1, -1)), (X,)),
    ('tril triu', lambda L, x: (x.tril(), x.triu(1), x.tril(-1), L.tril(x, 2), L.triu(x)), (X,)),
    ('gather', lambda L, x: (x.gather(1, L.tensor([[0, 1], [2, 2], [3, 0]])),
                             L.gather(x, 0, L.tensor([[0, 1, 2, 0]]))), (X,)),
    ('scatter', lambda L, x, s: x.scatter(1, L.tensor([[0], [2], [3]]), s), (X, rand(3, 1))),
    ('scatter_add', lambda L, x, s: x.scatter_add(0, L.tensor([[0, 1, 2, 0], [0, 0, 0, 0]]), s), (X, rand(2, 4))),
    ('clone contiguous detach', lambda L, x: (x.clone() * 2, x.contiguous(), x.detach()), (X,)),
    ('pad', lambda L, x: L.F.pad(x, (0, 1, 1, 0), value=-1.0), (X,)),
    # indexing
    ('index int', lambda L, x: (x[1], x[-1], x[0, 2], x[-1, -1]), (Z,)),
    ('index slices', lambda L, x: (x[:, 1:3], x[::2], x[:, ::2, 1:], x[1:, :-1]), (Z,)),
    ('index slice out of range', lambda L, x: (x[0:10], x[-10:2], x[5:9]), (X,)),
    ('index None', lambda L, x: (x[None], x[:, None], x[..., None], x[None, 1, None]), (Z,)),
    ('index Ellipsis', lambda L, x: (x[..., 0], x[0, ...], x[..., 1:3], x[1, ..., 2]), (Z,)),
    ('index list', lambda L, x: (x[[0, 2]], x[:, [1, 1, 3]], x[[0, 1], [2, 3]]), (X,)),
    ('index int + list', lambda L, x: (x[1, [0, 2]], x[[0, 1], 1], x[0, :, [1, 3]]), (Z,)),
    ('index lists apart', lambda L, x: x[[0, 1], :, [1, 3]], (Z,)),
    ('index int list int', lambda L, x: x[:, 1, [0, 3]], (Z,)),
    ('index negative list', lambda L, x: x[[-1, -2]], (X,)),
    ('index tensor', lambda L, x: (x[L.tensor([2, 0])], x[:, L.tensor([[0, 1], [1, 3]])]), (X,)),
    ('index 0-d tensor', lambda L, x: x[L.tensor(1)], (X,)),
    ('index bool mask', lambda L, x: (x[x > 0], x[L.tensor([True, False, True])]), (X,)),
    ('index bool mask dim 1', lambda L, x: x[:, L.tensor([True, False, True, False])], (X,)),
    ('index bool list', lambda L, x: x[[True, False, True]], (X,)),
    ('index repeated (gradient adds)', lambda L, x: x[[0, 0, 1, 0]], (rand(3),)),
    ('index 0-d None', lambda L, x: (x[None], x[...], x[()]), (rand(),)),
    ('index int tuple', lambda L, x: x[(1, 2)], (Z,)),
    ('index double slice', lambda L, x: x[:, 1:2][1:2], (X,)),
    ('index mixed with None between', lambda L, x: x[[0, 1], None, [1, 2]], (X,)),
    ('index tensors around None and ints', lambda L, x: (x[L.tensor([[1], [0]]), None, 2, L.tensor([0, 3, 1])],
                                                         x[1, L.tensor([2, 0]), None, L.tensor([[1], [3]])],
                                                         x[None, L.tensor([0, 1]), 2, L.tensor([1, 1]), None]), (rand(2, 3, 4, 5),)),
    ('index tuples as sequences', lambda L, x: (x[(1, 0, -1), :, (2, 2, 0)], x[((1,), (0,)), (2, 1)]), (Z,)),
    ('index int, stepped slice, tensor', lambda L, x: x[1, :, 1:4:2, L.tensor([[0], [2]])], (rand(2, 3, 4, 5),)),
    # in place (on a non-leaf, so the gradient reaches the leaf through it)
    ('add_', lambda L, x, y: (x * 1).add_(y), (X, Y)),
    ('mul_ sub_ div_', lambda L, x, y: (x * 1).mul_(y).sub_(1).div_(2), (X, Y)),
    ('add_ alpha', lambda L, x, y: (x * 1).add_(y, alpha=3), (X, Y)),
    ('iadd', lambda L, x, y: _iadd(x * 1, y), (X, Y)),
    ('clamp_', lambda L, x: (x * 1).clamp_(-0.5, 0.5), (X,)),
    ('clamp_ min', lambda L, x: (x * 1).clamp_(min=0), (X,)),
    ('masked_fill_', lambda L, x: (x * 1).masked_fill_(x > 0, 0.0), (X,)),
    ('clamp_ masked_fill_ of a leaf under no_grad', lambda L, x: _under_no_grad(L, x), (X,)),
    ('clamp_ of a view writes through', lambda L, x: _clamp_view(x.detach().clone()), (X,)),
    ('zero_ fill_ of a constant', lambda L, x: (x.detach().clone().zero_(), x.detach().clone().fill_(3.0)), (X,)),
    ('copy_', lambda L, x, y: (x * 1).copy_(y), (X, Y)),
    ('copy_ broadcast', lambda L, x, y: (x * 1).copy_(y), (X, rand(4))),
    ('setitem number', lambda L, x: _setitem(x * 1, (0, slice(None)), 5.0), (X,)),
    ('setitem mask', lambda L, x: _setitem(x * 1, 'mask', 0.0), (X,)),
    ('setitem tensor', lambda L, x, y: _setitem(x * 1, (slice(None), 1), y), (X, rand(3))),
    ('setitem broadcast', lambda L, x, y: _setitem(x * 1, slice(0, 2), y), (X, rand(4))),
    # creation
    ('zeros_like ones_like', lambda L, x: (L.zeros_like(x), L.ones_like(x)), (X,)),
    ('zeros_like of ints', lambda L, x: (L.zeros_like(x), L.ones_like(x)), (ints(3),)),
    ('zeros ones', lambda L: (L.zeros(2, 3), L.zeros((2, 3)), L.ones([2]), L.zeros(()), L.ones(0, 2)), ()),
    ('full', lambda L: (L.full((2, 3), 1.5), L.full((2,), 4), L.full((2,), True), L.full([], 2.0)), ()),
    ('eye', lambda L: (L.eye(3), L.eye(2, 4), L.eye(0)), ()),
    ('arange', lambda L: (L.arange(5), L.arange(1, 7, 2), L.arange(0.0, 1.0, 0.25), L.arange(10, 5, -3),
                          L.arange(5.5, 17.5, 2.5), L.arange(1, 4.0)), ()),
    ('tensor of floats', lambda L: L.tensor([1.0, 2.5]), ()),
    ('tensor of ints', lambda L: L.tensor([1, 2]), ()),
    ('tensor of bools', lambda L: L.tensor([True, False]), ()),
    ('tensor of a float', lambda L: L.tensor(3.0), ()),
    ('tensor of an int', lambda L: L.tensor(3), ()),
    ('tensor of mixed', lambda L: L.tensor([1, 2.5]), ()),
    ('tensor nested', lambda L: L.tensor([[1, 2], [3, 4]]), ()),
    ('tensor empty', lambda L: L.tensor([]), ()),
    ('tensor dtype=', lambda L: (L.tensor([1, 2], dtype=L.float64), L.tensor([1.7, -1.7], dtype=L.int64)), ()),
    ('as_tensor', lambda L: L.as_tensor([1.0, 2.0]), ()),
    ('randn shapes', lambda L: (L.randn(2, 3).shape, L.randn((2, 3)).shape, L.rand([4]).shape,
                                L.randn(2, 3).dtype == L.float32), ()),
    ('randint', lambda L: (L.randint(0, 5, (3,)).shape, L.randint(0, 5, (3,)).dtype == L.int64), ()),
    ('randint(high, size)', lambda L: (L.randint(5, (2, 3)).shape, L.randint(5, size=(4,)).dtype == L.long), ()),
    ('dtype names', lambda L, x: (x.to(L.long).dtype, x.to(L.float).dtype, x.to(L.half).dtype, x.to(L.double).dtype,
                                  (x > 0).to(L.int).dtype, L.bool), (X,)),
    ('f-string of a loss', lambda L, x: f"{(x * x).mean():.4f}", (X,)),
    ('0-d tensor as an index', lambda L: list(range(10))[L.tensor(2):L.tensor(5)], ()),
    # conversions and reads
    ('item', lambda L, x: (x.sum().item(), x[0, 0].item(), x.argmax().item()), (X,)),
    ('item of an int', lambda L, x: x.sum().item(), (ints(3),)),
    ('item of a bool', lambda L, x: (x > 0).all().item(), (X,)),
    ('float int bool of 0-d', lambda L, x: (float(x), int(x), bool(x)), (np.array(2.7),)),
    ('tolist', lambda L, x: (x.tolist(), x[0].tolist(), x.sum().tolist()), (X,)),
    ('tolist of ints', lambda L, x: x.tolist(), (ints(2, 2),)),
    ('len', lambda L, x: (len(x), len(x[0])), (X,)),
    ('iteration', lambda L, x: [row * 2 for row in x], (X,)),
    ('iteration 1-d', lambda L, x: [v for v in x], (rand(3),)),
    ('unpack', lambda L, x: _unpack(x), (X,)),
    ('shape reads', lambda L, x: (x.shape[-1], x.shape[0], len(x.shape), x.ndim, x.dim(), x.numel()), (Z,)),
    ('size', lambda L, x: (tuple(x.size()), x.size(-1), x.size(0), x.size() == (2, 3, 4)), (Z,)),
    ('shape equality', lambda L, x: (x.shape == (3, 4), x.shape == (4, 3), x.shape == [3, 4]), (X,)),
    ('dtype checks', lambda L, x: (x.dtype == L.float64, x.float().dtype == L.float32, x.long().dtype == L.int64,
                                   x.int().dtype, x.double().dtype, x.bool().dtype, x.half().dtype), (X,)),
    ('casts', lambda L, x: (x.int(), x.long(), x.bool(), x.to(L.int64), x.to(L.float32)), (X * 3,)),
    ('float() keeps the gradient', lambda L, x: x.float() * 2, (X,)),
    ('to dtype', lambda L, x: x.to(L.float32), (X,)),
    ('numpy', lambda L, x: x.detach().numpy().sum(), (X,)),
    ('requires_grad of an op', lambda L, x: ((x * 2).requires_grad, (x > 0).requires_grad,
                                             x.detach().requires_grad, x.argmax().requires_grad), (X,)),
    ('is_leaf', lambda L, x: (x.is_leaf, (x * 2).is_leaf), (X,)),
    ('no_grad enable_grad', lambda L, x: _grad_modes(L, x), (X,)),
    ('requires_grad_', lambda L, x: L.tensor([1.0, 2.0], dtype=L.float64).requires_grad_() * x, (rand(2),)),
    ('retain_grad', lambda L, x: _retained(x), (X,)),
    ('register_hook', lambda L, x: _hooked(x), (X,)),
    ('data writes through', lambda L, x: _through_data(x), (X,)),
    ('cpu device', lambda L, x: (x.cpu() * 2, str(x.device)), (X,)),
    ('from_numpy shares memory', lambda L: _shares(L), ()),
    ('isclose allclose', lambda L, x, y: (x.isclose(x + 1e-9), L.allclose(x, y), x.allclose(x),
                                         L.isclose(x, y, atol=0.5)), (X, Y)),
    ('bool of one element', lambda L, x: bool(x > 0), ([1.0],)),
    ('numel', lambda L, x: (L.numel(x), x.numel()), (Z,)),
]


def _grad_modes(L, x):
    with L.no_grad():
        inside = (x * 2).requires_grad, L.is_grad_enabled()
        with L.enable_grad():
            again = (x * 2).requires_grad
    return inside, again, L.is_grad_enabled()


def _retained(x):
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    return h.grad


def _hooked(x):
    seen = []
    x.register_hook(lambda g: seen.append(g.shape) or g * 3)
    (x * x).sum().backward()
    return x.grad, tuple(seen[0])


def _through_data(x):
    """p.data -= lr * p.grad, an optimizer's step of old (here x.data is the array: README's table)."""
    (x * x).sum().backward()
    x.data -= 0.1 * x.grad
    x.data[0] = 5.0
    return x.detach()


def _shares(L):
    array = np.zeros(3)
    t = L.from_numpy(array)
    array[0] = 5.0
    return t


def _under_no_grad(L, x):
    with L.no_grad():
        x.clamp_(-0.5, 0.5).masked_fill_(x > 0.4, 0.4)
    return x.detach(), x.requires_grad


def _clamp_view(x):
    x[1].clamp_(min=0)
    return x


def _iadd(x, y):
    x += y
    return x


def _setitem(x, index, value):
    x[x > 0 if index == 'mask' else index] = value
    return x


def _unpack(x):
    a, b, c = x
    return a - c, b


@pytest.mark.parametrize('name, fn, arrays', CASES, ids=[c[0] for c in CASES])
def test_same_as_torch(name, fn, arrays):
    check(fn, *arrays)


OPTIMIZERS = [('SGD', {}), ('SGD', dict(lr=0.1, momentum=0.9)), ('SGD', dict(lr=0.1, momentum=0.9, nesterov=True)),
              ('SGD', dict(lr=0.1, momentum=0.9, weight_decay=0.1)), ('Adam', {}), ('Adam', dict(lr=0.1, weight_decay=0.1)),
              ('AdamW', {}), ('AdamW', dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.5))]


@pytest.mark.parametrize('name, options', OPTIMIZERS, ids=[f"{n} {o}" for n, o in OPTIMIZERS])
def test_optimizer_steps_as_torch(name, options):
    """The same gradients, the same steps: defaults (lr too) and options mean PyTorch's."""
    start, grads = rand(3, 4), [rand(3, 4) for _ in range(4)]
    mine, theirs = mt.tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt_mine, opt_theirs = getattr(mt.optim, name)([mine], **options), getattr(torch.optim, name)([theirs], **options)
    for g in grads:
        mine.grad, theirs.grad = mt.tensor(g), torch.tensor(g)
        opt_mine.step()
        opt_theirs.step()
    np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('norm_type', [2.0, 1.0, math.inf])
def test_clip_grad_norm_as_torch(norm_type):
    g = [rand(3, 4), rand(5)]
    mine = [mt.tensor(np.zeros_like(a), requires_grad=True) for a in g]
    theirs = [torch.tensor(np.zeros_like(a), requires_grad=True) for a in g]
    for p, q, a in zip(mine, theirs, g):
        p.grad, q.grad = mt.tensor(a), torch.tensor(a)
    total_mine = mt.nn.utils.clip_grad_norm_(mine, 1.0, norm_type=norm_type)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=norm_type)
    assert float(total_mine) == pytest.approx(float(total_theirs), rel=1e-12)
    for p, q in zip(mine, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_uint8_ids_index_as_ids():
    """README's table: a uint8 index tensor holds ids here, as every integer dtype (PyTorch reads it as a mask)."""
    x = mt.tensor(rand(3, 2))
    ids = np.array([1, 0, 1], dtype=np.uint8)
    np.testing.assert_array_equal(x[mt.tensor(ids)].numpy(), x.numpy()[ids.astype(np.int64)])


def test_linear_layer_is_torchs_with_the_same_weight():
    """nn.Linear keeps W as PyTorch does, (n_out, n_in); the layer computes what torch's does."""
    layer = mt.nn.Linear(4, 3).double()
    twin = torch.nn.Linear(4, 3).double()
    assert layer.weight.shape == tuple(twin.weight.shape)
    with torch.no_grad():
        twin.weight.copy_(torch.tensor(layer.weight.numpy()))
        twin.bias.copy_(torch.tensor(layer.bias.numpy()))
    x = rand(2, 4)
    np.testing.assert_allclose(layer(mt.tensor(x)).numpy(), twin(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(mt.linear(mt.tensor(x), layer.weight, layer.bias).numpy(),
                               F.linear(torch.tensor(x), twin.weight, twin.bias).detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize('call', [
    lambda x: mt.softmax(x), lambda x: mt.log_softmax(x),  # PyTorch's implicit dim of 3-D is 0
    lambda x: x.sum(()), lambda x: x.mean(dim=()), lambda x: x.amax(()), lambda x: x.logsumexp(()),  # numpy: nothing
    lambda x: x - x.max(1),  # a (values, indices) pair is not a tensor
    lambda x: x.std(True, correction=0),  # std(unbiased) takes nothing else
    lambda x: x.transpose(1),  # one dim: not a swap
    lambda x: mt.linear(x, mt.ones(4, 5)),  # an (n_in, n_out) weight, where F.linear wants (n_out, n_in)
], ids=['softmax', 'log_softmax', 'sum', 'mean', 'amax', 'logsumexp', 'tuple operand', 'std', 'transpose', 'linear'])
def test_calls_that_would_mean_two_things_refuse(call):
    """Where numpy's and PyTorch's readings (or an old and a new one) differ, an error names them."""
    with pytest.raises((TypeError, ValueError, RuntimeError)):
        call(mt.randn(2, 3, 4))


@pytest.mark.parametrize('change', [lambda x: x.add_(1), lambda x: x.mul_(2), lambda x: x.clamp_(0, 1),
                                    lambda x: x.masked_fill_(x > 0, 0.0), lambda x: x.zero_()],
                         ids=['add_', 'mul_', 'clamp_', 'masked_fill_', 'zero_'])
def test_in_place_change_of_a_leaf_that_requires_grad_refuses_as_torchs(change):
    for lib in (torch, mt):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        with pytest.raises(RuntimeError):
            change(x)
        assert x.tolist() == [0.5, -1.0]  # unchanged
