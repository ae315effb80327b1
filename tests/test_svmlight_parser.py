"""The C++ LIBSVM parser behind budgetkernel.io.iter_svmlight against the pure-Python
reader it replaced (tests/_svmlight_oracle.py, kept verbatim): the same arrays bit for bit,
the same line numbers, the same error messages, on generated files; numbers converted exactly
as Python's float() does; block boundaries, pipes, gzip and hostile bytes. Well-formed files
are also read and written as scikit-learn's load_svmlight_file / dump_svmlight_file (an
external oracle) read and write them."""

import contextlib
import gzip
import math
import os
import struct
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from budgetkernel import io as libsvm

sys.path.insert(0, os.path.dirname(__file__))
import _svmlight_oracle as oracle  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _exact_bytes(a):
    """The bytes that hold a's values (x86's long double leaves 6 of its 16 bytes unset)."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.longdouble and a.dtype.itemsize == 16 and np.finfo(np.longdouble).nmant == 63:
        return a.view(np.uint8).reshape(-1, 16)[:, :10].tobytes()
    return a.tobytes()


def _outcome(reader, path, **kwargs):
    """Every chunk a reader yields (as exact bytes) and the error that ends it, if any."""
    chunks = []
    try:
        for X, y, lines in reader(path, return_lines=True, **kwargs):
            chunks.append((X.dtype.str, X.shape, _exact_bytes(X), y.dtype.str, _exact_bytes(y), lines.tolist()))
    except (ValueError, MemoryError) as e:
        return chunks, f"{type(e).__name__}: {e}"
    return chunks, None


@contextlib.contextmanager
def _block_size(n):
    with mock.patch.object(libsvm, "_SVM_BLOCK", n):
        yield


def _same_as_oracle(path, block=1 << 20, **kwargs):
    want = _outcome(oracle.iter_svmlight, path, **kwargs)
    with _block_size(block):
        got = _outcome(libsvm.iter_svmlight, path, **kwargs)
    if got[1] is not None and any(words in got[1] for words in _TOO_LARGE):
        # An index past 2^63 - 1: the reader refuses the width of the chunk that holds it, up
        # front; the oracle fails too, inside numpy or on a bad value it meets first on that
        # line (found by Hypothesis: a float32 overflow after the index).
        assert want[1] is not None and got[0] == want[0][: len(got[0])], (path.read_bytes()[:300], kwargs, want[1])
        return want
    assert got == want, (path.read_bytes()[:300], kwargs, got[1], want[1])
    return want


# ---------------------------------------------------------------------------
# Generated files: the grammar's corners, mixed with garbage
# ---------------------------------------------------------------------------

_WEIRD_NUMBERS = ["nan", "-inf", "Infinity", "1e400", "-1e-400", "1_0", "abc", "", "0x10", "1.", ".5", ".",
                  "1e", "1e+", "+5", "-0", "00012", "1:2", "１", "٣", "4\u00a0", "\x00", "1e-320", "2.5E+3",
                  "9" * 25, "-" + "9" * 25, "+.5e-0"]


# Each strategy is built once: one built inside a draw is validated again at every draw, which
# cost more than the tests themselves.
_NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda v: "%.17g" % v),
    st.integers(-5, 5).map(str),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(_WEIRD_NUMBERS),
)

_INDEX = st.one_of(st.integers(0, 12).map(str), st.sampled_from(
    ["-1", "-0", "+3", "0003", "x", "1_0", "", "9223372036854775807", "9223372036854775808",
     "99999999999999999999", "-99999999999999999999", "qid", "１"]))

_SEPARATOR = st.sampled_from([" ", " ", " ", "\t", "  ", "\x0b", "\x0c", "\x1c", "\x1f", "\u00a0", "\u3000", "\x85"])
_ODD_PART = st.sampled_from(["qid:3", "qid:x", "5", "a:b", "1:2:3"])
_COMMENT = st.sampled_from(["#", "# comment", "#café", "# 1:2", "#\x00"])
_NOT_UTF8 = st.sampled_from([b"\xe9", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"])
_LINE_END = st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"])


@st.composite
def _line(draw):
    parts = [draw(_NUMBER)] if draw(st.integers(0, 12)) else []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 15)) == 0:
            parts.append(draw(_ODD_PART))
        else:
            parts.append(f"{draw(_INDEX)}:{draw(_NUMBER)}")
    text = "".join(draw(_SEPARATOR) + p for p in parts)
    if draw(st.integers(0, 5)) == 0:
        text += draw(_COMMENT)
    data = text.encode("utf-8")
    if draw(st.integers(0, 30)) == 0:  # bytes that are not UTF-8
        pos = draw(st.integers(0, len(data)))
        data = data[:pos] + draw(_NOT_UTF8) + data[pos:]
    return data


_LINES = st.lists(_line(), max_size=12)


@st.composite
def _file(draw):
    lines = draw(_LINES)
    ends = [draw(_LINE_END) for _ in lines]
    data = b"".join(line + end for line, end in zip(lines, ends))
    if lines and draw(st.booleans()):
        data = data[: -len(ends[-1])]  # no final line terminator
    if draw(st.integers(0, 8)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


_KWARGS = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"zero_based": st.sampled_from([True, False, "auto"])}),
    st.fixed_dictionaries({
        "n_features": st.integers(0, 14),
        "zero_based": st.sampled_from([True, False]),
        "label_dtype": st.sampled_from([np.int64, np.float64, np.int8, np.uint16, np.float32, np.float16]),
    }),
    st.fixed_dictionaries({"dtype": st.sampled_from([np.float32, np.float16, np.longdouble])}),
)


@SETTINGS
@given(data=_file(), kwargs=_KWARGS, chunk_size=st.integers(1, 5), block=st.sampled_from([1, 2, 7, 1 << 20]))
def test_generated_files_read_as_the_python_reader_read_them(tmp_path_factory, data, kwargs, chunk_size, block):
    path = tmp_path_factory.mktemp("gen") / "gen.svm"
    path.write_bytes(data)
    _same_as_oracle(path, block=block, chunk_size=chunk_size, **kwargs)


# An array too large to make: the reader names n_features where it knows an index is past
# 2^63 - 1, numpy says one of these elsewhere; the oracle only ever gives numpy's words.
_TOO_LARGE = ("is more columns than an array can have", "Maximum allowed dimension exceeded",
              "is larger than the maximum possible size")


def _loaded(loader, path, **kwargs):
    try:
        X, y = loader(path, **kwargs)
    except (ValueError, MemoryError) as e:
        if isinstance(e, ValueError) and any(words in str(e) for words in _TOO_LARGE):
            return "ValueError: an array too large to make"
        return f"{type(e).__name__}: {e}"
    assert X.base is None and y.base is None and X.flags.c_contiguous
    return X.dtype.str, X.shape, _exact_bytes(X), y.dtype.str, _exact_bytes(y)


@SETTINGS
@given(data=_file(), kwargs=_KWARGS)
# Index 2^63 - 1 makes one column too many: the lines of the chunk are checked first.
@example(data=b"\xef\xbb\xbf 0.0 qid:3 0:0.0 9223372036854775807:65505.0#\n", kwargs={"dtype": np.float16})
@example(data=b"1 9223372036854775807:1\n2 0:1e300\n", kwargs={"dtype": np.float32})
@example(data=b"1 9223372036854775807:1\n2 0:1\n", kwargs={})
def test_load_svmlight_as_the_python_reader_loaded(tmp_path_factory, data, kwargs):
    path = tmp_path_factory.mktemp("load") / "load.svm"
    path.write_bytes(data)
    assert _loaded(libsvm.load_svmlight, path, **kwargs) == _loaded(oracle.load_svmlight, path, **kwargs)


@SETTINGS
@given(rows=st.lists(st.lists(st.tuples(st.integers(0, 9), st.floats(allow_nan=False, allow_infinity=False)),
                              max_size=6, unique_by=lambda t: t[0]), min_size=1, max_size=20),
       labels=st.lists(st.one_of(st.integers(-3, 3), st.floats(-1e6, 1e6)), min_size=20, max_size=20),
       kwargs=_KWARGS)
def test_well_formed_files_read_as_the_python_reader_read_them(tmp_path_factory, rows, labels, kwargs):
    text = "".join(repr(lab) + "".join(f" {i}:{v!r}" for i, v in row) + "\n" for row, lab in zip(rows, labels))
    path = tmp_path_factory.mktemp("ok") / "ok.svm"
    path.write_text(text)
    _, error = _same_as_oracle(path, chunk_size=7, **kwargs)
    if not kwargs:
        assert error is None


# ---------------------------------------------------------------------------
# Numbers: exactly Python's float()
# ---------------------------------------------------------------------------

_DECIMAL = st.from_regex(r"\A[+-]?([0-9]{1,40}(\.[0-9]{0,40})?|\.[0-9]{1,40})([eE][+-]?[0-9]{1,4})?\Z")
_FLOAT_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda v: "%.17g" % v),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda v: "%.25e" % v),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda v: "%.3g" % v),
    st.floats(0, 2.3e-308).map(repr),  # subnormals
    st.integers(0, 2**64).map(lambda b: repr(struct.unpack("<d", struct.pack("<Q", b & (2**64 - 1)))[0])),
    _DECIMAL,
)


def _bits(v):
    return struct.pack("<d", v)


@SETTINGS
@given(values=st.lists(_FLOAT_TEXT, min_size=1, max_size=40), block=st.sampled_from([3, 1 << 20]))
def test_values_and_labels_are_pythons_float_bit_for_bit(tmp_path_factory, values, block):
    finite = [v for v in values if math.isfinite(float(v)) and not v.lstrip("+-").isdigit()]
    path = tmp_path_factory.mktemp("num") / "num.svm"
    # each number once as a value and once as a (float) label
    path.write_text("".join(f"{v} 1:{v} 2:1\n" for v in finite) or "1 2:1\n")
    with _block_size(block):
        X, y = libsvm.load_svmlight(path, zero_based=False)
    for k, v in enumerate(finite):
        assert _bits(X[k, 0]) == _bits(float(v)), v
        assert _bits(y[k]) == _bits(float(v)), v
    _same_as_oracle(path)


@SETTINGS
@given(text=_DECIMAL)
def test_out_of_range_numbers_are_errors_or_signed_zeros_as_in_python(tmp_path_factory, text):
    text = text + "e" + ("-" if text.startswith("-") else "") + "400" if "e" not in text.lower() else text
    path = tmp_path_factory.mktemp("range") / "range.svm"
    path.write_text(f"1 1:{text}\n")
    _same_as_oracle(path)


def test_integer_labels_beyond_int64_round_as_python_does(tmp_path):
    labels = ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551617",
              "9007199254740993", "-" + "1" * 300, "1" * 308, "179769313486231580793728971405303415079934132710037826936173"
              "7789804491327686066945516604405823286920094418913935547497458716014012906318106153839099497096063"
              "69766297163768302386826604405441097052128426946081089813380082128930466969891993601081498656316"
              "3836487543286127837"]
    path = tmp_path / "big.svm"
    path.write_text("".join(f"{lab} 1:1\n" for lab in labels))
    _same_as_oracle(path)
    for dt in (np.float32, np.float16, np.longdouble, np.float64):
        _same_as_oracle(path, label_dtype=dt, n_features=1, zero_based=False)
    path.write_text("".join(f"{lab} 1:1\n" for lab in labels[:2] + ["1152921573326323713"]))  # 2^60 + 2^36 + 1
    for dt in (np.float32, np.longdouble, np.int64, np.uint64):
        _same_as_oracle(path, label_dtype=dt, n_features=1, zero_based=False)


# ---------------------------------------------------------------------------
# Where the old reader and the new one differ on purpose
# ---------------------------------------------------------------------------


def test_thousands_of_leading_zeros_are_still_an_ordinary_number(tmp_path):
    # int() refuses more than 4300 digits, zeros included: the old reader raised a ValueError
    # naming no line for such an index, and called such a label non-finite.
    path = tmp_path / "zeros.svm"
    path.write_text("+" + "0" * 5000 + "7 " + "0" * 5000 + "3:2.5\n")
    X, y = libsvm.load_svmlight(path)
    np.testing.assert_array_equal(X, [[0.0, 0.0, 2.5]])
    assert y.tolist() == [7] and y.dtype == np.int64


# ---------------------------------------------------------------------------
# Lines: terminators, byte order mark, non-ASCII text, block boundaries
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("block", [1, 2, 3, 5, 1 << 20])
def test_crlf_lone_cr_bom_and_unicode_lines(tmp_path, block):
    text = ("\ufeff1 1:2\r\n# c\r\r\n-1\u00a02:３\r2 3:4\u3000# café\n\n3\x1c1:5 4:1e-400\x0b\r\n"
            "-2 4:-0 # \x00\r").encode("utf-8")
    path = tmp_path / "lines.svm"
    path.write_bytes(text)
    chunks, error = _same_as_oracle(path, block=block, chunk_size=2)
    assert error is None and [c[-1] for c in chunks] == [[1, 4], [5, 7], [8]]
    _same_as_oracle(path, block=block, n_features=4, zero_based=False, label_dtype=np.int8)


@pytest.mark.parametrize("text", [
    b"1 1:2\n1 1:2\xa0\n",               # Latin-1 NBSP: not UTF-8
    b"1 1:2\n1\xc2\xa01:\xef\xbc\x91x\n",  # Unicode space and digit, then garbage
    b"1 1:2\n\xc2\xa0\n1 0:1\n",          # a line of Unicode space only is blank
    b"1 1:2\n1 2:\xd9\xa3 2:1\n",         # Arabic-Indic 3, then a duplicate
    b"\xef\xbb1 1:2\n",                   # a truncated byte order mark
    b"1 1:2 # \xed\xa0\x80\n",            # an encoded surrogate in a comment
])
def test_non_ascii_lines_are_judged_by_pythons_rules(tmp_path, text):
    path = tmp_path / "u.svm"
    path.write_bytes(text)
    for kwargs in ({}, {"n_features": 3, "zero_based": False, "label_dtype": np.float64}):
        for block in (1, 1 << 20):
            _same_as_oracle(path, block=block, **kwargs)


def test_errors_far_into_a_gzip_file_name_their_line(tmp_path):
    # 10,000 rows (216 kB): the error is in the seventh block gzip decompresses (about 32 kB
    # each) and the third chunk of 4096 rows
    rows = "".join(f"{i % 3 - 1} 1:{i * 0.1!r} 2:{i}\n" for i in range(10000))
    for bad, fragment in (("1 1:2 1:3", "duplicate"), ("1 2:1e39", "overflows"), ("1 0:1", "index 0")):
        path = tmp_path / "far.svm.gz"
        path.write_bytes(gzip.compress((rows + bad + "\n" + rows).encode()))
        for kwargs in ({"zero_based": False}, {"n_features": 2, "zero_based": False, "label_dtype": np.int64,
                                               "dtype": np.float32}):
            _, error = _same_as_oracle(path, chunk_size=4096, **kwargs)
            if fragment != "overflows" or "dtype" in kwargs:
                assert "line 10001" in error and fragment in error, error


def test_a_huge_line_and_a_huge_token(tmp_path):
    path = tmp_path / "huge.svm"
    path.write_text("1 " + " ".join(f"{i}:{i}.5" for i in range(1, 30001)) + "\n-1 1:" + "5" * 400000 + "\n")
    with _block_size(4096):
        with pytest.raises(ValueError, match=r"huge\.svm.*line 2: non-finite feature value"):
            libsvm.load_svmlight(path)
    path.write_text("1 " + " ".join(f"{i}:{i}.5" for i in range(1, 30001)) + " #" + "x" * 300000 + "\n")
    with _block_size(4096):
        X, _ = libsvm.load_svmlight(path)
    assert X.shape == (1, 30000) and X[0, -1] == 30000.5


def test_random_bytes_never_crash(tmp_path):
    rng = np.random.default_rng(7)
    alphabet = np.frombuffer(b"0123456789 :.+-eE#\n\r\t\x0bqidnaf_x\x00\xc3\xa9\xff", dtype=np.uint8)
    for k in range(150):
        n = int(rng.integers(0, 300))
        data = np.where(rng.random(n) < 0.2, rng.integers(0, 256, n), rng.choice(alphabet, n)).astype(np.uint8)
        path = tmp_path / f"r{k}.svm"
        path.write_bytes(data.tobytes())
        _same_as_oracle(path, block=int(rng.choice([1, 16, 1 << 20])), chunk_size=3)


def test_a_pipe_split_inside_crlf_and_inside_a_number(tmp_path, pipe_fed_with):
    data = b"1 1:2.5\r\n-1 2:3\r\n1 1:0.125\r"
    expected_X = [[2.5, 0.0], [0.0, 3.0], [0.125, 0.0]]
    pipe, thread = pipe_fed_with(data[:8], data[8:9], data[9:20], data[20:])
    X, y, lines = next(libsvm.iter_svmlight(pipe, n_features=2, zero_based=False, label_dtype=np.int64,
                                              chunk_size=10, return_lines=True))
    thread.join(timeout=10)
    np.testing.assert_array_equal(X, expected_X)
    assert y.tolist() == [1, -1, 1] and lines.tolist() == [1, 2, 3]


def test_chunks_are_exact_arrays_and_memory_is_per_chunk(tmp_path):
    X = np.random.default_rng(0).standard_normal((1000, 3))
    path = tmp_path / "c.svm"
    libsvm.dump_svmlight(X, np.arange(1000) % 2, path)
    chunks = list(libsvm.iter_svmlight(path, chunk_size=300))
    assert [c[0].shape for c in chunks] == [(300, 3)] * 3 + [(100, 3)]
    for c in chunks:  # fresh, owned, C-contiguous arrays: no view of a bigger buffer
        assert c[0].base is None and c[0].flags.c_contiguous and c[1].base is None


def test_load_svmlight_over_several_internal_chunks(tmp_path):
    # more rows than load_svmlight's internal chunk (65536): read into one array after a scan
    X = np.random.default_rng(3).standard_normal((70000, 3))
    X[X < 0.5] = 0.0
    path = tmp_path / "many.svm"
    libsvm.dump_svmlight(X, np.arange(70000) % 5 - 2, path)
    for kwargs in ({}, {"n_features": 4, "zero_based": False, "label_dtype": np.int64}, {"dtype": np.float16}):
        assert _loaded(libsvm.load_svmlight, path, **kwargs) == _loaded(oracle.load_svmlight, path, **kwargs)


def test_an_index_that_makes_n_features_beyond_int64_is_a_clear_error(tmp_path):
    # Zero-based with index 2^63 - 1: n_features = 2^63, which no array can have.
    path = tmp_path / "wide.svm"
    path.write_text("1 0:1\n-1 9223372036854775807:2\n")
    for read in (libsvm.load_svmlight, lambda p: list(libsvm.iter_svmlight(p))):
        with pytest.raises(ValueError, match=r"wide\.svm.*n_features=9223372036854775808 is more columns"):
            read(path)


@pytest.mark.parametrize("gz", [False, True])
def test_an_index_too_wide_to_allocate_names_its_line(tmp_path, gz):
    # 2^42 columns cannot be allocated on any machine: the error names the line with the index
    text = b"1 1:0.5 2:1\n-1 3:1 4398046511104:1 # wide\n1 2:1\n"
    path = tmp_path / ("wide.svm.gz" if gz else "wide.svm")
    path.write_bytes(gzip.compress(text) if gz else text)
    with pytest.raises(MemoryError, match=r"line 2 holds feature index 4398046511104, so a chunk of 3 rows"):
        libsvm.load_svmlight(path)


# ---------------------------------------------------------------------------
# scikit-learn's reader and writer as the external oracle (well-formed files)
# ---------------------------------------------------------------------------

_ROWS = st.lists(st.lists(st.tuples(st.integers(0, 9), st.floats(allow_nan=False, allow_infinity=False)),
                          max_size=6, unique_by=lambda t: t[0]), min_size=1, max_size=20)
_LABELS = st.lists(st.one_of(st.integers(-3, 3), st.floats(-1e6, 1e6)), min_size=20, max_size=20)
# values whose 16 digits (scikit-learn's writer) stay finite
_BOUNDED_ROWS = st.lists(st.lists(st.tuples(st.integers(0, 9), st.floats(-1e300, 1e300)),
                                  max_size=6, unique_by=lambda t: t[0]), min_size=1, max_size=20)


def _rows_as_text(rows, labels):
    return "".join(repr(lab) + "".join(f" {i}:{v!r}" for i, v in sorted(row)) + "\n" for row, lab in zip(rows, labels))


@settings(SETTINGS, max_examples=50)
@given(rows=_ROWS, labels=_LABELS, zero_based=st.sampled_from([True, False, "auto"]), wide=st.booleans())
def test_well_formed_files_read_as_scikit_learn_reads_them(tmp_path_factory, rows, labels, zero_based, wide):
    from sklearn.datasets import load_svmlight_file

    path = tmp_path_factory.mktemp("sk") / "sk.svm"
    path.write_text(_rows_as_text(rows, labels))
    if zero_based is False and any(i == 0 for row in rows for i, _ in row):
        with pytest.raises(ValueError, match="feature index 0 in a one-based file"):
            libsvm.load_svmlight(path, zero_based=False)
        return
    # (a file without any feature: scikit-learn makes one empty column, this reader none)
    n_features = 12 if wide or not any(rows) else None
    X, y = libsvm.load_svmlight(path, zero_based=zero_based, n_features=n_features)
    Xs, ys = load_svmlight_file(str(path), zero_based=zero_based, n_features=n_features)
    # bit for bit, but for the sign of a zero value (scikit-learn's dense copy has +0.0 where
    # the file says -0; this reader keeps -0.0): + 0.0 makes every zero +0.0
    assert _exact_bytes(X + 0.0) == _exact_bytes(Xs.toarray() + 0.0)
    assert _exact_bytes(y.astype(np.float64)) == _exact_bytes(ys)


@settings(SETTINGS, max_examples=50)
@given(rows=_BOUNDED_ROWS, labels=_LABELS, zero_based=st.booleans())
def test_files_written_are_what_scikit_learn_writes_and_reads(tmp_path_factory, rows, labels, zero_based):
    from sklearn.datasets import dump_svmlight_file, load_svmlight_file

    X = np.zeros((len(rows), 10))
    for k, row in enumerate(rows):
        for i, v in row:
            X[k, i] = v
    y = np.array(labels[: len(rows)], dtype=np.float64)
    d = tmp_path_factory.mktemp("skw")
    libsvm.dump_svmlight(X, y, d / "ours.svm", zero_based=zero_based)
    dump_svmlight_file(X, y, str(d / "theirs.svm"), zero_based=zero_based)
    for path in (d / "ours.svm", d / "theirs.svm"):  # each written file, read by both readers
        Xs, ys = load_svmlight_file(str(path), n_features=10, zero_based=zero_based)
        Xo, yo = libsvm.load_svmlight(path, n_features=10, zero_based=zero_based)
        assert _exact_bytes(Xs.toarray() + 0.0) == _exact_bytes(Xo + 0.0)  # (zeros' signs: see above)
        assert _exact_bytes(ys + 0.0) == _exact_bytes(yo.astype(np.float64) + 0.0)  # (a label -0.0 too)
    # ours is exact (the shortest repr of each float64); scikit-learn writes 16 digits ('%.16g')
    Xo, yo = libsvm.load_svmlight(d / "ours.svm", n_features=10, zero_based=zero_based)
    assert _exact_bytes(Xo + 0.0) == _exact_bytes(X + 0.0) and _exact_bytes(yo.astype(np.float64)) == _exact_bytes(y)
