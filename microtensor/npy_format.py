"""Checkpoint members: one .npy file (numpy's format) per array, written and read without pickle.

serialization.py (mt.save, mt.load) writes each array of a checkpoint as a .npy member of a zip
file and reads it back here, checking the member's header against what the checkpoint declares.
read_npz reads any .npz of named arrays (the PyTorch bridge's files) with the same care.
"""
import io
import math
import os
import zipfile

from . import backend
from .backend import numpy  # .npy is numpy's own file format: host arrays only

NPY_KINDS = 'biufcSU'  # bools, integers, floats, complex numbers, byte and unicode strings


def npy_dtype(descr):
    """The dtype a checkpoint declares as `descr` ('<f4', '|b1', '<U5'); ValueError for anything
    else (objects need pickle; structured dtypes are not stored)."""
    try:
        dtype = numpy.dtype(descr) if isinstance(descr, str) and len(descr) <= 16 else None
    except Exception:  # numpy raises TypeError, ValueError or OverflowError for strings it cannot parse
        dtype = None
    if dtype is None or dtype.kind not in NPY_KINDS or dtype.str != descr or dtype.itemsize == 0:
        raise ValueError(f"it declares an array of dtype {descr!r}, not one of the plain dtypes mt.save writes")
    return dtype


def npy_parts(value):
    """(.npy header bytes, the data as flat uint8 bytes, dtype descr, shape) of `value` as a
    C-ordered host array: the header followed by the data is the .npy file numpy.save writes."""
    array = numpy.asarray(backend.to_numpy(value) if backend.is_array(value) else value)
    if array.dtype.kind not in NPY_KINDS:
        raise TypeError(f"an array of dtype {array.dtype} cannot be stored without pickle; store numbers or strings")
    if not array.flags.c_contiguous:
        array = array.copy(order='C')
    header = io.BytesIO()
    numpy.lib.format.write_array_header_1_0(header, numpy.lib.format.header_data_from_array_1_0(array))
    return header.getvalue(), array.reshape(-1).view(numpy.uint8), array.dtype.str, array.shape


def read_header(stream):
    """(shape, fortran_order, dtype) from the header of the .npy file in `stream` (at most 4096
    bytes of it); ValueError for anything but a plain array's header."""
    try:
        version = numpy.lib.format.read_magic(stream)
    except ValueError:
        raise ValueError("it is not a .npy array (it lacks the .npy magic string)") from None
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"its .npy header has version {version}")
    read = numpy.lib.format.read_array_header_1_0 if version == (1, 0) else numpy.lib.format.read_array_header_2_0
    try:
        shape, fortran_order, dtype = read(stream, max_header_size=4096)
    except ValueError as error:
        raise ValueError(f"its .npy header cannot be read ({error})") from None
    if dtype.hasobject or dtype.kind not in NPY_KINDS:
        raise ValueError(f"it holds an array of dtype {dtype} (Python objects, which only pickle can read, and "
                         "pickle can run any code); only arrays of numbers, bools and strings are read")
    if any(n < 0 for n in shape):
        raise ValueError(f"its .npy header declares an impossible shape {shape}")
    return shape, fortran_order, dtype


def read_data(stream, shape, fortran_order, dtype, available, digest=None, chunk=1 << 20):
    """The array of `shape` and `dtype` whose bytes follow in `stream`, of which `available` remain:
    the sizes are compared before anything is allocated, so a header that declares more than the
    file holds costs nothing.  Every data byte is fed to `digest` (if given)."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes != available:
        raise ValueError(f"it holds {available} bytes of data where dtype and shape need {nbytes} (its header "
                         f"declares shape {shape} of {dtype})")
    array = numpy.empty(shape[::-1] if fortran_order else shape, dtype)
    flat = array.reshape(-1).view(numpy.uint8)
    for start in range(0, nbytes, chunk):
        data = stream.read(min(chunk, nbytes - start))
        if len(data) != min(chunk, nbytes - start):
            raise ValueError("its data ends early")
        flat[start:start + len(data)] = numpy.frombuffer(data, numpy.uint8)
        if digest is not None:
            digest.update(data)
    return array.T if fortran_order else array


def read_npy(stream, dtype, shape, member_size, digest):
    """Read the .npy file in `stream` (member_size bytes) into a new array, after checking that
    its header declares exactly `dtype`, `shape` and C order and that the sizes agree, so
    nothing is allocated for a member that lies; every data byte is fed to `digest`."""
    header_shape, fortran_order, header_dtype = read_header(stream)
    if (header_shape, fortran_order, header_dtype) != (tuple(shape), False, dtype):
        raise ValueError(f"its .npy header declares dtype {header_dtype.str}, shape {header_shape}"
                         f"{', Fortran order' if fortran_order else ''}; the checkpoint's header says "
                         f"{dtype.str}, {tuple(shape)}")
    return read_data(stream, shape, False, dtype, member_size - stream.tell(), digest)


def read_npz(path, who, hint=''):
    """{name: host array} from a .npz file of named arrays (numpy.savez, savez_compressed), without pickle
    and checked as mt.load checks: every header's size against the member's before allocating.  Any
    other file is a ValueError saying what it is, beginning with `who` and ending with `hint`."""
    def refuse(reason):
        return ValueError(f"{who}: cannot read {path!r}: {reason}" + (f"; {hint}" if hint else ''))

    if not os.path.exists(path):
        raise FileNotFoundError(f"{who}: no file at {path!r}")
    if os.path.isdir(path):
        raise refuse("it is a folder, not a .npz file")
    with open(path, 'rb') as f:
        start = f.read(8)
        f.seek(0)
        if not start.startswith(b'PK'):
            raise refuse(what_file(start))
        try:
            archive = zipfile.ZipFile(f)
            infos = archive.infolist()
        except Exception as error:  # BadZipFile, or ValueError/OSError/struct.error from a mangled directory
            raise refuse(f"it is truncated or corrupted: its zip directory cannot be read ({error})") from None
        arrays = {}
        with archive:
            if any(info.filename == '__microtensor__.json' for info in infos):
                raise refuse("it is a microtensor checkpoint (mt.save): read it with mt.load")
            for info in infos:
                if not info.filename.endswith('.npy'):
                    raise refuse(f"its member {info.filename!r} is not a .npy array; a .npz holds only those")
                try:
                    with archive.open(info) as member:
                        shape, fortran_order, dtype = read_header(member)
                        arrays[info.filename[:-4]] = read_data(member, shape, fortran_order, dtype,
                                                               info.file_size - member.tell())
                except ValueError as error:
                    raise refuse(f"its member {info.filename!r}: {error}") from None
                except Exception as error:  # zipfile's BadZipFile (a bad CRC), zlib's error, OSError...
                    raise refuse(f"its member {info.filename!r} is corrupted ({error})") from None
    return arrays


def what_file(start):
    """What a file that is not a zip archive is, from its first bytes."""
    if not start:
        return "the file is empty (0 bytes)"
    if start[:1] == b'\x80' and start[1:2] in (b'\x02', b'\x03', b'\x04', b'\x05'):
        return ("it is a Python pickle (torch.save writes one), and loading a pickle can run any code; "
                "write the state as named arrays instead")
    if start.startswith(b'\x93NUMPY'):
        return "it is a single .npy array (numpy.save), not a .npz archive of named arrays"
    return f"it is not a .npz archive of named arrays (it starts with {start!r})"
