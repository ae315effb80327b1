"""Files that are replaced whole or not at all: model files (``save``) and the CLI's outputs
(predictions, plots).

A fixed ``<path>.tmp`` would be shared by concurrent writers (one raising FileNotFoundError,
the other renaming a file still being written: a corrupt model), and writing the target
directly would lose the old file when a run fails halfway. So every write goes to a temporary
file of a unique name in the target's directory, which is fsynced and renamed over the target
(atomic within one directory, also on Windows); the directory is fsynced after the rename
where the platform can (POSIX), so a crash right after the call returned cannot lose the new
name or leave an empty file under it. On any failure (disk full, Ctrl-C, a directory as
path) the temporary file is removed and a file already at the target stays as it was.

Every file the Python package writes goes through here. The core's ``write_file_bytes``
(io.hpp) is the writer of C++ programs; Python does not use it, since standard C++ cannot
fsync and this one does (the file, then its directory).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat


def written_in_place(path):
    """Whether ``path`` is written itself rather than replaced: a device, FIFO or socket
    (/dev/null, a named pipe), and anything under /dev, such as /dev/stdout when stdout is a
    file: replacing that file would drop what a `>> log` redirection appended to it before,
    and replacing /dev/null (as root) would swap the device for a regular file."""
    if os.fsdecode(os.fspath(path)).startswith("/dev/"):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def replacing(path):
    """Yields the name to write ``path`` (str, bytes or os.PathLike) under: a new temporary
    file next to path's final target (a symlink is written through: its target gets the data,
    where a rename onto the link would replace the link itself with a regular file), renamed
    over the target once the block succeeds. The temporary name keeps path's extension
    (matplotlib picks the image format by it). A device or FIFO is yielded as it is, written
    in place."""
    path = os.fspath(path)
    if written_in_place(path):
        yield path
        return
    # realpath: the final target of a chain of links (a dangling link's target is created);
    # a path that is no link comes back as the same file, made absolute.
    target = os.path.realpath(path)
    directory, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)  # an existing file keeps its permissions
    except FileNotFoundError:
        mode = None
    tmp = _new_temporary_file(directory, name)
    try:
        yield tmp
        if mode is not None:  # set after the block wrote: a read-only mode would have stopped it
            os.chmod(tmp, mode)
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)  # the data on disk before the name points at it
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_directory(directory)


def write_atomically(path, data):
    """Writes the bytes ``data`` to ``path`` through :func:`replacing`."""
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_BINARY", 0))
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked (large data, signals)
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def _new_temporary_file(directory, name):
    """The path of a new, empty file ".<stem>-<random><ext>" in ``directory`` (str or bytes as
    given). Created exclusively, with 0o666 less the umask, as open(path, "wb") creates a file (mkstemp's 0o600 would have made every file it writes
    private to its owner). The name is cut so that a target name near the file system's limit
    (255 bytes) still has a temporary one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    stem, ext = os.path.splitext(os.fsdecode(name))
    ext = ext if len(ext) <= 16 else ""
    while True:
        tmp_name = f".{stem[:64]}-{secrets.token_hex(8)}{ext}"  # no "." added: ext stays the extension
        tmp = os.path.join(directory, os.fsencode(tmp_name) if isinstance(directory, bytes) else tmp_name)
        try:
            os.close(os.open(tmp, flags, 0o666))
        except FileExistsError:  # 64 random bits taken: draw again
            continue
        return tmp


def _fsync_directory(directory):
    """Makes a rename in ``directory`` durable. POSIX only: Windows cannot open a directory
    (its rename is made durable by the file system). File systems that cannot fsync a
    directory say EINVAL / ENOTSUP; the rename itself has happened, so that is not an error."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)
