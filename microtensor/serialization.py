"""mt.save / mt.load: checkpoints in one .npz file, never pickled, checked on the way in.

    mt.save({'model': model.state_dict(), 'optim': opt.state_dict(),
             'step': step, 'config': {'d_model': 64, 'norm': 'pre'}}, 'ckpt.npz')
    ckpt = mt.load('ckpt.npz', device='cuda')
    model.load_state_dict(ckpt['model']); opt.load_state_dict(ckpt['optim'])

What can be saved: tensors, arrays (numbers, bools, strings), Python numbers, bools,
strings and None, inside dicts (str or int keys), lists and tuples, up to MAX_DEPTH
levels deep.

The file (format version 3) is a plain zip of uncompressed members, so numpy.load shows
the arrays too:
    'model/fc1.weight.npy', ...   one .npy file per tensor or array, named by its path
    '__microtensor__.json'        the header: the structure (which arrays were tensors,
                                  the plain values) and, for every array, its dtype,
                                  shape and the SHA-256 of its bytes

mt.load trusts nothing in the file: it refuses compressed members (a 2 KB member can
inflate to gigabytes) and members the header does not describe, checks every declared
size against the size of the file before allocating anything, reads every member to its
end (so the zip's CRC-32 is checked) and compares each array's dtype, shape and SHA-256
with the header.  Whatever is wrong becomes a CheckpointError naming the file and the
reason; "it would need pickle" is said only of pickles.

Version 2 files were written when nn.Linear stored its weight as (in_features, out_features);
mt.upgrade_checkpoint(path, model) rewrites one as version 3, transposing the model's nn.Linear
weights (and, given the optimizer, their Adam moments).

Nothing is lost on a crash, and two runs saving to one path take turns: save() writes
through microtensor/atomic_write.py (a temporary file renamed over `path`, under a lock).
"""
import contextlib
import hashlib
import json
import os
import zipfile

from . import backend, npy_format
from .atomic_write import write_atomically
from .tensor import Tensor

FORMAT, VERSION = 'microtensor-checkpoint', 3  # 3: nn.Linear's weight is (out, in), PyTorch's layout
HEADER = '__microtensor__.json'
MAX_DEPTH = 100  # nesting levels of dicts/lists/tuples (deeper is refused, cycles too)


class CheckpointError(ValueError):
    """A file that mt.load cannot read as a checkpoint; .version: its format version when that is the reason."""

    def __init__(self, message, version=None):
        super().__init__(message)
        self.version = version


# ----------------------------------------------------------------------------
# saving
def save(obj, path):
    """Write `obj` (nested dicts/lists/tuples of tensors, arrays, numbers, strings) to `path` atomically."""
    arrays = {}
    tree = _encode(obj, [], arrays)
    write_atomically(path, lambda f: _write_zip(f, tree, arrays), who='mt.save')


def _encode(value, path, arrays):
    """A JSON description of `value`; its tensors and arrays go into `arrays` under their path."""
    if len(path) > MAX_DEPTH:
        raise ValueError(f"mt.save: the value is nested more than {MAX_DEPTH} levels deep (at {_where(path[:3])}/...); "
                         "does a list or dict contain itself?")
    if isinstance(value, Tensor):
        return {'tensor': _store(value.data, path, arrays), 'requires_grad': value.requires_grad}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {'value': value}
    if backend.is_array(backend.as_array(value)):  # numpy scalars such as numpy.int64(3) too
        return {'array': _store(backend.as_array(value), path, arrays)}
    if isinstance(value, dict):
        for key in value:
            if not _is_key(key):
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
    if key in arrays:
        raise ValueError(f"mt.save: two values would be stored under the name {key!r}; "
                         "rename the dict keys (a key containing '/' can collide with a nested path)")
    if array.dtype.kind not in npy_format.NPY_KINDS:
        raise TypeError(f"mt.save: the array at {key!r} has dtype {array.dtype}, which cannot be stored without "
                        "pickle; store numbers, bools or strings")
    arrays[key] = array
    return key


def _is_key(key):
    """A dict key a checkpoint keeps: a name (str) or an index (int; a bool is an int to Python, but neither)."""
    return isinstance(key, (str, int)) and not isinstance(key, bool)


def _where(path):
    return '/'.join(path) or 'the top level'


def _write_zip(file, tree, arrays):
    """The checkpoint into the open binary `file`: one stored .npy member per array, then the header."""
    described = {}
    with zipfile.ZipFile(file, 'w', zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            header, data, descr, shape = npy_format.npy_parts(value)
            info = zipfile.ZipInfo(name + '.npy', date_time=(1980, 1, 1, 0, 0, 0))
            info.file_size = len(header) + data.nbytes  # known in advance: zip64 only where needed
            with archive.open(info, 'w') as member:
                member.write(header)
                member.write(data)
            described[name] = {'dtype': descr, 'shape': list(shape), 'sha256': hashlib.sha256(data).hexdigest()}
        archive.writestr(zipfile.ZipInfo(HEADER, date_time=(1980, 1, 1, 0, 0, 0)),
                         json.dumps({'format': FORMAT, 'version': VERSION, 'tree': tree, 'arrays': described}))


# ----------------------------------------------------------------------------
# loading
class _Refused(Exception):
    """Why a file is not a loadable checkpoint (load turns it into a CheckpointError)."""

    def __init__(self, reason, version=None):
        super().__init__(reason)
        self.version = version


def load(path, device=None):
    """Read a checkpoint written by mt.save.

    Tensors land on `device` (default: the default device, normally 'cpu'); arrays stay
    numpy arrays unless `device` is given.  Raises CheckpointError for anything that is not
    an intact microtensor checkpoint, FileNotFoundError if there is no file.
    """
    return _load(path, device, 'mt.load', (VERSION,))


def _load(path, device, who, versions):
    path = os.fspath(path)
    tensor_device = backend.default_device() if device is None else backend.check_device(device)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{who}: no checkpoint file at {path!r}")
    try:
        if os.path.isdir(path):
            raise _Refused("it is a folder, not a checkpoint file")
        with open(path, 'rb') as f:
            header, arrays = _read_zip(f, os.fstat(f.fileno()).st_size, versions)
        return _decode(header['tree'], arrays, tensor_device, device)
    except _Refused as reason:
        raise CheckpointError(f"{who}: cannot read {path!r}: {reason}", reason.version) from None


def upgrade_checkpoint(path, model, optimizer=None, out=None):
    """Rewrite a version-2 checkpoint (nn.Linear weights stored (in, out)) as version 3, at `out`
    (default: `path` itself, replaced atomically); returns the path written.

    model: the model the checkpoint was saved from (its nn.Linear modules say which weights to
    transpose, under every name a state_dict in the file gives them), or None for a checkpoint with
    no nn.Linear (transformer/'s models: their projections keep the (in, out) layout).
    optimizer: the optimizer it was saved with, built over the model as then, to transpose the
    optimizer state of those weights (Adam's moments) too."""
    from .nn import Linear, Module  # (the nn package imports this module's users)
    if model is not None and not isinstance(model, Module):
        raise TypeError(f"mt.upgrade_checkpoint: model must be the Module the checkpoint was saved from, or None, "
                        f"not {type(model).__name__}")
    linears = set() if model is None else {f"{name}.weight" if name else 'weight'
                                           for name, m in model.named_modules() if isinstance(m, Linear)}
    weights = set() if model is None else {id(m.weight) for m in model.modules() if isinstance(m, Linear)}
    indices = set() if optimizer is None else {i for i, p in enumerate(optimizer._parameters()) if id(p) in weights}
    obj = _load(path, None, 'mt.upgrade_checkpoint', (2, VERSION))

    def transposed(value):
        if isinstance(value, Tensor):
            return Tensor._wrap(value.data.T.copy())
        return value.T.copy() if backend.is_array(value) else value

    def upgrade(node):
        if isinstance(node, dict):
            node = {k: transposed(v) if k in linears and getattr(v, 'ndim', 0) == 2 else upgrade(v)
                    for k, v in node.items()}
            if 'optimizer' in node and isinstance(node.get('state'), dict):
                node['state'] = {i: {k: transposed(v) if i in indices and getattr(v, 'ndim', 0) == 2 else v
                                     for k, v in entry.items()} if isinstance(entry, dict) else entry
                                 for i, entry in node['state'].items()}
            return node
        if isinstance(node, (list, tuple)):
            return type(node)(upgrade(v) for v in node)
        return node

    out = path if out is None else out
    save(upgrade(obj), out)
    return out


def _read_zip(f, size, versions):
    """(header, {name: numpy array}) from an open checkpoint file of `size` bytes, all checked."""
    if size == 0:
        raise _Refused("the file is empty (0 bytes)")
    start = f.read(8)
    f.seek(0)
    if not start.startswith(b'PK'):
        raise _Refused(_not_a_zip(start))
    try:
        archive = zipfile.ZipFile(f)
        infos = archive.infolist()
    except Exception as error:  # BadZipFile, or ValueError/OSError/struct.error from a mangled directory
        raise _Refused(f"it is truncated or corrupted: its zip directory cannot be read ({error})") from None
    with archive:
        names = [info.filename for info in infos]
        if HEADER not in names:
            raise _Refused(_foreign_zip(archive, infos))
        if len(set(names)) != len(names):
            raise _Refused("it holds two members with the same name")
        for info in infos:
            _check_member(info, size)
        if sum(info.file_size for info in infos) > size:
            raise _Refused(f"its members declare {sum(i.file_size for i in infos)} bytes in all, more than "
                           f"the whole file ({size} bytes)")
        header = _parse_header(_read_member(archive, archive.getinfo(HEADER)), versions)
        described = header['arrays']
        extra = sorted(set(names) - {HEADER} - {name + '.npy' for name in described})
        missing = sorted(set(described) - {name[:-4] for name in names if name.endswith('.npy')})
        if extra or missing:
            raise _Refused(f"its header does not match its members (members it does not describe: {extra[:5]}; "
                           f"arrays it describes but does not hold: {missing[:5]})")
        return header, {name: _read_array(archive, name, entry) for name, entry in described.items()}


def _not_a_zip(start):
    if start[:1] == b'\x80' and start[1:2] in (b'\x02', b'\x03', b'\x04', b'\x05'):
        return ("it is a Python pickle (e.g. written by pickle.dump or an old torch.save); loading it would need "
                "pickle, and mt.load never unpickles (a pickle can run any code)")
    if start.startswith(b'\x93NUMPY'):
        return "it is a single .npy array (numpy.save), not a checkpoint; numpy.load(path) reads it"
    return f"it is not a checkpoint (not a zip archive: it starts with {start!r})"


def _foreign_zip(archive, infos):
    """Why a zip without our header is not a checkpoint, naming pickle only when that is the reason."""
    names = [info.filename for info in infos]
    if '__microtensor__.npy' in names:
        return ("it was written by an older microtensor (checkpoint format version 1, whose arrays carry no "
                "checksums), which mt.load no longer reads; numpy.load(path, allow_pickle=False) still reads "
                "its arrays: save them again with mt.save")
    pickles = [n for n in names if n.endswith('.pkl')]
    for info in infos:
        if not pickles and info.filename.endswith('.npy') and info.compress_type == zipfile.ZIP_STORED \
                and info.file_size < 2 ** 16:
            with contextlib.suppress(Exception), archive.open(info) as member:
                if b"'descr': '|O'" in member.read(256):
                    pickles.append(info.filename)
    if pickles:
        return (f"its member {pickles[0]!r} would need pickle to load, and mt.load never unpickles "
                "(a pickle can run any code)")
    return (f"it is a zip/.npz file but not a microtensor checkpoint (it has no {HEADER!r} member); "
            "numpy.load can read its arrays")


def _check_member(info, size):
    """Refuse, before reading anything, a member that is compressed, encrypted or bigger than the file."""
    name = info.filename
    if info.compress_type != zipfile.ZIP_STORED:
        raise _Refused(f"its member {name!r} is compressed (method {info.compress_type}); mt.save writes stored "
                       "members only, and a compressed member can expand to far more than the file's size")
    if info.flag_bits & 0x1:
        raise _Refused(f"its member {name!r} is encrypted")
    if info.file_size != info.compress_size or info.header_offset + info.compress_size > size:
        raise _Refused(f"its member {name!r} declares {info.file_size} bytes, which do not fit in the file "
                       f"({size} bytes): it is truncated or corrupted")


def _read_member(archive, info):
    """All the bytes of a (small) member; reading to the end checks its CRC-32."""
    try:
        with archive.open(info) as member:
            data = member.read(info.file_size + 1)
    except Exception as error:  # BadZipFile (bad CRC, bad local header), OSError, ...
        raise _Refused(f"its member {info.filename!r} is corrupted ({error})") from None
    if len(data) != info.file_size:
        raise _Refused(f"its member {info.filename!r} holds {len(data)} bytes, not the {info.file_size} it declares")
    return data


def _parse_header(data, versions):
    try:
        header = json.loads(data.decode('utf-8'))
    except RecursionError:
        raise _Refused(f"its {HEADER!r} is nested too deeply") from None
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _Refused(f"its {HEADER!r} is not valid JSON ({error})") from None
    if not isinstance(header, dict) or header.get('format') != FORMAT:
        raise _Refused(f"its {HEADER!r} describes something else than a microtensor checkpoint")
    version = header.get('version')
    if isinstance(version, bool) or not isinstance(version, int):
        raise _Refused(f"its header has no valid format version (got {version!r})")
    if version > VERSION:
        raise _Refused(f"it has format version {version}, newer than this microtensor reads ({VERSION}); "
                       "upgrade microtensor")
    if version == 2 and version not in versions:
        raise _Refused("it has format version 2, written when nn.Linear stored its weight as (in_features, "
                       "out_features); nn.Linear now stores PyTorch's (out_features, in_features). Convert the file "
                       "once with mt.upgrade_checkpoint(path, model), model the one it was saved from (it transposes "
                       "the nn.Linear weights; model=None for transformer's models, which have none)", version)
    if version not in versions:
        raise _Refused(f"it has format version {version}, older than this microtensor reads ({VERSION})")
    if 'tree' not in header or not isinstance(header.get('arrays'), dict):
        raise _Refused("its header lacks the structure ('tree') or the array descriptions ('arrays')")
    return header


def _read_array(archive, name, entry):
    """Array `name`, read completely and checked against its description {'dtype', 'shape', 'sha256'}."""
    if not isinstance(entry, dict) or sorted(entry) != ['dtype', 'sha256', 'shape']:
        raise _Refused(f"the header's description of {name!r} is malformed")
    shape = entry['shape']
    if not isinstance(shape, list) or len(shape) > 32 or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise _Refused(f"the header gives {name!r} an invalid shape {shape!r}")
    try:
        dtype = npy_format.npy_dtype(entry['dtype'])
        info = archive.getinfo(name + '.npy')
        digest = hashlib.sha256()
        with archive.open(info) as member:
            array = npy_format.read_npy(member, dtype, shape, info.file_size, digest)
            if member.read(1):  # also reaches the end, where zipfile compares the CRC-32
                raise ValueError("it holds more bytes than it declares")
    except _Refused:
        raise
    except Exception as error:
        raise _Refused(f"its member {name + '.npy'!r} is corrupted or does not match the header: {error}") from None
    if digest.hexdigest() != entry['sha256']:
        raise _Refused(f"the SHA-256 of {name!r} differs from the one saved in the header: its bytes were changed")
    return array


def _decode(tree, arrays, tensor_device, device):
    """The saved object from its JSON description; each array is used exactly once."""
    used = set()

    def decode(node, depth):
        if depth > MAX_DEPTH:
            raise _Refused(f"its structure is nested more than {MAX_DEPTH} levels deep")
        kind = sorted(node) if isinstance(node, dict) else None
        if kind == ['value'] and (node['value'] is None or isinstance(node['value'], (bool, int, float, str))):
            return node['value']
        if kind == ['dict'] and isinstance(node['dict'], list) and all(
                isinstance(e, list) and len(e) == 2 and _is_key(e[0]) for e in node['dict']):
            result = {k: decode(v, depth + 1) for k, v in node['dict']}
            if len(result) == len(node['dict']):
                return result
        if kind in (['list'], ['tuple']) and isinstance(node[kind[0]], list):
            items = [decode(v, depth + 1) for v in node[kind[0]]]
            return items if kind == ['list'] else tuple(items)
        if kind in (['array'], ['requires_grad', 'tensor']):
            name = node.get('array', node.get('tensor'))
            if not isinstance(name, str) or name not in arrays or name in used:
                raise _Refused(f"its structure refers to an array {name!r} that the header does not describe "
                               "(or refers to it twice)")
            used.add(name)
            if kind == ['array']:
                return arrays[name] if device is None else backend.to_device(arrays[name], device)
            requires_grad = node['requires_grad']
            if not isinstance(requires_grad, bool) or (requires_grad and arrays[name].dtype.kind != 'f'):
                raise _Refused(f"its structure gives the tensor {name!r} an invalid requires_grad")
            t = Tensor._wrap(backend.to_device(arrays[name], tensor_device))
            return t.requires_grad_() if requires_grad else t
        what = f"a dict with keys {kind[:5]}" if kind is not None else f"a {type(node).__name__}"
        raise _Refused(f"its structure holds an entry it cannot decode ({what})")

    result = decode(tree, 0)
    if used != set(arrays):
        raise _Refused(f"its header describes arrays its structure never uses: {sorted(set(arrays) - used)[:5]}")
    return result
