"""einsum: products summed over named axes, as torch.einsum and numpy.einsum.

    einsum('ij,jk->ik', A, B)      A @ B               einsum('bij,bjk->bik', A, B)   batched
    einsum('ij->ji', A)            A^T                 einsum('i,i', a, b)            a . b (implicit output)

Each operand's axes are named by letters; a letter in the output is kept, any other is summed
over.  Without '->' the output is every letter used once, in alphabetical order (numpy's and
PyTorch's rule).  The gradient for one operand is an einsum too: the output's gradient times
the other operands, with the output's letters moved to that operand's place:

    Y = einsum('ij,jk->ik', A, B)      dL/dA = einsum('ik,jk->ij', G, B),   dL/dB = einsum('ik,ij->jk', G, A)

A letter that only that operand has (summed over in the forward pass) is broadcast back.
This subset refuses '...', a letter twice in one operand (a diagonal) and size-1 broadcasting.
"""
from .. import backend, promotion
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
    """einsum('ij,jk->ik', a, b) (operands as arguments, or one list of them, as torch.einsum)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string such as 'ij,jk->ik', not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = [tensor_arg(t, 'einsum', f'operand {i}') for i, t in enumerate(operands)]
    inputs, output = _parse(equation.replace(' ', ''), len(operands))
    sizes = {}
    for spec, t in zip(inputs, operands):
        if len(spec) != t.ndim:
            raise ValueError(f"einsum: '{spec}' names {len(spec)} axes but its operand has shape {t.shape}")
        for c, n in zip(spec, t.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum: axis '{c}' has size {sizes[c]} in one operand and {n} in another "
                                 f"(shapes {[t.shape for t in operands]}); sizes must match")
    if len({t.dtype for t in operands}) > 1:
        operands = promotion.operands('einsum', *operands)
    return Einsum.apply(*operands, inputs=inputs, output=output)


def _parse(equation, n_operands):
    """(input specs, output spec) of 'ij,jk->ik', or of 'ij,jk' (the output: letters used once, sorted)."""
    left, arrow, output = equation.partition('->')
    inputs = tuple(left.split(','))
    if '.' in equation:
        raise ValueError(f"einsum: '...' (broadcast axes) is not supported in {equation!r}; name every axis")
    if not all(s.isalpha() or not s for s in inputs + (output,)):
        raise ValueError(f"einsum: {equation!r} must name axes by letters only, as 'ij,jk->ik'")
    if len(inputs) != n_operands:
        raise ValueError(f"einsum: {equation!r} describes {len(inputs)} operands but {n_operands} were given")
    for spec in inputs:
        if len(set(spec)) != len(spec):
            raise ValueError(f"einsum: '{spec}' names an axis twice (a diagonal), which this einsum does not "
                             "support; take the diagonal first")
    letters = ''.join(inputs)
    if not arrow:
        output = ''.join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or not set(output) <= set(letters):
        raise ValueError(f"einsum: the output '{output}' must name distinct axes of the inputs ({equation!r})")
    return inputs, output
