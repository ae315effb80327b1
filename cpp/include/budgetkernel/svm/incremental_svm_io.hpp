#pragma once
/// \file svm/incremental_svm_io.hpp
/// Part of svm/incremental_svm.hpp (included at its end; include that header, not this one):
/// IncrementalSVM's exact state in a model file (FieldMap fields under a prefix) and back.
///
/// save() writes everything a path reads, so that a loaded copy continues bit for bit: the
/// examples, y, alpha, weight and g of each, keys, sets, the margin set in R's row order,
/// Q_{:,S}, R itself, b, C, the ridge, the counters and m_kmax. load() checks what it reads
/// before it replaces anything: field shapes and finiteness, each example, the margin set,
/// every column of Q_{:,S} against the examples and kernel, the KT conditions and R against J.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace budgetkernel {

/// Writes the exact state under `prefix` (resumes bit for bit).
inline void IncrementalSVM::save(FieldMap& fm, const std::string& prefix) const {
  const Index n = m_n, P = n_margin();
  fm.set_int(prefix + "dim", m_d);
  write_kernel(fm, m_kernel, prefix);
  fm.set(prefix + "C", m_C);
  fm.set(prefix + "ridge", m_ridge);
  fm.set(prefix + "b", m_b);
  fm.set_int(prefix + "next_key", m_next_key);
  fm.set_int(prefix + "steps", m_steps);
  fm.set_int(prefix + "refactors", m_refactors);
  fm.set_int(prefix + "since_check", m_since_check);
  fm.set_int(prefix + "repairs", m_repairs);
  // max |Q_ii| over every example seen, unlearned ones included: it scales the path's noise
  // and pivot thresholds, so a loaded copy needs it to follow the same path after removals
  // (the remaining examples' maximum can be smaller).
  fm.set(prefix + "kmax", m_kmax);
  fm.set_matrix(prefix + "x", m_X.topRows(n));
  RowMatrix v(n, 4);
  for (Index i = 0; i < n; ++i) v.row(i) << m_y(i), m_alpha(i), m_s(i), m_g(i);
  fm.set_matrix(prefix + "ya_s_g", v);
  std::vector<std::int64_t> keys(m_key.begin(), m_key.begin() + n), sets(static_cast<std::size_t>(n)),
      S(m_S.begin(), m_S.end());
  for (Index i = 0; i < n; ++i) sets[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(m_set[i]);
  fm.set_ints(prefix + "keys", keys);
  fm.set_ints(prefix + "sets", sets);
  fm.set_ints(prefix + "margin", S);
  fm.set_matrix(prefix + "Q_S", m_Q.topLeftCorner(n, P));
  fm.set_matrix(prefix + "R", P > 0 ? Eigen::MatrixXd(m_R.inverse()) : Eigen::MatrixXd(0, 0));
}

/// Restores what save() wrote. \throws std::runtime_error ("model file: ...") on missing,
/// inconsistent or non-finite fields (the object is then left unchanged).
inline void IncrementalSVM::load(const FieldMap& fm, const std::string& prefix) {
  IncrementalSVM t;
  load_scalars(t, fm, prefix);
  const RowMatrix X = fm.get_matrix(prefix + "x", -1, t.m_d);
  const Index n = X.rows();
  const RowMatrix v = fm.get_matrix(prefix + "ya_s_g", n, 4);
  const auto keys = fm.get_ints(prefix + "keys", n), sets = fm.get_ints(prefix + "sets", n);
  const auto S = fm.get_ints(prefix + "margin");
  const Index P = static_cast<Index>(S.size());
  const RowMatrix Q = fm.get_matrix(prefix + "Q_S", n, P);
  const RowMatrix R = fm.get_matrix(prefix + "R", P > 0 ? P + 1 : 0, P > 0 ? P + 1 : 0);
  if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(v.data(), v.size()) ||
      !detail::all_finite(Q.data(), Q.size()) || !detail::all_finite(R.data(), R.size()))
    detail::corrupt("IDSVM: non-finite state");
  load_examples(t, X, v, keys, sets);
  load_kmax(t, fm, prefix);
  load_margin_set(t, S);
  check_loaded_columns(t, Q);
  t.grow_cols(P);
  t.m_Q.topLeftCorner(n, P) = Q;
  t.gather_qss();
  if (P > 0) t.m_R.assign(R);
  check_loaded_solution(t);
  *this = std::move(t);
}

/// The dimension, kernel, C, ridge, b and the counters, each checked.
inline void IncrementalSVM::load_scalars(IncrementalSVM& t, const FieldMap& fm, const std::string& prefix) {
  t.m_d = fm.get_i64(prefix + "dim");
  if (t.m_d < 1 || t.m_d > (std::int64_t{1} << 40)) detail::corrupt("IDSVM: invalid dimension");
  t.m_kernel = read_kernel(fm, prefix);
  t.m_C = fm.get_f64(prefix + "C");
  t.m_ridge = fm.get_f64(prefix + "ridge");
  t.m_b = fm.get_f64(prefix + "b");
  if (!(std::isfinite(t.m_C) && t.m_C > 0.0) || !std::isfinite(t.m_b)) detail::corrupt("IDSVM: invalid C or b");
  if (!(std::isfinite(t.m_ridge) && t.m_ridge >= 0.0)) detail::corrupt("IDSVM: invalid ridge");
  t.m_next_key = fm.get_i64(prefix + "next_key");
  t.m_steps = fm.get_i64(prefix + "steps");
  t.m_refactors = fm.get_i64(prefix + "refactors");
  t.m_since_check = fm.get_i64(prefix + "since_check");
  t.m_repairs = fm.get_i64(prefix + "repairs");
  constexpr std::int64_t most = detail::kMaxLoadedCount;
  if (t.m_next_key < 0 || t.m_steps < 0 || t.m_refactors < 0 || t.m_since_check < 0 || t.m_repairs < 0 ||
      t.m_next_key > most || t.m_steps > most || t.m_refactors > most || t.m_since_check >= 8 || t.m_repairs > most)
    detail::corrupt("IDSVM: invalid counters");
}

/// The examples (x, y, alpha, weight, g, key, set) into fresh storage, each checked.
inline void IncrementalSVM::load_examples(IncrementalSVM& t, const RowMatrix& X, const RowMatrix& v,
                                          const std::vector<std::int64_t>& keys, const std::vector<std::int64_t>& sets) {
  const Index n = X.rows();
  t.reset_storage(t.m_d, std::max<Index>(16, n));
  t.m_n = n;
  t.m_X.topRows(n) = X;
  for (Index i = 0; i < n; ++i) {
    t.m_sq(i) = X.row(i).squaredNorm();
    t.m_y(i) = v(i, 0);
    t.m_alpha(i) = v(i, 1);
    t.m_s(i) = v(i, 2);
    t.m_g(i) = v(i, 3);
    const std::int64_t k = keys[static_cast<std::size_t>(i)], st = sets[static_cast<std::size_t>(i)];
    if ((t.m_y(i) != 1.0 && t.m_y(i) != -1.0) || !(t.m_s(i) > 0.0) || st < 0 || st > 2 || k < 0 ||
        k >= t.m_next_key || !t.m_index.emplace(k, i).second)
      detail::corrupt("IDSVM: invalid example " + std::to_string(i));
    t.m_key[i] = k;
    t.m_set[i] = static_cast<SVMSet>(st);
    t.m_slot[i] = -1;
    t.m_kmax = (std::max)(t.m_kmax, std::abs(t.q_diag(i)));
  }
}

/// m_kmax, the largest |Q_ii| seen (unlearned examples included), checked against the stored
/// examples (load_examples leaves their maximum in t.m_kmax).
inline void IncrementalSVM::load_kmax(IncrementalSVM& t, const FieldMap& fm, const std::string& prefix) {
  const double kmax = fm.get_f64(prefix + "kmax");
  // It may exceed the stored examples' maximum (removed examples count), except for the RBF
  // kernel, where every example has the same Q_ii = 1 + ridge (0 before the first example).
  const bool rbf = t.m_kernel.type() == KernelType::RBF;
  if (!(std::isfinite(kmax) && kmax >= t.m_kmax) || (rbf && kmax != 0.0 && kmax != t.m_kernel.self(0.0) + t.m_ridge))
    detail::corrupt("IDSVM: invalid kmax");
  t.m_kmax = kmax;
}

/// The margin set in R's row order: every member a stored Margin example, listed once, and
/// every Margin example listed.
inline void IncrementalSVM::load_margin_set(IncrementalSVM& t, const std::vector<std::int64_t>& S) {
  const Index n = t.m_n, P = static_cast<Index>(S.size());
  for (Index p = 0; p < P; ++p) {
    const std::int64_t i = S[static_cast<std::size_t>(p)];
    if (i < 0 || i >= n || t.m_set[i] != SVMSet::Margin || t.m_slot[i] != -1) detail::corrupt("IDSVM: invalid margin set");
    t.m_slot[i] = p;
    t.m_S.push_back(static_cast<Index>(i));
  }
  for (Index i = 0; i < n; ++i)
    if (t.m_set[i] == SVMSet::Margin && t.m_slot[i] < 0) detail::corrupt("IDSVM: margin vector missing from the margin set");
}

/// Every stored column of Q_{:,S} against its recomputation from the examples, the labels, the
/// kernel and the ridge (O(n |S| d), once): the learner's gradient steps read these columns, so
/// an altered entry would otherwise surface only as a failed update during later training. The
/// tolerance allows for a model saved by the other SIMD build (kernel values 1 ulp apart).
inline void IncrementalSVM::check_loaded_columns(const IncrementalSVM& t, const RowMatrix& Q) {
  const Index n = t.m_n, P = t.n_margin();
  Vector col(n);
  for (Index p = 0; p < P; ++p) {
    t.compute_column(t.m_S[static_cast<std::size_t>(p)], col);
    for (Index i = 0; i < n; ++i)
      if (!(std::abs(Q(i, p) - col(i)) <= 1e-9 * (std::max)(1.0, std::abs(col(i)))))
        detail::corrupt("IDSVM: the stored Q_S does not match the examples, kernel and ridge");
  }
}

/// Loose consistency checks of the loaded solution (a saved state satisfies them to ~1e-8 at
/// worst): the KT conditions, and R against J with two probes.
inline void IncrementalSVM::check_loaded_solution(const IncrementalSVM& t) {
  const Index n = t.m_n, P = t.n_margin();
  const double scale = 1.0 + t.m_C * (n > 0 ? t.m_s.head(n).maxCoeff() : 0.0);
  if (t.kkt_violation() > 1e-6 * scale) detail::corrupt("IDSVM: the state violates the KT conditions");
  if (P == 0) return;
  // Two probes: the learner's own +-1 vector v, and u = (1, y_S). An altered entry in R's
  // bias row or column meets J only through J(0,:) v = sum_s y_s v_s, which is 0 for some
  // +-1 vectors (an altered R(0,0) loaded unnoticed); for u that sum is |S|.
  const Eigen::MatrixXd J = t.build_J();
  Vector u(P + 1);
  u(0) = 1.0;
  for (Index p = 0; p < P; ++p) u(p + 1) = t.m_y(t.m_S[static_cast<std::size_t>(p)]);
  const auto residual_u = [&](const IncrementalInverse& inv) {
    return (inv.inverse() * (J * u) - u).cwiseAbs().maxCoeff();
  };
  const double ru = residual_u(t.m_R);
  if (t.probe_residual() <= 1e-6 && ru <= 1e-6) return;
  // An ill-conditioned J (e.g. a linear kernel on large features with a small ridge) can
  // leave even a fresh inverse above 1e-6, and the learner itself keeps such an R after
  // refactorising: compare with what a refactorisation of the stored J reaches.
  IncrementalInverse fresh;
  try {
    fresh.refactor(J);
  } catch (const std::runtime_error&) {
    detail::corrupt("IDSVM: the stored margin set makes J singular");
  }
  if (!(t.probe_residual() <= (std::max)(1e-6, 1e3 * fresh.probe_residual(J)) &&
        ru <= (std::max)(1e-6, 1e3 * residual_u(fresh))))
    detail::corrupt("IDSVM: the inverse does not match J");
}

}  // namespace budgetkernel
