"""Tensor: an N-d array (numpy or cupy) plus what autograd needs.

    data           the backend array (numpy.ndarray on 'cpu', cupy.ndarray on 'cuda')
    grad           a Tensor, filled by backward() for leaves (and retain_grad() tensors)
    requires_grad  whether gradients flow to this tensor
    creator        the Function (op) that made it; None for leaves

Operators and methods below only forward to the ops in microtensor/ops/, where each
op's forward and backward stand side by side.
"""
import operator
import warnings

from . import argcheck, backend
from .argcheck import DTypeError, ShapeError

DEFAULT_FLOAT = backend.dtype('float32')
REPR_MAX_VALUES = 100  # a bigger tensor's repr is one line: shape, dtype, device, |x|, creator


# numpy's ufunc for `array <op> tensor`, and the tensor's method that computes it (Tensor.__array_ufunc__)
_NUMPY_REFLECTED = {'add': '__radd__', 'subtract': '__rsub__', 'multiply': '__rmul__', 'divide': '__rtruediv__',
                    'power': '__rpow__', 'matmul': '__rmatmul__', 'equal': '__eq__', 'not_equal': '__ne__',
                    'less': '__gt__', 'less_equal': '__ge__', 'greater': '__lt__', 'greater_equal': '__le__',
                    'bitwise_and': '__and__', 'bitwise_or': '__or__', 'bitwise_xor': '__xor__',
                    'left_shift': '__rlshift__', 'right_shift': '__rrshift__', 'remainder': '__rmod__',
                    'floor_divide': '__rfloordiv__'}


class Tensor:
    """An N-d array of numbers (numpy on 'cpu', cupy on 'cuda') that remembers how it was made.

    What it holds:
        data           the backend array; .numpy() gives a host copy, .item() / float() a number
        requires_grad  whether gradients flow to it (set it on leaves: mt.tensor(..., requires_grad=True))
        creator        the op (a Function, see microtensor/ops/) that made it; None for leaves
        grad           dL/d(this tensor) after loss.backward(): filled for leaves (and tensors
                       that called retain_grad()); it accumulates until zeroed (.grad = None)
        name           an optional label, shown by repr, traces and graphs

    How grad works: every op on tensors that require grad records itself as the output's
    creator, with its inputs: the graph.  loss.backward() walks that graph from the loss
    back to the leaves and calls each op's backward(g) (the chain rule, one op at a time).
    The loop lives in microtensor/autograd.py (backward_loop); each op's forward and
    backward sit side by side in microtensor/ops/ (e.g. Tanh in ops/elementwise.py).

    Operators and methods mean what PyTorch's mean (x.max(1) is (values, indices), x.var()
    divides by n - 1, x.transpose(0, 1) swaps); numpy's spellings axis= and keepdims= are
    accepted beside dim= and keepdim=.  Broadcasting is numpy's (PyTorch's is the same), with
    PyTorch's autograd habits (backward, retain_grad, register_hook, detach), its dtype promotion (int64 * 0.5 is float32: microtensor/promotion.py) and its in-place
    arithmetic (with mt.no_grad(): p -= lr * p.grad writes into p's memory).
    """
    __slots__ = ('data', '_grad', 'requires_grad', 'creator', 'name',
                 '_retains_grad', '_hooks', '_version', '__weakref__')
    __array_priority__ = 1000  # cupy_array * tensor -> Tensor.__rmul__ (numpy asks __array_ufunc__)

    def __init__(self, data, dtype=None, device=None, requires_grad=False, name=None):
        """A new leaf holding a copy of `data` (a number, a list, an array or a Tensor), as
        torch.tensor: writing to `data` later never changes this tensor (mt.from_numpy and
        mt.as_tensor share memory instead).  Only numbers: bool, integers, floats."""
        if isinstance(data, (list, tuple)) and data and isinstance(data[0], Tensor):  # mt.tensor([t0, t1])
            data = [t.data if isinstance(t, Tensor) else t for t in data]
        data = data.data if isinstance(data, Tensor) else backend.as_array(data)  # numpy scalars keep their dtype
        self.data = new_array(data, dtype, device, 'tensor')
        self._grad = None
        self.requires_grad = False
        self.creator = None
        self.name = name
        self._retains_grad = False
        self._hooks = None
        self._version = [0]  # in-place changes so far; one list shared by tensors sharing memory
        if requires_grad:
            self.requires_grad_()

    @classmethod
    def _wrap(cls, array):
        """A new tensor around an existing backend array (the fast path ops use).

        numpy turns ufuncs on 0-d arrays into scalars (numpy.float64): as_array makes them
        0-d arrays again, so every tensor holds an array of its device's type."""
        t = object.__new__(cls)
        t.data = backend.as_array(array)
        t._grad = None
        t.requires_grad = False
        t.creator = None
        t.name = None
        t._retains_grad = False
        t._hooks = None
        t._version = [0]
        return t

    # ------------------------------------------------------------------ properties
    @property
    def shape(self):
        """The size of each dimension, a tuple: (B, T, d_model)."""
        return self.data.shape

    @property
    def ndim(self):
        """The number of dimensions, len(shape)."""
        return self.data.ndim

    def size(self, dim=None):
        """The shape, as PyTorch's x.size(): a tuple; x.size(dim) is one dimension's size (an int).
        (numpy's x.size, the number of elements, is x.numel() here.)"""
        if dim is None:
            return self.data.shape
        return self.data.shape[_args.axis(dim, self.shape, 'size')]

    def numel(self):
        """The number of elements, the product of shape."""
        return self.data.size

    @property
    def dtype(self):
        """The element type, a numpy dtype (float32 by default)."""
        return self.data.dtype

    @property
    def device(self):
        """'cpu' (numpy) or 'cuda' (cupy): where the data lives."""
        return backend.device_of(self.data)

    @property
    def grad_fn(self):
        """PyTorch's name for the op that made this tensor (microtensor's `creator`), None for a leaf;
        its .next_functions lead on through the graph."""
        return self.creator

    @property
    def is_leaf(self):
        """True for a tensor no op made (a parameter, an input): backward() fills its .grad."""
        return self.creator is None

    def __len__(self):
        """The size of the first dimension."""
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def __iter__(self):
        """for row in x: x[0], x[1], ... (each a slice, in the graph); as in PyTorch, a
        0-d tensor cannot be iterated (so sum(x) and list(x) are errors, not 0 and [])."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self.data)))

    def __repr__(self):
        """tensor([...values...]) up to REPR_MAX_VALUES elements; bigger: shape, dtype, device and |x|."""
        big = self.data.size > REPR_MAX_VALUES
        extras = [f"name={self.name!r}"] if self.name else []
        if big:
            from .inspect.steps import norm  # (inspect imports this module)
            extras += [f"shape={tuple(self.shape)}", f"dtype={self.dtype}", f"device='{self.device}'",
                       f"|x|={norm(self):.4g}"]
        elif self.device != 'cpu':
            extras.append(f"device='{self.device}'")
        if self.creator is not None:
            extras.append(f"creator={type(self.creator).__name__}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        if big:
            return f"tensor({', '.join(extras)})"
        body = str(backend.to_numpy(self.data)).replace('\n', '\n       ')
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    # ------------------------------------------------------------------ autograd
    @property
    def grad(self):
        """dL/d(this tensor), filled by backward() for leaves and retain_grad() tensors; else None."""
        if self._grad is None and self.creator is not None and not self._retains_grad:
            warnings.warn(  # one text, so Python shows it once per line of code that reads it
                "reading .grad of a non-leaf tensor (one an op made): backward() fills .grad only for "
                "leaves, so it is None. Call .retain_grad() on this tensor before backward() to keep its "
                "gradient (or read it with register_hook, or with mt.grad(loss, tensor))", stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad in place (floating-point leaves only; a tensor an op made always
        requires grad: use detach() to cut it off); returns self."""
        requires_grad = argcheck.boolean(requires_grad, 'requires_grad_', 'requires_grad')
        if not requires_grad and not self.is_leaf:
            raise RuntimeError(f"requires_grad_(False): this tensor of shape {self.shape} was computed by "
                               f"{type(self.creator).__name__}, and only a leaf's flag can change (as in PyTorch); "
                               "to use its value without a graph, take h.detach()")
        if requires_grad and not backend.float_dtype(self.dtype):
            raise DTypeError(f"requires_grad_: only floating-point tensors can require grad, not {self.dtype} "
                            "(integer tensors hold indices and have no gradient)")
        self.requires_grad = requires_grad
        return self

    def backward(self, gradient=None, retain_graph=False, create_graph=False):
        """Fill .grad of every leaf this tensor depends on with d(self)/d(leaf).

        gradient: dL/d(self), of self's shape (needed unless self has one element), cast to
        self's dtype as in PyTorch.  Gradients *accumulate*: a second backward
        (retain_graph=True) adds to .grad, as in PyTorch; call zero_grad() (or set .grad = None)
        between steps.
        """
        root_grad = autograd._initial_grad(self, gradient)
        autograd.run_backward([self], [root_grad], retain_graph, create_graph)

    def retain_grad(self):
        """Keep .grad on this non-leaf tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed; a returned tensor replaces it."""
        if not callable(hook):
            raise TypeError(f"register_hook: the hook must be a function hook(grad), not {type(hook).__name__}")
        if not self.requires_grad:
            raise RuntimeError("register_hook: this tensor does not require grad, so no gradient will reach it")
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return _HookHandle(self._hooks, hook)

    def detach(self):
        """The same data, cut from the graph (shares memory, and so the in-place counter, like PyTorch)."""
        t = Tensor._wrap(self.data)
        t._version = self._version
        return t

    def zero_grad(self):
        """Forget the accumulated gradient: .grad = None."""
        self.grad = None

    # ------------------------------------------------------------------ devices and copies
    def numpy(self):
        """A host numpy array: a copy when on the GPU; on the CPU the tensor's own memory,
        so mt.from_numpy(x.numpy()) shares x's in-place counter as well as its memory."""
        if self.device == 'cpu':
            share_counter(self, adopt=False)
        return backend.to_numpy(self.data)

    def __array__(self, dtype=None, copy=None):
        """numpy's view of a CPU tensor, as PyTorch offers: numpy.asarray(t), and p.data -= lr * p.grad
        (p.data is the array itself).  As in PyTorch, a tensor that requires grad is refused (numpy
        would drop its graph without a word): take t.detach() first."""
        if self.requires_grad:
            raise RuntimeError("numpy cannot use a tensor that requires grad (its graph would be lost without a "
                               "word): use t.detach(), or compute the update under `with mt.no_grad():`")
        if self.device != 'cpu':
            raise TypeError(f"numpy cannot read a tensor on '{self.device}': bring it over with .cpu() first")
        if dtype is not None and backend.dtype(dtype) != self.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        """numpy meets a tensor.  array <op> tensor is the tensor's op (array * t is t.__rmul__(array), a
        Tensor in the graph); array <op>= tensor writes into the array, as numpy does for two arrays:
        p.data -= lr * p.grad.  Other numpy functions of tensors are refused: use the tensor's own."""
        if method != '__call__' or out is not None and any(isinstance(o, Tensor) for o in out):
            return NotImplemented
        if out is not None:
            return ufunc(*[x.__array__() if isinstance(x, Tensor) else x for x in inputs], out=out, **kwargs)
        name = _NUMPY_REFLECTED.get(ufunc.__name__)
        if name and len(inputs) == 2 and not kwargs and isinstance(inputs[1], Tensor):
            return getattr(inputs[1], name)(inputs[0])
        return NotImplemented

    def tolist(self):
        """The values as nested Python lists."""
        return self.numpy().tolist()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        return self._number('item()')

    def __float__(self):
        """float(t) of a one-element tensor, as in PyTorch."""
        return float(self._number('float()'))

    def __int__(self):
        """int(t) of a one-element tensor (truncated toward 0, as int(2.7) is 2)."""
        return int(self._number('int()'))

    def __index__(self):
        """A one-element integer tensor as a Python int where Python wants an index (data[i:i + 8],
        range(n)), as in PyTorch (a bool is 0 or 1, as there); a float tensor is refused."""
        if self.dtype.kind not in 'biu' or self.data.size != 1:
            raise TypeError(f"only integer tensors of a single element can be an index (as in PyTorch), not a "
                            f"{self.dtype} tensor of shape {self.shape}")
        return int(self.data.item())

    def __format__(self, spec):
        """f"{loss:.4f}": a 0-d tensor formats as its number, as in PyTorch; no spec gives str(t)."""
        if not spec:
            return str(self)
        if self.ndim != 0:
            raise TypeError(f"format: the spec {spec!r} needs a 0-d tensor (as in PyTorch), not one of shape "
                            f"{self.shape}; format t.item() of a one-element tensor, or t.tolist()")
        return format(self.data.item(), spec)

    def _number(self, caller):
        if self.data.size != 1:
            raise ShapeError(f"{caller}: only a one-element tensor can become a Python number, not one "
                             f"of shape {self.shape}; reduce it first (e.g. .sum(), .norm()) or index one element")
        return self.data.reshape(()).item()

    def to(self, device=None, dtype=None):
        """A copy on another device and/or dtype, still connected to the graph.

        x.to('cuda'), x.to(dtype=mt.float64), or x.to(mt.float64) as in PyTorch.
        A cast to an integer or bool dtype leaves the graph: such tensors have no gradient.
        """
        if device is not None and str(device).split(':')[0] not in backend.DEVICES:
            device, dtype = None, device  # x.to(mt.float64)
        try:
            dtype = None if dtype is None else check_dtype(dtype, 'to()')
        except TypeError:
            raise TypeError(f"to(): {dtype!r} is neither a device ('cpu' or 'cuda') nor a dtype a tensor "
                            "holds") from None
        out = self
        if dtype is not None and dtype != self.dtype:
            out = _ew.Cast.apply(out if backend.float_dtype(dtype) else out.detach(), dtype=dtype)
        if device is not None and backend.check_device(device, 'to()') != self.device:
            out = _shape.ToDevice.apply(out, device=backend.check_device(device))
        return out

    def cpu(self):
        """A copy on the CPU (self if it is there), still in the graph."""
        return self.to('cpu')

    def cuda(self):
        """A copy on the GPU, still in the graph."""
        return self.to('cuda')

    def float(self):
        """A float32 copy, still in the graph (float(t) gives a Python number instead)."""
        return self.to(dtype='float32')

    def double(self):
        """A float64 copy, still in the graph."""
        return self.to(dtype='float64')

    def astype(self, dtype):
        """A copy of another dtype, as numpy's astype (same as to(dtype=...))."""
        return self.to(dtype=check_dtype(dtype, 'astype'))

    # ------------------------------------------------------------------ in-place updates
    def _modify_in_place(self, op, new_data_fn):
        if self.requires_grad and autograd.is_grad_enabled():
            what = " (a leaf: a parameter, or an input made with requires_grad=True)" if self.is_leaf else ""
            raise RuntimeError(f"{op}: in-place change of a tensor that requires grad{what}, of shape {self.shape}, "
                               "while the graph is recorded: wrap it in `with mt.no_grad():` (as optimizers do: "
                               "for p in model.parameters(): p -= lr * p.grad) or compute a new tensor (x = x + y)")
        new_data_fn()
        self._version[0] += 1  # a pending backward that saved this memory will notice
        return self

    def _record_in_place(self, op, before_data, compute):
        """An in-place change of a non-leaf, recorded in the graph as PyTorch does: `before` (a tensor
        over before_data, holding self's history and hooks) stands for self's old value; compute(before)
        writes the new value into self.data and returns the op's output, and self becomes that output."""
        if counter_holders(self) > ONE_HOLDER:
            raise RuntimeError(
                f"{op}: this tensor shares its memory with other tensors (views, slices, detach()); they would not "
                "see the graph of this change. Compute a new tensor (x = x + y, mt.where, mt.concatenate) or change "
                "a tensor that is not a view")
        before = Tensor._wrap(before_data)
        before.creator, before.requires_grad = self.creator, self.requires_grad
        before._version[0] = self._version[0]
        before._hooks, self._hooks = self._hooks, None  # hooks see the gradient of the value they were set on
        try:
            out = compute(before)
        except BaseException:  # a failed op changes nothing: self keeps its hooks
            self._hooks = before._hooks
            raise
        self._version[0] += 1
        autograd.take_output(out.creator, self)
        return self

    def __setitem__(self, index, value):
        """self[index] = value, in place (value broadcasts to self[index]).

        With a graph to record (value requires grad, or self is a non-leaf that does),
        the write is the op SetItem (ops/shape.py): value's gradient is g[index], the
        gradient of self's old value is g with zeros at index, and self becomes SetItem's
        output, as in PyTorch.  A leaf that requires grad cannot be written in place."""
        self._write('setitem', index, value)

    def _write(self, op, index, value):
        """self[index] = value for the op named `op` (setitem, fill_, zero_): see __setitem__."""
        if not _index.is_basic(index):
            index = _index.normalize(index, self, op)
        if promotion.is_python_number(value):  # stored in self's dtype: it must fit, as in PyTorch
            value = promotion.scalar(op, promotion.fit(op, value, self.dtype), self.dtype, self)
        value = as_tensor(value, self, op)
        if value.ndim and not _index.is_basic(index):
            _index.check_mixed_write(index, self, value)
        if type(value.data) is not type(self.data):
            raise RuntimeError(f"{op}: the value is on '{value.device}' but the tensor is on '{self.device}'; "
                               f"move it with .to('{self.device}') first")
        graph = autograd.is_grad_enabled() and (self.requires_grad or value.requires_grad)
        if not graph or self.is_leaf and self.requires_grad or not backend.float_dtype(self.dtype):
            check_cast(value.data, self.dtype, op)
            write = self.data.__setitem__
            return self._modify_in_place(op, lambda: backend_call(op, write, index, value.data))
        # SetItem writes into its input's memory: `before` is self's own array
        return self._record_in_place(op, self.data, lambda before: _shape.SetItem.apply(before, value, index=index))

    def _arithmetic_in_place(self, fn, other, op):
        """self op= other (+=, -=, *=, /=) as in PyTorch: the result, in the promoted dtype, is written into
        self's memory (through to the tensor a view was taken from), and the version goes up, so a backward
        that saved the old value refuses to run.  With the graph recorded it is differentiable (self then
        becomes the op's output), except on a leaf that requires grad, which must change under no_grad."""
        dtype = promotion.result_type(self, other)
        promotion.check_in_place(op, self, promotion.floating_dtype(dtype) if fn is _ew.Div else dtype)
        write = self.data.__setitem__
        recording = autograd.is_grad_enabled() and not (self.is_leaf and self.requires_grad) and \
            (self.requires_grad or isinstance(other, Tensor) and other.requires_grad)
        if not recording:  # (a leaf that requires grad is refused here, unless under no_grad)
            def compute():
                with autograd.no_grad():
                    result = binary(fn, self, other, op)
                backend_call(op, write, Ellipsis, result.data)
            return self._modify_in_place(op, compute)

        def compute(before):
            result = binary(fn, before, before if other is self else other, op)  # h += h: the old h twice
            if result.dtype != self.dtype:  # float32 += float64 stays float32 (check_in_place allowed it)
                result = result.to(dtype=self.dtype)
            backend_call(op, write, Ellipsis, result.data)
            return result
        return self._record_in_place(op, self.data.copy(), compute)  # a copy: the op may need the old value

    def __iadd__(self, other):
        """self += other, in place (see _arithmetic_in_place)."""
        return self._arithmetic_in_place(_ew.Add, other, '+=')

    def __isub__(self, other):
        """self -= other, in place: with mt.no_grad(): p -= lr * p.grad."""
        return self._arithmetic_in_place(_ew.Sub, other, '-=')

    def __imul__(self, other):
        """self *= other, in place."""
        return self._arithmetic_in_place(_ew.Mul, other, '*=')

    def __itruediv__(self, other):
        """self /= other, in place (a float tensor: integers cannot hold the quotient, as in PyTorch)."""
        return self._arithmetic_in_place(_ew.Div, other, '/=')

    def __ipow__(self, other):
        """self **= other, in place."""
        return self._arithmetic_in_place(_ew.Pow, other, '**=')

    # their method forms, as PyTorch's (an optimizer's m.mul_(beta).add_(g, alpha=1 - beta)); each returns self
    def add_(self, other, alpha=1):
        """self += alpha * other, in place."""
        return self._arithmetic_in_place(_ew.Add, other if alpha == 1 else alpha * other, 'add_')

    def sub_(self, other, alpha=1):
        """self -= alpha * other, in place."""
        return self._arithmetic_in_place(_ew.Sub, other if alpha == 1 else alpha * other, 'sub_')

    def mul_(self, other):
        """self *= other, in place."""
        return self._arithmetic_in_place(_ew.Mul, other, 'mul_')

    def div_(self, other):
        """self /= other, in place."""
        return self._arithmetic_in_place(_ew.Div, other, 'div_')

    def _replace_in_place(self, op, fn):
        """self = fn(self), written into self's memory, recorded in the graph as += is (see
        _arithmetic_in_place); the result must fit self's dtype."""
        write = self.data.__setitem__

        def compute(before):
            result = fn(before)
            promotion.check_in_place(op, self, result.dtype)
            backend_call(op, write, Ellipsis, result.data.astype(self.dtype, copy=False))
            return result
        if not (autograd.is_grad_enabled() and self.requires_grad and not self.is_leaf):
            def change():
                with autograd.no_grad():
                    compute(self)
            return self._modify_in_place(op, change)  # (a leaf that requires grad is refused, unless under no_grad)
        return self._record_in_place(op, self.data.copy(), compute)  # a copy: the op may need the old value

    def clamp_(self, min=None, max=None):
        """self limited to [min, max], in place (PyTorch's clamp_, as w.clamp_(-c, c))."""
        return self._replace_in_place('clamp_', lambda t: t.clamp(min, max))

    def masked_fill_(self, mask, value):
        """value written where mask is True, in place."""
        return self._replace_in_place('masked_fill_', lambda t: t.masked_fill(mask, value))

    def fill_(self, value):
        """Set every element to value (a number that fits self's dtype), in place; returns self.
        On a non-leaf that requires grad it is recorded as self[...] = value: the old value's
        gradient is 0, as in PyTorch."""
        return self._write('fill_', Ellipsis, argcheck.real(value, 'fill_', 'value'))

    def zero_(self):
        """Set every element to 0, in place; returns self (recorded as fill_ is)."""
        return self._write('zero_', Ellipsis, 0)

    def normal_(self, mean=0.0, std=1.0):
        """Fill with samples of N(mean, std^2) from the generator mt.manual_seed seeds, in place; returns
        self (recorded as a copy_ of a constant: the old value's gradient is 0, as in PyTorch)."""
        mean, std = argcheck.real(mean, 'normal_', 'mean'), argcheck.real(std, 'normal_', 'std')
        if not std >= 0:
            raise ValueError(f"normal_: std must be >= 0, not {std}")
        return self._random_fill('normal_', lambda: mean + std * creation.normal_array(self.device, self.shape,
                                                                                          self.dtype))

    def uniform_(self, *bounds, **named):
        """Fill with samples of U(from, to) (default U(0, 1)), in place; returns self.  The bounds go
        positionally, uniform_(-1, 1), or by PyTorch's names, uniform_(**{'from': -1, 'to': 1})."""
        unknown = sorted(set(named) - {'from', 'to'})
        if unknown or len(bounds) > 2:
            raise TypeError(f"uniform_: takes the bounds from and to, not {unknown or bounds}")
        low, high = (list(bounds) + [named.get('from', 0.0), named.get('to', 1.0)][len(bounds):])[:2]
        low, high = argcheck.real(low, 'uniform_', 'from'), argcheck.real(high, 'uniform_', 'to')
        if not low <= high:
            raise ValueError(f"uniform_: needs from <= to, got from={low}, to={high}")
        return self._random_fill('uniform_', lambda: low + (high - low) * creation.uniform_array(
            self.device, self.shape, self.dtype))

    def _random_fill(self, op, draw):
        if self.dtype.kind != 'f':
            raise DTypeError(f"{op}: needs a float tensor, not {self.dtype} (as in PyTorch)")
        return self.copy_(Tensor._wrap(draw()))

    def copy_(self, other):
        """Write `other` (broadcast to self's shape, cast to self's dtype) into self's memory.

        As in PyTorch it is differentiable: with the graph recorded and a source that requires grad (or
        self a non-leaf that does), it is self[...] = other (the op SetItem), so buf.copy_(x * 3) sends
        x its gradient and buf's old value gets none."""
        source = param_array(other, self, 'copy_', 'source')
        if not backend.broadcasts_to(source.shape, self.shape):
            raise ShapeError(f"copy_: a source of shape {source.shape} does not broadcast to the tensor's shape "
                             f"{self.shape}")
        check_cast(source, self.dtype, 'copy_')
        graph = autograd.is_grad_enabled() and (self.requires_grad or isinstance(other, Tensor) and other.requires_grad)
        if not graph or self.is_leaf and self.requires_grad or not backend.float_dtype(self.dtype):
            write = self.data.__setitem__
            return self._modify_in_place('copy_', lambda: backend_call('copy_', write, Ellipsis, source))
        value = (other if isinstance(other, Tensor) else Tensor._wrap(source)).to(dtype=self.dtype)
        return self._record_in_place('copy_', self.data,
                                     lambda before: _shape.SetItem.apply(before, value, index=Ellipsis))

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other):
        """self + other, broadcasting as numpy, in the dtype PyTorch's promotion gives (promotion.py)."""
        return binary(_ew.Add, self, other, 'add')

    def __radd__(self, other):
        """other + self."""
        return binary(_ew.Add, other, self, 'add')

    def __sub__(self, other):
        """self - other, broadcasting as numpy."""
        return binary(_ew.Sub, self, other, 'sub')

    def __rsub__(self, other):
        """other - self."""
        return binary(_ew.Sub, other, self, 'sub')

    def __mul__(self, other):
        """self * other, elementwise, broadcasting as numpy."""
        return binary(_ew.Mul, self, other, 'mul')

    def __rmul__(self, other):
        """other * self."""
        return binary(_ew.Mul, other, self, 'mul')

    def __truediv__(self, other):
        """self / other, elementwise, broadcasting as numpy: true division, so integers give floats."""
        return binary(_ew.Div, self, other, 'div')

    def __rtruediv__(self, other):
        """other / self."""
        return binary(_ew.Div, other, self, 'div')

    def __pow__(self, other):
        """self ** other, elementwise."""
        return binary(_ew.Pow, self, other, 'pow')

    def __rpow__(self, other):
        """other ** self."""
        return binary(_ew.Pow, other, self, 'pow')

    def __neg__(self):
        """-self."""
        return _ew.Neg.apply(self)

    def __matmul__(self, other):
        """self @ other: matrix product, batched over leading dimensions."""
        return _linalg.matmul(self, as_tensor(other, self, 'matmul'))

    def __rmatmul__(self, other):
        """other @ self."""
        return _linalg.matmul(as_tensor(other, self, 'matmul'), self)

    # comparisons and logic give boolean tensors and no gradient
    def _no_grad_op(self, other, op, fn):
        """fn(self.data, other's array) as a new tensor, outside the graph; errors name `op`."""
        if isinstance(other, (list, tuple)) and holds_tensor(other):
            as_tensor(other, self, op)  # refuses (x == x.max(1) would compare with the values and the indices)
        exact = promotion.compare(op, fn, self, other)  # integers with a Python int: exact
        if exact is not None:
            return exact
        try:
            other = as_tensor(other, self, op)
        except TypeError:
            if op in ('eq', 'ne'):  # x == None is False, as for any Python object
                return NotImplemented
            raise
        if type(other.data) is not type(self.data):
            raise RuntimeError(f"{op}: operands are on different devices ({self.device} and {other.device}); "
                               "move one with .to(device)")
        return Tensor._wrap(backend_call(op, fn, self.data, other.data))

    def __eq__(self, other):
        """self == other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'eq', operator.eq)

    def __ne__(self, other):
        """self != other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'ne', operator.ne)

    def __lt__(self, other):
        """self < other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'lt', operator.lt)

    def __le__(self, other):
        """self <= other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'le', operator.le)

    def __gt__(self, other):
        """self > other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'gt', operator.gt)

    def __ge__(self, other):
        """self >= other, elementwise: a boolean tensor, no gradient."""
        return self._no_grad_op(other, 'ge', operator.ge)

    __hash__ = object.__hash__  # tensors are used as dict keys by identity

    def __bool__(self):
        """bool(t) of a one-element tensor (use .any() or .all() for more)."""
        if self.data.size != 1:
            raise ShapeError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.data)

    # ------------------------------------------------------------------ elementwise functions
    # (the functions only floats have take integers and bools as float32, as in PyTorch: exp(ids))
    def exp(self):
        """e ** x, elementwise."""
        return _ew.Exp.apply(floating(self))

    def log(self):
        """The natural logarithm, elementwise."""
        return _ew.Log.apply(floating(self))

    def sqrt(self):
        """The square root, elementwise."""
        return _ew.Sqrt.apply(floating(self))

    def rsqrt(self):
        """1 / sqrt(x), elementwise."""
        return _ew.Rsqrt.apply(floating(self))

    def outer(self, other):
        """The outer product of two 1-D tensors: out[i, j] = self[i] * other[j]."""
        return _linalg.outer(self, tensor_arg(other, 'outer', 'other'))

    def type_as(self, other):
        """self in other's dtype (PyTorch's x.type_as(y), x.to(y.dtype))."""
        if not isinstance(other, Tensor):
            raise TypeError(f"type_as: other must be a Tensor, not {type(other).__name__}; for a dtype use to(dtype)")
        return self.to(dtype=other.dtype)

    def tanh(self):
        """The hyperbolic tangent, elementwise."""
        return _ew.Tanh.apply(floating(self))

    # more elementwise functions, by family (ops/trigonometric.py, exponential.py, rounding.py, logic.py)
    def tan(self):
        """tan(x), elementwise."""
        return _trig.tan(self)

    def asin(self):
        """arcsin(x), elementwise (nan outside [-1, 1])."""
        return _trig.asin(self)

    def acos(self):
        """arccos(x), elementwise (nan outside [-1, 1])."""
        return _trig.acos(self)

    def atan(self):
        """arctan(x), elementwise."""
        return _trig.atan(self)

    def sinh(self):
        """sinh(x), elementwise."""
        return _trig.sinh(self)

    def cosh(self):
        """cosh(x), elementwise."""
        return _trig.cosh(self)

    def asinh(self):
        """arsinh(x), elementwise."""
        return _trig.asinh(self)

    def acosh(self):
        """arcosh(x), elementwise (nan below 1)."""
        return _trig.acosh(self)

    def atanh(self):
        """artanh(x), elementwise (nan outside [-1, 1])."""
        return _trig.atanh(self)

    def atan2(self, other):
        """The angle of the point (other, self), elementwise, in (-pi, pi]."""
        return _trig.atan2(self, other)

    def hypot(self, other):
        """sqrt(self^2 + other^2), elementwise, without overflow."""
        return _trig.hypot(self, other)

    def exp2(self):
        """2 ** x, elementwise."""
        return _exp.exp2(self)

    def expm1(self):
        """exp(x) - 1, elementwise, exact for small x."""
        return _exp.expm1(self)

    def log2(self):
        """The base-2 logarithm, elementwise."""
        return _exp.log2(self)

    def log10(self):
        """The base-10 logarithm, elementwise."""
        return _exp.log10(self)

    def log1p(self):
        """log(1 + x), elementwise, exact for small x."""
        return _exp.log1p(self)

    def reciprocal(self):
        """1 / x, elementwise."""
        return _exp.reciprocal(self)

    def logaddexp(self, other):
        """log(exp(self) + exp(other)), elementwise, without overflow."""
        return _exp.logaddexp(self, other)

    def floor(self):
        """The largest integer <= x, elementwise (gradient 0)."""
        return _rounding.floor(self)

    def ceil(self):
        """The smallest integer >= x, elementwise (gradient 0)."""
        return _rounding.ceil(self)

    def trunc(self):
        """x rounded toward 0, elementwise (gradient 0)."""
        return _rounding.trunc(self)

    def round(self, decimals=0):
        """x rounded to `decimals` digits, halves to even, elementwise (gradient 0)."""
        return _rounding.round(self, decimals)

    def frac(self):
        """x - trunc(x), elementwise."""
        return _rounding.frac(self)

    def sign(self):
        """-1, 0 or 1, elementwise (0 at nan; gradient 0)."""
        return _rounding.sign(self)

    def copysign(self, other):
        """|self| with the sign of other, elementwise."""
        return _rounding.copysign(self, other)

    def fmod(self, other):
        """self - other * trunc(self / other): the remainder with the sign of self, as C's fmod."""
        return _rounding.fmod(self, other)

    def isnan(self):
        """True where x is nan."""
        return _logic.isnan(self)

    def isinf(self):
        """True where x is +inf or -inf."""
        return _logic.isinf(self)

    def isfinite(self):
        """True where x is neither nan nor infinite."""
        return _logic.isfinite(self)

    def logical_not(self):
        """True where x is 0."""
        return _logic.logical_not(self)

    def logical_and(self, other):
        """self and other as truth values, elementwise."""
        return _logic.logical_and(self, other)

    def logical_or(self, other):
        """self or other as truth values, elementwise."""
        return _logic.logical_or(self, other)

    def logical_xor(self, other):
        """self xor other as truth values, elementwise."""
        return _logic.logical_xor(self, other)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """x with nan, +inf and -inf replaced by numbers."""
        return _ew.nan_to_num(self, nan, posinf, neginf)

    def lerp(self, end, weight):
        """self + weight * (end - self)."""
        return _ew.lerp(self, end, weight)

    def square(self):
        """x * x, elementwise (integers stay integers)."""
        return _exp.square(self)

    # sorting, selecting, repeating, diagonals, products (ops/sort.py, select.py, tiling.py, diagonal.py, reduce.py)
    def sort(self, dim=-1, descending=False, stable=False):
        """(values, indices): sorted along dim, ties kept in order."""
        return _sort.sort(self, dim, descending, stable)

    def argsort(self, dim=-1, descending=False, stable=False):
        """The indices that sort along dim."""
        return _sort.argsort(self, dim, descending, stable)

    def kthvalue(self, k, dim=-1, keepdim=False):
        """(values, indices): the k-th smallest entry along dim."""
        return _sort.kthvalue(self, k, dim, keepdim)

    def masked_select(self, mask):
        """The entries where mask is True, as a 1-d tensor."""
        return _select.masked_select(self, mask)

    def nonzero(self, as_tuple=False):
        """The indices of the nonzero entries: (count, ndim), or a tuple of 1-d tensors."""
        return _select.nonzero(self, as_tuple)

    def repeat(self, *sizes):
        """The tensor repeated sizes[i] times along dim i (numpy's tile)."""
        return _tiling.repeat(self, *sizes)

    def tile(self, dims):
        """repeat, with dims padded by 1s in front."""
        return _tiling.tile(self, dims)

    def repeat_interleave(self, repeats, dim=None):
        """Each entry repeated along dim, in place."""
        return _tiling.repeat_interleave(self, repeats, dim)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal over dim1 and dim2, as the last dim."""
        return _diagonal.diagonal(self, offset, dim1, dim2)

    def diag(self, diagonal=0):
        """A 1-d tensor on a matrix's diagonal, or a matrix's diagonal."""
        return _diagonal.diag(self, diagonal)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        """Zeros with the last dim written on a diagonal."""
        return _diagonal.diag_embed(self, offset, dim1, dim2)

    def prod(self, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
        """The product over dim (None: all elements); integers and bools multiply in int64."""
        dim, keepdim = _args.dim_keepdim('prod', dim, keepdim, axis, keepdims)
        return _reduce.prod(self, dim, keepdim, dtype)

    def cummax(self, dim):
        """(values, indices): the running maximum along dim."""
        return _scan.cummax(self, dim)

    def cummin(self, dim):
        """(values, indices): the running minimum along dim."""
        return _scan.cummin(self, dim)

    def logcumsumexp(self, dim):
        """The running log(sum(exp(x))) along dim."""
        return _scan.logcumsumexp(self, dim)

    def unfold(self, dimension, size, step):
        """The windows of `size` entries every `step` along dimension, as a new last dim."""
        return _tiling.unfold(self, dimension, size, step)

    def sin(self):
        """The sine, elementwise."""
        return _ew.Sin.apply(floating(self))

    def cos(self):
        """The cosine, elementwise."""
        return _ew.Cos.apply(floating(self))

    def sigmoid(self):
        """1 / (1 + exp(-x)), elementwise."""
        return _ew.Sigmoid.apply(floating(self))

    def relu(self):
        """max(x, 0), elementwise."""
        return _ew.Relu.apply(self)

    def gelu(self, approximate='none'):
        """GELU, x * Phi(x): approximate='none' (the default, with erf, as PyTorch's) or 'tanh' (GPT-2)."""
        return _nn.gelu(self, approximate)

    def abs(self):
        """|x|, elementwise."""
        return _ew.Abs.apply(self)

    def clamp(self, min=None, max=None):
        """x limited to [min, max] (PyTorch's name of clip)."""
        return self.clip(min, max)

    def clip(self, min=None, max=None):
        """x limited to [min, max], elementwise (None: no bound on that side; one bound is needed)."""
        if min is None and max is None:
            raise RuntimeError("clip: at least one of min and max must be given, not both None (PyTorch's clamp "
                               "and clip refuse this too); for an unchanged copy use x.clone()")
        low = None if min is None else argcheck.real(min, 'clip', 'min')
        high = None if max is None else argcheck.real(max, 'clip', 'max')
        low, high = (float(v) if isinstance(v, float) else v for v in (low, high))  # numpy floats as weak as Python's
        dtype = promotion.result_type(self, *(v for v in (low, high) if v is not None))  # int64.clip(0.5) is float32
        if dtype.kind in 'iu':  # a bound beyond the dtype is refused, as in PyTorch (which wraps -1 into uint8)
            low, high = (None if v is None else promotion.fit('clip', v, dtype, name, negative_wraps=False)
                         for v, name in ((low, 'min'), (high, 'max')))
        x = self if dtype == self.dtype else self.to(dtype=dtype)
        return _ew.Clip.apply(x, low=low, high=high)

    # ------------------------------------------------------------------ reductions
    # (PyTorch's dim= and keepdim=; numpy's axis= and keepdims= are accepted as their other names)
    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The sum over dim (None: all elements)."""
        dim, keepdim = _args.dim_keepdim('sum', dim, keepdim, axis, keepdims)
        return _reduce.Sum.apply(self, axis=dim, keepdims=keepdim)

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The mean over dim (None: all elements)."""
        dim, keepdim = _args.dim_keepdim('mean', dim, keepdim, axis, keepdims)
        return _reduce.mean(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, ddof=None, axis=None, keepdims=None):
        """The variance over dim, dividing by n - 1 as PyTorch (correction=1; correction=0, unbiased=False
        or numpy's ddof=0 divide by n); of integers, in float32."""
        return _reduce.variance(self, 'var', dim, unbiased, keepdim, correction, ddof, axis, keepdims)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, ddof=None, axis=None, keepdims=None):
        """The standard deviation over dim: sqrt(var), with var's correction (n - 1 unless told otherwise)."""
        return _reduce.variance(self, 'std', dim, unbiased, keepdim, correction, ddof, axis, keepdims)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """As PyTorch: x.max() is the largest element (ties share the gradient); x.max(dim) is the named
        tuple (values, indices), its gradient going to the index only; x.max(other) is mt.maximum."""
        if isinstance(dim, Tensor):
            return binary(_ew.Maximum, self, dim, 'maximum')
        return _reduce.extreme(self, 'max', dim, keepdim, axis, keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """As PyTorch: x.min() is the smallest element; x.min(dim) is the named tuple (values, indices)."""
        if isinstance(dim, Tensor):
            return binary(_ew.Minimum, self, dim, 'minimum')
        return _reduce.extreme(self, 'min', dim, keepdim, axis, keepdims)

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The maximum over dim (one or several; None: all), values only; ties share the gradient evenly."""
        dim, keepdim = _args.dim_keepdim('amax', dim, keepdim, axis, keepdims)
        return _reduce.Max.apply(self, axis=dim, keepdims=keepdim)

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The minimum over dim (one or several; None: all), values only; ties share the gradient evenly."""
        dim, keepdim = _args.dim_keepdim('amin', dim, keepdim, axis, keepdims)
        return _reduce.Min.apply(self, axis=dim, keepdims=keepdim)

    def norm(self, p='fro', dim=None, keepdim=False, *, ord=None, axis=None, keepdims=None):
        """PyTorch's x.norm(p, dim): the vector p-norm of the elements over dim (None: all of them, of
        any shape), by default sqrt(sum(x**2)); p may be 2 ('fro'), 1, inf, -inf, 0 or any number.
        With ord= (numpy's and torch.linalg.norm's name) it is numpy.linalg.norm instead: for two
        dims (or a matrix) ord 1, -1, inf, -inf are matrix norms (the largest column or row sum)."""
        dim, keepdim = _args.dim_keepdim('norm', dim, keepdim, axis, keepdims)
        if ord is not None:
            if p != 'fro':
                raise TypeError(f"norm: got p={p!r} and ord={ord!r}: p is PyTorch's vector norm, ord numpy's "
                                "(and torch.linalg.norm's) vector or matrix norm; pass one of them")
            return _reduce.norm(self, ord, dim, keepdim)
        return _reduce.vector_norm(self, p, dim, keepdim)

    def sum_to(self, shape):
        """Sum down to a shape x was broadcast from (how backward undoes broadcasting)."""
        return _reduce.sum_to(self, shape)

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the maximum over dim, or in the flattened tensor (an int64 tensor, no gradient)."""
        dim, keepdim = _args.dim_keepdim('argmax', dim, keepdim, axis, keepdims)
        return _reduce.arg_extreme(self, 'argmax', dim, keepdim)

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the minimum over dim, or in the flattened tensor (an int64 tensor, no gradient)."""
        dim, keepdim = _args.dim_keepdim('argmin', dim, keepdim, axis, keepdims)
        return _reduce.arg_extreme(self, 'argmin', dim, keepdim)

    # ------------------------------------------------------------------ shapes
    def reshape(self, *shape):
        """The same elements in another shape (one dimension may be -1)."""
        return _shape.reshape(self, *shape)

    def view(self, *shape):
        """The same as reshape (the PyTorch name)."""
        return _shape.reshape(self, *shape)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims start_dim to end_dim merged into one (by default all of them: a 1-D tensor)."""
        return _shape.flatten(self, start_dim, end_dim)

    def unflatten(self, dim, sizes):
        """Dim `dim` split into `sizes` (one may be -1): x.unflatten(-1, (n_heads, d_head))."""
        return _shape.unflatten(self, dim, sizes)

    def transpose(self, *dims):
        """PyTorch's transpose(dim0, dim1): two dims swapped.  Extensions that cannot be mistaken for a
        swap: no dims reverses them all (as x.T), and a tuple (or 3+ dims) permutes, as permute."""
        return _shape.transpose(self, *dims)

    def permute(self, *dims):
        """Dims reordered: x.permute(2, 0, 1) (or a tuple); dim i of the result is dim dims[i] of x."""
        return _shape.permute(self, *dims)

    @property
    def T(self):
        """The transpose: dimensions reversed."""
        return _shape.transpose(self)

    def t(self):
        """A matrix transposed (a vector or a 0-d tensor as it is), as PyTorch's t()."""
        if self.ndim > 2:
            raise ShapeError(f"t: takes a tensor of at most 2 dimensions, not shape {self.shape}; use transpose(d0, d1) "
                             "or permute")
        return _shape.transpose(self)

    def dim(self):
        """The number of dimensions (PyTorch's name of ndim)."""
        return self.data.ndim

    @property
    def mT(self):
        """The last two dimensions swapped: each matrix of a batch transposed."""
        return _shape.matrix_transpose(self)

    def swapaxes(self, axis1, axis2):
        """Exchange two dimensions (numpy's name of transpose(dim0, dim1))."""
        return _shape.swapaxes(self, axis1, axis2)

    def expand_dims(self, axis):
        """Insert a dimension of size 1 at axis."""
        return _shape.expand_dims(self, axis)

    def unsqueeze(self, dim):
        """Insert a dimension of size 1 at dim (the PyTorch name of expand_dims)."""
        return _shape.expand_dims(self, dim)

    def squeeze(self, dim=None):
        """Remove dimensions of size 1: all of them, or those of `dim` (one or a tuple) that have size 1
        (a named dim of another size stays, as in PyTorch)."""
        return _shape.squeeze(self, dim)

    def expand(self, *sizes):
        """Repeat dims of size 1 to sizes (-1 keeps a dim), as PyTorch; new dims may lead."""
        return _shape.expand(self, *sizes)

    def clone(self):
        """A copy in new memory, still in the graph (its gradient flows back to self)."""
        return _shape.Clone.apply(self)

    def contiguous(self):
        """self when its memory is C-ordered, else a C-ordered copy in the graph."""
        return _shape.contiguous(self)

    def split(self, split_size_or_sections, dim=0):
        """Chunks of split_size_or_sections along dim (an int), or pieces of the listed sizes; a tuple."""
        return _shape.split(self, split_size_or_sections, dim)

    def multinomial(self, num_samples, replacement=False):
        """num_samples class ids drawn per row of these weights (see mt.multinomial)."""
        return creation.multinomial(self, num_samples, replacement)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The k largest (or smallest) entries along dim and their indices: (values, indices)."""
        return _gather.topk(self, k, dim, largest, sorted)

    def unbind(self, dim=0):
        """The slices along dim, as a tuple (that dim removed from each): x.unbind(0) is (x[0], x[1], ...)."""
        return _shape.unbind(self, dim)

    def chunk(self, chunks, dim=0):
        """`chunks` pieces along dim, each of ceil(size / chunks) (the last smaller; maybe fewer pieces)."""
        return _shape.chunk(self, chunks, dim)

    def broadcast_to(self, shape):
        """Repeat along dimensions of size 1 to shape, as numpy (backward sums them back)."""
        return _shape.broadcast_to(self, shape)

    def __getitem__(self, index):
        """t[index]: ints, slices, None, ..., integer and boolean tensors, as PyTorch reads them: where
        ints mix with index tensors (x[1, :, ids]), the ints pick first (numpy's shape differs)."""
        if not _index.is_basic(index):  # arrays, lists, masks: checked, and private copies (ops/index.py)
            index = _index.normalize(index, self, 'GetItem')
            steps = _index.split_ints(index)
            if steps is not None:
                return _shape.GetItem.apply(_shape.GetItem.apply(self, index=steps[0]), index=steps[1])
        return _shape.GetItem.apply(self, index=index)

    # ------------------------------------------------------------------ selection and nn
    def masked_fill(self, mask, value):
        """A copy with value where mask is True."""
        return _select.masked_fill(self, mask, value)

    def softmax(self, dim=-1, *, axis=-1):
        """exp(x) / sum(exp(x)) along dim (the last by default): each row becomes a probability distribution."""
        return _nn.softmax(self, dim, axis=axis)

    def log_softmax(self, dim=-1, *, axis=-1):
        """log(softmax(x)) along dim (the last by default), computed stably."""
        return _nn.log_softmax(self, dim, axis=axis)

    # ------------------------------------------------------------------ PyTorch's calls
    # dtype shorthands (float() and double() are above, with the other copies)
    def int(self):
        """An int32 copy, as torch's x.int() (floats are truncated toward 0; it leaves the graph)."""
        return self.to(dtype='int32')

    def long(self):
        """An int64 copy, as torch's x.long() (it leaves the graph)."""
        return self.to(dtype='int64')

    def bool(self):
        """A bool copy: True where x is nonzero (it leaves the graph)."""
        return self.to(dtype='bool')

    def half(self):
        """A float16 copy, still in the graph."""
        return self.to(dtype='float16')

    # the method forms of the operators, as in PyTorch
    def add(self, other, alpha=1):
        """self + alpha * other."""
        return _ew.add(self, other, alpha)

    def sub(self, other, alpha=1):
        """self - alpha * other."""
        return _ew.sub(self, other, alpha)

    def mul(self, other):
        """self * other."""
        return binary(_ew.Mul, self, other, 'mul')

    def div(self, other, rounding_mode=None):
        """self / other; rounding_mode 'floor' (self // other) or 'trunc' (toward 0) rounds the
        quotient, with a zero gradient, as in PyTorch (integers then stay integers)."""
        return _rounding.div(self, other, rounding_mode)

    def pow(self, other):
        """self ** other."""
        return binary(_ew.Pow, self, other, 'pow')

    def matmul(self, other):
        """self @ other."""
        return _linalg.matmul(self, other)

    def remainder(self, other):
        """self % other, with the sign of other (as Python's %)."""
        return _rounding.remainder(self, other)

    def floor_divide(self, other):
        """self // other (no gradient, as torch.floor_divide)."""
        return _rounding.floor_divide(self, other)

    # a % b and a // b as Python's and PyTorch's (ops/rounding.py); bitwise operators on integers
    # and bools (ops/bitwise.py); all in the dtype PyTorch's promotion gives, as + and * are
    def __mod__(self, other):
        """self % other: the remainder with the sign of other; dL/dself = g, dL/dother = -g floor(self / other)."""
        return _rounding.remainder(self, other)

    def __rmod__(self, other):
        """other % self."""
        return _rounding.remainder(other, self)

    def __floordiv__(self, other):
        """self // other: floor(self / other), as torch.floor_divide (outside the graph)."""
        return _rounding.floor_divide(self, other)

    def __rfloordiv__(self, other):
        """other // self."""
        return _rounding.floor_divide(other, self)

    def __and__(self, other):
        """self & other: bitwise and (logical and of bools)."""
        return binary(_bitwise.And, self, other, 'bitwise_and')

    def __rand__(self, other):
        """other & self."""
        return binary(_bitwise.And, other, self, 'bitwise_and')

    def __or__(self, other):
        """self | other: bitwise or (logical or of bools)."""
        return binary(_bitwise.Or, self, other, 'bitwise_or')

    def __ror__(self, other):
        """other | self."""
        return binary(_bitwise.Or, other, self, 'bitwise_or')

    def __xor__(self, other):
        """self ^ other: bitwise exclusive or (of bools: a != b)."""
        return binary(_bitwise.Xor, self, other, 'bitwise_xor')

    def __rxor__(self, other):
        """other ^ self."""
        return binary(_bitwise.Xor, other, self, 'bitwise_xor')

    def __invert__(self):
        """~self: every bit flipped (of bools: not)."""
        return _bitwise.Invert.apply(self)

    def __lshift__(self, other):
        """self << other: shifted left by other bits."""
        return binary(_bitwise.LeftShift, self, other, 'bitwise_left_shift')

    def __rlshift__(self, other):
        """other << self."""
        return binary(_bitwise.LeftShift, other, self, 'bitwise_left_shift')

    def __rshift__(self, other):
        """self >> other: shifted right by other bits (the sign is kept)."""
        return binary(_bitwise.RightShift, self, other, 'bitwise_right_shift')

    def __rrshift__(self, other):
        """other >> self."""
        return binary(_bitwise.RightShift, other, self, 'bitwise_right_shift')

    def __imod__(self, other):
        """self %= other, in place (see _arithmetic_in_place)."""
        return self._arithmetic_in_place(_rounding.Remainder, other, '%=')

    def __ifloordiv__(self, other):
        """self //= other, in place (in a recorded graph, with div(rounding_mode='floor')'s zero gradient)."""
        return self._arithmetic_in_place(_rounding.FloorDiv, other, '//=')

    def __iand__(self, other):
        """self &= other, in place."""
        return self._arithmetic_in_place(_bitwise.And, other, '&=')

    def __ior__(self, other):
        """self |= other, in place."""
        return self._arithmetic_in_place(_bitwise.Or, other, '|=')

    def __ixor__(self, other):
        """self ^= other, in place."""
        return self._arithmetic_in_place(_bitwise.Xor, other, '^=')

    def __ilshift__(self, other):
        """self <<= other, in place."""
        return self._arithmetic_in_place(_bitwise.LeftShift, other, '<<=')

    def __irshift__(self, other):
        """self >>= other, in place."""
        return self._arithmetic_in_place(_bitwise.RightShift, other, '>>=')

    # logic, no gradient (ops/logic.py)
    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """True where some element over dim (None: all) is nonzero: a bool tensor, as in PyTorch."""
        return _logic.any(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """True where every element over dim (None: all) is nonzero: a bool tensor, as in PyTorch."""
        return _logic.all(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol * |other|, elementwise."""
        return _logic.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """isclose everywhere (a Python bool)."""
        return _logic.allclose(self, other, rtol, atol, equal_nan)

    # scans, reductions, indexing along a dim and rearranging, as PyTorch's (microtensor/ops/)
    def cumsum(self, dim):
        """The running sum along dim (integers in int64)."""
        return _scan.cumsum(self, dim)

    def cumprod(self, dim):
        """The running product along dim (exact gradient with zeros in x)."""
        return _scan.cumprod(self, dim)

    def logsumexp(self, dim=None, keepdim=False):
        """log(sum(exp(x))) over dim, computed stably."""
        return _reduce.logsumexp(self, dim, keepdim)

    def gather(self, dim, index):
        """y[..., j, ...] = self[..., index[..., j, ...], ...] along dim."""
        return _gather.gather(self, dim, index)

    def scatter(self, dim, index, src):
        """A copy with src (a tensor or a number) written at index along dim."""
        return _gather.scatter(self, dim, index, src)

    def scatter_add(self, dim, index, src):
        """A copy with src added at index along dim."""
        return _gather.scatter_add(self, dim, index, src)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """A copy with the src values sent by index along dim reduced into it ('sum', 'mean', 'amax', 'amin')."""
        return _gather.scatter_reduce(self, dim, index, src, reduce, include_self)

    def tril(self, diagonal=0):
        """The lower triangle of the last two axes; the rest 0."""
        return _rearrange.tril(self, diagonal)

    def triu(self, diagonal=0):
        """The upper triangle of the last two axes; the rest 0."""
        return _rearrange.triu(self, diagonal)

    def flip(self, dims):
        """The elements in reverse order along dims."""
        return _rearrange.flip(self, dims)

    def roll(self, shifts, dims=None):
        """The elements shifted cyclically by shifts along dims (None: the flattened tensor)."""
        return _rearrange.roll(self, shifts, dims)


def binary(fn, a, b, op):
    """The op fn (Add, Mul, ...) on a and b, one of them a Tensor, in their common dtype
    (microtensor/promotion.py: PyTorch's rules); Div computes in floats, as true division.
    Two Tensors of one float dtype, or a Python number with a float tensor, are already there."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.data.dtype == b.data.dtype and a.data.dtype.kind == 'f':
        return fn.apply(a, b)  # the common case, in every backward: no promotion to compute
    x, other = (a, b) if isinstance(a, Tensor) else (b, a)
    if (type(other) is float or type(other) is int) and x.data.dtype.kind == 'f':
        return fn.apply(as_tensor(a, x, op), as_tensor(b, x, op))
    if isinstance(other, (list, tuple)) and holds_tensor(other):
        as_tensor(other, x, op)  # refuses, naming what to do instead
    if fn is _ew.Sub or fn is _ew.Pow:
        promotion.check_booleans(op, a, b, subtract=fn is _ew.Sub)
    dtype = promotion.result_type(a, b)
    if fn is _ew.Div:  # true division: in floats from the exact values (uint8 / 256 divides by 256)
        dtype = promotion.floating_dtype(dtype)
    elif fn is _ew.Pow:
        promotion.check_exponent(op, b, dtype)
    return fn.apply(*promotion.operands(op, a, b, dtype=dtype))


class _HookHandle:
    """Returned by register_hook; handle.remove() takes the hook off again."""

    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


# The ops import Tensor from this module, so they are imported after it is defined.
from . import autograd  # noqa: E402
from .convert import (ONE_HOLDER, as_tensor, backend_call, check_cast, check_dtype,  # noqa: E402
                      counter_holders, holds_tensor, new_array, param_array, share_counter, tensor_arg)
from . import creation, promotion  # noqa: E402
from .promotion import floating  # noqa: E402
from .ops import args as _args  # noqa: E402
from .ops import elementwise as _ew, reduce as _reduce, linalg as _linalg  # noqa: E402
from .ops import shape as _shape, select as _select, nn as _nn, index as _index  # noqa: E402
from .ops import bitwise as _bitwise, logic as _logic, rounding as _rounding  # noqa: E402
from .ops import gather as _gather, rearrange as _rearrange, scan as _scan  # noqa: E402
from .ops import trigonometric as _trig, exponential as _exp  # noqa: E402
from .ops import sort as _sort, tiling as _tiling, diagonal as _diagonal  # noqa: E402
