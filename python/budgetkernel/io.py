"""Reading and writing the LIBSVM/svmlight text format (optionally gzip compressed)."""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import re
import stat
import zlib
from io import TextIOBase  # the standard library's io (this module is budgetkernel.io)

import numpy as np

from .datasets._sampling import _check_n_samples

__all__ = ["dump_svmlight", "iter_svmlight", "load_svmlight"]

# The C++ core parses (budgetkernel/libsvm.hpp, through _core.LibsvmPass): Python opens the
# file (gzip read transparently, a pipe read once), feeds it in blocks of _SVM_BLOCK bytes
# and allocates each chunk's arrays, which the core fills with the GIL released.  A line the
# core rejects is looked at again by the line-by-line rules below (_parse_line and the row
# checks of each pass, in _plan_svmlight_rows and _iter_svmlight_chunks):
# they word the error exactly as this reader always has, and they decide the rare lines with
# non-ASCII text outside a comment, where Python's float() and str.split() accept Unicode
# digits and spaces that the core leaves to them.

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# What the ``surrogateescape`` error handler turns an undecodable byte into.
_ESCAPED_BYTE_RE = re.compile("[\udc80-\udcff]")
# Bytes read per block: large enough that the per-block Python work vanishes, small enough
# to keep memory bounded (a pipe may deliver less per read).
_SVM_BLOCK = 1 << 20


def _fail(path, lineno, msg):
    raise ValueError(f"malformed svmlight file {os.fspath(path)!r}, line {lineno}: {msg}")


def _can_reread(path):
    """False for a pipe, socket or character device (e.g. ``/dev/stdin`` fed by a
    pipe): such an input yields its bytes once, so it cannot be scanned first and
    read again."""
    mode = os.stat(path).st_mode
    return not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode))


@contextlib.contextmanager
def _open_binary(path):
    """Open ``path`` for reading bytes, transparently decompressing gzip.

    The file is opened once and the gzip magic is *peeked* at, not read, so a pipe
    loses no bytes.  A leading UTF-8 byte order mark is skipped by the core.
    """
    with open(path, "rb") as raw:
        # peek() does one read of the raw stream: a regular file fills the
        # buffer, a pipe may give a single byte.  No text LIBSVM file starts
        # with the control byte 0x1f, so a lone 0x1f is taken as the start of
        # the gzip magic (gzip itself then rejects a wrong second byte).
        head = raw.peek(2)[:2]
        if head == b"\x1f\x8b" or head == b"\x1f":
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield gz
        else:
            yield raw


def _line_with_index(path, index):
    """The number of the first line of ``path`` with feature ``index`` (written without
    leading zeros), or None."""
    token = f"{index}:".encode()
    with _open_binary(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if any(t.startswith(token) for t in line.split(b"#", 1)[0].split()[1:]):
                return lineno
    return None


def _read_block(fh, path):
    """The next block of bytes (``b''`` at the end), failing with the file on gzip data
    that is corrupt or truncated."""
    try:
        # read1: at most one read of the underlying stream, so a pipe's rows are parsed
        # (and its chunks yielded) as they arrive instead of after a whole block.
        return fh.read1(_SVM_BLOCK)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        # gzip reports these without the file name, and EOFError and zlib.error
        # are not ValueErrors: a truncated download would otherwise escape the
        # reader's (and the CLI's) error handling as a traceback.
        raise ValueError(f"svmlight file {os.fspath(path)!r}: corrupt or truncated "
                         f"gzip data ({e})") from None


def _parse_float(tok):
    if "_" in tok:  # float() accepts digit separators, LIBSVM does not
        raise ValueError
    return float(tok)


def _int_token(tok):
    """``int(tok)`` for a token matching ``_INT_RE``, leading zeros ignored: int() counts
    them against ``sys.get_int_max_str_digits()`` and would refuse ``+000...0003``."""
    digits = tok.lstrip("+-").lstrip("0")
    value = int(digits) if digits else 0
    return -value if tok.startswith("-") else value


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
            label = _int_token(lab)
            label_is_int = _INT64_MIN <= label <= _INT64_MAX
            if not label_is_int:
                label = float(label)
        except (ValueError, OverflowError):
            # beyond float64 (OverflowError), or more digits than int() converts
            # (ValueError; then it is beyond float64 too): the integer counterpart of '1e400'
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
        if len(key.lstrip("+-").lstrip("0")) > 19:
            # beyond int64 either way (int() would also refuse more than 4300 digits)
            idx = -1 if key.startswith("-") else _INT64_MAX + 1
        else:
            idx = _int_token(key)
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


def _recheck_rejected(reader, path, check_row, expected=("non_ascii",)):
    """Judge the line the core just rejected by the line-by-line rules: raise its error
    (worded as always), or return its parsed row (``None`` for a blank line) when those
    rules accept it, which happens only for non-ASCII text outside a comment (Unicode
    digits or spaces) or for a status in ``expected``.  ``check_row(parsed, lineno)`` adds
    the checks of the pass."""
    lineno = reader.line_number
    line = reader.line_text.decode("utf-8", "surrogateescape")
    bad = _ESCAPED_BYTE_RE.search(line)
    if bad:
        _fail(path, lineno, f"byte 0x{ord(bad.group()) - 0xDC00:02x} is not valid UTF-8 text")
    parsed = _parse_line(line, path, lineno)
    if parsed is not None:
        check_row(parsed, lineno)
    if reader.status not in expected:
        # The core and these rules disagree (a bug): refuse the line rather than guess.
        _fail(path, lineno, f"rejected by the parser ({reader.status})")
    return parsed


def _accept(reader, parsed):
    label, is_int, idx, vals = parsed
    reader.accept_row(float(label), label if is_int else 0, is_int, idx, vals)


def _run_pass(reader, path, step):
    """Run ``step`` (the pass's scan or read) over the file, feeding it blocks; yield
    whenever it returns something else (a full chunk or a rejected line)."""
    core = _native_core()
    with _open_binary(path) as fh:
        while True:
            status = step()
            if status == core.LIBSVM_NEED_INPUT:
                block = _read_block(fh, path)
                if block:
                    reader.feed(block)
                else:
                    reader.finish()
            elif status == core.LIBSVM_END:
                return
            else:
                yield status


def _native_core():
    from ._native import core  # here: importing io (and datasets) needs only NumPy
    return core


def _plan_svmlight(path, n_features, zero_based, label_dtype):
    """Resolve ``(n_features, offset, label_dtype)``; scan the file if needed."""
    return _plan_svmlight_rows(path, n_features, zero_based, label_dtype)[:3]


def _plan_svmlight_rows(path, n_features, zero_based, label_dtype):
    """:func:`_plan_svmlight` and the number of rows, when a scan counted them (else None)."""
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        n_features = _check_n_samples(n_features, "n_features")
    label_dtype = _resolve_label_dtype(label_dtype)
    if n_features is not None and zero_based != "auto" and label_dtype is not None:
        return n_features, (0 if zero_based else 1), label_dtype, None
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
    reader = _native_core().LibsvmPass(False, one_based=zero_based is False)

    def check_row(parsed, lineno):
        idx = parsed[2]
        if zero_based is False and idx and min(idx) == 0:
            _fail(path, lineno, "feature index 0 in a one-based file "
                                "(pass zero_based=True or 'auto')")

    for _ in _run_pass(reader, path, reader.scan):  # only rejected lines stop the scan
        parsed = _recheck_rejected(reader, path, check_row)
        if parsed is not None:
            _accept(reader, parsed)
    summary = reader.summary
    min_idx = None if summary["min_index"] < 0 else summary["min_index"]
    max_idx = None if summary["max_index"] < 0 else summary["max_index"]
    all_int = summary["all_integer_labels"]
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
    return n_features, offset, label_dtype, summary["rows"]


def _label_bounds(label_dtype):
    """(label_lo, label_hi, int_lo, int_hi): the labels label_dtype holds, and the integer
    labels the core may take as integers. Labels are checked against label_dtype as values
    are against dtype: numpy would raise OverflowError (no line number) for an integer, and
    give inf for a float."""
    if label_dtype.kind in "iu":
        label_lo, label_hi = int(np.iinfo(label_dtype).min), int(np.iinfo(label_dtype).max)
        return label_lo, label_hi, max(label_lo, _INT64_MIN), min(label_hi, _INT64_MAX)
    label_hi = float(np.finfo(label_dtype).max)
    # An integer label compares exactly with the bound (as Python compares int and float).
    int_hi = _INT64_MAX if label_hi >= 2.0**63 else math.floor(label_hi)
    return -label_hi, label_hi, -int_hi - (int_hi == _INT64_MAX), int_hi


class _PlannedRead:
    """One planned pass of the core's reader: its rows re-checked where the core rejected one
    (check_row, for the message) and its full buffers turned into arrays (build)."""

    def __init__(self, path, n_features, offset, label_dtype, dtype, return_lines, into):
        self.path, self.n_features, self.offset = path, n_features, offset
        self.label_dtype, self.dtype, self.return_lines, self.into = label_dtype, dtype, return_lines, into
        self.label_int = label_dtype.kind in "iu"
        self.label_lo, self.label_hi, int_lo, int_hi = _label_bounds(label_dtype)
        self.vmax = float(np.finfo(dtype).max)
        self.check_range = self.vmax < float(np.finfo(np.float64).max)
        # The core writes float32 and float64 directly; other dtypes are cast from float64,
        # which rounds exactly as assigning the values into such an array did.
        self.x_dtype = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
        # A label type wider than double (longdouble) takes integer labels as integers.
        self.wide_labels = not self.label_int and np.finfo(label_dtype).nmant > 52
        self.filled = 0
        # n_features = 2^63 (index 2^63 - 1 in a zero-based file) is one more column than an
        # array can have.  The chunk's lines are still checked, and the error raised where
        # the chunk is built, so that a bad line before it is reported first, as ever; the
        # core, which counts columns in int64, reads the rows without that column.
        self.too_wide = n_features > _INT64_MAX
        self.expected = ("non_ascii", "index_beyond_n_features") if self.too_wide else ("non_ascii",)
        self.reader = _native_core().LibsvmPass(
            True, n_features=min(n_features, _INT64_MAX), offset=offset, integer_labels=self.label_int, label_int_min=int_lo,
            label_int_max=int_hi, label_max=self.label_hi if not self.label_int else math.inf, value_max=self.vmax)

    def check_row(self, parsed, lineno):
        path = self.path
        label, is_int, idx, vals = parsed
        if self.label_int and not is_int:
            _fail(path, lineno, f"non-integer label {label!r} with integer label_dtype")
        if not self.label_lo <= label <= self.label_hi:
            _fail(path, lineno, f"label {label!r} does not fit label_dtype {self.label_dtype}")
        for i in idx:
            j = i - self.offset
            if j < 0:
                _fail(path, lineno, "feature index 0 in a one-based file "
                                    "(pass zero_based=True or 'auto')")
            if j >= self.n_features:
                _fail(path, lineno, f"feature index {i} exceeds n_features={self.n_features}")
        if self.check_range:
            for v in vals:
                if abs(v) > self.vmax:
                    _fail(path, lineno, f"feature value {v!r} overflows {self.dtype}")

    def _x_block(self, m):
        into = self.into
        if into is not None and self.filled + m <= into.shape[0]:
            self.filled += m
            return into[self.filled - m:self.filled]
        try:
            return np.zeros((m, self.n_features), dtype=self.x_dtype)
        except MemoryError:
            raise MemoryError(self._block_too_large(m)) from None

    def _block_too_large(self, m):
        """Why a chunk's dense block cannot be allocated: its width, and the line that made it
        (found by a second look at a file that can be read again; only on this failure)."""
        index = self.n_features - 1 + self.offset
        lineno = _line_with_index(self.path, index) if _can_reread(self.path) else None
        at = f"line {lineno} holds feature index {index}, so " if lineno else ""
        gib = m * self.n_features * np.dtype(self.x_dtype).itemsize / 2**30
        return (f"svmlight file {os.fspath(self.path)!r}: {at}a chunk of {m} rows x {self.n_features} columns "
                f"({gib:.1f} GiB) does not fit in memory; check the file's feature indices, or read fewer "
                "rows at a time (chunk_size)")

    def accept(self, parsed):
        if self.too_wide:
            label, is_int, idx, vals = parsed
            kept = [(i, v) for i, v in zip(idx, vals) if i - self.offset < _INT64_MAX]
            parsed = label, is_int, [i for i, _ in kept], [v for _, v in kept]
        _accept(self.reader, parsed)

    def build(self):
        if self.too_wide:
            raise ValueError(f"svmlight file {os.fspath(self.path)!r}: n_features={self.n_features} is more "
                             "columns than an array can have")
        m = self.reader.rows
        label_int, wide_labels, label_dtype = self.label_int, self.wide_labels, self.label_dtype
        X = self._x_block(m)
        y_int = np.empty(m, dtype=np.int64) if label_int or wide_labels else None
        y_float = None if label_int else np.empty(m, dtype=np.float64)
        is_int = np.empty(m, dtype=np.uint8) if wide_labels else None
        lines = np.empty(m, dtype=np.int64) if self.return_lines else None
        self.reader.take(X, y_float, y_int, is_int, lines)
        if X.dtype != self.dtype:
            X = X.astype(self.dtype)
        if label_int:
            y = y_int if label_dtype == np.int64 else y_int.astype(label_dtype)
        else:
            # numpy converts a Python int label to float32 or float16 through a double,
            # as this does
            y = y_float if label_dtype == np.float64 else y_float.astype(label_dtype)
            if wide_labels:
                mask = is_int.view(bool)
                y[mask] = y_int[mask].astype(label_dtype)
        return (X, y, lines) if self.return_lines else (X, y)


def _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines=False,
                          into=None):
    """The chunks of a planned read.  ``into``: a zeroed (rows, n_features) array of dtype
    float32/float64 whose consecutive row blocks the chunks' X are (views), while they fit."""
    read = _PlannedRead(path, n_features, offset, label_dtype, dtype, return_lines, into)
    reader = read.reader
    full = _native_core().LIBSVM_FULL
    for status in _run_pass(reader, path, lambda: reader.read(chunk_size)):
        if status == full:
            yield read.build()
            continue
        parsed = _recheck_rejected(reader, path, read.check_row, read.expected)
        if parsed is not None:
            read.accept(parsed)
    if reader.rows:
        yield read.build()


def iter_svmlight(path, *, n_features=None, chunk_size=10_000, dtype=np.float64,
                  zero_based="auto", label_dtype=None, return_lines=False):
    """Read a LIBSVM/svmlight text file as dense ``(X, y)`` chunks.

    Lines have the form ``label [qid:q] index:value index:value ... [# comment]``.
    The file is read in blocks of 1 MiB, parsed by the C++ core (the same
    reader C++ programs get from ``budgetkernel/libsvm.hpp``), so memory use
    is bounded by one chunk plus one block (and the longest line).  Lines end
    with LF, CRLF or a lone CR.  Files starting with the gzip magic bytes (e.g. ``*.gz``) are decompressed
    on the fly.  The text must be UTF-8 (a leading byte order mark is
    skipped).  Blank lines and ``#`` comments are skipped, ``qid`` tokens are
    ignored and features may appear in any order.

    To yield consistent chunks the reader must know three facts about the
    whole file: the number of features, whether indices are zero- or
    one-based, and whether all labels are integers.  **Whatever is not given
    (``n_features=None``, ``zero_based='auto'`` or ``label_dtype=None``) is
    determined by a first streaming pass over the file**, which also validates
    every line, so a malformed file raises before any chunk is yielded.  With
    all three given, the file is read in a single pass and errors are raised
    when the offending chunk is reached.  A pipe (e.g. ``/dev/stdin`` fed by
    ``cat``) can be read only once, so it needs all three; without them a
    ValueError says so.

    Parameters
    ----------
    path : str or os.PathLike
        File to read (plain text or gzip).
    n_features : int or None, default=None
        Number of columns of ``X``.  ``None`` uses the largest index in the
        file.  A larger value pads with zero columns; a smaller one is an error.
    chunk_size : int, default=10_000
        Number of examples per chunk (the last chunk may be smaller).
    dtype : floating numpy dtype, default=numpy.float64
        dtype of ``X``.  A value that overflows it (e.g. ``1e300`` with
        float32) is an error rather than an infinity.
    zero_based : bool or 'auto', default='auto'
        Whether index 0 is the first feature.  ``'auto'`` means zero-based iff
        index 0 occurs somewhere in the file (a zero-based file that never uses
        feature 0 is therefore read as one-based; pass ``zero_based=True``
        explicitly to avoid this).  With one-based indexing, index 0 is an error.
    label_dtype : numpy dtype or None, default=None
        dtype of ``y``.  ``None`` gives int64 if every label is written as an
        integer (``1``, ``-1``, ``+3``) and float64 otherwise (``1.0``,
        ``0.5``, ``1e3`` count as non-integer).
    return_lines : bool, default=False
        Also yield each example's line number in the file, so that an error
        found later in a chunk (a value the estimator rejects) can name its line.

    Yields
    ------
    X : ndarray of shape (m, n_features)
    y : ndarray of shape (m,)
    lines : ndarray of int64, shape (m,)
        Only with ``return_lines=True``: the one-based line number of each row.

    Raises
    ------
    ValueError
        On malformed lines (missing ``':'``, non-numeric or non-integer
        index, non-numeric label or value, NaN or infinite label or value,
        negative index, index beyond int64, index 0 in a one-based file,
        duplicate index, index beyond ``n_features``, value overflowing
        ``dtype``, label outside ``label_dtype``, bytes that are not UTF-8).
        The message names the file and line number.  Also raised, naming the
        file, for corrupt or truncated gzip data, and for a pipe when not all
        of ``n_features``, ``zero_based`` and ``label_dtype`` are given.

    Examples
    --------
    Training from a file in chunks, never holding it whole:

    >>> from budgetkernel import BudgetedSGDClassifier, datasets
    >>> from budgetkernel.io import dump_svmlight, iter_svmlight
    >>> X, y = datasets.checkerboard(2500, random_state=0)
    >>> dump_svmlight(X, y, "train.libsvm")
    >>> clf = BudgetedSGDClassifier(budget=50, gamma=2.0, random_state=0)
    >>> for X_chunk, y_chunk in iter_svmlight("train.libsvm", chunk_size=1000):
    ...     _ = clf.partial_fit(X_chunk, y_chunk, classes=[-1, 1])
    >>> clf.n_seen_
    2500
    """
    chunk_size = _check_n_samples(chunk_size, "chunk_size")
    if chunk_size == 0:
        raise ValueError("chunk_size must be positive")
    dtype = _check_float_dtype(dtype)
    if not isinstance(return_lines, (bool, np.bool_)):
        raise ValueError(f"return_lines must be True or False; got {return_lines!r}")
    n_features, offset, label_dtype = _plan_svmlight(path, n_features, zero_based, label_dtype)
    return _iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype, chunk_size, return_lines)


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto",
                  label_dtype=None):
    """Read a whole LIBSVM/svmlight file into dense arrays.

    Same parameters and validation as :func:`iter_svmlight` (without
    ``chunk_size``).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        int64 if every label is written as an integer, else float64 (unless
        ``label_dtype`` is given).

    Examples
    --------
    >>> from budgetkernel import datasets
    >>> from budgetkernel.io import dump_svmlight, load_svmlight
    >>> X, y = datasets.waveform(100, random_state=0)
    >>> dump_svmlight(X, y, "waveform.libsvm.gz")
    >>> X2, y2 = load_svmlight("waveform.libsvm.gz")
    >>> X2.shape, y2.dtype, bool((X2 == X).all())
    ((100, 21), dtype('int64'), True)
    """
    dtype = _check_float_dtype(dtype)
    n_features, offset, label_dtype, n_rows = _plan_svmlight_rows(path, n_features, zero_based, label_dtype)
    # After a scan the size is known: the chunks are read into one array (no concatenation,
    # which needed twice the memory), unless the file changed in between.  An array numpy
    # cannot make is left to the chunks, so that errors keep their order (a bad line first).
    into = None
    if n_rows and dtype in (np.float32, np.float64):
        try:
            into = np.zeros((n_rows, n_features), dtype=dtype)
        except (MemoryError, ValueError):
            pass
    chunks = list(_iter_svmlight_chunks(path, n_features, offset, label_dtype, dtype,
                                        chunk_size=65536, into=into))
    if not chunks:
        return np.zeros((0, n_features), dtype=dtype), np.zeros(0, dtype=label_dtype)
    y = chunks[0][1] if len(chunks) == 1 else np.concatenate([c[1] for c in chunks])
    if into is not None and y.shape[0] == n_rows and all(c[0].base is into for c in chunks):
        return into, y
    if len(chunks) == 1:
        return chunks[0]
    return np.concatenate([c[0] for c in chunks]), y


def _format_label(v, is_int):
    if is_int:
        return "%d" % v
    s = "%.17g" % v
    if _INT_RE.match(s):  # keep float labels recognisable as floats
        s += ".0"
    return s


def dump_svmlight(X, y, path_or_file, *, zero_based=False):
    """Write ``(X, y)`` in LIBSVM/svmlight text format.

    Zeros are not written.  Values are printed with ``'%.17g'``, which
    round-trips every float64 exactly; ``-0.0`` is a zero and reads back as
    ``0.0``.  Integer labels are written as integers and float labels always
    with a decimal point or exponent, so :func:`load_svmlight` restores the
    label dtype (int64 or float64).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or a SciPy sparse matrix
        Finite feature values.
    y : array-like of shape (n_samples,)
        Finite labels; an integer (or bool) dtype is written as integers.
    path_or_file : str, os.PathLike or file object
        Destination.  A path ending in ``'.gz'`` is gzip compressed.  A file
        object may be opened in text or binary mode.
    zero_based : bool, default=False
        Write index 0 for the first feature (default: one-based, as LIBSVM).

    Raises
    ------
    ValueError
        On shape mismatch or NaN/infinite values.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from budgetkernel.io import dump_svmlight
    >>> out = io.StringIO()
    >>> dump_svmlight(np.array([[0.0, 1.5], [2.0, 0.0]]), np.array([1, -1]), out)
    >>> print(out.getvalue(), end="")
    1 2:1.5
    -1 1:2
    """
    if hasattr(X, "tocsr") and not isinstance(X, np.ndarray):  # SciPy sparse
        # A copy: sorting in place would reorder the caller's matrix.  scipy allows
        # duplicate entries (their sum is the value), which LIBSVM does not.
        X = X.tocsr(copy=True)
        X.sum_duplicates()  # also sorts the indices
        n_rows = X.shape[0]
        indptr, indices, data = X.indptr, X.indices, np.asarray(X.data, dtype=np.float64)

        def row_nz(r):
            sl = slice(indptr[r], indptr[r + 1])
            vals = data[sl]
            keep = vals != 0
            return indices[sl][keep], vals[keep]
        all_values = data
    else:
        Xd = np.asarray(X)
        if Xd.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {Xd.shape}")
        Xd = Xd.astype(np.float64, copy=False)
        n_rows = Xd.shape[0]

        def row_nz(r):
            cols = np.flatnonzero(Xd[r])
            return cols, Xd[r, cols]
        all_values = Xd
    if not np.all(np.isfinite(all_values)):
        raise ValueError("X contains NaN or infinite values")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"y must have shape ({n_rows},), got {y.shape}")
    y_is_int = y.dtype.kind in "biu"
    if y.dtype.kind == "c":  # astype(float64) would drop the imaginary part
        raise ValueError(f"y must be real; got dtype {y.dtype}")
    if not y_is_int:
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
    else:
        # Python ints: int64 would wrap uint64 labels of 2^63 and above.
        y = y.tolist()
    off = 0 if zero_based else 1

    def lines():
        for r in range(n_rows):
            cols, vals = row_nz(r)
            parts = [_format_label(y[r], y_is_int)]
            parts.extend("%d:%.17g" % (c + off, v) for c, v in zip(cols.tolist(), vals.tolist()))
            yield " ".join(parts) + "\n"

    if isinstance(path_or_file, (str, bytes, os.PathLike)):
        name = os.fspath(path_or_file)
        is_gz = name.endswith(b".gz" if isinstance(name, bytes) else ".gz")
        opener = gzip.open if is_gz else open
        with opener(path_or_file, "wt", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines())
        return
    fh = path_or_file
    if isinstance(fh, TextIOBase):
        fh.writelines(lines())
    else:
        for line in lines():
            fh.write(line.encode("utf-8"))
