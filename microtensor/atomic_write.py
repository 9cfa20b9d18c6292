"""Write a file so that a crash or a second writer never leaves half of it.

    write_atomically('ckpt.npz', lambda f: f.write(data), who='mt.save')

The bytes go to a temporary file `.NAME.<pid>-<hex>.tmp` in the same folder, are flushed
to disk, and the temporary file is renamed over `path` in one step (os.replace), so
`path` always holds either the old file or the new one, complete.  A symbolic link is
written through: the file it points to is replaced (beside that file), the link stays.

Two processes writing one path take turns: each write holds a lock on `.NAME.lock`
beside the file (flock on POSIX, msvcrt.locking on Windows; removed when the write ends),
so the file is always one complete write, the last one; a write that waits more than
LOCK_TIMEOUT seconds raises TimeoutError.  (On a file system without locks, writes go
ahead unlocked: still atomic, the last rename wins.)  While it holds the lock, a write
removes the temporary files that killed writes to the same path left behind (no live
write can own one then).

mt.save writes checkpoints with it; draw_graph and BackpropViewer.save their pictures and pages.
"""
import contextlib
import os
import re
import time

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None

LOCK_TIMEOUT = 60.0  # seconds a write waits for another process writing to the same path


def write_atomically(path, write, who):
    """write(f) into a temporary file beside `path`, fsync it, then rename it over `path`.

    who: the function to name in errors, e.g. 'mt.save'.
    """
    path = os.fspath(path)
    if os.path.islink(path):  # write through to the file the link names (as open(path, 'wb') and
        path = os.path.realpath(path)  # torch.save do): the link stays a link
    folder, base = os.path.split(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{who}: the folder {folder!r} does not exist (create it first)")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{who}: {path!r} is a folder; give a file name inside it")
    with writer_lock(path, who) as locked:
        if locked:
            _remove_stale_temporaries(folder, base)
        tmp = os.path.join(folder, f".{base}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
        try:
            with open(tmp, 'xb') as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())  # the bytes are on disk before the name points at them
            os.replace(tmp, path)     # atomic: readers see the old file or the new one
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    _fsync_folder(folder)
    return path


@contextlib.contextmanager
def writer_lock(path, who='write_atomically'):
    """Hold an exclusive lock on `.NAME.lock` beside `path` while writing it; yields whether a
    lock is held (False where the file system offers none: the write then goes ahead unlocked).

    The holder removes the lock file before unlocking it, so none is left behind; a waiter
    that then gets the lock of the removed file sees that its path is gone (or is a newer
    file) and starts again with the file now at that path."""
    folder, base = os.path.split(os.path.abspath(path))
    lock_path = os.path.join(folder, f".{base}.lock")
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        held = _try_lock(fd)
        if held is not False and (held is None or _is_file_at(fd, lock_path)):
            break
        _release(fd, held)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{who}: another process has been writing to {path!r} for more than "
                               f"{LOCK_TIMEOUT:.0f} s (it holds {lock_path!r}); two runs writing one "
                               "file overwrite each other: give each its own path")
        time.sleep(0.005 if held else 0.01)
    try:
        yield bool(held)
    finally:
        with contextlib.suppress(OSError):  # (Windows cannot remove an open file: it stays, harmless)
            os.unlink(lock_path)
        _release(fd, held)


def _is_file_at(fd, path):
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_ino, here.st_dev) == (there.st_ino, there.st_dev)


def _release(fd, held):
    if held and msvcrt is not None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    os.close(fd)  # (releases a flock)


def _try_lock(fd):
    """True: locked; False: another process holds it; None: this system cannot lock the file."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif msvcrt is not None:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            return None
        return True
    except (BlockingIOError, PermissionError):  # held elsewhere (EWOULDBLOCK on POSIX, EACCES on Windows)
        return False
    except OSError:  # e.g. a file system without locks
        return None


def _remove_stale_temporaries(folder, base):
    """Remove `.base.<pid>-<hex>.tmp` files of writes that were killed.  Called with the lock
    held, so no live write owns one; on POSIX the owner's pid must also be gone."""
    pattern = re.compile(rf"\.{re.escape(base)}\.(\d+)-[0-9a-f]{{8}}\.tmp")
    for name in os.listdir(folder):
        match = pattern.fullmatch(name)
        if match and not _process_alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _process_alive(pid):
    if os.name != 'posix':
        return False  # (os.kill would terminate it on Windows); the lock alone decides there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user
        return True
    except (OverflowError, ValueError):  # not a possible pid: nobody's
        return False
    return True


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
