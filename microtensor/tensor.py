"""Tensor: an N-d array (numpy or cupy) plus what autograd needs.

    data           the backend array (numpy.ndarray on 'cpu', cupy.ndarray on 'cuda')
    grad           a Tensor, filled by backward() for leaves (and retain_grad() tensors)
    requires_grad  whether gradients flow to this tensor
    creator        the Function (op) that made it; None for leaves

Operators and methods below only forward to the ops in microtensor/ops/, where each
op's forward and backward stand side by side.
"""
from . import backend

DEFAULT_FLOAT = backend.dtype('float32')


class Tensor:
    __slots__ = ('data', 'grad', 'requires_grad', 'creator', 'name',
                 '_retains_grad', '_hooks', '_version', '__weakref__')
    __array_priority__ = 1000  # numpy_array * tensor -> Tensor.__rmul__

    def __init__(self, data, dtype=None, device=None, requires_grad=False, name=None):
        data = data.data if isinstance(data, Tensor) else backend.as_array(data)  # numpy scalars keep their dtype
        if device is None and backend.is_array(data):
            device = backend.device_of(data)
        array = backend.asarray(data, dtype=dtype, device=device)
        if dtype is None and not backend.is_array(data) and array.dtype == 'float64':
            array = array.astype(DEFAULT_FLOAT)  # Python floats become float32, as in PyTorch
        self.data = array
        self.grad = None
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
        t.grad = None
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
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self):
        return backend.device_of(self.data)

    @property
    def is_leaf(self):
        return self.creator is None

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        extras = []
        if self.name:
            extras.append(f"name={self.name!r}")
        if self.device != 'cpu':
            extras.append(f"device='{self.device}'")
        if self.creator is not None:
            extras.append(f"creator={type(self.creator).__name__}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        body = str(backend.to_numpy(self.data)).replace('\n', '\n       ')
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad=True):
        if requires_grad and not backend.float_dtype(self.dtype):
            raise TypeError(f"only floating-point tensors can require grad, not {self.dtype} "
                            "(integer tensors hold indices and have no gradient)")
        self.requires_grad = requires_grad
        return self

    def backward(self, grad=None, retain_graph=False, create_graph=False):
        """Fill .grad of every leaf this tensor depends on with d(self)/d(leaf).

        Gradients *accumulate*: a second backward (retain_graph=True) adds to .grad,
        as in PyTorch; call zero_grad() (or set .grad = None) between steps.
        """
        root_grad = autograd._initial_grad(self, grad)
        autograd.run_backward([self], [root_grad], retain_graph, create_graph)

    def retain_grad(self):
        """Keep .grad on this non-leaf tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed; a returned tensor replaces it."""
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
        self.grad = None

    # ------------------------------------------------------------------ devices and copies
    def numpy(self):
        """A host numpy array (a copy when on the GPU)."""
        return backend.to_numpy(self.data)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.size != 1:
            raise ValueError(f"item(): only a one-element tensor can become a Python number, not shape {self.shape}")
        return self.data.reshape(()).item()

    def to(self, device=None, dtype=None):
        """A copy on another device and/or dtype, still connected to the graph.

        x.to('cuda'), x.to(dtype=mt.float64), or x.to(mt.float64) as in PyTorch.
        A cast to an integer or bool dtype leaves the graph: such tensors have no gradient.
        """
        if device is not None and str(device).split(':')[0] not in backend.DEVICES:
            device, dtype = None, device  # x.to(mt.float64)
        try:
            dtype = None if dtype is None else backend.dtype(dtype)
        except TypeError:
            raise TypeError(f"to(): {dtype!r} is neither a device ('cpu' or 'cuda') nor a dtype") from None
        out = self
        if dtype is not None and dtype != self.dtype:
            out = _ew.Cast.apply(out if backend.float_dtype(dtype) else out.detach(), dtype=dtype)
        if device is not None and backend.check_device(device) != self.device:
            out = _shape.ToDevice.apply(out, device=backend.check_device(device))
        return out

    def cpu(self):
        return self.to('cpu')

    def cuda(self):
        return self.to('cuda')

    def float(self):
        return self.to(dtype='float32')

    def double(self):
        return self.to(dtype='float64')

    def astype(self, dtype):
        return self.to(dtype=dtype)

    # ------------------------------------------------------------------ in-place updates
    def _modify_in_place(self, new_data_fn):
        if self.requires_grad and autograd.is_grad_enabled():
            raise RuntimeError("in-place change of a tensor that requires grad: wrap it in "
                               "`with mt.no_grad():` (as optimizers do) or use an out-of-place op")
        new_data_fn()
        self._version[0] += 1  # a pending backward that saved this memory will notice
        return self

    def __setitem__(self, index, value):
        value = value.data if isinstance(value, Tensor) else value
        self._modify_in_place(lambda: self.data.__setitem__(_index_arrays(index), value))

    def fill_(self, value):
        return self._modify_in_place(lambda: self.data.fill(value))

    def zero_(self):
        return self.fill_(0)

    def copy_(self, other):
        other = other.data if isinstance(other, Tensor) else other
        return self._modify_in_place(lambda: self.data.__setitem__(Ellipsis, other))

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other):
        return _ew.Add.apply(self, as_tensor(other, self))

    def __radd__(self, other):
        return _ew.Add.apply(as_tensor(other, self), self)

    def __sub__(self, other):
        return _ew.Sub.apply(self, as_tensor(other, self))

    def __rsub__(self, other):
        return _ew.Sub.apply(as_tensor(other, self), self)

    def __mul__(self, other):
        return _ew.Mul.apply(self, as_tensor(other, self))

    def __rmul__(self, other):
        return _ew.Mul.apply(as_tensor(other, self), self)

    def __truediv__(self, other):
        return _ew.Div.apply(self, as_tensor(other, self))

    def __rtruediv__(self, other):
        return _ew.Div.apply(as_tensor(other, self), self)

    def __pow__(self, other):
        return _ew.Pow.apply(self, as_tensor(other, self))

    def __rpow__(self, other):
        return _ew.Pow.apply(as_tensor(other, self), self)

    def __neg__(self):
        return _ew.Neg.apply(self)

    def __matmul__(self, other):
        return _linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return _linalg.matmul(as_tensor(other, self), self)

    # comparisons give boolean tensors and no gradient
    def __eq__(self, other):
        return Tensor._wrap(self.data == as_tensor(other, self).data)

    def __ne__(self, other):
        return Tensor._wrap(self.data != as_tensor(other, self).data)

    def __lt__(self, other):
        return Tensor._wrap(self.data < as_tensor(other, self).data)

    def __le__(self, other):
        return Tensor._wrap(self.data <= as_tensor(other, self).data)

    def __gt__(self, other):
        return Tensor._wrap(self.data > as_tensor(other, self).data)

    def __ge__(self, other):
        return Tensor._wrap(self.data >= as_tensor(other, self).data)

    def __invert__(self):
        return Tensor._wrap(~self.data)

    def __and__(self, other):
        return Tensor._wrap(self.data & as_tensor(other, self).data)

    def __or__(self, other):
        return Tensor._wrap(self.data | as_tensor(other, self).data)

    __hash__ = object.__hash__  # tensors are used as dict keys by identity

    def __bool__(self):
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.data)

    def any(self):
        return bool(self.data.any())

    def all(self):
        return bool(self.data.all())

    # ------------------------------------------------------------------ elementwise functions
    def exp(self):
        return _ew.Exp.apply(self)

    def log(self):
        return _ew.Log.apply(self)

    def sqrt(self):
        return _ew.Sqrt.apply(self)

    def tanh(self):
        return _ew.Tanh.apply(self)

    def sin(self):
        return _ew.Sin.apply(self)

    def cos(self):
        return _ew.Cos.apply(self)

    def sigmoid(self):
        return _ew.Sigmoid.apply(self)

    def relu(self):
        return _ew.Relu.apply(self)

    def gelu(self, approximate='tanh'):
        return _nn.gelu(self, approximate)

    def abs(self):
        return _ew.Abs.apply(self)

    def clip(self, min=None, max=None):
        return _ew.Clip.apply(self, low=min, high=max)

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False):
        return _reduce.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return _reduce.mean(self, axis, keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return _reduce.Var.apply(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def max(self, axis=None, keepdims=False):
        return _reduce.Max.apply(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return _reduce.Min.apply(self, axis=axis, keepdims=keepdims)

    def sum_to(self, shape):
        return _reduce.SumTo.apply(self, shape=tuple(shape))

    def argmax(self, axis=None):
        return Tensor._wrap(self.data.argmax(axis=axis))

    def argmin(self, axis=None):
        return Tensor._wrap(self.data.argmin(axis=axis))

    # ------------------------------------------------------------------ shapes
    def reshape(self, *shape):
        return _shape.reshape(self, *shape)

    def view(self, *shape):
        return _shape.reshape(self, *shape)

    def flatten(self):
        return _shape.reshape(self, -1)

    def transpose(self, *axes):
        return _shape.transpose(self, *axes)

    @property
    def T(self):
        return _shape.transpose(self)

    def swapaxes(self, axis1, axis2):
        return _shape.swapaxes(self, axis1, axis2)

    def expand_dims(self, axis):
        return _shape.expand_dims(self, axis)

    def unsqueeze(self, axis):
        return _shape.expand_dims(self, axis)

    def squeeze(self, axis=None):
        return _shape.squeeze(self, axis)

    def broadcast_to(self, shape):
        return _shape.broadcast_to(self, shape)

    def __getitem__(self, index):
        return _shape.GetItem.apply(self, index=_index_arrays(index))

    # ------------------------------------------------------------------ selection and nn
    def masked_fill(self, mask, value):
        return _select.masked_fill(self, mask, value)

    def softmax(self, axis=-1):
        return _nn.Softmax.apply(self, axis=axis)

    def log_softmax(self, axis=-1):
        return _nn.LogSoftmax.apply(self, axis=axis)


class _HookHandle:
    """Returned by register_hook; handle.remove() takes the hook off again."""

    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def as_tensor(value, like):
    """Wrap a Python number or array as a constant tensor on `like`'s device.

    A number takes `like`'s float dtype, so x_float32 * 0.5 stays float32.
    """
    if isinstance(value, Tensor):
        return value
    if backend.is_array(value):
        return Tensor._wrap(value)
    dtype = like.dtype if backend.float_dtype(like.dtype) else None
    if dtype is None and isinstance(value, float):
        dtype = DEFAULT_FLOAT
    xp = backend.array_module(like.data)  # like's device: known to exist, no need to check it again
    return Tensor._wrap(xp.asarray(value, dtype=dtype))


def _index_arrays(index):
    """Replace Tensors inside an index by their arrays (x[idx_tensor], x[:, idx])."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    return index


# The ops import Tensor from this module, so they are imported after it is defined.
from . import autograd  # noqa: E402
from .ops import elementwise as _ew, reduce as _reduce, linalg as _linalg  # noqa: E402
from .ops import shape as _shape, select as _select, nn as _nn  # noqa: E402
