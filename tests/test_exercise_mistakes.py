"""`check` cannot be fooled: wrong implementations a learner might write (beyond the catalogue's)
each fail with a message naming the kind of mistake, and correct but unusual ones pass.

Each row is learner code appended to the reference answer's file (so `class Mul(Mul)` keeps the
given forward and replaces what it redefines), or a whole file where the row says so.
"""
import os
import shutil
import textwrap

import pytest

from demos.exercises import check, workbook
from demos.exercises.catalogue import EXERCISES
from demos.exercises.messages import KINDS

EXAMPLES = 10
LABELS = tuple(f"{label}:" for label in KINDS.values())

# (exercise, what the message must name, the learner's code)
WRONG = [
    ('mul', 'wrong value', """
class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        return g * b * 1.0001, g * a
"""),
    ('mul', 'incoming gradient g in place', """
class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        g.data *= 2
        return g * b / 2, g * a / 2
"""),
    ('mul', 'state shared between instances', """
import microtensor as mt
class Mul(Mul):
    def forward(self, a, b):
        Mul.saved = (a, b)
        return a * b
    def backward(self, g):
        a, b = (mt.as_tensor(v) for v in Mul.saved)
        return g * b, g * a
"""),
    ('mul', 'wrong dtype', """
import microtensor as mt
class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        return (g * b).to(mt.float32), (g * a).to(mt.float32)
"""),
    ('mul', 'constant (requires_grad=False)', """
class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        return (g * b if self.needs_grad(1) else None), (g * a if self.needs_grad(0) else None)
"""),
    ('sum', 'wrong shape', """
class Sum(Sum):
    def backward(self, g):
        return (g.reshape(self.kept_shape),)
"""),
    ('matmul', 'wrong value', """
class MatMul(MatMul):
    def backward(self, g):
        a, b = self.inputs
        return g @ b.swapaxes(-1, -2), a.swapaxes(-1, -2) @ g * 1.0001
"""),
    ('matmul', 'wrong shape', """
class MatMul(MatMul):
    def backward(self, g):
        a, b = self.inputs
        return (g @ b.swapaxes(-1, -2),)
"""),
    ('matmul', 'changed the input B in place', """
class MatMul(MatMul):
    def backward(self, g):
        a, b = self.inputs
        ga = g @ b.swapaxes(-1, -2)
        b.data[...] = 0
        return ga, a.swapaxes(-1, -2) @ g
"""),
    ('sum', 'crash', """
class Sum(Sum):
    def backward(self, g):
        (x,) = self.inputs
        return (g.reshape(g.shape + (1,)).broadcast_to(x.shape),)
"""),
    ('sum', 'state shared between instances', """
class Sum(Sum):
    def forward(self, x, axis=None, keepdims=False):
        y = super().forward(x, axis, keepdims)
        Sum.kept = self.kept_shape
        return y
    def backward(self, g):
        (x,) = self.inputs
        return (g.reshape(Sum.kept).broadcast_to(x.shape) * (x * 0 + 1),)
"""),
    ('sum', 'state consumed by the first backward', """
class Sum(Sum):
    def backward(self, g):
        (x,) = self.inputs
        kept = self.__dict__.pop('kept_shape')
        return (g.reshape(kept).broadcast_to(x.shape),)
"""),
    ('broadcast_add', 'wrong shape', """
class BroadcastAdd(BroadcastAdd):
    def backward(self, g):
        return [g, g]
"""),
    ('broadcast_add', 'wrong value', """
class BroadcastAdd(BroadcastAdd):
    def backward(self, g):
        grads = []
        for x in self.inputs:
            lead = g.ndim - x.ndim
            gx = g.mean(axis=tuple(range(lead))) if lead else g
            stretched = tuple(i for i, n in enumerate(x.shape) if n == 1 and gx.shape[i] != 1)
            grads.append(gx.sum(axis=stretched, keepdims=True) if stretched else gx)
        return tuple(grads)
"""),
    ('broadcast_add', 'wrong shape', """
class BroadcastAdd(BroadcastAdd):
    def backward(self, g):
        grads = []
        for x in self.inputs:
            stretched = tuple(i for i, n in enumerate(x.shape) if n == 1 and g.shape[g.ndim - x.ndim + i] != 1)
            grads.append(g.sum(axis=tuple(g.ndim - x.ndim + i for i in stretched), keepdims=True) if stretched else g)
        return tuple(grads)
"""),
    ('exp', 'wrong value', """
class Exp(Exp):
    def backward(self, g):
        return (g * self.output * 1.0001,)
"""),
    ('exp', 'not differentiable twice', """
import numpy as np
import microtensor as mt
class Exp(Exp):
    def backward(self, g):
        return (mt.as_tensor(np.asarray(g.data * self.output.data)),)
"""),
    ('exp', 'changed the output', """
class Exp(Exp):
    def backward(self, g):
        y = self.output
        y.data[...] = y.data * g.data
        return (y,)
"""),
    ('exp', 'crash', """
class Exp(Exp):
    def backward(self, g):
        return (g * self.outptu,)
"""),
    ('tanh', 'wrong value', """
class Tanh(Tanh):
    def backward(self, g):
        return (g * (1 - self.output ** 2 + 1e-4),)
"""),
    ('tanh', 'float32', """
import microtensor as mt
class Tanh(Tanh):
    def backward(self, g):
        y, g32 = self.output.to(mt.float32), g.to(mt.float32)
        return ((g32 * (1 - y * y)).to(g.dtype),)
"""),
    ('tanh', 'overflow', """
class Tanh(Tanh):
    def backward(self, g):
        x = self.inputs[0]
        t = (x.exp() - (-x).exp()) / (x.exp() + (-x).exp())
        return (g * (1 - t * t),)
"""),
    ('tanh', 'wrong dtype', """
import microtensor as mt
class Tanh(Tanh):
    def backward(self, g):
        dx = g * (1 - self.output ** 2)
        return (dx.to(mt.float16) if dx.dtype == mt.float32 else dx,)
"""),
    ('exp', 'wrong value', """
class Exp(Exp):
    calls = 0
    def backward(self, g):
        Exp.calls += 1
        return (g * self.output * (1.0 if Exp.calls < 5 else 1.5),)
"""),
    ('relu', 'subgradient', """
class Relu(Relu):
    def backward(self, g):
        return (g * (self.inputs[0] >= 0),)
"""),
    ('relu', 'not differentiable twice', """
import numpy as np
import microtensor as mt
class Relu(Relu):
    def backward(self, g):
        return (mt.as_tensor(np.asarray((self.inputs[0].data > 0) * g.data)),)
"""),
    ('relu', 'wrong dtype', """
import microtensor as mt
class Relu(Relu):
    def backward(self, g):
        return ((g * (self.inputs[0] > 0)).to(mt.float32),)
"""),
    ('softmax', 'wrong value', """
class Softmax(Softmax):
    def backward(self, g):
        p = self.output
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)) * 1.0001,)
"""),
    ('softmax', 'state shared between instances', """
import microtensor as mt
class Softmax(Softmax):
    def forward(self, x, axis=-1):
        Softmax.p = super().forward(x, axis)
        return Softmax.p
    def backward(self, g):
        p = mt.as_tensor(Softmax.p)
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)
"""),
    ('softmax', 'wrong value', """
class Softmax(Softmax):
    def backward(self, g):
        p = self.output
        return (p * (g - (g * p).sum(axis=-1, keepdims=True)),)
"""),
    ('softmax', 'incoming gradient g in place', """
class Softmax(Softmax):
    def backward(self, g):
        p = self.output
        g.data -= (g * p).sum(axis=self.axis, keepdims=True).data
        return (p * g,)
"""),
    ('softmax', 'logits around +-1e3', """
class Softmax(Softmax):
    def backward(self, g):
        e = self.inputs[0].exp()
        p = e / e.sum(axis=self.axis, keepdims=True)
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)
"""),
    ('log_softmax', 'wrong value', """
class LogSoftmax(LogSoftmax):
    def backward(self, g):
        return (g - self.output.exp() * g.mean(axis=self.axis, keepdims=True),)
"""),
    ('log_softmax', 'logits around +-1e3', """
class LogSoftmax(LogSoftmax):
    def backward(self, g):
        e = self.inputs[0].exp()
        return (g - e / e.sum(axis=self.axis, keepdims=True) * g.sum(axis=self.axis, keepdims=True),)
"""),
    ('log_softmax', 'state consumed by the first backward', """
class LogSoftmax(LogSoftmax):
    def backward(self, g):
        axis, self.axis = self.axis, None
        return (g - self.output.exp() * g.sum(axis=axis, keepdims=True),)
"""),
    ('cross_entropy', 'state consumed by the first backward', """
import numpy as np
import microtensor as mt
class CrossEntropy(CrossEntropy):
    def backward(self, g):
        d = self.p
        d[np.arange(self.n), self.targets] -= 1
        return (g * mt.as_tensor(d.reshape(self.inputs[0].shape) / self.n),)
"""),
    ('cross_entropy', 'wrong value', """
import numpy as np
import microtensor as mt
class CrossEntropy(CrossEntropy):
    def backward(self, g):
        d = self.p.copy()
        d[np.arange(self.n), self.targets] -= 1
        return (g * mt.as_tensor(d.reshape(self.inputs[0].shape) / d.shape[-1]),)
"""),
    ('cross_entropy', 'wrong value', """
import numpy as np
import microtensor as mt
class CrossEntropy(CrossEntropy):
    def backward(self, g):
        d = self.p.copy()
        d[np.arange(self.n), self.targets] -= 1
        return (mt.as_tensor(d.reshape(self.inputs[0].shape) / self.n),)
"""),
    ('cross_entropy', 'wrong dtype', """
import numpy as np
class CrossEntropy(CrossEntropy):
    def forward(self, logits, targets):
        return super().forward(logits.astype(np.float64), targets)
"""),
    ('layer_norm', 'wrong value', """
class LayerNorm(LayerNorm):
    def backward(self, g):
        x, gamma, _ = self.inputs
        centered = x - x.mean(axis=-1, keepdims=True)
        inv_std = 1 / ((centered * centered).mean(axis=-1, keepdims=True) + 1e-5) ** 0.5
        x_hat = centered * inv_std
        dx_hat = g * gamma
        dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True)
              - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) * inv_std
        return dx, g * x_hat, g
"""),
    ('layer_norm', 'wrong shape', """
class LayerNorm(LayerNorm):
    def backward(self, g):
        dx, dgamma, dbeta = super().backward(g)
        return dx, dgamma.sum(axis=-1), dbeta
"""),
    ('layer_norm', 'wrong value', """
class LayerNorm(LayerNorm):
    def backward(self, g):
        dx, dgamma, dbeta = super().backward(g)
        return dx, g * self.inputs[1], dbeta
"""),
    ('layer_norm', 'crash', """
class LayerNorm(LayerNorm):
    def backward(self, g):
        _, gamma, _ = self.inputs
        return self.inputs[3] * g, g, g
"""),
    ('exp', 'your forward changed the input x in place', """
class Exp(Exp):
    def forward(self, x):
        y = super().forward(x)
        x *= 0.5
        return y
"""),
    ('gelu', 'wrong value', """
class GELU(GELU):
    def backward(self, g):
        (x,), t = self.inputs, self.t
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + A * x * x)),)
"""),
    ('gelu', 'changed the input x in place', """
class GELU(GELU):
    def backward(self, g):
        (x,), t = self.inputs, self.t
        x.data *= 1.0
        x.data += 1e-3
        return (g * (0.5 * (1 + t) + 0.5 * (x - 1e-3) * (1 - t * t) * C * (1 + 3 * A * (x - 1e-3) ** 2)),)
"""),
    ('residual_add', 'wrong value', """
class ResidualAdd(ResidualAdd):
    def backward(self, g):
        return g, 0.5 * g
"""),
    ('residual_add', 'wrong shape', """
class ResidualAdd(ResidualAdd):
    def backward(self, g):
        return g, self.alpha * g, None
"""),
    ('residual_add', 'crash', """
import sys
class ResidualAdd(ResidualAdd):
    def backward(self, g):
        sys.exit('done')
"""),
    ('attention', 'wrong value', """
def attention(q, k, v, mask=None):
    return (q @ k.swapaxes(-1, -2) * (1 / math.sqrt(q.shape[-1]))).softmax(axis=-1) @ v
"""),
    ('attention', 'wrong value', """
def attention(q, k, v, mask=None):
    scores = q @ k.swapaxes(-1, -2) * (1 / q.shape[-1])
    if mask is not None:
        scores = mt.where(mask, scores, -math.inf)
    return scores.softmax(axis=-1) @ v
"""),
    ('attention', 'crash', """
def attention(q, k, v, mask=None):
    return (q @ k.T).softmax(axis=-1) @ v
"""),
    ('backward_loop', 'wrong value', """
_answer = topological_order
def topological_order(roots):
    return _answer(roots)[1:]
"""),
    ('backward_loop', 'wrong value', """
def topological_order(roots):
    return None
"""),
]

# whole files: (exercise, what the message must name, the file)
BROKEN_FILES = [
    ('exp', 'syntax', "from microtensor import Function\nclass Exp(Function)\n    pass\n"),
    ('tanh', 'import', "import no_such_module\n"),
    ('relu', 'defines no Relu', "x = 1\n"),
    ('mul', 'sys.exit', "import sys\nsys.exit(0)\n"),
]

# checked in a child process: the time limit and a process that ends
ISOLATED = [
    ('exp', 'time-out', """
class Exp(Exp):
    def backward(self, g):
        while True:
            pass
"""),
    ('gelu', 'time-out', """
import time
class GELU(GELU):
    def backward(self, g):
        time.sleep(60)
"""),
    ('backward_loop', 'time-out', """
def topological_order(roots):
    order = list(roots)
    while order:
        order.append(order[0])
"""),
    ('softmax', 'crash', """
import os
class Softmax(Softmax):
    def backward(self, g):
        os._exit(3)
"""),
]

RIGHT = [
    ('mul', """
class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        return [b * g, a * g]
"""),
    ('mul', """
def gradient(g, other, wanted):
    return g * other if wanted else None

class Mul(Mul):
    def backward(self, g):
        a, b = self.inputs
        return tuple(gradient(g, other, self.needs_grad(i)) for i, other in enumerate((b, a)))
"""),
    ('sum', """
class Sum(Sum):
    def backward(self, g):
        return g.reshape(self.kept_shape).broadcast_to(self.inputs[0].shape)
"""),
    ('layer_norm', """
import numpy as np
import microtensor as mt
class LayerNorm(LayerNorm):
    def backward(self, g):
        x, gamma = self.inputs[0].data, self.inputs[1].data
        g64, x64 = g.data.astype(np.float64), x.astype(np.float64)
        mu = x64.mean(axis=-1, keepdims=True)
        inv_std = 1 / np.sqrt(((x64 - mu) ** 2).mean(axis=-1, keepdims=True) + self.eps)
        x_hat = (x64 - mu) * inv_std
        dx_hat = g64 * gamma
        dx = inv_std * (dx_hat - dx_hat.mean(axis=-1, keepdims=True)
                        - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True))
        return tuple(mt.as_tensor(a.astype(x.dtype)) for a in (dx, g64 * x_hat, g64))
    def forward(self, x, gamma, beta, eps=1e-5):
        self.eps = eps
        return super().forward(x, gamma, beta, eps)
"""),
    ('cross_entropy', """
import numpy as np
import microtensor as mt
class CrossEntropy(CrossEntropy):
    def backward(self, g):
        d = self.p - np.eye(self.p.shape[-1], dtype=self.p.dtype)[self.targets]
        return g * mt.as_tensor(d.reshape(self.inputs[0].shape)) / self.n
"""),
    ('matmul', """
class MatMul(MatMul):
    def backward(self, g):
        a, b = self.inputs
        return g @ b.swapaxes(-1, -2), (g.swapaxes(-1, -2) @ a).swapaxes(-1, -2)
"""),
    ('sum', """
class Sum(Sum):
    def backward(self, g):
        (x,) = self.inputs
        return (g.reshape(self.kept_shape) + x * 0,)
"""),
    ('broadcast_add', """
def reduce_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g

class BroadcastAdd(BroadcastAdd):
    def backward(self, g):
        return [reduce_to(g, x.shape) for x in self.inputs]
"""),
    ('exp', """
class Exp(Exp):
    def backward(self, g):
        return g * self.inputs[0].exp()
"""),
    ('tanh', """
class Tanh(Tanh):
    def backward(self, g):
        y = self.output
        return (g * (1 - y) * (1 + y),)
"""),
    ('relu', """
import microtensor as mt
class Relu(Relu):
    def backward(self, g):
        return (mt.where(self.output > 0, g, g * 0),)
"""),
    ('relu', """
class Relu(Relu):
    def backward(self, g):
        return g * (self.inputs[0] > 0)
"""),
    ('softmax', """
class Softmax(Softmax):
    def backward(self, g):
        p = self.output
        return (p * g - p * (p * g).sum(axis=self.axis, keepdims=True),)
"""),
    ('log_softmax', """
import microtensor as mt
class LogSoftmax(LogSoftmax):
    def backward(self, g):
        return (g - mt.softmax(self.inputs[0], axis=self.axis) * g.sum(axis=self.axis, keepdims=True),)
"""),
    ('cross_entropy', """
import numpy as np
import microtensor as mt
class CrossEntropy(CrossEntropy):
    def backward(self, g):
        onehot = np.eye(self.p.shape[-1])[self.targets]
        d = (self.p.astype(np.float64) - onehot) / self.n
        return [mt.as_tensor(d.astype(self.p.dtype).reshape(self.inputs[0].shape)) * g]
"""),
    ('layer_norm', """
class LayerNorm(LayerNorm):
    def backward(self, g):
        _, gamma, _ = self.inputs
        D = g.shape[-1]
        dx_hat = g * gamma
        dx = self.inv_std * (1 / D) * (D * dx_hat - dx_hat.sum(axis=-1, keepdims=True)
                                      - self.x_hat * (dx_hat * self.x_hat).sum(axis=-1, keepdims=True))
        return [dx, self.x_hat * g, g * 1]
"""),
    ('gelu', """
import numpy as np
import microtensor as mt
class GELU(GELU):
    def backward(self, g):
        x, t = self.inputs[0].data.astype(np.float64), self.t.data.astype(np.float64)
        slope = np.asarray(0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * A * x * x))
        return (g * mt.as_tensor(slope.astype(g.data.dtype)),)
"""),
    ('residual_add', """
class ResidualAdd(ResidualAdd):
    def backward(self, g):
        return [g * 1.0, g * self.alpha]
"""),
    ('attention', """
def attention(q, k, v, mask=None):
    scores = (q * (q.shape[-1] ** -0.5)) @ k.swapaxes(-1, -2)
    if mask is not None:
        scores = mt.where(mask, scores, -math.inf)
    return scores.softmax(axis=-1) @ v
"""),
    ('backward_loop', """
def topological_order(roots):
    order, done, stack = [], set(), [(r, False) for r in reversed(roots)]
    while stack:
        t, inputs_done = stack.pop()
        if inputs_done:
            order.append(t)
        elif t not in done:
            done.add(t)
            stack.append((t, True))
            for x in reversed(t.creator.inputs if t.creator is not None else ()):
                if x.requires_grad and x not in done:
                    stack.append((x, False))
    return order[::-1]
"""),
]


def learner_folder(tmp_path, name, code, whole=False):
    """A workbook folder whose `name`.py is the answer with `code` after it (or `code` alone)."""
    with open(os.path.join(workbook.ANSWERS, f"{name}.py"), encoding='utf-8') as f:
        answer = f.read()
    (tmp_path / f"{name}.py").write_text(code if whole else answer + '\n' + textwrap.dedent(code))
    return str(tmp_path)


def engine_answers():
    """{name: the reference answer} of the ops attention may be built from, as if they had passed."""
    return {n: getattr(workbook.load_answer(n), EXERCISES[n].attr) for n in EXERCISES if n != 'attention'}


def check_in_process(folder, name):
    passing = engine_answers() if name == 'attention' else {}
    return check.check_one(folder, name, passing, max_examples=EXAMPLES, engine_tests=False)[0]


def test_the_tables_plant_mistakes_in_every_exercise():
    planted = WRONG + BROKEN_FILES + ISOLATED
    assert len(planted) >= 40 and len(RIGHT) >= 15
    assert {name for name, _, _ in planted} == set(workbook.EXERCISES)
    assert {name for name, _ in RIGHT} == set(workbook.EXERCISES)
    named = ' '.join(kind for _, kind, _ in planted)
    for kind in ('wrong value', 'wrong shape', 'wrong dtype', 'changed the input', 'incoming gradient',
                 'state shared between instances', 'state consumed by the first backward', 'time-out', 'crash',
                 'not differentiable twice'):
        assert kind in named, kind


@pytest.mark.parametrize('name, kind, code', WRONG, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(WRONG)])
def test_a_wrong_implementation_fails_naming_its_kind(tmp_path, name, kind, code):
    result = check_in_process(learner_folder(tmp_path, name, code), name)
    assert result.status == 'fail', result
    assert result.message.startswith(LABELS), result.message  # the kind first: 'wrong value: ...'
    assert kind in result.message, result.message
    assert result.hint, result.message


@pytest.mark.parametrize('name, kind, source', BROKEN_FILES, ids=[n for n, _, _ in BROKEN_FILES])
def test_a_file_that_cannot_be_loaded_fails_with_a_hint_that_fits(tmp_path, name, kind, source):
    result = check_in_process(learner_folder(tmp_path, name, source, whole=True), name)
    assert result.status == 'fail' and 'cannot be loaded' in result.message
    assert kind in result.message + result.hint, (result.message, result.hint)
    if kind == 'syntax':
        assert 'must define' not in result.hint and 'line 2' in result.message


@pytest.mark.parametrize('name, code', RIGHT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(RIGHT)])
def test_a_correct_but_unusual_implementation_passes(tmp_path, name, code):
    result = check_in_process(learner_folder(tmp_path, name, code), name)
    assert result.status == 'pass', result.message


def test_a_crash_shows_the_learners_file_line_and_source(tmp_path):
    code = dict((n, c) for n, k, c in WRONG if n == 'exp' and k == 'crash')['exp']
    folder = learner_folder(tmp_path, 'exp', code)
    result = check_in_process(folder, 'exp')
    assert 'AttributeError' in result.message and 'exp.py, line' in result.message
    assert 'return (g * self.outptu,)' in result.message
    assert 'microtensor' not in result.message.split('AttributeError')[0]  # the engine's frames are trimmed


def test_time_outs_and_ended_processes_fail_and_checking_goes_on(tmp_path, capsys):
    for name, _, code in ISOLATED:
        learner_folder(tmp_path, name, code)
    shutil.copy(os.path.join(workbook.ANSWERS, 'tanh.py'), tmp_path)
    names = [name for name, _, _ in ISOLATED] + ['tanh']
    results = check.check(str(tmp_path), names, max_examples=5, timeout=3, engine_tests=False)
    for name, kind, _ in ISOLATED:
        assert results[name].status == 'fail' and results[name].message.startswith(f"{kind}:"), results[name].message
    assert 'did not return within 3 s' in results['exp'].message
    assert results['tanh'].status == 'pass'  # after the others were stopped


def test_what_the_learner_prints_comes_before_the_verdict(tmp_path, capsys):
    learner_folder(tmp_path, 'exp', """
class Exp(Exp):
    def backward(self, g):
        print('debugging: g is', g.shape)
        return (g * self.output,)
""")
    from demos.exercises import __main__ as cli
    assert cli.main(['check', str(tmp_path), 'exp', '--examples', '3']) == 0
    out = capsys.readouterr().out
    assert out.index('debugging: g is') < out.index('exp            pass') < out.index('1 of 1 pass')


def test_exits_and_errors_never_give_exit_status_0(tmp_path, capsys):
    from demos.exercises import __main__ as cli
    learner_folder(tmp_path, 'mul', "import sys\nsys.exit(0)\n", whole=True)
    assert cli.main(['check', str(tmp_path), 'mul']) == 1
    assert 'SystemExit' in capsys.readouterr().out
