"""Checkpoints that cannot be fooled: whatever the bytes of a file, mt.load returns exactly
what was saved or raises CheckpointError naming the file and the reason.

Proves: every single-byte change of a small checkpoint (each byte XOR 0x01 and 0xFF) and
random multi-byte damage load bit-exactly or are refused; a changed dtype or shape in an .npy
header, or changed data, is refused even with the zip's CRC-32 recomputed to match (the
header's dtype, shape and SHA-256 catch it); a 2 KB bz2 bomb of 1 GiB and members whose sizes
lie are refused in well under a second having allocated at most a few MB; crafted headers
(version strings, deep nesting, unknown or missing members, bad dtypes and shapes...) are
CheckpointErrors, never TypeError/KeyError/RecursionError; a save removes the temporary
files of killed saves to its path (and no other file); saves to one path take turns.
"""
import base64
import bz2
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import atomic_write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = {'w': mt.tensor([1.5, -2.0, 3.25]), 'step': 3, 'name': 'x', 'a': np.arange(2, dtype=np.int16)}


def exactly_saved(back):
    """Does back hold exactly SAVED: the same types, dtypes, shapes and bits?"""
    return (isinstance(back, dict) and list(back) == list(SAVED) and isinstance(back['w'], mt.Tensor)
            and not back['w'].requires_grad and back['w'].dtype == np.float32 and back['w'].shape == (3,)
            and back['w'].numpy().tobytes() == SAVED['w'].numpy().tobytes()
            and type(back['step']) is int and back['step'] == 3 and back['name'] == 'x'
            and isinstance(back['a'], np.ndarray) and back['a'].dtype == np.int16
            and back['a'].tobytes() == SAVED['a'].tobytes())


def load_or_refuse(path):
    """'ok' if the file loads exactly as saved, 'refused' for a CheckpointError naming it; anything
    else (a wrong value, another exception) fails the test."""
    try:
        back = mt.load(path)
    except mt.CheckpointError as error:
        assert repr(str(path)) in str(error), error
        return 'refused'
    assert exactly_saved(back), back
    return 'ok'


# ---------------------------------------------------------------------- damaged bytes
@pytest.mark.slow
def test_every_single_byte_change_loads_exactly_or_is_refused(tmp_path):
    path = tmp_path / 'c.npz'
    mt.save(SAVED, path)
    data = path.read_bytes()
    assert len(data) < 2000 and load_or_refuse(path) == 'ok'
    outcomes = {'ok': 0, 'refused': 0}
    with open(path, 'r+b', buffering=0) as f:  # one byte changed in place, then put back
        for i in range(len(data)):
            for byte in (data[i] ^ 0x01, data[i] ^ 0xFF, data[i]):
                f.seek(i)
                f.write(bytes([byte]))
                if byte != data[i]:
                    outcomes[load_or_refuse(path)] += 1
    # bytes that may change harmlessly: zip timestamps, "version made by", attributes, comments
    assert outcomes['refused'] > 0.8 * 2 * len(data), outcomes


@given(st.data())
def test_random_damage_loads_exactly_or_is_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp('damage') / 'c.npz'
    mt.save(SAVED, path)
    damaged = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(damaged) - 1))
        damaged[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    path.write_bytes(bytes(damaged[:cut]))
    load_or_refuse(path)


# ---------------------------------------------------------------------- crafted files
def members_of(path):
    """{member name: bytes} of a checkpoint, and its header as a dict."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    return members, json.loads(members.pop('__microtensor__.json'))


def craft(path, members, header, compression=zipfile.ZIP_STORED):
    """A zip with the members and the header (a dict, or raw bytes), each with a correct CRC-32."""
    with zipfile.ZipFile(path, 'w', compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr('__microtensor__.json', header if isinstance(header, bytes) else json.dumps(header))
    return path


def npy(array, **header):
    out = io.BytesIO()
    np.save(out, array)
    data = out.getvalue()
    if header:  # rewrite the .npy header in place, keeping its length
        length = int.from_bytes(data[8:10], 'little')
        text = data[10:10 + length].decode('latin1')
        for key, value in header.items():
            start = text.index(f"'{key}': ") + len(key) + 4
            end = text.index(', ', start) if key != 'shape' else text.index('), ', start) + 1
            text = text[:start] + value + text[end:]
        text = text.rstrip(' \n').ljust(length - 1) + '\n'
        data = data[:10] + text.encode('latin1') + data[10 + length:]
    return data


@pytest.fixture
def valid(tmp_path):
    path = tmp_path / 'c.npz'
    mt.save(SAVED, path)
    return members_of(path)


def test_a_checkpoint_is_stored_members_each_described_by_the_header(tmp_path, valid):
    with zipfile.ZipFile(tmp_path / 'c.npz') as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    members, header = valid
    assert header['version'] == 3 and header['arrays'] == {
        'w': {'dtype': '<f4', 'shape': [3], 'sha256': hashlib.sha256(SAVED['w'].numpy().tobytes()).hexdigest()},
        'a': {'dtype': '<i2', 'shape': [2], 'sha256': hashlib.sha256(SAVED['a'].tobytes()).hexdigest()}}
    assert sorted(members) == ['a.npy', 'w.npy']
    assert load_or_refuse(craft(tmp_path / 'copy.npz', *valid)) == 'ok'  # zipfile's own writing loads too


@pytest.mark.parametrize('change, reason', [
    (dict(descr="'<f2'"), 'declares dtype <f2'),          # a float32 array declared <f2 in the .npy header
    (dict(shape='(1, 3)'), r'shape \(1, 3\)'),
    (dict(fortran_order='True'), 'Fortran order'),
])
def test_a_changed_npy_header_is_refused_even_with_a_matching_crc(tmp_path, valid, change, reason):
    members, header = valid
    members['w.npy'] = npy(np.array([1.5, -2.0, 3.25], np.float32), **change)
    with pytest.raises(mt.CheckpointError, match=f"member 'w.npy' is corrupted or does not match the header.*{reason}"):
        mt.load(craft(tmp_path / 'c2.npz', members, header))


def test_changed_data_is_refused_even_with_a_matching_crc(tmp_path, valid):
    members, header = valid
    members['w.npy'] = npy(np.array([1.5, -2.0, 3.5], np.float32))
    with pytest.raises(mt.CheckpointError, match="the SHA-256 of 'w' differs from the one saved in the header"):
        mt.load(craft(tmp_path / 'c2.npz', members, header))
    members['w.npy'] = npy(np.array([1.5, -2.0, 3.25], np.float32)) + b'\0'
    with pytest.raises(mt.CheckpointError, match='holds 13 bytes of data where dtype and shape need 12'):
        mt.load(craft(tmp_path / 'c3.npz', members, header))


def _deep(node, depth):
    for _ in range(depth):
        node = {'list': [node]}
    return node


def _header(change):
    def apply(header):
        change(header)
        return header
    return apply


CRAFTED_HEADERS = [
    (_header(lambda h: h.update(version='2')), r"no valid format version \(got '2'\)"),
    (_header(lambda h: h.update(version=None)), r'no valid format version \(got None\)'),
    (_header(lambda h: h.update(version=True)), r'no valid format version \(got True\)'),
    (_header(lambda h: h.update(version=2.0)), r'no valid format version \(got 2.0\)'),
    (_header(lambda h: h.pop('version')), r'no valid format version \(got None\)'),
    (_header(lambda h: h.update(version=99)), r'format version 99, newer than this microtensor reads \(3\)'),
    (_header(lambda h: h.update(version=1)), r'format version 1, older than this microtensor reads \(3\)'),
    (_header(lambda h: h.update(format='something-else')), 'describes something else'),
    (lambda h: [h], 'describes something else'),
    (lambda h: b'{"format": ', 'is not valid JSON'),
    (lambda h: b'\xff\xfe{}', 'is not valid JSON'),
    (lambda h: b'[' * 100_000 + b']' * 100_000, 'nested too deeply|describes something else'),
    (_header(lambda h: h.pop('arrays')), "lacks the structure \\('tree'\\) or the array descriptions"),
    (_header(lambda h: h.update(tree=_deep(h['tree'], 150))),
     'nested more than 100 levels deep'),
    (_header(lambda h: h['tree']['dict'].append(['v', {'tensor': 'w', 'requires_grad': False}])),
     "refers to an array 'w' that the header does not describe \\(or refers to it twice\\)"),
    (_header(lambda h: h['tree']['dict'].append(['v', {'array': 'nope'}])), "refers to an array 'nope'"),
    (_header(lambda h: h['tree']['dict'].pop(0)), r"describes arrays its structure never uses: \['w'\]"),
    (_header(lambda h: h['tree']['dict'].append(['v', {'value': [1, 2]}])), 'cannot decode'),
    (_header(lambda h: h['tree']['dict'].append(['v', {'foo': 1}])), r"cannot decode \(a dict with keys \['foo'\]\)"),
    (_header(lambda h: h['tree']['dict'].append([True, {'value': 1}])), 'cannot decode'),
    (_header(lambda h: h['tree']['dict'].append(['step', {'value': 1}])), 'cannot decode'),  # a key twice
    (_header(lambda h: h.update(tree={'dict': 5})), 'cannot decode'),
    (_header(lambda h: h.update(tree=[1])), r'cannot decode \(a list\)'),
    (_header(lambda h: h['tree']['dict'][0][1].update(requires_grad='yes')), "invalid requires_grad"),
    (_header(lambda h: h['tree']['dict'][3][1].update(tensor='a', requires_grad=True) or
             h['tree']['dict'][3][1].pop('array')), "invalid requires_grad"),      # an int16 tensor cannot
    (_header(lambda h: h['arrays']['w'].pop('sha256')), "description of 'w' is malformed"),
    (_header(lambda h: h['arrays']['w'].update(shape=[-3])), r"invalid shape \[-3\]"),
    (_header(lambda h: h['arrays']['w'].update(shape=[True, 3])), r"invalid shape \[True, 3\]"),
    (_header(lambda h: h['arrays']['w'].update(shape='3')), "invalid shape '3'"),
    (_header(lambda h: h['arrays']['w'].update(shape=[1] * 40)), 'invalid shape'),
    (_header(lambda h: h['arrays']['w'].update(shape=[2 ** 40])), r'its .npy header declares dtype <f4, shape \(3,\)'),
    (_header(lambda h: h['arrays']['w'].update(dtype='|O')), "dtype '\\|O', not one of the plain dtypes"),
    (_header(lambda h: h['arrays']['w'].update(dtype='<f4,<i4')), 'not one of the plain dtypes'),
    (_header(lambda h: h['arrays']['w'].update(dtype='|V12')), 'not one of the plain dtypes'),
    (_header(lambda h: h['arrays']['w'].update(dtype='(99999999999999,)f8')), 'not one of the plain dtypes'),
    (_header(lambda h: h['arrays']['w'].update(dtype='<f17')), 'not one of the plain dtypes'),
    (_header(lambda h: h['arrays']['w'].update(dtype=4)), 'not one of the plain dtypes'),
    (_header(lambda h: h['arrays']['w'].update(dtype='<f8')), 'declares dtype <f4'),
    (_header(lambda h: h['arrays'].update(x=h['arrays']['w'])), r"arrays it describes but does not hold: \['x'\]"),
    (_header(lambda h: h['arrays'].pop('a')), r"members it does not describe: \['a.npy'\]"),
]


@pytest.mark.parametrize('change, reason', CRAFTED_HEADERS)
def test_a_crafted_header_is_a_checkpoint_error_with_the_reason(tmp_path, valid, change, reason):
    members, header = valid
    path = craft(tmp_path / 'c2.npz', members, change(header))
    with pytest.raises(mt.CheckpointError, match=f"cannot read '.*c2.npz': .*({reason})"):
        mt.load(path)


def test_members_the_header_does_not_describe_or_twice_the_same_name_are_refused(tmp_path, valid):
    members, header = valid
    with pytest.raises(mt.CheckpointError, match=r"members it does not describe: \['notes.txt'\]"):
        mt.load(craft(tmp_path / 'c2.npz', {**members, 'notes.txt': b'hi'}, header))
    with pytest.warns(UserWarning, match='Duplicate name'):
        path = craft(tmp_path / 'c3.npz', members, header)
        with zipfile.ZipFile(path, 'a') as archive:
            archive.writestr('w.npy', members['w.npy'])
    with pytest.raises(mt.CheckpointError, match='two members with the same name'):
        mt.load(path)


def test_pickle_is_named_only_when_it_is_the_reason(tmp_path, valid):
    members, header = valid
    torch_like = tmp_path / 'model.pt'  # torch.save's zip format keeps a pickle inside
    with zipfile.ZipFile(torch_like, 'w') as archive:
        archive.writestr('archive/data.pkl', b'\x80\x02}q\x00.')
    with pytest.raises(mt.CheckpointError, match="member 'archive/data.pkl' would need pickle"):
        mt.load(torch_like)
    for damaged in (b'\x80\x04', b'PK\x03\x04' + b'\0' * 40, b'{"format": "microtensor-checkpoint"}', b'\x93NUMPY'):
        path = tmp_path / 'damaged.npz'
        path.write_bytes(damaged)
        with pytest.raises(mt.CheckpointError) as info:
            mt.load(path)
        reason = str(info.value).split("damaged.npz': ")[1]
        assert ('pickle' in reason) == damaged.startswith(b'\x80'), reason


# ---------------------------------------------------------------------- bombs and lying sizes
# bz2.compress(.npy header of 2**30 uint8 + 1 GiB of zeros): 894 bytes
BZ2_BOMB = base64.b64decode(''.join([
    'QlpoOTFBWSZTWdqJOsYFfkDfoOAQQOT80AEDQiCvRd8OCAAACCAAlIZTSnqPUbUaAeUYmgemp7UgiqnqYQYINNA0aaDTIh+U'
    'QBVUSACgCqomfCAKAJJJBErFeIDmEYls8WV0gOtdw6OfXlolKLIyfA7MM78PGWPWdUsq3INSYnRKXqoRdcM6BsVaASAASSUT'
    '+YoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprIcE8W+Ar8cgAGAAAAQQABhAJqMhUBLUhUBLmKCskymshw'
    'Txb4CvxyAAYAAABBAAGEAmoyFQEtSFQEuYoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprIcE8W+Ar8cgAG'
    'AAAAQQABhAJqMhUBLUhUBLmKCskymshwTxb4CvxyAAYAAABBAAGEAmoyFQEtSFQEuYoKyTKayHBPFvgK/HIABgAAAEEAAYQC'
    'ajIVAS1IVAS5igrJMprIcE8W+Ar8cgAGAAAAQQABhAJqMhUBLUhUBLmKCskymshwTxb4CvxyAAYAAABBAAGEAmoyFQEtSFQE'
    'uYoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprIcE8W+Ar8cgAGAAAAQQABhAJqMhUBLUhUBLmKCskymshw'
    'Txb4CvxyAAYAAABBAAGEAmoyFQEtSFQEuYoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprIcE8W+Ar8cgAG'
    'AAAAQQABhAJqMhUBLUhUBLmKCskymshwTxb4CvxyAAYAAABBAAGEAmoyFQEtSFQEuYoKyTKayHBPFvgK/HIABgAAAEEAAYQC'
    'ajIVAS1IVAS5igrJMprIcE8W+Ar8cgAGAAAAQQABhAJqMhUBLUhUBLmKCskymshwTxb4CvxyAAYAAABBAAGEAmoyFQEtSFQE'
    'uYoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprIcE8W+Ar8cgAGAAAAQQABhAJqMhUBLUhUBLmKCskymshw'
    'Txb4CvxyAAYAAABBAAGEAmoyFQEtSFQEuYoKyTKayHBPFvgK/HIABgAAAEEAAYQCajIVAS1IVAS5igrJMprI1tKU2ARS2kAG'
    'AAAAIABBAAEFKaDMZSkSGxUpEh4u5IpwoSFRiVJ4'
]))


def refused_quickly_and_small(path, reason):
    """Load must refuse the file in well under a second, having allocated at most a few MB."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(mt.CheckpointError, match=reason):
            mt.load(path)
        elapsed, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 0.5 and peak < 4 * 2 ** 20, (elapsed, peak)


def raw_zip(path, members):
    """A zip written byte by byte from (name, method, stored bytes, CRC-32, inflated size) entries,
    as any zip tool could write it (zipfile cannot store bytes that are already compressed)."""
    body, directory = b'', b''
    for name, method, data, crc, size in members:
        fields = struct.pack('<HHHHHIII', 20, 0, method, 0, 33, crc, len(data), size)
        directory += (b'PK\x01\x02' + struct.pack('<H', 20) + fields
                      + struct.pack('<HHHHHII', len(name), 0, 0, 0, 0, 0, len(body)) + name.encode())
        body += b'PK\x03\x04' + fields + struct.pack('<HH', len(name), 0) + name.encode() + data
    end = b'PK\x05\x06' + struct.pack('<HHHHIIH', 0, 0, len(members), len(members), len(directory), len(body), 0)
    path.write_bytes(body + directory + end)
    return path


def test_a_compressed_bomb_is_refused_before_it_inflates(tmp_path):
    inflate = bz2.BZ2Decompressor()
    assert len(inflate.decompress(BZ2_BOMB, max_length=2 ** 23)) == 2 ** 23 and not inflate.eof  # a real bomb
    header = json.dumps({'format': 'microtensor-checkpoint', 'version': 2,
                         'tree': {'tensor': 'w', 'requires_grad': False},
                         'arrays': {'w': {'dtype': '|u1', 'shape': [2 ** 30], 'sha256': '0' * 64}}}).encode()
    path = raw_zip(tmp_path / 'bomb.npz', [('w.npy', zipfile.ZIP_BZIP2, BZ2_BOMB, 0xf8b6184c, 128 + 2 ** 30),
                                            ('__microtensor__.json', 0, header, zlib.crc32(header), len(header))])
    assert os.path.getsize(path) < 2048
    with zipfile.ZipFile(path) as archive:  # a well-formed zip, whose member inflates to 1 GiB
        assert archive.getinfo('w.npy').file_size == 128 + 2 ** 30
    refused_quickly_and_small(path, r"its member 'w.npy' is compressed \(method 12\)")


def test_members_whose_sizes_lie_are_refused_before_anything_is_allocated(tmp_path, valid):
    members, header = valid
    huge = npy(np.array([1.5, -2.0, 3.25], np.float32), shape='(1073741824,)')  # 4 GB declared, 12 bytes held
    header['arrays']['w']['shape'] = [2 ** 30]
    refused_quickly_and_small(craft(tmp_path / 'c2.npz', {**members, 'w.npy': huge}, header),
                              'holds 12 bytes of data where dtype and shape need 4294967296')
    path = tmp_path / 'c3.npz'
    mt.save(SAVED, path)
    data = bytearray(path.read_bytes())
    central = data.index(b'PK\x01\x02')  # the directory entry of the first member: 4 GB, says it
    data[central + 20:central + 28] = (2 ** 32 - 2).to_bytes(4, 'little') * 2
    path.write_bytes(bytes(data))
    refused_quickly_and_small(path, "its member 'w.npy' declares 4294967294 bytes, which do not fit in the file")


# ---------------------------------------------------------------------- temporary files and locks
def test_a_save_removes_the_temporary_files_of_dead_saves_to_its_path_only(tmp_path):
    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    dead.wait()
    kept = [f'.ckpt.npz.{os.getpid()}-0123abcd.tmp',      # a live process's save in progress
            f'.other.npz.{dead.pid}-0123abcd.tmp',        # another checkpoint's
            f'.ckpt.npz.{dead.pid}-xyz.tmp', 'ckpt.npz.tmp', 'notes.txt']  # not mt.save's names
    stale = f'.ckpt.npz.{dead.pid}-0123abcd.tmp'
    for name in kept + [stale]:
        (tmp_path / name).write_bytes(b'half a checkpoint')
    mt.save({'step': 1}, tmp_path / 'ckpt.npz')
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ['ckpt.npz'])  # the lock file is gone too


needs_locks = pytest.mark.skipif(atomic_write.fcntl is None and atomic_write.msvcrt is None,
                                 reason='this system offers no file locks (fcntl or msvcrt)')


@needs_locks
def test_saves_to_one_path_take_turns_and_a_stuck_one_times_out(tmp_path, monkeypatch):
    path = tmp_path / 'ckpt.npz'
    mt.save({'who': 'first'}, path)
    finished = threading.Event()
    second = threading.Thread(target=lambda: (mt.save({'who': 'second'}, path), finished.set()))
    with atomic_write.writer_lock(path) as locked:  # another save holds the path
        assert locked
        second.start()
        time.sleep(0.3)
        assert not finished.is_set() and mt.load(path) == {'who': 'first'}  # it waits its turn
    second.join(10)
    assert finished.is_set() and mt.load(path) == {'who': 'second'}
    monkeypatch.setattr(atomic_write, 'LOCK_TIMEOUT', 0.1)
    with atomic_write.writer_lock(path):
        with pytest.raises(TimeoutError, match="mt.save: another process has been writing to '.*ckpt.npz' for more than"):
            mt.save({'who': 'third'}, path)
    assert mt.load(path) == {'who': 'second'} and not [n for n in os.listdir(tmp_path) if n.endswith('.tmp')]


@pytest.mark.slow
@needs_locks
def test_two_processes_saving_to_one_path_always_leave_a_whole_checkpoint(tmp_path):
    writer = textwrap.dedent("""
        import sys, numpy as np, microtensor as mt
        k = int(sys.argv[2])
        for i in range(25):
            mt.save({'k': k, 'i': i, 'data': np.full(20_000, k * 1000 + i, np.int64)}, sys.argv[1])
    """)
    path = tmp_path / 'ckpt.npz'
    mt.save({'k': 0, 'i': 0, 'data': np.zeros(20_000, np.int64)}, path)
    children = [subprocess.Popen([sys.executable, '-c', writer, str(path), str(k)], cwd=ROOT,
                                 env={**os.environ, 'PYTHONPATH': ROOT}) for k in (1, 2)]
    while any(child.poll() is None for child in children):
        ckpt = mt.load(path)  # never a mix of two saves, never half a file
        assert np.all(ckpt['data'] == ckpt['k'] * 1000 + ckpt['i'])
    assert [child.returncode for child in children] == [0, 0]
    assert mt.load(path)['i'] == 24 and not [n for n in os.listdir(tmp_path) if n.endswith('.tmp')]
