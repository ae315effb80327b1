#pragma once
// The shared fixtures of the IncrementalSVM / IncrementalSVC tests (test_idsvm_*.cpp,
// test_incremental_svc.cpp): data streams, the KT check, the SMO oracle, state snapshots.
#include <budgetkernel/budgetkernel.hpp>
#include <budgetkernel/learners/incremental_svc.hpp>
#include <budgetkernel/svm/incremental_svm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace idsvm_test {

using namespace budgetkernel;

struct Data {
  RowMatrix X;
  std::vector<double> y, w;
};

// Two overlapping Gaussian blobs in d dimensions (labels +-1), weights in [0.2, 3] if asked.
inline Data make_data(Index n, Index d, std::uint64_t seed, bool weighted, double sep = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.2, 3.0);
  Data s{RowMatrix(n, d), std::vector<double>(static_cast<std::size_t>(n)), std::vector<double>(static_cast<std::size_t>(n), 1.0)};
  for (Index i = 0; i < n; ++i) {
    const double yi = (rng() & 1) ? 1.0 : -1.0;
    for (Index k = 0; k < d; ++k) s.X(i, k) = nd(rng) + (k == 0 ? sep * yi : 0.0);
    s.y[static_cast<std::size_t>(i)] = yi;
    if (weighted) s.w[static_cast<std::size_t>(i)] = u(rng);
  }
  return s;
}

inline const Kernel kernels[] = {Kernel(KernelType::RBF, 0.7), Kernel(KernelType::Linear),
                          Kernel(KernelType::Polynomial, 0.5, 2, 1.0)};

// Checks the conditions of the brief on a machine; returns the number of failed checks.
inline int check_kkt(const IncrementalSVM& m, const char* where) {
  int bad = 0;
  double ya = 0.0;
  for (Index i = 0; i < m.size(); ++i) {
    const double a = m.alpha(i), u = m.C() * m.weight(i), g = m.g(i);
    ya += m.y(i) * a;
    bool ok = a >= 0.0 && a <= u * (1 + 1e-15) + 1e-300;
    switch (m.set(i)) {
      case SVMSet::Margin: ok = ok && std::abs(g) < 1e-8; break;
      case SVMSet::Error: ok = ok && g <= 1e-8 && a == u; break;
      case SVMSet::Reserve: ok = ok && g >= -1e-8 && a == 0.0; break;
    }
    if (!ok) {
      if (bad < 3)
        std::printf("  %s: example %ld set %d alpha %.17g bound %.17g g %.3g\n", where, static_cast<long>(i),
                    static_cast<int>(m.set(i)), a, u, g);
      ++bad;
    }
  }
  if (!(std::abs(ya) < 1e-10)) {
    std::printf("  %s: sum y alpha = %.3g\n", where, ya);
    ++bad;
  }
  const double res = m.inverse_residual();
  if (!(res < 1e-8)) {
    std::printf("  %s: inverse residual %.3g (|S| = %ld)\n", where, res, static_cast<long>(m.n_margin()));
    ++bad;
  }
  return bad;
}

// g recomputed from scratch against the maintained one: max |g_i - (y_i f(x_i) + ridge a_i - 1)|.
inline double g_drift(const IncrementalSVM& m) {
  double e = 0.0;
  for (Index i = 0; i < m.size(); ++i)
    e = std::max(e, std::abs(m.g(i) - (m.y(i) * m.decision(m.X().row(i).data()) - 1.0 + m.ridge() * m.alpha(i))));
  return e;
}

struct SMOResult {
  Vector alpha;
  double b = 0.0, obj = 0.0;
  bool has_free = false;
};

// ridge > 0: the dual on K + ridge I.
inline SMOResult smo(const RowMatrix& X, const std::vector<double>& y, const std::vector<double>& w, const Kernel& k, double C,
              double ridge = 0.0) {
  const Index n = X.rows();
  Eigen::MatrixXd K(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) K(i, j) = k.value(X.row(i).transpose(), X.row(j).transpose()) + (i == j ? ridge : 0.0);
  Vector yv(n), u(n);
  for (Index i = 0; i < n; ++i) yv(i) = y[static_cast<std::size_t>(i)], u(i) = C * w[static_cast<std::size_t>(i)];
  const Eigen::MatrixXd Q = yv.asDiagonal() * K * yv.asDiagonal();
  Vector a = Vector::Zero(n), G = -Vector::Ones(n);
  double mval = 0.0, Mval = 0.0;
  for (long it = 0; it < 2000000; ++it) {
    Index i = -1, j = -1;
    mval = -1e300;
    Mval = 1e300;
    for (Index t = 0; t < n; ++t) {
      const double v = -yv(t) * G(t);
      const bool up = (yv(t) > 0 && a(t) < u(t)) || (yv(t) < 0 && a(t) > 0);
      const bool low = (yv(t) > 0 && a(t) > 0) || (yv(t) < 0 && a(t) < u(t));
      if (up && v > mval) mval = v, i = t;
      if (low && v < Mval) Mval = v, j = t;
    }
    if (i < 0 || j < 0 || mval - Mval < 1e-13) break;
    const double curv = std::max(K(i, i) + K(j, j) - 2 * K(i, j), 1e-12);
    double d = (mval - Mval) / curv;
    // alpha_i += y_i d, alpha_j -= y_j d, both kept in their boxes.
    d = std::min(d, yv(i) > 0 ? u(i) - a(i) : a(i));
    d = std::min(d, yv(j) > 0 ? a(j) : u(j) - a(j));
    a(i) += yv(i) * d;
    a(j) -= yv(j) * d;
    G += d * (yv(i) * Q.col(i) - yv(j) * Q.col(j));
  }
  SMOResult r;
  r.alpha = a;
  r.obj = 0.5 * a.dot(Q * a) - a.sum();
  double bs = 0.0;
  int nf = 0;
  for (Index t = 0; t < n; ++t)
    if (a(t) > 1e-9 * u(t) && a(t) < u(t) * (1 - 1e-9)) bs += -yv(t) * G(t), ++nf;
  r.has_free = nf > 0;
  r.b = nf > 0 ? bs / nf : 0.5 * (mval + Mval);
  return r;
}

// Exact dual objective of a machine recomputed from its alphas (not from its g), on K + ridge I.
inline double dual_from_scratch(const IncrementalSVM& m) {
  double q = 0.0, s = 0.0;
  for (Index i = 0; i < m.size(); ++i) {
    s += m.alpha(i);
    for (Index j = 0; j < m.size(); ++j)
      q += m.y(i) * m.y(j) * m.alpha(i) * m.alpha(j) * m.kernel().value(m.X().row(i).transpose(), m.X().row(j).transpose());
    q += m.ridge() * m.alpha(i) * m.alpha(i);
  }
  return 0.5 * q - s;
}

// f(x) - b of a machine and of an alpha vector (the unique w part of the decision).
inline double wpart(const RowMatrix& X, const std::vector<double>& y, const Vector& a, const Kernel& k, const double* x, Index d) {
  const Eigen::Map<const Vector> xv(x, d);
  double f = 0.0;
  for (Index i = 0; i < X.rows(); ++i) f += y[static_cast<std::size_t>(i)] * a(i) * k.value(X.row(i).transpose(), xv);
  return f;
}

inline IncrementalSVM train(const Data& s, const Kernel& k, double C, const std::vector<Index>& order, bool weighted = true,
                     double ridge = 0.0) {
  IncrementalSVM m(s.X.cols(), k, C, ridge);
  for (Index i : order)
    m.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)], weighted ? s.w[static_cast<std::size_t>(i)] : 1.0);
  return m;
}

inline std::vector<Index> iota(Index n) {
  std::vector<Index> v(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// Largest |alpha| difference by key between two machines that hold the same keys.
inline double alpha_diff(const IncrementalSVM& a, const IncrementalSVM& b, const std::vector<std::int64_t>& keys_a,
                  const std::vector<std::int64_t>& keys_b) {
  double e = 0.0;
  for (std::size_t t = 0; t < keys_a.size(); ++t)
    e = std::max(e, std::abs(a.alpha(a.index_of(keys_a[t])) - b.alpha(b.index_of(keys_b[t]))));
  return e;
}

inline double decision_diff(const IncrementalSVM& a, const IncrementalSVM& b, const RowMatrix& T) {
  double e = 0.0;
  for (Index i = 0; i < T.rows(); ++i) e = std::max(e, std::abs(a.decision(T.row(i).data()) - b.decision(T.row(i).data())));
  return e;
}

// A copy of a model file without the fields named in drop, which save()
// always writes: a file the writer never produces, which load() must refuse.
inline FieldMap copy_without(const FieldMap& f, std::initializer_list<std::string> drop) {
  FieldMap o = f;
  for (const std::string& name : drop) o.erase(name);
  return o;
}

// Whether T::load refuses the file `good` after `edit` (the model-file error, std::runtime_error);
// an IncrementalSVM's fields are read under the prefix "m.".
template <class T, class Edit>
bool load_refused(const FieldMap& good, Edit&& edit) {
  FieldMap f = good;
  edit(f);
  T t;
  try {
    if constexpr (std::is_same_v<T, IncrementalSVM>)
      t.load(f, "m.");
    else
      t.load(f);
  } catch (const std::runtime_error&) {
    return true;
  }
  return false;
}

// The fields a machine writes, under the prefix "m.".
inline FieldMap saved(const IncrementalSVM& m) {
  FieldMap f;
  m.save(f, "m.");
  return f;
}

// The continuation the save -> load tests run on a machine and its loaded copy: the second
// half of an 80-example stream, then one of each other operation.
inline void continue_stream(IncrementalSVM& m, const Data& s) {
  for (Index i = 40; i < 80; ++i) m.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)], s.w[static_cast<std::size_t>(i)]);
  m.unlearn(50);
  m.set_C(3.0);
  m.set_weight(60, 0.1);
}

// J = [[0, y_S^T], [y_S, Q_SS]] built from scratch (kernel values + ridge on the diagonal) for the
// machine's margin set, against the maintained R: max of |R J - I| and of |R - J^{-1}| / max|J^{-1}|
// (J^{-1} by a fresh full-pivoting LU).
inline double fresh_inverse_gap(const IncrementalSVM& m) {
  const std::vector<Index>& S = m.margin_set();
  const Index P = static_cast<Index>(S.size());
  if (P == 0) return m.inverse_matrix().size() == 0 ? 0.0 : 1.0;
  Eigen::MatrixXd J(P + 1, P + 1);
  J(0, 0) = 0.0;
  for (Index p = 0; p < P; ++p) {
    const Index i = S[static_cast<std::size_t>(p)];
    J(0, p + 1) = J(p + 1, 0) = m.y(i);
    for (Index q = 0; q < P; ++q) {
      const Index j = S[static_cast<std::size_t>(q)];
      J(p + 1, q + 1) = m.y(i) * m.y(j) * m.kernel().value(m.X().row(i).transpose(), m.X().row(j).transpose()) +
                        (p == q ? m.ridge() : 0.0);
    }
  }
  const Eigen::MatrixXd R = m.inverse_matrix();
  if (R.rows() != P + 1 || R.cols() != P + 1) return 1.0;
  Eigen::MatrixXd E = R * J;
  E.diagonal().array() -= 1.0;
  const Eigen::MatrixXd Rf = J.fullPivLu().inverse();
  return std::max(E.cwiseAbs().maxCoeff(), (R - Rf).cwiseAbs().maxCoeff() / Rf.cwiseAbs().maxCoeff());
}

// Two 2-D Gaussian blobs (means +-0.5 apart in x), unit weights: the stream of the rank-deficient case.
inline Data blobs(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Data s{RowMatrix(n, 2), std::vector<double>(static_cast<std::size_t>(n)), std::vector<double>(static_cast<std::size_t>(n), 1.0)};
  for (Index i = 0; i < n; ++i) {
    const double yi = (rng() & 1) ? 1.0 : -1.0;
    s.X(i, 0) = nd(rng) + 0.5 * yi;
    s.X(i, 1) = nd(rng);
    s.y[static_cast<std::size_t>(i)] = yi;
  }
  return s;
}

struct Stream {
  RowMatrix X;
  std::vector<std::int32_t> y;
  std::vector<double> w;
};
inline Stream make_stream(Index n, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.2, 3.0);
  Stream s{RowMatrix(n, 2), {}, {}};
  for (Index i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng() % static_cast<std::uint64_t>(c));
    s.X(i, 0) = nd(rng) + 1.5 * std::cos(2.0 * label);
    s.X(i, 1) = nd(rng) + 1.5 * std::sin(2.0 * label);
    s.y.push_back(label);
    s.w.push_back(u(rng));
  }
  return s;
}
inline IDSVMParams svc_params(double C = 2.0) {
  IDSVMParams p;
  p.kernel = Kernel(KernelType::RBF, 0.5);
  p.C = C;
  return p;
}

/// Largest gap between the learner's decision values on T and every machine's own decision(),
/// a kernel row over every stored example (alpha = 0 ones included).
inline double gap_to_machines(const IncrementalSVC& l, const RowMatrix& T) {
  RowMatrix D(T.rows(), l.n_outputs());
  l.decision_function(T, D);
  double e = 0.0;
  for (Index i = 0; i < T.rows(); ++i)
    for (Index k = 0; k < l.n_outputs(); ++k)
      e = std::max(e, std::abs(D(i, k) - l.machine(k).decision(T.row(i).data())));
  return e;
}

// A machine's state, field by field (the readable part) and as save() bytes (everything saved:
// x, y, alpha, weights, g, keys, sets, S, Q_S, R, b, C, counters, next key).
struct MachineState {
  std::vector<double> alpha, g;
  std::vector<int> sets;
  double b = 0.0;
  Eigen::MatrixXd R;
  std::string bytes;
  bool operator==(const MachineState& o) const {
    return alpha == o.alpha && g == o.g && sets == o.sets && b == o.b && R.rows() == o.R.rows() &&
           R.cols() == o.R.cols() && R == o.R && bytes == o.bytes;
  }
};
inline MachineState state_of(const IncrementalSVM& m) {
  MachineState st;
  for (Index i = 0; i < m.size(); ++i) {
    st.alpha.push_back(m.alpha(i));
    st.g.push_back(m.g(i));
    st.sets.push_back(static_cast<int>(m.set(i)));
  }
  st.b = m.bias();
  st.R = m.inverse_matrix();
  FieldMap fm;
  m.save(fm, "m.");
  st.bytes = fm.to_bytes();
  return st;
}
inline std::string bytes_of(const IncrementalSVC& l) {
  FieldMap fm;
  l.save(fm);
  return fm.to_bytes();
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline Stream as_stream(const Data& d) {
  Stream s{d.X, {}, {}};
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    s.y.push_back(d.y[i] > 0.0 ? 1 : 0);
    s.w.push_back(1.0);
  }
  return s;
}

}  // namespace idsvm_test
