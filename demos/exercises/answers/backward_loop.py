"""backward_loop: the order the backward pass walks the graph.

loss.backward() runs backward_loop (microtensor/autograd.py), which pops each tensor's
total gradient and calls its creator's backward.  That is only right if a tensor comes
after *every* tensor that uses it: by then all of its gradient has arrived.  Write that
order, a reverse topological order of the graph:

    topological_order(roots) -> a list of every tensor reachable from `roots` (the loss)
    through t.creator.inputs (only inputs with requires_grad), each once, each after every
    tensor that uses it; roots first, leaves last.

A tensor t was made by t.creator (None for a leaf); its inputs are t.creator.inputs.  Graphs
are DAGs, not trees: a tensor used twice must still appear once.  A graph can be 10,000 ops
deep, past Python's recursion limit: walk it with your own stack (or count each tensor's
users and emit a tensor once all of them are out: Kahn's algorithm).  Tensors are hashable
by identity (use sets and dicts of them).  Follow the order of the inputs, so that the walk
is the same on every run.

`check` runs graphs through the engine with your order, and the engine's own autograd tests
when they are there (a clone of the repository).

Second order: not asked (there is no backward to write: the order serves every backward pass).
"""


def topological_order(roots):
    # hint: first find every reachable tensor and count its users (an explicit stack, not recursion); then
    #   emit a tensor once every user is emitted, starting from the roots.
    users, stack, seen = {}, list(roots), set(roots)
    while stack:  # every tensor reachable from the roots, and how many ops use it
        t = stack.pop()
        for x in t.creator.inputs if t.creator is not None else ():
            if x.requires_grad:
                users[x] = users.get(x, 0) + 1
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
    order, ready = [], [t for t in reversed(roots) if not users.get(t)]
    while ready:  # a tensor is ready once every tensor that uses it is in the order
        t = ready.pop()
        order.append(t)
        for x in reversed(t.creator.inputs) if t.creator is not None else ():
            if x.requires_grad:
                users[x] -= 1
                if users[x] == 0:
                    ready.append(x)
    return order
