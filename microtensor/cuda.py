"""mt.cuda: is a GPU there, and how much memory does cupy hold on it?"""
from . import backend


def is_available():
    """True when cupy is installed and sees a GPU; the same code then runs with device='cuda'."""
    return backend.cuda_is_available()


def memory_pool_bytes(device):
    """Bytes cupy's default memory pool holds on the GPU: blocks in use plus freed blocks it keeps
    for reuse (so it stays flat across training steps unless something leaks).  None on the CPU.
    (What train_gpt's progress line reports on the GPU.)"""
    if backend.check_device(device) != 'cuda':
        return None
    return backend.cupy.get_default_memory_pool().total_bytes()


def manual_seed(seed):
    """PyTorch's torch.cuda.manual_seed: microtensor has one seed for every device (mt.manual_seed), set here."""
    backend.manual_seed(seed)


manual_seed_all = manual_seed  # (one GPU at a time here: all of them is that one)
