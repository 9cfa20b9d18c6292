"""einsum: products summed over named axes, as torch.einsum and numpy.einsum.

    einsum('ij,jk->ik', A, B)      A @ B               einsum('bij,bjk->bik', A, B)   batched
    einsum('ij->ji', A)            A^T                 einsum('i,i', a, b)            a . b (implicit output)

Each operand's axes are named by letters; a letter in the output is kept, any other is summed
over.  Without '->' the output is every letter used once, in alphabetical order (numpy's and
PyTorch's rule).  The gradient for one operand is an einsum too: the output's gradient times
the other operands, with the output's letters moved to that operand's place:

    Y = einsum('ij,jk->ik', A, B)      dL/dA = einsum('ik,jk->ij', G, B),   dL/dB = einsum('ik,ij->jk', G, A)

A letter that only that operand has (summed over in the forward pass) is broadcast back.
'...' and size-1 axes broadcast, as in PyTorch.  A letter twice in one operand takes a diagonal:
X_ii is X_ij I_ij summed over j (I the identity), which is how einsum() writes it, so the op
itself only meets distinct letters, and the gradient lands on the diagonal, zeros elsewhere:

    y = einsum('ii->i', X)             dL/dX = einsum('i,ij->ij', g, I)
"""
import string

from .. import backend, creation, promotion
from ..argcheck import DTypeError, ShapeError
from ..autograd import Function
from ..convert import tensor_arg


class Einsum(Function):
    """Y = einsum(inputs -> output, X_1, ..., X_n)
        dL/dX_k = einsum(output, inputs without k -> the letters of k that appear elsewhere; G, the others),
                  broadcast over the letters only X_k has"""

    def forward(self, *operands, inputs, output):
        self.specs, self.output_spec = inputs, output
        return backend.array_module(operands[0]).einsum(f"{','.join(inputs)}->{output}", *operands)

    def backward(self, g):
        grads = []
        for k, x in enumerate(self.inputs):
            if not x.requires_grad:
                grads.append(None)
                continue
            others = [s for i, s in enumerate(self.specs) if i != k]
            elsewhere = set(self.output_spec).union(*others)
            kept = ''.join(c for c in self.specs[k] if c in elsewhere)
            gk = Einsum.apply(g, *[t for i, t in enumerate(self.inputs) if i != k],
                              inputs=(self.output_spec, *others), output=kept)
            if kept != self.specs[k]:  # letters only X_k had: each of their elements got the same gradient
                gk = gk.reshape([x.shape[i] if c in elsewhere else 1 for i, c in enumerate(self.specs[k])])
                gk = gk.broadcast_to(x.shape)
            grads.append(gk)
        return tuple(grads)


def einsum(equation, *operands):
    """einsum('ij,jk->ik', a, b) (operands as arguments, or one list of them, as torch.einsum).

    '...' stands for the leading axes an operand has beyond its letters (broadcast between
    operands), and an axis of size 1 broadcasts against its letter's size, as in PyTorch: both
    become a broadcast_to before the product, whose backward sums the gradient back."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string such as 'ij,jk->ik', not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = [tensor_arg(t, 'einsum', f'operand {i}') for i, t in enumerate(operands)]
    inputs, output = _parse(equation.replace(' ', ''), [t.ndim for t in operands])
    sizes = {}
    for i, (spec, t) in enumerate(zip(inputs, operands)):
        if len(spec) != t.ndim:
            raise ShapeError(f"einsum: '{spec}' names {len(spec)} axes but its operand has shape {t.shape} "
                             f"(operand {i}); name one letter per axis, or '...' for the leading ones")
        for axis, (c, n) in enumerate(zip(spec, t.shape)):
            if c in spec[:axis] and t.shape[spec.index(c)] != n:
                raise ShapeError(f"einsum: '{spec}' repeats '{c}' over axes of sizes {t.shape[spec.index(c)]} and "
                                 f"{n} (operand {i}); a diagonal needs equal sizes")
            if sizes.setdefault(c, n) != n and 1 not in (n, sizes[c]):
                raise ShapeError(f"einsum: axis '{c}' has size {sizes[c]} in one operand and {n} in another "
                                 f"(shapes {[t.shape for t in operands]}); sizes must match or be 1")
            sizes[c] = max(sizes[c], n)
    operands = [t.broadcast_to(tuple(sizes[c] for c in spec)) for spec, t in zip(inputs, operands)]
    if len({t.dtype for t in operands}) > 1:
        operands = promotion.operands('einsum', *operands)
    summed = set(''.join(inputs)) - set(output)
    if summed and operands[0].dtype.kind in 'biu':  # PyTorch's: one operand is a sum, more a batched product
        if len(operands) == 1:
            operands = [operands[0].to(dtype='int64')]  # as sum(): integers and booleans add up in int64
        elif operands[0].dtype == bool:
            raise DTypeError(f"einsum: {equation!r} sums products of bool tensors, which PyTorch does not define "
                             "either; convert them first (x.long() or x.float())")
    inputs, operands = _diagonals(inputs, operands, output)
    return Einsum.apply(*operands, inputs=inputs, output=output)


def _diagonals(inputs, operands, output):
    """Each operand whose spec repeats a letter ('ii': a diagonal) with the repeat renamed to a new
    letter, and for each renaming an identity operand tying the two: X_ii = sum_j X_ij I_ij."""
    fresh = [c for c in string.ascii_letters if c not in ''.join(inputs) + output]
    specs, extra, eyes = [], [], []
    for spec, t in zip(inputs, operands):
        renamed = ''
        for axis, c in enumerate(spec):
            if c in spec[:axis]:
                new = fresh.pop(0)
                extra.append(c + new)
                eyes.append(creation.eye(t.shape[axis], dtype=t.dtype, device=t.device))
                c = new
            renamed += c
        specs.append(renamed)
    return tuple(specs) + tuple(extra), list(operands) + eyes


def _parse(equation, ndims):
    """(input specs, output spec) of 'ij,jk->ik', or of 'ij,jk' (the output: letters used once, sorted),
    with each '...' written out as letters the equation does not use (the last ones right-aligned,
    as broadcasting aligns axes)."""
    left, arrow, output = equation.partition('->')
    inputs = left.split(',')
    if len(inputs) != len(ndims):
        raise ShapeError(f"einsum: {equation!r} describes {len(inputs)} operands but {len(ndims)} were given; "
                         "give one operand per comma-separated term")
    if any(s.count('...') > 1 for s in inputs + [output]):
        raise ValueError(f"einsum: {equation!r}: '...' may appear at most once per operand")
    spare = [c for c in string.ascii_letters if c not in equation]
    extra = max([ndim - len(s) + 3 for s, ndim in zip(inputs, ndims) if '...' in s], default=0)
    broadcast = ''.join(spare[:max(extra, 0)])
    inputs = tuple(s.replace('...', broadcast[len(broadcast) - max(ndim - len(s) + 3, 0):])
                   for s, ndim in zip(inputs, ndims))
    implicit_start = broadcast if '...' in left and not arrow else ''
    output = output.replace('...', broadcast)
    if '.' in ''.join(inputs) + output:
        raise ValueError(f"einsum: {equation!r}: '...' must be written as three dots, at most once per operand")
    if not all(s.isalpha() or not s for s in inputs + (output,)):
        raise ValueError(f"einsum: {equation!r} must name axes by letters only, as 'ij,jk->ik'")
    letters = ''.join(inputs)
    if not arrow:  # '...' first, then the letters used once, sorted
        output = implicit_start + ''.join(sorted(c for c in set(letters) - set(broadcast) if letters.count(c) == 1))
    if len(set(output)) != len(output) or not set(output) <= set(letters):
        raise ValueError(f"einsum: the output '{output}' must name distinct axes of the inputs ({equation!r})")
    return inputs, output
