"""The pure-Python LIBSVM reader that budgetkernel.datasets used before the C++ parser
(python/budgetkernel/datasets.py at commit 90f8c40), kept verbatim as the oracle of
tests/test_svmlight_parser.py: the new reader must give the same arrays, bit for bit, and
the same error messages.  Only the imports and the entry points at the end are added.
"""

import contextlib
import gzip
import io
import math
import os
import re
import stat
import zlib

import numpy as np

from budgetkernel.datasets._sampling import _check_n_samples  # the argument check, not the parser under test

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# What the ``surrogateescape`` error handler turns an undecodable byte into.
_ESCAPED_BYTE_RE = re.compile("[\udc80-\udcff]")


def _fail(path, lineno, msg):
    raise ValueError(f"malformed svmlight file {os.fspath(path)!r}, line {lineno}: {msg}")


def _can_reread(path):
    """False for a pipe, socket or character device (e.g. ``/dev/stdin`` fed by a
    pipe): such an input yields its bytes once, so it cannot be scanned first and
    read again."""
    mode = os.stat(path).st_mode
    return not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode))


@contextlib.contextmanager
def _open_text(path):
    """Open ``path`` for reading text, transparently decompressing gzip.

    The file is opened once and the gzip magic is *peeked* at, not read, so a
    pipe loses no bytes.  ``utf-8-sig`` drops a leading byte order mark.  Bytes
    that are not UTF-8 are decoded with ``surrogateescape`` so that
    :func:`_numbered_lines` can report the line they are on (a strict decoder
    fails on a whole block of lines at once, without a line number).
    """
    with open(path, "rb") as raw:
        # peek() does one read of the raw stream: a regular file fills the
        # buffer, a pipe may give a single byte.  No text LIBSVM file starts
        # with the control byte 0x1f, so a lone 0x1f is taken as the start of
        # the gzip magic (gzip itself then rejects a wrong second byte).
        head = raw.peek(2)[:2]
        if head == b"\x1f\x8b" or head == b"\x1f":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        else:
            stream = raw
        with io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape") as fh:
            yield fh


def _numbered_lines(fh, path):
    """Yield ``(line_number, line)`` from a file opened by :func:`_open_text`,
    failing with the file and line on a byte that is not UTF-8, and with the file
    on gzip data that is corrupt or truncated."""
    lines = enumerate(fh, start=1)
    while True:
        try:
            lineno, line = next(lines)
        except StopIteration:
            return
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            # gzip reports these without the file name, and EOFError and zlib.error
            # are not ValueErrors: a truncated download would otherwise escape the
            # reader's (and the CLI's) error handling as a traceback.
            raise ValueError(f"svmlight file {os.fspath(path)!r}: corrupt or truncated "
                             f"gzip data ({e})") from None
        if not line.isascii():
            bad = _ESCAPED_BYTE_RE.search(line)
            if bad:
                byte = ord(bad.group()) - 0xDC00
                _fail(path, lineno, f"byte 0x{byte:02x} is not valid UTF-8 text")
        yield lineno, line


def _parse_float(tok):
    if "_" in tok:  # float() accepts digit separators, LIBSVM does not
        raise ValueError
    return float(tok)


def _parse_line(line, path, lineno):
    """Parse one line; return ``None`` for blank/comment lines, else
    ``(label_value, label_is_int, raw_indices, values)``."""
    hash_pos = line.find("#")
    if hash_pos >= 0:
        line = line[:hash_pos]
    toks = line.split()
    if not toks:
        return None
    lab = toks[0]
    if ":" in lab:
        _fail(path, lineno, f"missing label (line starts with feature {lab!r})")
    label_is_int = False
    if _INT_RE.match(lab):
        try:
            label = int(lab)
            label_is_int = _INT64_MIN <= label <= _INT64_MAX
            if not label_is_int:
                label = float(label)
        except (ValueError, OverflowError):
            # beyond float64 (OverflowError), or more digits than int() converts
            # (ValueError): the integer counterpart of the float label '1e400'
            _fail(path, lineno, f"non-finite label {lab[:40]!r}{'...' if len(lab) > 40 else ''}")
    else:
        try:
            label = _parse_float(lab)
        except ValueError:
            _fail(path, lineno, f"non-numeric label {lab!r}")
        if not math.isfinite(label):
            _fail(path, lineno, f"non-finite label {lab!r}")
    indices = []
    values = []
    for tok in toks[1:]:
        key, sep, val = tok.partition(":")
        if not sep:
            _fail(path, lineno, f"missing ':' in feature {tok!r}")
        if key == "qid":
            if not _INT_RE.match(val):
                _fail(path, lineno, f"non-integer qid in {tok!r}")
            continue
        if not _INT_RE.match(key):
            _fail(path, lineno, f"non-integer feature index in {tok!r}")
        if len(key) > 20 and len(key.lstrip("+-").lstrip("0")) > 19:
            # beyond int64 either way; int() would refuse more than 4300 digits
            # with a message that names no line
            idx = -1 if key.startswith("-") else _INT64_MAX + 1
        else:
            idx = int(key)
        if idx < 0:
            _fail(path, lineno, f"negative feature index in {tok!r}")
        if idx > _INT64_MAX:  # no array has such a column
            _fail(path, lineno, f"feature index {key[:40]}{'...' if len(key) > 40 else ''} is too large")
        try:
            v = _parse_float(val)
        except ValueError:
            _fail(path, lineno, f"non-numeric feature value in {tok!r}")
        if not math.isfinite(v):
            _fail(path, lineno, f"non-finite feature value in {tok!r}")
        indices.append(idx)
        values.append(v)
    if len(set(indices)) != len(indices):
        _fail(path, lineno, "duplicate feature index")
    return label, label_is_int, indices, values


def _resolve_label_dtype(label_dtype):
    if label_dtype is None:
        return None
    dt = np.dtype(label_dtype)
    if dt.kind not in "iuf":
        raise ValueError(f"label_dtype must be an integer or floating dtype, got {dt}")
    return dt


def _check_float_dtype(dtype):
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise ValueError(f"dtype must be a floating dtype, got {dt}")
    return dt


def _plan_svmlight(path, n_features, zero_based, label_dtype):
    """Resolve ``(n_features, offset, label_dtype)``; scan the file if needed."""
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        n_features = _check_n_samples(n_features, "n_features")
    label_dtype = _resolve_label_dtype(label_dtype)
    if n_features is not None and zero_based != "auto" and label_dtype is not None:
        return n_features, (0 if zero_based else 1), label_dtype
    if not _can_reread(path):
        # The first pass would consume the pipe and leave nothing to read.
        missing = [name for name, given in (("n_features", n_features is not None),
                                            ("zero_based", zero_based != "auto"),
                                            ("label_dtype", label_dtype is not None))
                   if not given]
        raise ValueError(f"svmlight input {os.fspath(path)!r} is a pipe or another stream "
                         "that can be read only once, so it must be read in a single "
                         "pass: give n_features, zero_based (True or False) and "
                         f"label_dtype (missing: {', '.join(missing)})")
    # First pass: validate every line and collect what the caller did not give.
    min_idx, max_idx, all_int = None, None, True
    with _open_text(path) as fh:
        for lineno, line in _numbered_lines(fh, path):
            parsed = _parse_line(line, path, lineno)
            if parsed is None:
                continue
            _, is_int, idx, _ = parsed
            all_int = all_int and is_int
            if idx:
                lo, hi = min(idx), max(idx)
                if zero_based is False and lo == 0:
                    _fail(path, lineno, "feature index 0 in a one-based file "
                                        "(pass zero_based=True or 'auto')")
                min_idx = lo if min_idx is None else min(min_idx, lo)
                max_idx = hi if max_idx is None else max(max_idx, hi)
    if zero_based == "auto":
        zero_based = min_idx == 0
    offset = 0 if zero_based else 1
    inferred = 0 if max_idx is None else max_idx - offset + 1
    if n_features is None:
        n_features = inferred
    elif inferred > n_features:
        raise ValueError(f"svmlight file {os.fspath(path)!r} has feature index {max_idx} "
                         f"but n_features={n_features}")
    if label_dtype is None:
        label_dtype = np.dtype(np.int64) if all_int else np.dtype(np.float64)
    return n_features, offset, label_dtype


def _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines=False):
    label_int = label_dtype.kind in "iu"
    # Labels are checked against label_dtype as values are against dtype: numpy would
    # raise OverflowError (no line number) for an integer, and give inf for a float.
    if label_int:
        label_lo, label_hi = int(np.iinfo(label_dtype).min), int(np.iinfo(label_dtype).max)
    else:
        label_hi = float(np.finfo(label_dtype).max)
        label_lo = -label_hi
    vmax = float(np.finfo(dtype).max)
    check_range = vmax < float(np.finfo(np.float64).max)

    def build(rows, labels, lines):
        m = len(labels)
        X = np.zeros((m, n_features), dtype=dtype)
        counts = [len(r[0]) for r in rows]
        if sum(counts):
            ri = np.repeat(np.arange(m), counts)
            ci = np.fromiter((i for r in rows for i in r[0]), dtype=np.int64, count=sum(counts))
            vv = np.fromiter((v for r in rows for v in r[1]), dtype=np.float64, count=sum(counts))
            X[ri, ci] = vv
        y = np.array(labels, dtype=label_dtype)
        if return_lines:
            return X, y, np.array(lines, dtype=np.int64)
        return X, y

    rows, labels, lines = [], [], []
    with _open_text(path) as fh:
        for lineno, line in _numbered_lines(fh, path):
            parsed = _parse_line(line, path, lineno)
            if parsed is None:
                continue
            label, is_int, idx, vals = parsed
            if label_int and not is_int:
                _fail(path, lineno, f"non-integer label {label!r} with integer label_dtype")
            if not label_lo <= label <= label_hi:
                _fail(path, lineno, f"label {label!r} does not fit label_dtype {label_dtype}")
            cols = []
            for i in idx:
                j = i - offset
                if j < 0:
                    _fail(path, lineno, "feature index 0 in a one-based file "
                                        "(pass zero_based=True or 'auto')")
                if j >= n_features:
                    _fail(path, lineno, f"feature index {i} exceeds n_features={n_features}")
                cols.append(j)
            if check_range:
                for v in vals:
                    if abs(v) > vmax:
                        _fail(path, lineno, f"feature value {v!r} overflows {dtype}")
            rows.append((cols, vals))
            labels.append(label)
            lines.append(lineno)
            if len(labels) == chunk_size:
                yield build(rows, labels, lines)
                rows, labels, lines = [], [], []
    if labels:
        yield build(rows, labels, lines)



def iter_svmlight(path, *, n_features=None, chunk_size=10_000, dtype=np.float64,
                  zero_based="auto", label_dtype=None, return_lines=False):
    """The old iter_svmlight (argument checks included)."""
    chunk_size = _check_n_samples(chunk_size, "chunk_size")
    if chunk_size == 0:
        raise ValueError("chunk_size must be positive")
    dtype = _check_float_dtype(dtype)
    n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, label_dtype)
    return _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines)


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto",
                  label_dtype=None):
    """The old load_svmlight."""
    dtype = _check_float_dtype(dtype)
    n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, label_dtype)
    chunks = list(_iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype,
                                        chunk_size=65536))
    if not chunks:
        return np.zeros((0, n_features), dtype=dtype), np.zeros(0, dtype=label_dtype)
    if len(chunks) == 1:
        return chunks[0]
    return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])
