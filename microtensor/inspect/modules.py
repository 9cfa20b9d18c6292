"""Which module made each op: so traces can be filtered and graphs drawn in clusters.

    with mt.record_modules(model):
        loss = loss_fn(model(x), y)      # each op made here gets op.module = 'layers.0.ffn', ...
    print(mt.trace(loss).table(module='layers.0'))

Built on the modules' forward hooks (nn.Module.register_forward_hook), so the engine
has no special path for it and nothing is recorded outside the `with` block.
After a module's forward returns, its hook walks back from the output and names
every op it reaches that was made inside that call: the walk stops at the
forward's arguments, at leaves, and at ops another (non-nested) module already
named.  Inner modules return first, so an op gets the innermost module's name.
Ops made outside every module (e.g. the loss) keep op.module unset.

An op can also carry a label saying what it is inside its module (label_op): the
residual additions are labelled 'ffn residual', 'self_attn residual', so traces and
graphs show them as 'decoder.layers.3.ffn residual' (scope_of) rather than as one
more op of the layer.  Filters (Trace.table(module=...), draw_graph(module=...))
take a dotted name, which includes everything nested in it, or the labels the
trace table prints: '(model)' for the model's own ops, '(no module)' for the rest.
"""
import contextlib

from ..tensor import Tensor


@contextlib.contextmanager
def record_modules(model):
    """Inside the block, set op.module to the dotted name of the module whose forward made it."""
    handles = [module.register_forward_hook(_namer(name))
               for name, module in model.named_modules()]
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


MODEL = '(model)'           # how tables print the scope '': ops of the model's own forward
NO_MODULE = '(no module)'   # ... and None: ops made outside every module, or not recorded


def module_of(op):
    """The dotted module name record_modules gave this op ('' for the model itself), or None."""
    return getattr(op, 'module', None)


def leaf_module(x, names, consumer):
    """The module a leaf belongs to: a parameter (named in `names`, {id: 'ffn.W_1.weight'}) to its
    own, 'ffn.W_1'; another leaf to that of the op using it (`consumer`).  None: no module."""
    name = names.get(id(x))
    if name is not None:
        return name.rpartition('.')[0] or None
    return module_of(consumer)


def label_op(tensor, label):
    """Label the op that made `tensor` with what it is inside its module, e.g. 'ffn residual';
    returns `tensor`.  Free: the label is one attribute, read only by traces and graphs."""
    if tensor.creator is not None:
        tensor.creator.label = label
    return tensor


def scope_of(op):
    """Where an op sits: its module's name and its label, 'decoder.layers.3.ffn residual'.

    Without a label this is module_of(op): a dotted name, '' (the model) or None (no module).
    """
    module, label = module_of(op), getattr(op, 'label', None)
    if label is None:
        return module
    return f"{module}.{label}" if module else label


def scope_label(scope):
    """A scope as tables print it: '(model)' for '', '(no module)' for None."""
    return NO_MODULE if scope is None else (scope or MODEL)


def in_module(scope, module):
    """Does an op at `scope` belong to `module`?

    module: a dotted name, which takes everything nested in it ('decoder.layers.3' takes
    'decoder.layers.3.ffn' and 'decoder.layers.3.ffn residual'; '' takes every recorded op),
    or what the trace table prints: '(model)' or '(no module)'.
    """
    if module == NO_MODULE:
        return scope is None
    if module == MODEL:
        return scope == ''
    return scope is not None and _inside(scope, module)


def _namer(name):
    def hook(module, args, output):
        _name_ops(name, args, output)
    return hook


def _name_ops(name, args, output):
    arguments = {id(t) for t in tensors_in(args)}
    stack, seen = list(tensors_in(output)), set()
    while stack:
        t = stack.pop()
        fn = t.creator
        if id(t) in seen or id(t) in arguments or fn is None or fn.inputs is None:
            continue
        seen.add(id(t))
        owner = module_of(fn)
        if owner is None:
            fn.module = name
        elif not _inside(owner, name):
            continue  # made by a module outside this one: before this call
        stack.extend(fn.inputs)


def _inside(owner, name):
    """Is `owner` (a module's dotted name, or a scope) this module `name` or nested in it?"""
    return name == '' or owner == name or owner.startswith(name + '.')


def tensors_in(value):
    """The Tensors in a forward's arguments or output (nested in tuples, lists, dicts)."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v)
