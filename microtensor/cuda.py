"""mt.cuda: is a GPU there?"""
from . import backend


def is_available():
    """True when cupy is installed and sees a GPU; the same code then runs with device='cuda'."""
    return backend.cuda_is_available()
