"""Memory reuse on the CPU: keep freed working memory instead of giving it back to the OS.

A training step allocates and frees the same large arrays (activations, gradients) every
time.  glibc's malloc serves big requests with mmap and unmaps them on free, and trims the
heap's free top back to the OS, so the next step's arrays are fresh pages: the kernel
faults each one in and zeroes it again (a fifth of benchmarks/vs_torch.py's step).  Three
mallopt settings, once at import, make freed blocks stay in the heap for reuse:

    M_MMAP_THRESHOLD 32 MiB   arrays up to this size come from the heap (glibc's maximum)
    M_TRIM_THRESHOLD 256 MiB  free memory at the heap's top is given back only beyond this
    M_TOP_PAD        16 MiB   the heap grows in steps of at least this much

The process's peak memory does not change (a step's peak is the same either way); what
changes is that RSS stays at that peak between steps instead of falling and rising.
Linux with glibc only (a no-op on macOS, Windows, musl); MICROTENSOR_MALLOC_TUNING=0 in
the environment turns it off.  benchmarks/README.md has the measurements.
"""
import ctypes
import os
import sys

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's <malloc.h> parameter numbers
MALLOC_SETTINGS = {_M_MMAP_THRESHOLD: 32 * 2**20, _M_TRIM_THRESHOLD: 256 * 2**20, _M_TOP_PAD: 16 * 2**20}


def _tune_malloc():
    """Apply MALLOC_SETTINGS through glibc's mallopt; True if it was done."""
    if os.environ.get('MICROTENSOR_MALLOC_TUNING', '1') == '0' or not sys.platform.startswith('linux'):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # only glibc has it (musl's mallopt does nothing)
    except (OSError, AttributeError):
        return False
    return all(libc.mallopt(param, value) == 1 for param, value in MALLOC_SETTINGS.items())


tuned = _tune_malloc()  # applied once, when microtensor is imported
