"""What `check` knows about each exercise: how to call it, the random inputs it is checked on
(hypothesis strategies: shapes with broadcasting, values, axes), and the catalogue of typical
mistakes, each a planted wrong backward with the hint a learner who made it should read.

`check` recognises a mistake by running its planted solution on the example that failed:
if the learner's gradients (or error) are the planted one's, its hint is shown.
"""
import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from microtensor.i18n import N_


@dataclass
class Mistake:
    hint: str
    wrong: object  # a backward(self, g) for a Function exercise, or a whole function (attention, backward_loop)


@dataclass
class Exercise:
    name: str
    attr: str                          # what the learner's file defines: a Function subclass or a function
    examples: object                   # a hypothesis strategy of (float arrays, params)
    inputs: tuple                      # the float inputs' names, for messages
    mistakes: list = field(default_factory=list)
    exact_shapes: bool = False         # backward itself must return each input's shape (broadcast_add)
    call: object = None                # call(impl, tensors, params) -> output; default impl.apply(*tensors, **params)
    explicit: tuple = ()               # examples always tried first: shapes that catch the usual mistakes
    edge: tuple = ()                   # ((example, what it is), ...): large values, exact zeros, kinks
    second_order: bool = False         # the docstring asks for a backward on tensors: gradgradcheck too
    kink: str = ''                     # the convention at a kink, said when an edge example there fails

    def apply(self, impl, tensors, params):
        return self.call(impl, tensors, params) if self.call else impl.apply(*tensors, **params)


def values(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)


def away_from_zero():
    """Values with |x| >= 0.05: relu's kink at 0 is no place for finite differences."""
    return st.one_of(values(0.05, 3.0), values(-3.0, -0.05))


def array(shape, elements=None):
    return hnp.arrays(np.float64, shape, elements=values() if elements is None else elements)


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@st.composite
def one_input(draw, elements=None):
    return [draw(array(draw(SHAPES), elements))], {}


@st.composite
def broadcast_pair(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)).input_shapes
    return [draw(array(s)) for s in shapes], {}


@st.composite
def matmul_pair(draw):
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3)).input_shapes
    return [draw(array(batch[0] + (n, k))), draw(array(batch[1] + (k, m)))], {}


@st.composite
def with_axis(draw, reduction=False):
    """x and an axis (softmax's); a reduction's axis may also be None or a tuple, with keepdims."""
    x = draw(array(draw(SHAPES)))
    axis = st.integers(-x.ndim, x.ndim - 1)
    if not reduction:
        return [x], {'axis': draw(axis)}
    axes = st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim, unique=True).map(tuple)
    return [x], {'axis': draw(st.one_of(st.none(), axis, axes)), 'keepdims': draw(st.booleans())}


@st.composite
def logits_and_targets(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4)) + (draw(st.integers(2, 5)),)
    targets = draw(hnp.arrays(np.int64, shape[:-1], elements=st.integers(0, shape[-1] - 1)))
    return [draw(array(shape))], {'targets': targets}


@st.composite
def layer_norm_inputs(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)) + (draw(st.integers(2, 5)),)
    spread = np.linspace(-1, 1, shape[-1])  # rows that are never constant: var > 0, far from eps
    x = draw(array(shape, values(-0.4, 0.4))) + spread
    return [x, draw(array(shape[-1:])), draw(array(shape[-1:]))], {'eps': draw(st.sampled_from([1e-5, 0.1, 1.0]))}


@st.composite
def residual_inputs(draw):
    shape = draw(SHAPES)
    return [draw(array(shape)), draw(array(shape))], {'alpha': draw(st.sampled_from([0.5, 1.0, -2.0]))}


@st.composite
def attention_inputs(draw):
    n, t_k, d_k, d_v = (draw(st.integers(1, 4)) for _ in range(4))
    batch = draw(st.sampled_from([(), (2,)]))
    arrays = [draw(array(batch + (n, d_k))), draw(array(batch + (t_k, d_k))), draw(array(batch + (t_k, d_v)))]
    mask = draw(st.one_of(st.none(), hnp.arrays(bool, (n, t_k))))
    if mask is not None:
        mask[:, 0] = True  # every query may attend to one key at least
        mask = mt.tensor(mask)
    return arrays, {'mask': mask}


def fixed(*shapes, **params):
    """An explicit example: random values of these shapes (always the same), and params."""
    rng = np.random.default_rng(1)
    return [rng.standard_normal(shape) for shape in shapes], params


def edge(values, what, **params):
    """An edge example: these values (one array per input), and what they are, for the message."""
    return ([np.array(v, dtype=np.float64) for v in values], params), what


def rows(*shapes, **params):
    """layer_norm's explicit example: rows that are never constant, gamma and beta."""
    (x, gamma, beta), _ = fixed(*shapes)
    return [x + np.linspace(-1, 1, x.shape[-1]), gamma, beta], params


LARGE = [[-1000.0, -998.5, -1001.0], [1000.0, 999.0, 1002.5]]  # logits whose softmax is finite and not one-hot
ELEMENTWISE = (fixed((2, 3)), fixed(()), fixed((1, 1)), fixed((3, 1, 2)))
BROADCASTING = (fixed((2, 3), (3,)), fixed((1, 3), (2, 3)), fixed((2, 1), (1, 3)), fixed((), (2, 3)),
                fixed((4, 1, 3), (2, 1)), fixed((2, 3), (2, 3)))


def _row_sum(t, axis):
    return t.sum(axis=axis, keepdims=True)


def _cross_entropy_grad(self, g, scale=1.0, softmax=True):
    """The planted cross-entropy gradients: (softmax - one-hot) / n, varied."""
    p = self.p if softmax else 0 * self.p
    d = p.copy()
    d[np.arange(self.n), self.targets] -= 1
    return (g * mt.as_tensor(scale * d.reshape(self.inputs[0].shape)),)


def _gelu_slope(self, product_rule=True, chain_rule=True):
    (x,), t = self.inputs, self.t
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x) if chain_rule else 1
    return 0.5 * (1 + t) + (0.5 * x * (1 - t * t) * du if product_rule else 0)


def _attention(scale=True, axis=-1):
    def attention(q, k, v, mask=None):
        scores = q @ k.swapaxes(-1, -2) * (1 / math.sqrt(q.shape[-1]) if scale else 1.0)
        if mask is not None:
            scores = mt.where(mask, scores, -math.inf)
        return scores.softmax(axis=axis) @ v
    return attention


EXERCISES = {e.name: e for e in [
    Exercise('mul', 'Mul', broadcast_pair(), ('a', 'b'), explicit=BROADCASTING, second_order=True,
             edge=(edge([[0.0, 2.0, 0.0], [0.0, -1.0, 3.0]], N_('exact zeros')),), mistakes=[
        Mistake(N_("each input's gradient is g times the *other* input: dL/da = g * b, dL/db = g * a"),
                lambda self, g: (g * self.inputs[0], g * self.inputs[1])),
        Mistake(N_("the chain rule: multiply the local derivative by the upstream gradient g (dL/da = g * b)"),
                lambda self, g: (self.inputs[1] + 0 * g, self.inputs[0] + 0 * g)),
    ]),
    Exercise('matmul', 'MatMul', matmul_pair(), ('A', 'B'), second_order=True,
             explicit=(fixed((2, 2, 3), (3, 4)), fixed((1, 2, 3), (3, 3, 2)), fixed((1, 1), (1, 1)),
                       fixed((3, 2), (2, 2, 4))), mistakes=[
        Mistake(N_("a transpose is missing: dL/dA = G @ B^T and dL/dB = A^T @ G (check the shapes: dL/dA is "
                   "(n, k))"),
                lambda self, g: (g @ self.inputs[1], self.inputs[0] @ g)),
        Mistake(N_("the order of a matrix product matters: dL/dA = G @ B^T (not B^T @ G), dL/dB = A^T @ G"),
                lambda self, g: (self.inputs[1].swapaxes(-1, -2) @ g, g @ self.inputs[0].swapaxes(-1, -2))),
    ]),
    Exercise('sum', 'Sum', with_axis(reduction=True), ('x',),
             second_order=True,
             explicit=(fixed((2, 3), axis=0, keepdims=False), fixed((2, 3, 4), axis=(2, 0), keepdims=False),
                       fixed((2, 3), axis=1, keepdims=False), fixed((2, 3, 4), axis=(-1, 1), keepdims=True),
                       fixed((3, 1), axis=None, keepdims=False), fixed((), axis=None, keepdims=False),
                       fixed((2, 3), axis=-2, keepdims=True)), mistakes=[
        Mistake(N_("put the summed axes back before broadcasting: g.reshape(self.kept_shape), then "
                   "broadcast_to(x.shape)"),
                lambda self, g: (g.broadcast_to(self.inputs[0].shape),)),
        Mistake(N_("every summed element gets g itself: dividing by the count is mean's gradient, not sum's"),
                lambda self, g: (g.reshape(self.kept_shape).broadcast_to(self.inputs[0].shape)
                                 * (math.prod(self.kept_shape) / self.inputs[0].numel()),)),
        Mistake(N_("the gradient has x's shape, not y's: every element of x that was summed gets g"),
                lambda self, g: (g,)),
    ]),
    Exercise('broadcast_add', 'BroadcastAdd', broadcast_pair(), ('a', 'b'), exact_shapes=True,
             second_order=True, explicit=(fixed((2, 1), (2, 3)), fixed((3,), (2, 3))) + BROADCASTING, mistakes=[
        Mistake(N_("no sum over the broadcast axes: an input used at many places of y gets the sum of their "
                   "gradients"),
                lambda self, g: (g, g)),
        Mistake(N_("keep the size-1 axes when summing over them (keepdims=True): a (n, 1) input needs a (n, 1) "
                   "gradient"),
                lambda self, g: tuple(_sum_without_keepdims(g, x) for x in self.inputs)),
    ]),
    Exercise('exp', 'Exp', one_input(), ('x',), explicit=ELEMENTWISE, second_order=True,
             edge=(edge([[700.0, -700.0, 0.0]], N_('values near overflow (e^700 ~ 1e304)')),), mistakes=[
        Mistake(N_("the chain rule: multiply g by exp's derivative, e^x (= self.output)"), lambda self, g: (g,)),
        Mistake(N_("the derivative of e^x is e^x itself (self.output), not x"), lambda self, g: (g * self.inputs[0],)),
    ]),
    Exercise('tanh', 'Tanh', one_input(), ('x',), explicit=ELEMENTWISE, second_order=True,
             edge=(edge([[800.0, -800.0, 20.0, -20.0, 0.0]], N_('large values (tanh = +-1, e^800 overflows) and 0')),),
             mistakes=[
        Mistake(N_("1 - tanh(x)^2 is in terms of the output y = tanh(x) (self.output), not of x"),
                lambda self, g: (g * (1 - self.inputs[0] * self.inputs[0]),)),
        Mistake(N_("a sign error: tanh'(x) = 1 - y^2 (tanh flattens out, its slope is below 1)"),
                lambda self, g: (g * (1 + self.output * self.output),)),
        Mistake(N_("the square is missing: tanh'(x) = 1 - y^2 = (1 - y)(1 + y)"),
                lambda self, g: (g * (1 - self.output),)),
    ]),
    Exercise('relu', 'Relu', one_input(away_from_zero()), ('x',),
             explicit=(([np.array([[-1.5, 0.5, 2.0], [0.3, -0.7, 1.1]])], {}),) + ELEMENTWISE[1:], second_order=True,
             edge=(edge([[0.0, -0.0, 1.0, -1.0]], N_('the kink at 0 (exact zeros)')),),
             kink=N_("at x = 0 any slope in [0, 1] is a valid subgradient mathematically, but this exercise asks for "
                  "PyTorch's: 0 (the gradient passes only where x > 0)"), mistakes=[
        Mistake(N_("the gradient passes where x > 0 (where y = x) and stops where x < 0, not the other way round"),
                lambda self, g: (g * (self.inputs[0] < 0),)),
        Mistake(N_("relu blocks the gradient where x < 0: multiply g by the mask x > 0"),
                lambda self, g: (g,)),
        Mistake(N_("multiply g by relu's slope (0 or 1), not by x"), lambda self, g: (g * self.inputs[0],)),
    ]),
    Exercise('softmax', 'Softmax', with_axis(), ('x',), second_order=True,
             explicit=(fixed((2, 3), axis=0), fixed((2, 3), axis=1), fixed((3, 1), axis=-1), fixed((2, 3, 4), axis=1)),
             edge=(edge([LARGE], N_('logits around +-1e3'), axis=-1), edge([LARGE], N_('logits around +-1e3'), axis=0)),
             mistakes=[
        Mistake(N_("p(1 - p) is only the diagonal of softmax's Jacobian; every p_j depends on every x_i of its row: "
                "dL/dx = p * (g - sum(g * p)) over the row"),
                lambda self, g: (g * self.output * (1 - self.output),)),
        Mistake(N_("a sign error: dL/dx = p * (g - sum(g * p)), the row sum is subtracted"),
                lambda self, g: (self.output * (g + _row_sum(g * self.output, self.axis)),)),
        Mistake(N_("the sum runs over the softmax's axis (self.axis) only, not over every element"),
                lambda self, g: (self.output * (g - (g * self.output).sum()),)),
        Mistake(N_("the row sum runs over the softmax's axis, self.axis, which is not always the last: "
                "dL/dx = p * (g - sum(g * p, axis=self.axis, keepdims=True))"),
                lambda self, g: (self.output * (g - _row_sum(g * self.output, -1)),)),
    ]),
    Exercise('log_softmax', 'LogSoftmax', with_axis(), ('x',), second_order=True,
             explicit=(fixed((2, 3), axis=0), fixed((2, 3), axis=1), fixed((3, 1), axis=-1), fixed((2, 3, 4), axis=1)),
             edge=(edge([LARGE], N_('logits around +-1e3'), axis=-1), edge([LARGE], N_('logits around +-1e3'), axis=0)),
             mistakes=[
        Mistake(N_("softmax is multiplied by the row sum of g: dL/dx = g - softmax(x) * sum(g) (each y_j holds "
                "-log sum exp, which depends on every x_i)"),
                lambda self, g: (g - self.output.exp(),)),
        Mistake(N_("log_softmax is not elementwise: each output depends on the whole row; "
                "dL/dx = g - softmax(x) * sum(g) over the row"),
                lambda self, g: (g * (1 - self.output.exp()),)),
        Mistake(N_("the row sum runs over the softmax's axis, self.axis, which is not always the last: "
                "dL/dx = g - softmax(x) * sum(g, axis=self.axis, keepdims=True)"),
                lambda self, g: (g - self.output.exp() * _row_sum(g, -1),)),
    ]),
    Exercise('cross_entropy', 'CrossEntropy', logits_and_targets(), ('logits',),
             explicit=(fixed((3, 4), targets=np.array([0, 2, 3])), fixed((2, 3, 4), targets=np.array([[0, 1, 3],
                       [2, 2, 0]])), fixed((1, 2), targets=np.array([1])), fixed((4,), targets=np.array(2))),
             edge=(edge([LARGE], N_('logits around +-1e3'), targets=np.array([2, 0])),), mistakes=[
        Mistake(N_("the loss is a mean over the n rows: divide the gradient by the count (self.n)"),
                lambda self, g: _cross_entropy_grad(self, g)),
        Mistake(N_("a sign error: the gradient is softmax minus the one-hot target, (p - onehot) / n"),
                lambda self, g: _cross_entropy_grad(self, g, scale=-1 / self.n)),
        Mistake(N_("the softmax term is missing: d(-log softmax(z)_t)/dz = softmax(z) - onehot(t), not -onehot(t)"),
                lambda self, g: _cross_entropy_grad(self, g, scale=1 / self.n, softmax=False)),
    ]),
    Exercise('layer_norm', 'LayerNorm', layer_norm_inputs(), ('x', 'gamma', 'beta'),
             explicit=(rows((2, 4), (4,), (4,), eps=1e-5), rows((2, 3, 4), (4,), (4,), eps=0.5),
                       rows((4,), (4,), (4,), eps=1e-5)),
             edge=(edge([[[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], [1.0, -2.0, 0.5], [0.0, 0.0, 0.0]],
                        N_('a constant row (var = 0) and zeros'), eps=1e-5),), mistakes=[
        Mistake(N_("the mean terms are missing: mu and var depend on every x of the row, so "
                "dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) * inv_std"),
                lambda self, g: (g * self.inputs[1] * self.inv_std, g * self.x_hat, g)),
        Mistake(N_("gamma is missing: x_hat reaches y through gamma, so start from dx_hat = g * gamma"),
                lambda self, g: (_layer_norm_dx(self, g), g * self.x_hat, g)),
    ]),
    Exercise('gelu', 'GELU', one_input(), ('x',), explicit=ELEMENTWISE,
             edge=(edge([[10.0, -10.0, 30.0, -30.0, 0.0]], N_('large values and 0')),), mistakes=[
        Mistake(N_("the product rule: y = x * h(x), so dy/dx = h(x) + x * h'(x); a term is missing"),
                lambda self, g: (g * _gelu_slope(self, product_rule=False),)),
        Mistake(N_("the chain rule through u = sqrt(2/pi) (x + 0.044715 x^3): h'(x) has the factor "
                "du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)"),
                lambda self, g: (g * _gelu_slope(self, chain_rule=False),)),
    ]),
    Exercise('residual_add', 'ResidualAdd', residual_inputs(), ('x', 'fx'),
             second_order=True, explicit=(fixed((2, 3), (2, 3), alpha=0.5), fixed((), (), alpha=-2.0),
                                          fixed((1, 4), (1, 4), alpha=1.0)), mistakes=[
        Mistake(N_("the F road is scaled: dL/dfx = alpha * g (and dL/dx = g, the highway)"),
                lambda self, g: (g, g)),
        Mistake(N_("x is the highway: it gets g unchanged, and fx gets alpha * g"),
                lambda self, g: (self.alpha * g, g)),
        Mistake(N_("one gradient per input: return (dL/dx, dL/dfx)"), lambda self, g: (g,)),
    ]),
    Exercise('attention', 'attention', attention_inputs(), ('Q', 'K', 'V'),
             call=lambda impl, tensors, params: impl(*tensors, **params),
             explicit=(fixed((2, 3), (4, 3), (4, 2), mask=None),
                       fixed((2, 2, 3), (2, 4, 3), (2, 4, 2), mask=mt.tensor(np.tril(np.ones((2, 4), bool))))),
             mistakes=[
                 Mistake(N_("the scores are divided by sqrt(d_k) (q's last axis) before the softmax"),
                         _attention(scale=False)),
                 Mistake(N_("each query's weights are a softmax over the keys: the scores' last axis (axis=-1)"),
                         _attention(axis=-2)),
             ]),
]}


def _sum_without_keepdims(g, x):
    """broadcast_add's planted mistake: the right axes, summed without keepdims."""
    lead = g.ndim - x.ndim
    gx = g.sum(axis=tuple(range(lead))) if lead else g
    stretched = tuple(i for i, n in enumerate(x.shape) if n == 1 and gx.shape[i] != 1)
    return gx.sum(axis=stretched) if stretched else gx


def _layer_norm_dx(self, dx_hat):
    x_hat = self.x_hat
    return (dx_hat - dx_hat.mean(axis=-1, keepdims=True)
            - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) * self.inv_std
