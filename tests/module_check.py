"""gradcheck_module: an end-to-end float64 gradient check of a whole nn.Module.

    gradcheck_module(FeedForward(4, 8), x)                        # d out / d(W_1, b_1, W_2, b_2, x)
    gradcheck_module(mha, x, call=lambda m, x: m(x, mask=mask))   # extra arguments through `call`

The module's parameters (and floating-point buffers) are converted to float64 in place,
so pass a throw-away module.  Each parameter becomes an input of mt.gradcheck: while
the check runs, the module's attributes point at gradcheck's (perturbed) tensors, so
every use of a parameter, shared ones included, sees the same value.
"""
import microtensor as mt


def gradcheck_module(module, *inputs, call=None, check_inputs=True, **gradcheck_kwargs):
    """Check d(output)/d(every parameter) and d(output)/d(every floating-point input Tensor).

    inputs: Tensors (float ones become float64 leaves; integer ids and boolean masks pass
    through unchanged) or anything else `call` accepts.  call(module, *inputs) defaults to
    module(*inputs) and may return a Tensor or a tuple of Tensors.  check_inputs=False
    checks the parameters only.  Returns True or raises mt.GradcheckError.
    """
    call = call or (lambda m, *xs: m(*xs))
    params = module.parameters()
    for t in params + module.buffers():
        if mt.backend.float_dtype(t.dtype):
            t.data = t.data.astype(mt.float64)
    slot = {id(p): i for i, p in enumerate(params)}
    uses = [(owner, name, p) for owner in module.modules() for name, p in owner._parameters.items()
            if p is not None and id(p) in slot]

    def is_float(x):
        return isinstance(x, mt.Tensor) and mt.backend.float_dtype(x.dtype)

    inputs = [mt.tensor(x.data, dtype=mt.float64, requires_grad=check_inputs) if is_float(x) else x
              for x in inputs]
    tensors = [x for x in inputs if isinstance(x, mt.Tensor)]

    def fn(*args):
        param_values, tensor_values = args[:len(params)], iter(args[len(params):])
        call_inputs = [next(tensor_values) if isinstance(x, mt.Tensor) else x for x in inputs]
        for owner, name, p in uses:
            object.__setattr__(owner, name, param_values[slot[id(p)]])  # bypass Module's registration
        try:
            return call(module, *call_inputs)
        finally:
            for owner, name, p in uses:
                object.__setattr__(owner, name, p)

    return mt.gradcheck(fn, params + tensors, **gradcheck_kwargs)
