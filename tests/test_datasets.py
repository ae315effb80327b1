"""Tests for budgetkernel.datasets (synthetic streams, svmlight I/O, standardizer)."""

import gzip
import io
import itertools
import math
import os

import numpy as np
import pytest

from budgetkernel import datasets
from budgetkernel import io as bk_io
from budgetkernel.preprocessing import StreamingStandardizer
from budgetkernel.datasets._bayes import _waveform_log_likelihood

NAMES = ["checkerboard", "noisy_checkerboard", "two_gaussians", "waveform"]
N_FEATURES = {"checkerboard": 2, "noisy_checkerboard": 2, "two_gaussians": 2, "waveform": 21}


def _within_se(p_hat, p, n, k=3.0):
    se = math.sqrt(p * (1.0 - p) / n)
    return abs(p_hat - p) <= k * se


def _concat(chunks):
    chunks = list(chunks)
    return (np.concatenate([c[0] for c in chunks]),
            np.concatenate([c[1] for c in chunks]), [c[0].shape[0] for c in chunks])


def _rule(X):
    """Clean checkerboard label, written independently of the module."""
    return np.array([1 if (math.floor(a) + math.floor(b)) % 2 == 0 else -1 for a, b in X])


# ---------------------------------------------------------------------------
# Checkerboard
# ---------------------------------------------------------------------------


def test_checkerboard_labels_follow_rule_exactly():
    X, y = datasets.checkerboard(5000, random_state=0)
    assert X.shape == (5000, 2) and X.dtype == np.float64
    assert y.shape == (5000,) and y.dtype.kind == "i"
    assert np.all((X >= 0.0) & (X < 4.0))
    np.testing.assert_array_equal(y, _rule(X))
    # All 16 cells are populated, roughly uniformly.
    cells = np.floor(X).astype(int)
    counts = np.bincount(cells[:, 0] * 4 + cells[:, 1], minlength=16)
    assert counts.min() > 5000 / 16 * 0.8


def test_noisy_checkerboard_flip_rate_and_clean_test_set():
    n = 200_000
    X, y = datasets.noisy_checkerboard(n, random_state=1)
    clean = np.where((np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2 == 0, 1, -1)
    rate = np.mean(y != clean)
    assert _within_se(rate, 0.15, n), rate
    assert set(np.unique(y)) == {-1, 1}
    # clean=True: same inputs, labels follow the rule exactly.
    Xc, yc = datasets.noisy_checkerboard(n, random_state=1, clean=True)
    np.testing.assert_array_equal(Xc, X)
    np.testing.assert_array_equal(yc, clean)


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.3, 1.0])
def test_checkerboard_noise_parameter(noise):
    n = 100_000
    X, y = datasets.checkerboard(n, noise=noise, random_state=2)
    X0, y0 = datasets.checkerboard(n, noise=0.0, random_state=2)
    np.testing.assert_array_equal(X, X0)
    rate = np.mean(y != y0)
    if noise in (0.0, 1.0):
        assert rate == noise
    else:
        assert _within_se(rate, noise, n), rate


def test_checkerboard_rejects_bad_noise():
    with pytest.raises(ValueError):
        datasets.checkerboard(10, noise=1.5)
    with pytest.raises(ValueError):
        datasets.checkerboard(10, noise=-0.1)


# ---------------------------------------------------------------------------
# Two Gaussians
# ---------------------------------------------------------------------------


def test_two_gaussians_prior_and_class_conditionals():
    n = 200_000
    X, y = datasets.two_gaussians(n, random_state=3)
    assert X.shape == (n, 2) and X.dtype == np.float64
    assert set(np.unique(y)) == {-1, 1}
    pos = y == 1
    assert _within_se(pos.mean(), 0.4, n), pos.mean()

    for mask, mean, sd in ((pos, np.array([0.0, 0.0]), 1.0), (~pos, np.array([2.0, 0.0]), 2.0)):
        Xc = X[mask]
        m = Xc.shape[0]
        # Means within 4 standard errors.
        assert np.all(np.abs(Xc.mean(axis=0) - mean) < 4 * sd / math.sqrt(m))
        cov = np.cov(Xc, rowvar=False)
        var_se = sd**2 * math.sqrt(2.0 / m)
        assert np.all(np.abs(np.diag(cov) - sd**2) < 4 * var_se), cov
        assert abs(cov[0, 1]) < 4 * sd**2 / math.sqrt(m), cov


def test_two_gaussians_bayes_accuracy():
    acc = datasets.two_gaussians_bayes_accuracy()
    assert 0.80 <= acc <= 0.812
    # Deterministic.
    assert datasets.two_gaussians_bayes_accuracy() == acc
    # Monte Carlo check of the same number with the Bayes rule written from
    # the densities: 0.4 N(x; 0, I) vs 0.6 N(x; (2, 0), 4 I).
    n = 400_000
    X, y = datasets.two_gaussians(n, random_state=4)
    log_pos = math.log(0.4) - math.log(2 * math.pi) - 0.5 * np.sum(X**2, axis=1)
    log_neg = (math.log(0.6) - math.log(2 * math.pi * 4.0)
               - np.sum((X - [2.0, 0.0]) ** 2, axis=1) / 8.0)
    pred = np.where(log_pos > log_neg, 1, -1)
    mc = np.mean(pred == y)
    assert _within_se(mc, acc, n), (mc, acc)


# ---------------------------------------------------------------------------
# Waveform
# ---------------------------------------------------------------------------


def _base_waves():
    i = np.arange(1, 22)
    h1 = np.array([max(6 - abs(k - 11), 0) for k in i], dtype=float)
    h2 = np.array([max(6 - abs((k - 4) - 11), 0) for k in i], dtype=float)  # h1(i - 4)
    h3 = np.array([max(6 - abs((k + 4) - 11), 0) for k in i], dtype=float)  # h1(i + 4)
    return h1, h2, h3


def test_waveform_base_waves():
    h1, h2, h3 = _base_waves()
    np.testing.assert_array_equal(datasets.WAVEFORM_BASE_WAVES, np.vstack([h1, h2, h3]))
    # Peaks (1-based) at 11, 15 and 7, the positions used by the UCI generator.
    assert [int(np.argmax(h)) + 1 for h in (h1, h2, h3)] == [11, 15, 7]
    assert all(h.max() == 6 and np.count_nonzero(h) == 11 for h in (h1, h2, h3))


def test_waveform_shapes_balance_and_class_moments():
    n = 120_000
    X, y = datasets.waveform(n, random_state=5)
    assert X.shape == (n, 21) and X.dtype == np.float64
    assert y.shape == (n,) and y.dtype.kind == "i"
    assert set(np.unique(y)) == {0, 1, 2}
    h1, h2, h3 = _base_waves()
    pairs = {0: (h1, h2), 1: (h1, h3), 2: (h2, h3)}
    for c, (a, b) in pairs.items():
        Xc = X[y == c]
        m = Xc.shape[0]
        assert _within_se(m / n, 1.0 / 3.0, n), m / n
        # E[x | c] = (a + b) / 2 ; Var[x_i | c] = (a_i - b_i)^2 / 12 + 1.
        var = (a - b) ** 2 / 12.0 + 1.0
        z = (Xc.mean(axis=0) - (a + b) / 2.0) / np.sqrt(var / m)
        assert np.all(np.abs(z) < 4.5), z
        var_hat = Xc.var(axis=0)
        assert np.all(np.abs(var_hat / var - 1.0) < 0.05), var_hat / var


def test_waveform_bayes_accuracy():
    acc = datasets.waveform_bayes_accuracy(50_000, random_state=0)
    assert 0.85 <= acc <= 0.88
    # The exact Bayes rule applied to fresh data agrees.
    X, y = datasets.waveform(50_000, random_state=6)
    pred = np.argmax(_waveform_log_likelihood(X), axis=1)
    assert _within_se(np.mean(pred == y), acc, 50_000, k=4.0)


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_stream_independent_of_chunk_size(name):
    n = 9_001  # not a multiple of any chunk size nor of the internal block
    ref = None
    for chunk_size in (1000, 7, 10_000):
        X, y, sizes = _concat(datasets.stream(name, n, chunk_size=chunk_size, random_state=42))
        assert X.shape == (n, N_FEATURES[name]) and y.shape == (n,)
        assert all(s == chunk_size for s in sizes[:-1])
        assert 0 < sizes[-1] <= chunk_size and sum(sizes) == n
        assert np.all(np.isfinite(X))
        if ref is None:
            ref = (X, y)
        else:
            np.testing.assert_array_equal(X, ref[0])
            np.testing.assert_array_equal(y, ref[1])
    # The sized stream is a prefix of the generator function's output ...
    func = getattr(datasets, name)
    Xf, yf = func(n, random_state=42)
    np.testing.assert_array_equal(Xf, ref[0])
    np.testing.assert_array_equal(yf, ref[1])
    # ... and of the infinite stream.
    inf = datasets.stream(name, None, chunk_size=3000, random_state=42)
    Xi, yi, _ = _concat(itertools.islice(inf, 4))
    np.testing.assert_array_equal(Xi[:n], ref[0])
    np.testing.assert_array_equal(yi[:n], ref[1])
    # A different seed gives different data.
    Xo, _, _ = _concat(datasets.stream(name, n, chunk_size=1000, random_state=43))
    assert not np.array_equal(Xo, ref[0])


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 20_000])
def test_sized_stream_stops_exactly(n):
    chunks = list(datasets.stream("two_gaussians", n, chunk_size=1000, random_state=0))
    assert sum(c[0].shape[0] for c in chunks) == n
    assert all(c[0].shape[0] == c[1].shape[0] for c in chunks)
    if n == 0:
        assert chunks == []


def test_infinite_stream_keeps_going():
    it = datasets.stream("waveform", chunk_size=5000, random_state=0)
    chunks = list(itertools.islice(it, 5))
    assert [c[0].shape for c in chunks] == [(5000, 21)] * 5
    X = np.concatenate([c[0] for c in chunks])
    assert len(np.unique(X[:, 0])) == X.shape[0]  # no repeated blocks


def test_stream_seed_types():
    a = _concat(datasets.stream("checkerboard", 5000, random_state=7))[0]
    b = _concat(datasets.stream("checkerboard", 5000,
                                random_state=np.random.SeedSequence(7)))[0]
    np.testing.assert_array_equal(a, b)
    # A Generator is consumed but reproducible from the same generator seed.
    g1, g2 = np.random.default_rng(11), np.random.default_rng(11)
    c1 = _concat(datasets.stream("checkerboard", 5000, random_state=g1))[0]
    c2 = _concat(datasets.stream("checkerboard", 5000, random_state=g2))[0]
    np.testing.assert_array_equal(c1, c2)
    c3 = _concat(datasets.stream("checkerboard", 5000, random_state=g1))[0]
    assert not np.array_equal(c1, c3)
    # None: fresh entropy.
    d1 = datasets.checkerboard(100)[0]
    d2 = datasets.checkerboard(100)[0]
    assert not np.array_equal(d1, d2)


def test_stream_argument_validation():
    with pytest.raises(ValueError):
        datasets.stream("nope", 10)
    with pytest.raises(TypeError):
        datasets.stream("two_gaussians", 10, noise=0.1)
    with pytest.raises(ValueError):
        datasets.stream("checkerboard", 10, chunk_size=0)
    with pytest.raises(ValueError):
        datasets.stream("checkerboard", -1)
    with pytest.raises(TypeError):
        datasets.stream("checkerboard", 10, random_state="seed")
    X, y, _ = _concat(datasets.stream("noisy_checkerboard", 3000, random_state=0, clean=True))
    np.testing.assert_array_equal(y, _rule(X))


@pytest.mark.parametrize("name", NAMES)
def test_make_stream_and_test(name):
    train, (X_test, y_test) = datasets.make_stream_and_test(name, 6000, 3000, 9,
                                                            chunk_size=2500)
    Xtr, ytr, sizes = _concat(train)
    assert sizes == [2500, 2500, 1000]
    assert X_test.shape == (3000, N_FEATURES[name]) and y_test.shape == (3000,)
    assert np.all(np.isfinite(X_test)) and np.all(np.isfinite(Xtr))
    # Independent draws: no shared rows.
    common = set(map(tuple, Xtr.tolist())) & set(map(tuple, X_test.tolist()))
    assert not common
    # Reproducible.
    train2, (X_test2, y_test2) = datasets.make_stream_and_test(name, 6000, 3000, 9)
    np.testing.assert_array_equal(X_test2, X_test)
    np.testing.assert_array_equal(y_test2, y_test)
    np.testing.assert_array_equal(_concat(train2)[0], Xtr)
    if name in ("checkerboard", "noisy_checkerboard"):
        np.testing.assert_array_equal(y_test, _rule(X_test))  # clean test set
    if name == "noisy_checkerboard":
        rate = np.mean(ytr != _rule(Xtr))
        assert _within_se(rate, 0.15, Xtr.shape[0], k=4.0)


def test_make_stream_and_test_noisy_test_option():
    _, (X, y) = datasets.make_stream_and_test("noisy_checkerboard", 10, 20_000, 0,
                                              clean_test=False)
    assert _within_se(np.mean(y != _rule(X)), 0.15, 20_000, k=4.0)


@pytest.mark.parametrize("name", NAMES)
def test_nothing_generated_is_nan(name):
    X, y = getattr(datasets, name)(50_000, random_state=10)
    assert np.all(np.isfinite(X))
    assert np.all(np.isfinite(y))


# ---------------------------------------------------------------------------
# svmlight
# ---------------------------------------------------------------------------


def _sparse_data(n=60, d=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-300, 300, size=(n, d))
    X[rng.random((n, d)) < 0.6] = 0.0
    X[0, :] = [0.1, 1 / 3, 5e-324, -1.7976931348623157e308, 2.0**-1074 * 3, 1e22, -0.0, 7.0, 0]
    X[1, :] = 0.0  # an empty row
    X[2, 0] = 1.5  # column 0 used (needed for zero-based 'auto' detection)
    X[3, -1] = -2.5  # last column used
    return X


def test_svmlight_round_trip_exact(tmp_path):
    X = _sparse_data()
    y_int = np.random.default_rng(1).choice([-1, 1, 3], size=X.shape[0])
    y_float = np.random.default_rng(2).standard_normal(X.shape[0])
    y_float[:3] = [1.0, -1.0, 1e300]  # integral floats stay floats
    for y in (y_int, y_float):
        for zero_based in (False, True):
            for suffix in (".txt", ".txt.gz"):
                path = tmp_path / f"data_{y.dtype.kind}_{zero_based}{suffix}"
                bk_io.dump_svmlight(X, y, path, zero_based=zero_based)
                for zb in (zero_based, "auto"):
                    X2, y2 = bk_io.load_svmlight(path, zero_based=zb)
                    assert X2.dtype == np.float64 and X2.shape == X.shape
                    np.testing.assert_array_equal(X2, X)
                    np.testing.assert_array_equal(y2, y)
                    assert y2.dtype == (np.int64 if y.dtype.kind == "i" else np.float64)
    # The gzip file really is compressed.
    with open(tmp_path / "data_i_False.txt.gz", "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"


def test_svmlight_format_details(tmp_path):
    X = np.array([[0.0, 2.5, 0.0], [0.1, 0.0, 0.0]])
    buf = io.StringIO()
    bk_io.dump_svmlight(X, np.array([1, -1]), buf)
    assert buf.getvalue() == "1 2:2.5\n-1 1:0.10000000000000001\n"
    bbuf = io.BytesIO()
    bk_io.dump_svmlight(X, np.array([0.5, 2.0]), bbuf, zero_based=True)
    assert bbuf.getvalue() == b"0.5 1:2.5\n2.0 0:0.10000000000000001\n"
    with pytest.raises(ValueError):
        bk_io.dump_svmlight(np.array([[np.nan]]), np.array([1]), io.StringIO())
    with pytest.raises(ValueError):
        bk_io.dump_svmlight(X, np.array([1]), io.StringIO())


def test_svmlight_comments_qid_blank_lines_and_padding(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("# header comment\n"
                    "+1 qid:3 3:1.5 1:2 # trailing comment\n"
                    "\n"
                    "-1\n"
                    "2 2:-4e-3\n")
    X, y = bk_io.load_svmlight(path)
    np.testing.assert_array_equal(X, [[2.0, 0.0, 1.5], [0.0, 0.0, 0.0], [0.0, -4e-3, 0.0]])
    np.testing.assert_array_equal(y, [1, -1, 2])
    assert y.dtype == np.int64
    X5, _ = bk_io.load_svmlight(path, n_features=5)
    assert X5.shape == (3, 5) and np.array_equal(X5[:, :3], X)
    with pytest.raises(ValueError, match="n_features"):
        bk_io.load_svmlight(path, n_features=2)
    # Empty file.
    empty = tmp_path / "empty.svm"
    empty.write_text("")
    Xe, ye = bk_io.load_svmlight(empty, n_features=4)
    assert Xe.shape == (0, 4) and ye.shape == (0,)
    assert list(bk_io.iter_svmlight(empty)) == []


def test_svmlight_chunked_equals_whole(tmp_path):
    X = _sparse_data(n=101, seed=3)
    y = np.arange(101) % 3 - 1
    path = tmp_path / "chunks.svm.gz"
    bk_io.dump_svmlight(X, y, path)
    Xw, yw = bk_io.load_svmlight(path)
    for chunk_size in (1, 7, 100, 101, 1000):
        chunks = list(bk_io.iter_svmlight(path, chunk_size=chunk_size))
        assert all(c[0].shape[0] == chunk_size for c in chunks[:-1])
        Xc, yc, _ = _concat(chunks)
        np.testing.assert_array_equal(Xc, Xw)
        np.testing.assert_array_equal(yc, yw)
    # Single-pass mode (everything given) gives the same result.
    single = bk_io.iter_svmlight(path, n_features=9, zero_based=False,
                                    label_dtype=np.int64, chunk_size=10)
    Xs, ys, _ = _concat(single)
    np.testing.assert_array_equal(Xs, Xw)
    np.testing.assert_array_equal(ys, yw)


def test_svmlight_float32(tmp_path):
    X = np.random.default_rng(0).standard_normal((50, 4))
    X[X < 0.3] = 0.0
    path = tmp_path / "f32.svm"
    bk_io.dump_svmlight(X, np.ones(50, dtype=int), path)
    X32, _ = bk_io.load_svmlight(path, dtype=np.float32)
    assert X32.dtype == np.float32
    np.testing.assert_array_equal(X32, X.astype(np.float32))
    X[7, 2] = 1e300
    bk_io.dump_svmlight(X, np.ones(50, dtype=int), path)
    with pytest.raises(ValueError, match="line 8.*overflows"):
        bk_io.load_svmlight(path, dtype=np.float32)
    with pytest.raises(ValueError):
        bk_io.load_svmlight(path, dtype=np.int64)


MALFORMED = [
    ("1 1:2\n-1 3 4:1\n", {}, 2, "missing ':'"),
    ("1 1:2\n1 2:1\n-1 3:abc\n", {}, 3, "non-numeric"),
    ("1 1:nan\n", {}, 1, "non-finite"),
    ("1 1:2\n1 1:-inf\n", {}, 2, "non-finite"),
    ("1 1:2\n-1 -2:1\n", {}, 2, "negative"),
    ("1 1:2\n-1 0:1\n", {"zero_based": False}, 2, "index 0"),
    ("1 1:2\nfoo 2:1\n", {}, 2, "label"),
    ("1 1:2\nnan 2:1\n", {}, 2, "label"),
    ("1 1:2\n1 x:1\n", {}, 2, "index"),
    ("1 1:2\n1 2:1 2:3\n", {}, 2, "duplicate"),
    ("1 1:2\n1 1_0:1\n", {}, 2, "index"),
    ("1 1:2\n1 2:1_0\n", {}, 2, "non-numeric"),
    ("1 1:2\n\n1 7:1\n", {"n_features": 3, "zero_based": False, "label_dtype": np.int64},
     3, "exceeds"),
    ("1 1:2\n1.5 2:1\n", {"n_features": 3, "zero_based": False, "label_dtype": np.int64},
     2, "label"),
]


@pytest.mark.parametrize("text,kwargs,line,fragment", MALFORMED)
def test_svmlight_malformed_lines_name_file_and_line(tmp_path, text, kwargs, line, fragment):
    path = tmp_path / "bad_file.svm"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        bk_io.load_svmlight(path, **kwargs)
    msg = str(info.value)
    assert "bad_file.svm" in msg and f"line {line}" in msg and fragment in msg, msg
    with pytest.raises(ValueError, match=f"line {line}"):
        list(bk_io.iter_svmlight(path, chunk_size=1, **kwargs))


def test_svmlight_malformed_gzip(tmp_path):
    path = tmp_path / "bad.svm.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("1 1:2\n1 1:3\n1 2\n")
    with pytest.raises(ValueError, match=r"bad\.svm\.gz.*line 3"):
        bk_io.load_svmlight(path)


def test_svmlight_float_labels(tmp_path):
    path = tmp_path / "f.svm"
    path.write_text("1 1:1\n0.5 2:1\n-2 1:3\n")
    _, y = bk_io.load_svmlight(path)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [1.0, 0.5, -2.0])


needs_pipes = pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")


@needs_pipes
@pytest.mark.parametrize("compress", [False, True])
def test_svmlight_streams_a_pipe_in_single_pass(compress, tmp_path, pipe_fed_with):
    X = _sparse_data(n=300, seed=4)
    y = np.arange(300) % 3 - 1
    path = tmp_path / "data.svm"
    bk_io.dump_svmlight(X, y, path, zero_based=True)
    data = path.read_bytes()
    if compress:
        data = gzip.compress(data)
    # The first part is one byte: the gzip magic must be peeked at, not consumed,
    # and a pipe may deliver it in pieces.
    pipe, thread = pipe_fed_with(data[:1], data[1:5000], data[5000:])
    chunks = bk_io.iter_svmlight(pipe, n_features=9, zero_based=True,
                                    label_dtype=np.int64, chunk_size=64)
    Xs, ys, sizes = _concat(chunks)
    thread.join(timeout=10)
    np.testing.assert_array_equal(Xs, X)  # line 1 included
    np.testing.assert_array_equal(ys, y)
    assert sizes == [64] * 4 + [44]
    pipe, thread = pipe_fed_with(data)
    Xl, yl = bk_io.load_svmlight(pipe, n_features=9, zero_based=True, label_dtype=np.int64)
    thread.join(timeout=10)
    np.testing.assert_array_equal(Xl, X)
    np.testing.assert_array_equal(yl, y)


@needs_pipes
def test_svmlight_pipe_without_single_pass_arguments_is_an_error(pipe_fed_with):
    pipe, _ = pipe_fed_with(b"1 1:2\n")
    with pytest.raises(ValueError, match=r"read only once.*missing: zero_based, label_dtype"):
        bk_io.iter_svmlight(pipe, n_features=3)
    with pytest.raises(ValueError,
                       match=r"read only once.*missing: n_features, zero_based, label_dtype"):
        bk_io.load_svmlight(pipe)
    # with all three it streams
    X, _ = bk_io.load_svmlight(pipe, n_features=3, zero_based=False, label_dtype=np.int64)
    np.testing.assert_array_equal(X, [[2.0, 0.0, 0.0]])


def test_svmlight_byte_order_mark_and_bad_utf8(tmp_path):
    bom = tmp_path / "bom.svm"
    bom.write_bytes(b"\xef\xbb\xbf1 1:2\n-1 2:3\n")
    X, y = bk_io.load_svmlight(bom)
    np.testing.assert_array_equal(X, [[2.0, 0.0], [0.0, 3.0]])
    np.testing.assert_array_equal(y, [1, -1])
    assert y.dtype == np.int64
    with gzip.open(tmp_path / "bom.svm.gz", "wb") as fh:
        fh.write(b"\xef\xbb\xbf1 1:2\n")
    np.testing.assert_array_equal(bk_io.load_svmlight(tmp_path / "bom.svm.gz")[1], [1])
    # A Latin-1 byte far beyond the decoder's first block still names its own line.
    bad = tmp_path / "latin1.svm"
    bad.write_bytes(b"1 1:2\n" * 5000 + b"-1 2:3 # caf\xe9\n" + b"1 1:2\n")
    for kwargs in ({}, {"n_features": 2, "zero_based": False, "label_dtype": np.int64}):
        with pytest.raises(ValueError, match=r"latin1\.svm.*line 5001.*0xe9.*UTF-8"):
            bk_io.load_svmlight(bad, **kwargs)


# ---------------------------------------------------------------------------
# StreamingStandardizer
# ---------------------------------------------------------------------------


def _std_data(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)) * [1.0, 10.0, 0.01, 3.0] + [5.0, -100.0, 0.3, 1e3]
    X[:, 2] = 0.1  # constant feature (non-representable value)
    return X


def test_standardizer_matches_numpy_on_warmup_prefix_and_freezes():
    X = _std_data()
    s = StreamingStandardizer(n_warmup=1000)
    for start in range(0, 3000, 137):  # chunk boundaries do not align with 1000
        s.partial_fit(X[start:start + 137])
        if start + 137 >= 1000:
            frozen = (s.mean_.copy(), s.scale_.copy())
    assert s.n_seen_ == 1000 and s.frozen_
    prefix = X[:1000]
    ref_scale = prefix.std(axis=0)
    ref_scale[2] = 1.0
    np.testing.assert_allclose(s.mean_, prefix.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.scale_, ref_scale, rtol=1e-12, atol=0)
    assert s.scale_[2] == 1.0
    # Frozen: identical after more data, and data far from the prefix is ignored.
    np.testing.assert_array_equal(s.mean_, frozen[0])
    np.testing.assert_array_equal(s.scale_, frozen[1])
    s.partial_fit(X[3000:] * 50.0)
    np.testing.assert_array_equal(s.mean_, frozen[0])
    assert s.n_seen_ == 1000
    np.testing.assert_allclose(s.transform(X), (X - prefix.mean(axis=0)) / ref_scale,
                               rtol=1e-12, atol=1e-12)


def test_standardizer_fit_transform_stream():
    X = _std_data(n=4321, seed=1)
    y = np.arange(X.shape[0])
    chunks = [(X[i:i + 300], y[i:i + 300]) for i in range(0, X.shape[0], 300)]
    s = StreamingStandardizer(n_warmup=1000)
    out = list(s.fit_transform_stream(iter(chunks)))
    assert [o[0].shape for o in out] == [c[0].shape for c in chunks]
    for (_, yo), (_, yc) in zip(out, chunks):
        np.testing.assert_array_equal(yo, yc)
    Xt = np.concatenate([o[0] for o in out])
    prefix = X[:1000]
    scale = prefix.std(axis=0)
    scale[2] = 1.0
    np.testing.assert_allclose(Xt, (X - prefix.mean(axis=0)) / scale, rtol=1e-12, atol=1e-12)
    assert s.n_seen_ == 1000
    # Bare arrays are accepted too; a stream shorter than the warm-up uses all of it.
    s2 = StreamingStandardizer(n_warmup=10_000)
    out2 = list(s2.fit_transform_stream([X[:500], X[500:800]]))
    assert s2.n_seen_ == 800 and not s2.frozen_
    np.testing.assert_allclose(np.concatenate(out2)[:, [0, 1, 3]],
                               ((X[:800] - X[:800].mean(0)) / X[:800].std(0))[:, [0, 1, 3]],
                               rtol=1e-12, atol=1e-12)


def test_standardizer_with_generated_stream():
    s = StreamingStandardizer(n_warmup=2500)
    src = datasets.stream("waveform", 12_000, chunk_size=1000, random_state=0)
    Xt, _, sizes = _concat(s.fit_transform_stream(src))
    X, _ = datasets.waveform(12_000, random_state=0)
    assert sizes == [1000] * 12
    np.testing.assert_allclose(Xt, (X - X[:2500].mean(0)) / X[:2500].std(0),
                               rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(Xt))


def test_standardizer_errors():
    s = StreamingStandardizer(n_warmup=10)
    with pytest.raises(ValueError, match="not fitted"):
        s.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        s.partial_fit(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN"):
        s.partial_fit(np.array([[1.0, np.inf]]))
    with pytest.raises(ValueError):
        s.partial_fit(np.zeros(3))
    s.partial_fit(np.ones((4, 3)))
    np.testing.assert_array_equal(s.scale_, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="features"):
        s.partial_fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="features"):
        s.transform(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        s.transform(np.array([[0.0, 0.0, -np.inf]]))
    with pytest.raises(ValueError):
        list(StreamingStandardizer(5).fit_transform_stream([np.array([[np.nan]])]))
    with pytest.raises(ValueError):
        StreamingStandardizer(n_warmup=0)


@pytest.mark.parametrize("X", [[[1e200], [-1e200]],
                               [[1e308], [1.7e308], [1.5e308]],
                               [[-1.7976931348623157e308], [1.7976931348623157e308]]])
def test_standardizer_huge_values_do_not_overflow(X):
    X = np.array(X)
    s = StreamingStandardizer(n_warmup=10).partial_fit(X)
    unit = 2.0 ** 1000  # the reference is computed in scaled space, where it is exact
    np.testing.assert_allclose(s.mean_, (X / unit).mean(axis=0) * unit, rtol=1e-15)
    np.testing.assert_allclose(s.scale_, (X / unit).std(axis=0) * unit, rtol=1e-15)
    assert np.all(np.isfinite(s.transform(X)))


def test_standardizer_scaled_moments_merge_across_chunks():
    # Chunks with very different magnitudes: the moments of the small chunk are
    # carried over to the unit of the huge one.
    X = np.array([[1.0, 0.5], [3.0, 0.25], [1e300, 0.75], [-2e300, 1.0]])
    s = StreamingStandardizer(n_warmup=10)
    s.partial_fit(X[:2]).partial_fit(X[2:])
    np.testing.assert_allclose(s.mean_, [-2.5e299, 0.625], rtol=1e-15)
    np.testing.assert_allclose(s.scale_[0], (X[:, 0] / 1e300).std() * 1e300, rtol=1e-15)
    np.testing.assert_allclose(s.scale_[1], X[:, 1].std(), rtol=1e-15)
    assert s.var_[0] == np.inf  # 1.6e600 has no float64
