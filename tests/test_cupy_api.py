"""The GPU path without a GPU: every array call the engine makes exists in cupy.

The engine reaches numpy or cupy in three ways, and this test finds each in the
source (by walking the AST of every file in microtensor/):

    xp.exp(x), backend.array_module(x).where(...), cupy.asnumpy(...), cupyx.scipy.special.erf(...)
        -> an attribute of the cupy (or cupyx) module
    backend.generator(device).standard_normal(...), rng.random(...)
        -> a method of cupy.random.Generator
    x.sum(axis=...), x.astype(dtype), self.data.fill(value)
        -> a method of cupy.ndarray (every attribute name numpy.ndarray also has)

Names are found by the engine's conventions: `xp` (or any name assigned from
backend.array_module / module_for) is an array module; a name assigned from
backend.generator(...) in a file is a device generator in that file.  Each name is
then looked up on cupy, and each keyword argument is checked against the cupy
function's signature where cupy publishes one.  cupy-cuda12x imports without a
GPU, so this runs in CI on any machine with the `gpu` extra installed.
"""
import ast
import builtins
import importlib
import inspect
import re
import types
from collections import namedtuple
from pathlib import Path

import numpy
import pytest

import microtensor as mt
from microtensor import backend

if backend.cupy is None:
    pytest.skip("cupy is not installed: install the gpu extra (pip install -e '.[gpu]') to check "
                "that the engine calls only functions cupy has", allow_module_level=True)

cupy, cupyx = backend.cupy, backend.cupyx

ENGINE_DIR = Path(mt.__file__).parent
MODULE_FACTORIES = {'array_module', 'module_for'}  # backend functions returning numpy or cupy
GENERATOR_FACTORIES = {'generator'}                # backend.generator(device): a numpy or cupy Generator
ARRAY_MODULE_NAME = 'xp'                           # the engine's name for "numpy or cupy"

# owner: 'cupy', 'cupyx', 'generator' or 'ndarray'; path: ('random', 'default_rng');
# keywords: the keyword arguments of the call (None when it is not called); where: 'file:line'
Use = namedtuple('Use', 'owner path keywords where')


# ---------------------------------------------------------------------------- the collector
def _called_name(node):
    """'f' for a call f(...) or a.b.f(...), else None."""
    if isinstance(node, ast.Call):
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
    return None


def _attribute_chain(node):
    """a.b.c -> (the node a, ['b', 'c'])."""
    path = []
    while isinstance(node, ast.Attribute):
        path.append(node.attr)
        node = node.value
    return node, path[::-1]


def _names_assigned_from(tree, factories):
    """Names bound anywhere in the file to the result of a call to one of `factories`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _called_name(node.value) in factories:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _imported_names(tree):
    """Names bound by import statements: modules (backend, math, ...), never arrays."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split('.')[0] for a in node.names)
    return names


def collect(source, filename='<source>'):
    """Every use of cupy, cupyx, a device generator or an array attribute in `source`."""
    tree = ast.parse(source, filename)
    modules = {'cupy': 'cupy', 'cupyx': 'cupyx', ARRAY_MODULE_NAME: 'cupy'}
    modules.update(dict.fromkeys(_names_assigned_from(tree, MODULE_FACTORIES), 'cupy'))
    generators = _names_assigned_from(tree, GENERATOR_FACTORIES)
    ndarray_names = set(dir(numpy.ndarray))
    not_arrays = _imported_names(tree) | set(dir(builtins)) | {'self', 'cls'} | set(modules) | generators

    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # a.b inside a.b.c
    in_ops = Path(filename).parent.name == 'ops'  # an op's forward gets arrays (a Module's gets Tensors)
    forward_lines = {line for n in ast.walk(tree) if in_ops and isinstance(n, ast.FunctionDef)
                     and n.name == 'forward' for line in range(n.lineno, n.end_lineno + 1)}
    uses = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        call = calls.get(id(node))
        keywords = tuple(k.arg for k in call.keywords if k.arg) if call else None
        where = f"{filename}:{node.lineno}"
        base, path = _attribute_chain(node)
        if id(node) in inner:
            pass  # the module check looks at whole chains only: cupy.random.default_rng, not cupy.random
        elif isinstance(base, ast.Name) and base.id in modules:
            uses.append(Use(modules[base.id], tuple(path), keywords, where))
        elif _called_name(base) in MODULE_FACTORIES:
            uses.append(Use('cupy', tuple(path), keywords, where))
        elif (isinstance(base, ast.Name) and base.id in generators) or _called_name(base) in GENERATOR_FACTORIES:
            uses.append(Use('generator', tuple(path[:1]), keywords, where))
        receiver = node.value
        if node.attr in ndarray_names and not (isinstance(receiver, ast.Name) and receiver.id in not_arrays
                                               or _called_name(receiver) in MODULE_FACTORIES | GENERATOR_FACTORIES):
            # keywords are checked where the receiver is surely an array: inside an op's
            # forward, in backend.py, or `t.data`; elsewhere x.sum(...) may be a Tensor's method
            surely_array = (filename.endswith('backend.py') or node.lineno in forward_lines
                            or (isinstance(receiver, ast.Attribute) and receiver.attr == 'data'))
            uses.append(Use('ndarray', (node.attr,), keywords if surely_array else None, where))
    return uses


def engine_uses():
    uses = []
    for path in sorted(ENGINE_DIR.rglob('*.py')):
        uses += collect(path.read_text(), str(path.relative_to(ENGINE_DIR.parent)))
    return uses


# ---------------------------------------------------------------------------- looking names up in cupy
OWNERS = {'cupy': cupy, 'cupyx': cupyx, 'generator': cupy.random.Generator, 'ndarray': cupy.ndarray}


def resolve(use):
    """The cupy object `use` names, or None when cupy has no such attribute."""
    obj = OWNERS[use.owner]
    for name in use.path:
        if not hasattr(obj, name) and isinstance(obj, types.ModuleType):
            try:  # a submodule not imported yet, e.g. cupyx.scipy.special
                importlib.import_module(f"{obj.__name__}.{name}")
            except ImportError:
                return None
        if not hasattr(obj, name):
            return None
        obj = getattr(obj, name)
    return obj


def accepted_keywords(func):
    """The keyword names `func` accepts, or None when it takes **kwargs or cupy does not say.

    Python functions have a signature; cupy's compiled methods and ufuncs state theirs
    on the first line of the docstring, e.g. '_ndarray_base.var(self, axis=None, ...)'."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        match = re.match(r'[\w.]+\((.*)\)', (func.__doc__ or '').split('\n', 1)[0])
        if not match:
            return None
        names = set()
        for part in match.group(1).split(','):
            part = part.split('=')[0].strip().replace('\\', '')
            if part.startswith('**'):
                return None
            if part and not part.startswith('*') and part != '/':
                names.add(part.split()[-1])  # 'Py_ssize_t axis1' -> 'axis1'
        return names
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def problems(uses):
    """'where: what is wrong' for every use cupy cannot serve."""
    found = []
    for use in uses:
        name = '.'.join((use.owner,) + use.path)
        obj = resolve(use)
        if obj is None:
            found.append(f"{use.where}: {name} does not exist in cupy")
        elif use.keywords:
            accepted = accepted_keywords(obj)
            unknown = sorted(set(use.keywords) - accepted) if accepted is not None else []
            if unknown:
                found.append(f"{use.where}: {name} takes no keyword {', '.join(unknown)} in cupy")
    return found


# ---------------------------------------------------------------------------- the tests
@pytest.fixture(scope='module')
def uses():
    return engine_uses()


def test_the_collector_finds_the_engines_array_calls(uses):
    """A collector that finds nothing would make the other tests pass vacuously."""
    found = {(u.owner, u.path) for u in uses}
    expected = {('cupy', ('exp',)),               # Exp.forward: backend.array_module(x).exp
                ('cupy', ('where',)),             # Where.forward
                ('cupy', ('asnumpy',)),           # backend.to_numpy
                ('cupy', ('add', 'at')),          # backend.scatter_add
                ('cupyx', ('scipy', 'special', 'erf')),
                ('generator', ('standard_normal',)),  # mt.randn
                ('generator', ('random',)),           # dropout
                ('ndarray', ('astype',)), ('ndarray', ('sum',)), ('ndarray', ('reshape',))}
    assert expected <= found, f"not found: {sorted(expected - found)}"
    assert sum(u.owner == 'cupy' for u in uses) > 20


def test_every_array_module_function_exists_in_cupy(uses):
    assert problems([u for u in uses if u.owner in ('cupy', 'cupyx')]) == []


def test_every_generator_method_exists_on_cupys_generator(uses):
    """cupy's Generator lacks some numpy methods (normal, choice, permutation, shuffle):
    device-side randomness must use the ones it has."""
    assert problems([u for u in uses if u.owner == 'generator']) == []


# Array attributes used on CPU arrays only, on purpose, by file: the code checks the device first.
CPU_ONLY = {'microtensor/fused/compiled.py': {'ctypes'}}  # a numpy array's address for the C loops (can_run: CPU only)


def test_every_array_method_exists_on_cupy_ndarray(uses):
    on_any_device = [u for u in uses if u.owner == 'ndarray'
                     and u.path[0] not in CPU_ONLY.get(u.where.rsplit(':', 1)[0], ())]
    assert problems(on_any_device) == []


def test_the_cpu_only_attributes_are_still_used_where_they_are_allowed(uses):
    """An allowance for a file that no longer needs it would hide a new use there."""
    used = {(u.where.rsplit(':', 1)[0], u.path[0]) for u in uses if u.owner == 'ndarray'}
    assert {(path, name) for path, names in CPU_ONLY.items() for name in names} <= used


def test_keyword_lookup_reads_cupys_signatures():
    assert {'axis', 'keepdims', 'ddof'} <= accepted_keywords(cupy.ndarray.var)
    assert {'size', 'dtype'} <= accepted_keywords(cupy.random.Generator.random)
    assert 'dtype' in accepted_keywords(cupy.exp)      # a ufunc: from its docstring
    assert 'axis' in accepted_keywords(cupy.concatenate)  # a Python function: from inspect


def test_the_check_reports_what_cupy_lacks():
    """The check can fail: made-up names and keywords are reported, with file and line."""
    source = '\n'.join([
        "def forward(self, x):",
        "    xp = backend.array_module(x)",
        "    y = xp.no_such_function(x)",
        "    z = backend.array_module(x).exp(x, no_such_keyword=1)",
        "    w = x.sum(axis=0, no_such_option=True).resize((2, 2))",  # resize: numpy only
        "    rng = backend.generator('cuda')",
        "    return rng.permutation(3), cupyx.scipy.special.no_such_special(x)",
    ])
    reported = '\n'.join(problems(collect(source, 'ops/fake.py')))
    for expected in ("ops/fake.py:3: cupy.no_such_function does not exist",
                     "ops/fake.py:4: cupy.exp takes no keyword no_such_keyword",
                     "ops/fake.py:5: ndarray.sum takes no keyword no_such_option",
                     "ops/fake.py:5: ndarray.resize does not exist",
                     "ops/fake.py:7: generator.permutation does not exist",
                     "ops/fake.py:7: cupyx.scipy.special.no_such_special does not exist"):
        assert expected in reported
