"""Checkpoint members: one .npy file (numpy's format) per array, written and read without pickle.

serialization.py (mt.save, mt.load) writes each array of a checkpoint as a .npy member of a zip
file and reads it back here, checking the member's header against what the checkpoint declares.
"""
import io
import math

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


def read_npy(stream, dtype, shape, member_size, digest, chunk=1 << 20):
    """Read the .npy file in `stream` (member_size bytes) into a new array, after checking that
    its header declares exactly `dtype`, `shape` and C order and that the sizes agree, so
    nothing is allocated for a member that lies; every data byte is fed to `digest`."""
    version = numpy.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"its .npy header has version {version}")
    read_header = numpy.lib.format.read_array_header_1_0 if version == (1, 0) else \
        numpy.lib.format.read_array_header_2_0
    header_shape, fortran_order, header_dtype = read_header(stream, max_header_size=4096)
    if (header_shape, fortran_order, header_dtype) != (tuple(shape), False, dtype):
        raise ValueError(f"its .npy header declares dtype {header_dtype.str}, shape {header_shape}"
                         f"{', Fortran order' if fortran_order else ''}; the checkpoint's header says "
                         f"{dtype.str}, {tuple(shape)}")
    nbytes = math.prod(shape) * dtype.itemsize
    if stream.tell() + nbytes != member_size:
        raise ValueError(f"it holds {member_size - stream.tell()} bytes of data where dtype and shape need {nbytes}")
    array = numpy.empty(shape, dtype)
    flat = array.reshape(-1).view(numpy.uint8)
    for start in range(0, nbytes, chunk):
        data = stream.read(min(chunk, nbytes - start))
        if len(data) != min(chunk, nbytes - start):
            raise ValueError("its data ends early")
        flat[start:start + len(data)] = numpy.frombuffer(data, numpy.uint8)
        digest.update(data)
    return array
