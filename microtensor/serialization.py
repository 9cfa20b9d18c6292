"""mt.save / mt.load: checkpoints in one .npz file, never pickled.

    mt.save({'model': model.state_dict(), 'optim': opt.state_dict(),
             'step': step, 'config': {'d_model': 64, 'norm': 'pre'}}, 'ckpt.npz')
    ckpt = mt.load('ckpt.npz', device='cuda')
    model.load_state_dict(ckpt['model']); opt.load_state_dict(ckpt['optim'])

What can be saved: tensors, arrays, Python numbers, bools, strings and None, inside
dicts (str or int keys), lists and tuples, nested as deep as you like.

The file is a plain .npz: each tensor or array is one member named by its path
('model/fc1.weight'), so numpy.load('ckpt.npz') shows them too, and the member
'__microtensor__' holds JSON describing the structure (which arrays were tensors,
the plain values, the format version).

Nothing is lost on a crash: save() writes a temporary file in the same folder,
flushes it to disk and renames it over `path` in one step (os.replace), so `path`
always holds either the old checkpoint or the new one, complete.  load() reads with
allow_pickle=False and turns every problem (truncated, corrupted, not a checkpoint,
needs pickle) into a CheckpointError that names the file.
"""
import json
import os

from . import backend
from .tensor import Tensor

FORMAT, VERSION = 'microtensor-checkpoint', 1
META_KEY = '__microtensor__'


class CheckpointError(ValueError):
    """A file that mt.load cannot read as a checkpoint."""


# ----------------------------------------------------------------------------
# saving
def save(obj, path):
    """Write `obj` (nested dicts/lists/tuples of tensors, arrays, numbers, strings) to `path` atomically."""
    arrays = {}
    tree = _encode(obj, [], arrays)
    arrays[META_KEY] = json.dumps({'format': FORMAT, 'version': VERSION, 'tree': tree})
    _write_atomically(os.fspath(path), arrays)


def _encode(value, path, arrays):
    """A JSON description of `value`; its tensors and arrays go into `arrays` under their path."""
    if isinstance(value, Tensor):
        return {'tensor': _store(value.data, path, arrays), 'requires_grad': value.requires_grad}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {'value': value}
    if backend.is_array(backend.as_array(value)):  # numpy scalars such as numpy.int64(3) too
        return {'array': _store(backend.as_array(value), path, arrays)}
    if isinstance(value, dict):
        for key in value:
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"mt.save: dict keys must be str or int, not {key!r} (at {_where(path)})")
        return {'dict': [[k, _encode(v, path + [str(k)], arrays)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        kind = 'list' if isinstance(value, list) else 'tuple'
        return {kind: [_encode(v, path + [str(i)], arrays) for i, v in enumerate(value)]}
    raise TypeError(f"mt.save: cannot store a {type(value).__name__} (at {_where(path)}); a checkpoint holds "
                    "tensors, arrays, numbers, strings, None and dicts/lists/tuples of them (never pickles). "
                    "For a module or an optimizer, save its state_dict().")


def _store(array, path, arrays):
    key = '/'.join(path) or 'root'
    if key in arrays or key == META_KEY:
        raise ValueError(f"mt.save: two values would be stored under the name {key!r}; "
                         "rename the dict keys (a key containing '/' can collide with a nested path)")
    arrays[key] = array
    return key


def _where(path):
    return '/'.join(path) or 'the top level'


def _write_atomically(path, arrays):
    """Write to a temporary file beside `path`, fsync it, then rename it over `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"mt.save: the folder {folder!r} does not exist (create it first)")
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        with open(tmp, 'xb') as f:
            backend.write_npz(f, arrays)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)     # atomic: readers see the old file or the new one
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder):
    """Make the rename itself durable (POSIX); not possible on every system, so best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------
# loading
def load(path, device=None):
    """Read a checkpoint written by mt.save.

    Tensors land on `device` (default: the default device, normally 'cpu'); arrays stay
    numpy arrays unless `device` is given.  Raises CheckpointError for anything that is not
    an intact microtensor checkpoint.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mt.load: no checkpoint file at {path!r}")
    try:
        arrays = backend.read_npz(path)
    except Exception as error:
        if 'pickle' in str(error):
            reason = "it would need pickle to load, and mt.load never unpickles (a pickle can run any code)"
        else:
            reason = "it is truncated, corrupted or not an .npz file"
        raise CheckpointError(f"mt.load: cannot read {path!r}: {reason} "
                              f"({type(error).__name__}: {error})") from error
    header = _read_header(path, arrays)
    tensor_device = backend.default_device() if device is None else backend.check_device(device)

    def decode(node):
        if 'value' in node:
            return node['value']
        if 'dict' in node:
            return {k: decode(v) for k, v in node['dict']}
        if 'list' in node:
            return [decode(v) for v in node['list']]
        if 'tuple' in node:
            return tuple(decode(v) for v in node['tuple'])
        key = node.get('tensor', node.get('array'))
        if key not in arrays:
            raise CheckpointError(f"mt.load: {path!r} describes an array {key!r} that it does not contain")
        if 'tensor' in node:
            t = Tensor._wrap(backend.to_device(arrays[key], tensor_device))
            return t.requires_grad_() if node.get('requires_grad') else t
        return arrays[key] if device is None else backend.to_device(arrays[key], device)

    try:
        return decode(header['tree'])
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CheckpointError(f"mt.load: {path!r} has a malformed structure description ({error})") from error


def _read_header(path, arrays):
    if META_KEY not in arrays:
        raise CheckpointError(f"mt.load: {path!r} is an .npz file but not a microtensor checkpoint "
                              f"(it has no {META_KEY!r} entry); numpy.load can read its arrays")
    try:
        header = json.loads(str(arrays.pop(META_KEY).item()))
    except ValueError as error:
        raise CheckpointError(f"mt.load: {path!r} has an unreadable {META_KEY!r} entry ({error})") from error
    if not isinstance(header, dict) or header.get('format') != FORMAT or 'tree' not in header:
        raise CheckpointError(f"mt.load: {path!r} is not a microtensor checkpoint (its {META_KEY!r} "
                              "entry describes something else)")
    if header.get('version', 0) > VERSION:
        raise CheckpointError(f"mt.load: {path!r} has format version {header['version']}, newer than this "
                              f"microtensor reads ({VERSION}); upgrade microtensor")
    return header
