"""Self-test: every op, forward and backward, against a CPU float64 reference.

    python -m microtensor.selftest                   # on the GPU when there is one, else the CPU
    python -m microtensor.selftest --device cpu      # float32 CPU run vs the float64 CPU reference
    python -m microtensor.selftest --device cuda --dtype float32

Each case in CASES runs twice on the same input values and the same upstream
gradient: once on the reference (CPU, float64) and once on the device under test.
The table shows the largest difference in the output and in any input's gradient.
On a GPU this proves the cupy path computes what the numpy path computes; on the
CPU (float32 vs float64) it shows how much single precision costs each op.
tests/test_gpu.py runs the same table.
"""
import argparse
import sys
from dataclasses import dataclass
from typing import Callable

import microtensor as mt

from . import backend


@dataclass(frozen=True)
class Case:
    """One row of the self-test: fn(*inputs) -> Tensor, with one input per shape.

    Inputs are drawn uniformly from [low, high); integer or boolean arguments
    (targets, indices, masks) are built inside fn, on the inputs' device.
    """
    name: str
    fn: Callable
    shapes: tuple
    low: float = -2.0
    high: float = 2.0


def _ids(values, x):
    """An integer tensor on x's device (class targets, gather indices)."""
    return mt.tensor(values, device=x.device)


def _causal(x):
    """A causal (T, T) mask on x's device, for x (..., T, T)."""
    T = x.shape[-1]
    return mt.arange(T, device=x.device).reshape(T, 1) >= mt.arange(T, device=x.device)


def _bits(values, x):
    """Every bitwise op of the integer ids `values` (on x's device), in x's dtype."""
    ids = _ids(values, x)
    return (((ids & 6) | (ids ^ 3)) + ~ids + (ids << 2) + (ids >> 1)).to(dtype=x.dtype)


def _second_derivative(f):
    """x -> d(f(x))/dx built with create_graph=True: differentiating it runs backward's own backward."""
    return lambda x: mt.grad(f(x), x, create_graph=True)[0]


def _fused(f):
    """f with the fused layer on (mt.fused()): the Fused... ops, compared on the device too."""
    def with_fused_layer(*inputs):
        with mt.fused():
            return f(*inputs)
    return with_fused_layer


def _written(x, v):
    """buf[ids] = v into a non-leaf copy of x (SetItem: the write is in the graph)."""
    buf = x * 1.0
    buf[_ids([2, 0], x)] = v
    return buf


POSITIVE = dict(low=0.5, high=2.0)  # for log, sqrt, division and powers

CASES = [
    # elementwise, with broadcasting (the backward loop sums gradients back: SumTo)
    Case('add', lambda a, b: a + b, ((3, 4), (4,))),
    Case('sub', lambda a, b: a - b, ((3, 1), (1, 4))),
    Case('mul', lambda a, b: a * b, ((2, 3, 4), (3, 1))),
    Case('div', lambda a, b: a / b, ((3, 4), (3, 4)), **POSITIVE),
    Case('pow', lambda a, b: a ** b, ((3, 4), (4,)), **POSITIVE),
    Case('scalars', lambda x: 2 * x - 1 / (x * x + 1) + x ** 2 - 0.5, ((3, 4),)),
    Case('neg', lambda x: -x, ((3, 4),)),
    Case('exp', lambda x: x.exp(), ((3, 4),)),
    Case('log', lambda x: x.log(), ((3, 4),), **POSITIVE),
    Case('sqrt', lambda x: x.sqrt(), ((3, 4),), **POSITIVE),
    Case('rsqrt', lambda x: x.rsqrt(), ((3, 4),), **POSITIVE),
    Case('tanh', lambda x: x.tanh(), ((3, 4),)),
    Case('sin', lambda x: x.sin(), ((3, 4),)),
    Case('cos', lambda x: x.cos(), ((3, 4),)),
    Case('sigmoid', lambda x: x.sigmoid(), ((3, 4),)),
    Case('relu', lambda x: x.relu(), ((3, 4),)),
    Case('abs', lambda x: x.abs(), ((3, 4),)),
    Case('erf', lambda x: mt.erf(x), ((3, 4),)),
    Case('gelu tanh', lambda x: mt.gelu(x, approximate='tanh'), ((3, 4),)),
    Case('gelu erf', lambda x: mt.gelu(x, approximate='none'), ((3, 4),)),
    Case('gelu tanh 2nd order', _second_derivative(lambda x: (mt.gelu(x, approximate='tanh') ** 2).sum()), ((3, 4),)),
    Case('maximum', lambda a, b: mt.maximum(a, b), ((3, 4), (4,))),
    Case('minimum', lambda a, b: mt.minimum(a, b), ((3, 4), (3, 1))),
    Case('clip', lambda x: x.clip(-0.5, 1.0), ((3, 4),)),
    Case('clip max only', lambda x: x.clip(max=0.3), ((3, 4),)),
    Case('cast', lambda x: x.float().double() * x, ((3, 4),)),
    # reductions
    Case('sum', lambda x: x.sum(), ((3, 4),)),
    Case('sum axis', lambda x: x.sum(axis=1, keepdims=True), ((2, 3, 4),)),
    Case('mean', lambda x: x.mean(axis=(0, 2)), ((2, 3, 4),)),
    Case('var', lambda x: x.var(dim=-1, correction=0), ((2, 3, 4),)),
    Case('var n - 1', lambda x: x.var(dim=0), ((3, 4),)),
    Case('std', lambda x: x.std(dim=-1), ((3, 4),)),
    Case('max', lambda x: x.max(dim=1).values, ((2, 3, 4),)),
    Case('amax', lambda x: x.amax(dim=(0, 2)), ((2, 3, 4),)),
    Case('max all', lambda x: x.max(), ((3, 4),)),
    Case('min', lambda x: x.min(dim=0, keepdim=True).values, ((3, 4),)),
    Case('amin', lambda x: x.amin(dim=-1, keepdim=True), ((3, 4),)),
    Case('sum_to', lambda x: x.sum_to((1, 4)), ((3, 4),)),
    Case('norm', lambda x: x.norm(axis=-1), ((2, 3, 4),)),
    Case('norm inf, p=3', lambda x: x.norm(float('inf'), axis=0) + x.norm(3, axis=0), ((3, 4),)),
    Case('norm 1', lambda x: x.norm(1), ((3, 4),)),
    Case('norm matrix 1', lambda x: x.norm(ord=1), ((3, 4),)),
    # matrix products
    Case('matmul', lambda a, b: a @ b, ((3, 4), (4, 5))),
    Case('matmul batched', lambda a, b: a @ b, ((2, 3, 4), (2, 4, 5))),
    Case('matmul X @ W', lambda X, W: X @ W, ((2, 3, 4), (4, 5))),
    Case('matmul broadcast', lambda a, b: a @ b, ((2, 3, 4), (1, 4, 5))),
    Case('matmul vector', lambda v, W, u: (v @ W) @ u, ((4,), (4, 5), (5,))),
    # shapes
    Case('reshape', lambda x: x.reshape(2, 6), ((3, 4),)),
    Case('permute', lambda x: x.permute(2, 0, 1), ((2, 3, 4),)),
    Case('transpose', lambda x: x.transpose(0, -1), ((2, 3, 4),)),
    Case('.T', lambda x: x.T, ((3, 4),)),
    Case('expand', lambda x: x.expand(2, -1, 4), ((3, 1),)),
    Case('flatten', lambda x: x.flatten(1), ((2, 3, 4),)),
    Case('unflatten', lambda x: x.unflatten(-1, (2, -1)), ((3, 4),)),
    Case('clone', lambda x: x.clone() * x, ((3, 4),)),
    Case('chunk', lambda x: mt.concatenate(x.chunk(3, dim=1)[::-1], axis=1), ((3, 5),)),
    Case('swapaxes', lambda x: x.swapaxes(0, -1), ((2, 3, 4),)),
    Case('expand_dims', lambda x: x.expand_dims(1), ((3, 4),)),
    Case('squeeze', lambda x: x.squeeze(1), ((3, 1, 4),)),
    Case('broadcast_to', lambda x: x.broadcast_to((2, 3, 4)), ((3, 1),)),
    Case('slice', lambda x: x[1:, ::2], ((3, 4),)),
    Case('index ids', lambda x: x[_ids([0, 2, 0], x)], ((3, 4),)),
    Case('index column ids', lambda x: x[:, _ids([3, 1, 3], x)], ((3, 4),)),
    Case('index mask', lambda x: x[x > 0], ((3, 4),)),
    Case('index 2nd order', _second_derivative(lambda x: (x[_ids([0, 2, 0], x)] ** 3).sum()), ((3, 4),)),
    Case('setitem', _written, ((3, 4), (4,))),
    Case('concatenate', lambda a, b: mt.concatenate([a, b], axis=1), ((3, 4), (3, 2))),
    Case('stack', lambda a, b: mt.stack([a, b], axis=0), ((3, 4), (3, 4))),
    Case('split', lambda x: mt.concatenate(mt.split(x, [1, 2, 1], dim=1)[::-1], axis=1), ((3, 4),)),
    Case('to cpu and back', lambda x: (x.cpu() * 2).to(x.device), ((3, 4),)),
    # selection
    Case('where', lambda a, b: mt.where(a > 0, a, b), ((3, 4), (4,))),
    Case('where scalar', lambda x: mt.where(x > 0, x, 0.0), ((3, 4),)),
    Case('masked_fill', lambda x: x.masked_fill(x > 0.5, -1.0), ((3, 4),)),
    # the nn ops
    Case('softmax', lambda x: mt.softmax(x, -1), ((2, 3, 4),)),
    Case('softmax axis 0', lambda x: mt.softmax(x, axis=0), ((3, 4),)),
    Case('softmax 2nd order', _second_derivative(lambda x: (mt.softmax(x) ** 2).sum()), ((3, 4),)),
    Case('log_softmax', lambda x: mt.log_softmax(x, -1), ((2, 3, 4),)),
    Case('cross_entropy', lambda x: mt.cross_entropy(x, _ids([0, 3, 1], x)), ((3, 4),)),
    Case('cross_entropy ignore', lambda x: mt.cross_entropy(x, _ids([[0, 3, -1], [-1, 1, 2]], x), ignore_index=-1),
         ((2, 3, 4),)),
    Case('layer_norm', lambda x, gamma, beta: mt.layer_norm(x, 4, gamma, beta), ((2, 3, 4), (4,), (4,))),
    # nn.Linear's and attention's
    Case('linear', lambda x, W, b: mt.linear(x, W, b), ((2, 3, 4), (5, 4), (5,))),
    Case('linear no bias', lambda x, W: mt.linear(x, W), ((3, 4), (5, 4))),
    Case('masked_softmax', lambda s: mt.masked_softmax(s, _causal(s)), ((2, 4, 4),)),
    Case('masked_softmax 2nd order', _second_derivative(lambda s: (mt.masked_softmax(s, _causal(s)) ** 2).sum()),
         ((2, 4, 4),)),
    # PyTorch's calls beyond numpy's: rounding, bitwise, scans, einsum, rearranging, gather/scatter, losses
    Case('remainder', lambda a, b: a % (b.abs() + 0.5), ((3, 4), (3, 4))),
    Case('div floor, trunc', lambda a, b: a + a.div(b, rounding_mode='floor') + a.div(b, rounding_mode='trunc'),
         ((3, 4), (4,))),
    Case('bitwise', lambda x: x * _bits([5, -3, 12, 7], x), ((3, 4),)),
    Case('cumsum', lambda x: x.cumsum(1), ((2, 3, 4),)),
    Case('cumprod with a zero', lambda x: mt.where(x > 1.5, 0.0, x).cumprod(-1), ((3, 4),)),
    Case('logsumexp', lambda x: x.logsumexp(-1) + mt.logsumexp(x, (0, 2)).sum(), ((2, 3, 4),)),
    Case('einsum', lambda a, b: mt.einsum('bij,bkj->bik', a, b) + mt.einsum('bij->bi', a).expand_dims(-1),
         ((2, 3, 4), (2, 5, 4))),
    Case('pad', lambda x: mt.pad(x, (1, -1, 2, 0), value=0.5), ((3, 4),)),
    Case('flip, roll', lambda x: x.flip((0, 2)).roll((2, -1), (1, 0)), ((2, 3, 4),)),
    Case('tril, triu', lambda x: x.tril(-1) + 2 * x.triu(1), ((2, 4, 4),)),
    Case('gather', lambda x: x.gather(1, _ids([[3, 0], [1, 1], [2, 0]], x)), ((3, 4),)),
    Case('scatter', lambda x, s: x.scatter(1, _ids([[3, 0], [1, 2], [2, 0]], x), s), ((3, 4), (3, 2))),
    Case('scatter_add', lambda x, s: x.scatter_add(0, _ids([[0, 1, 0, 2], [0, 0, 0, 0]], x), s), ((3, 4), (2, 4))),
    Case('nll_loss weighted', lambda x: mt.nll_loss(mt.log_softmax(x), _ids([0, 3, -1], x), ignore_index=-1,
                                                    weight=mt.tensor([1.0, 2.0, 0.5, 1.0], dtype=x.dtype,
                                                                     device=x.device)), ((3, 4),)),
    Case('cross_entropy options', lambda x: mt.cross_entropy(x, _ids([0, 3, 1], x), reduction='none',
                                                             label_smoothing=0.1), ((3, 4),)),
    Case('cross_entropy probabilities', lambda x, p: mt.cross_entropy(x, p.softmax(-1)), ((3, 4), (3, 4))),
    # the fused layer (microtensor/fused/)
    Case('fused softmax', _fused(lambda x: mt.softmax(x, -1)), ((2, 3, 4),)),
    Case('fused cross_entropy', _fused(lambda x: mt.cross_entropy(x, _ids([0, 3, 1], x))), ((3, 4),)),
    Case('fused gelu tanh', _fused(lambda x: mt.gelu(x, approximate='tanh')), ((3, 4),)),
    Case('fused gelu tanh 2nd order', _fused(_second_derivative(lambda x: (mt.gelu(x, approximate='tanh') ** 2).sum())), ((3, 4),)),
    Case('fused layer_norm', _fused(lambda x, gamma, beta: mt.layer_norm(x, 4, gamma, beta)), ((2, 3, 4), (4,), (4,))),
    Case('fused linear', _fused(lambda x, W, b: mt.linear(x, W, b)), ((2, 3, 4), (5, 4), (5,))),
    Case('fused linear 2nd order', _fused(_second_derivative(lambda x: (mt.linear(x, x, x[0]) ** 2).sum())),
         ((3, 3),)),
    Case('fused masked_softmax', _fused(lambda s: mt.masked_softmax(s, _causal(s))), ((2, 4, 4),)),
    Case('fused masked_softmax 2nd order',
         _fused(_second_derivative(lambda s: (mt.masked_softmax(s, _causal(s)) ** 2).sum())), ((2, 4, 4),)),
    # the elementwise families: trigonometric, exponential, rounding (their gradient 0), nan_to_num
    Case('tan atan sinh cosh asinh', lambda x: x.tan() + x.atan() + x.sinh() * x.cosh() + x.asinh(), ((3, 4),),
         low=-1.2, high=1.2),
    Case('asin acos atanh', lambda x: x.asin() + x.acos() * x.atanh(), ((3, 4),), low=-0.9, high=0.9),
    Case('acosh', lambda x: x.acosh(), ((3, 4),), low=1.2, high=3.0),
    Case('atan2 hypot', lambda a, b: mt.atan2(a, b) + mt.hypot(a, b), ((3, 4), (4,)), **POSITIVE),
    Case('exp2 expm1 square', lambda x: x.exp2() + x.expm1() * x.square(), ((3, 4),)),
    Case('log2 log10 log1p reciprocal', lambda x: x.log2() + x.log10() * x.log1p() + x.reciprocal(), ((3, 4),),
         **POSITIVE),
    Case('logaddexp', lambda a, b: mt.logaddexp(a, b), ((3, 4), (3, 4))),
    Case('rounding', lambda x: x.floor() + x.ceil() + x.round() + x.trunc() + x.sign() * x + x.frac(),
         ((3, 4),)),
    Case('copysign fmod', lambda a, b: mt.copysign(a, b) + mt.fmod(a, b), ((3, 4), (3, 4)), **POSITIVE),
    Case('nan_to_num', lambda x: (x.log() * 0 + x).nan_to_num(), ((3, 4),), **POSITIVE),
    # the losses, sorting, scans, shapes and convolution of the op zoo
    Case('binary_cross_entropy', lambda p: mt.nn.functional.binary_cross_entropy(p, p.detach() * 0 + 0.3),
         ((3, 4),), low=0.1, high=0.9),
    Case('sort, prod', lambda x: x.sort(dim=1).values * x.prod(1, keepdim=True), ((3, 4),)),
    Case('logcumsumexp', lambda x: x.logcumsumexp(1), ((3, 4),)),
    Case('diagonal, diag_embed', lambda x: mt.diag_embed(x.diagonal(1, 0, 2)), ((3, 4, 5),)),
    Case('scatter_reduce', lambda x, s: mt.scatter_reduce(x, 1, _ids([[0, 1, 1], [2, 2, 3], [3, 0, 0]], x), s, 'amax'),
         ((3, 4), (3, 3))),
    Case('conv2d', lambda x, w, b: mt.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
         ((2, 4, 5, 4), (6, 2, 3, 2), (6,))),
]


@dataclass
class Result:
    case: Case
    forward_diff: float  # max |y - y_ref|
    grad_diff: float     # max |dL/dx - dL/dx_ref| over every input
    passed: bool
    error: str = ''      # what the run under test raised, if it raised


# Allowed difference, relative to the reference's largest magnitude (at least 1).
TOLERANCE = {'float64': 1e-9, 'float32': 2e-5}


def compare(case, device, dtype, seed=0):
    """Run `case` on (device, dtype) and on the CPU float64 reference; a Result."""
    rng = backend.host_rng(seed)
    values = [rng.uniform(case.low, case.high, shape) for shape in case.shapes]
    ref_inputs, ref_out = _forward(case, values, 'cpu', 'float64')
    upstream = rng.standard_normal(ref_out.shape)  # a random dL/dy: ones would hide errors that cancel
    ref_out.backward(mt.tensor(upstream, dtype='float64'))
    try:
        inputs, out = _forward(case, values, device, dtype)
        out.backward(mt.tensor(upstream, dtype=out.dtype, device=out.device))
    except Exception as error:  # one broken op must not hide the rest of the table
        return Result(case, float('inf'), float('inf'), False, f"{type(error).__name__}: {error}")

    tolerance = TOLERANCE[str(backend.dtype(dtype))]
    forward_diff, forward_ok = _difference(out, ref_out, tolerance)
    grad_diff, grads_ok = 0.0, True
    for x, ref_x in zip(inputs, ref_inputs):
        diff, ok = _difference(x.grad, ref_x.grad, tolerance)
        grad_diff, grads_ok = max(grad_diff, diff), grads_ok and ok
    return Result(case, forward_diff, grad_diff, forward_ok and grads_ok)


def _forward(case, values, device, dtype):
    inputs = [mt.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in values]
    return inputs, case.fn(*inputs)


def _difference(t, ref, tolerance):
    """(max |t - ref|, within tolerance?); a gradient missing on one side only is a failure."""
    if t is None or ref is None:
        return (0.0, True) if t is None and ref is None else (float('inf'), False)
    a, b = backend.to_numpy(t.data).astype('float64'), backend.to_numpy(ref.data)
    if a.shape != b.shape:
        return float('inf'), False
    if a.size == 0:
        return 0.0, True
    diff = float(abs(a - b).max())  # nan when either side has a nan: then `<=` is False
    return diff, diff <= tolerance * max(1.0, float(abs(b).max()))


def default_device_and_dtype(device=None, dtype=None):
    """cuda when a GPU is available, else cpu; float64 on the GPU (it must match the CPU
    closely), float32 on the CPU (there float64 would compare the reference with itself)."""
    device = backend.check_device(device) if device else ('cuda' if backend.cuda_is_available() else 'cpu')
    return device, dtype or ('float64' if device == 'cuda' else 'float32')


def run(device=None, dtype=None, cases=CASES):
    """Every case on (device, dtype), defaults as in default_device_and_dtype; a list of Results."""
    device, dtype = default_device_and_dtype(device, dtype)
    return [compare(case, device, dtype) for case in cases]


def format_table(results):
    rows = [('op', 'input shapes', 'max |forward diff|', 'max |grad diff|', 'result')]
    for r in results:
        shapes = ' '.join(str(s).replace(' ', '') for s in r.case.shapes)
        rows.append((r.case.name, shapes, f'{r.forward_diff:.2e}', f'{r.grad_diff:.2e}',
                     'PASS' if r.passed else 'FAIL'))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m microtensor.selftest', description=__doc__.splitlines()[0])
    parser.add_argument('--device', choices=backend.DEVICES, help='default: cuda when a GPU is available, else cpu')
    parser.add_argument('--dtype', choices=sorted(TOLERANCE), help='default: float64 on cuda, float32 on cpu')
    args = parser.parse_args(argv)
    try:
        device, dtype = default_device_and_dtype(args.device, args.dtype)
    except RuntimeError as error:  # --device cuda without a GPU
        parser.error(str(error))
    print(f"microtensor self-test: {device} {dtype} vs the CPU float64 reference "
          f"(tolerance {TOLERANCE[dtype]:g} x max(1, max |reference|))\n")
    results = run(device, dtype)
    print(format_table(results))
    for r in results:
        if r.error:
            print(f"{r.case.name} raised {r.error}")
    failed = [r.case.name for r in results if not r.passed]
    print(f"\n{len(results) - len(failed)} of {len(results)} passed" + (f"; FAILED: {', '.join(failed)}" if failed else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
