#pragma once
/// \file svm/margin_set.hpp
/// Part of svm/incremental_svm.hpp (included at its end; include that header, not this one):
/// the margin set S of IncrementalSVM and the inverse R = J^{-1} of the bordered Jacobian
///   J = [[0, y_S^T], [y_S, Q_SS]]   (TVM eq. 2.1; row and column 0 belong to the bias b)
/// that every path step solves with.
///
/// R is kept by IncrementalInverse: an example entering S borders it in O(|S|^2) through its
/// Schur complement s = Q_ii - v^T R v, v = [y_i; Q_Si] (C&P: gamma_c of the entering example
/// is s times its rate); an example leaving S is a Schur downdate. The first margin vector sets
/// R = [[-Q_ii, y_i], [y_i, 0]] directly; removing the last one empties it. Every 8 migrations
/// (and when a direction is not finite) a probe residual max|R J v - v| is measured in
/// O(|S|^2); above kRefactor = 1e-10 R is refactorised from J (O(|S|^3)). The check runs
/// between bookkeeping steps, never inside a migration: J is built from S and Q_{:,S}, which
/// agree with R only between migrations.

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace budgetkernel {

/// Adds example i (with g_i = 0) to S if its row of J is independent; `column` is Q_{:,i}
/// when the caller has it (null: computed here). Returns false when i's row is (numerically)
/// dependent on the margin rows, i.e. a combination beta = R v of them: then moving alpha_i by
/// delta and (b, a_S) by -beta delta leaves g_S unchanged and g_i almost so (it moves by
/// s delta), and bordering R with it would make J singular. Dependent means:
///  - the Schur complement s = Q_ii - v^T R v or s' = s refined by one step of iterative
///    refinement (schur_correction) is at most kDependent max(1, Q_ii), or
///  - s' is at most kSchurNoise times its rounding floor eps (|Q_ii| + |w|^T (|J| |w| + |v|)),
///    w = R v (with a ridge that floor term is capped at ridge / 2: the bordered J of a
///    positive semi-definite kernel plus ridge I has s >= ridge for every row, since
///    1/s = (J'^{-1})_ii <= 1 / ridge);
///  - without a ridge, x_i is an exact copy of a margin vector's x (a repeated example, a
///    twin at the same point, identical rows of sparse data): its row of J is +- that
///    vector's whatever R says. O(|S| d); a differing row is usually told apart by its first
///    value.
/// A row is taken only when both s and s' call it independent. Refined, because R carries the
/// error of its updates between refactorisations and v^T R v inherits it; checked, because
/// near the threshold that error can grow far beyond kRefactor when J is ill-conditioned: when
/// s or s' is at most kDoubtful max(1, Q_ii), R is probed (O(|S|^2)) and refactorised first if
/// the probe residual exceeds kRefactor (O(|S|^3), only then). The cases that set these
/// thresholds are in docs/idsvm.md ("Dependent rows"). O(|S|^2), as s itself.
inline bool IncrementalSVM::enter_margin(Index i, const Vector* column) {
  const Index P = n_margin();
  const double kappa = q_diag(i);
  if (m_ridge == 0.0)
    for (Index p = 0; p < P; ++p)
      if (m_X.row(i) == m_X.row(m_S[static_cast<std::size_t>(p)])) return false;
  if (P == 0) {
    Eigen::Matrix2d R;
    R << -kappa, m_y(i), m_y(i), 0.0;  // [[0, y], [y, q]]^{-1}
    m_R.assign(R);
  } else {
    m_rhs(0) = m_y(i);
    for (Index p = 0; p < P; ++p) m_rhs(p + 1) = m_Q(i, p);
    const double scale = (std::max)(1.0, std::abs(kappa));
    double s = 0.0, refined = 0.0, rounding = 0.0;
    const auto schur = [&] {
      s = m_R.schur(m_rhs.head(P + 1), kappa, m_dir.head(P + 1));
      refined = s + schur_correction(P, kappa, rounding);
    };
    schur();
    if ((std::min)(s, refined) <= kDoubtful * scale && probe_residual() > kRefactor) {
      refactor();  // a verdict this close to the threshold needs an accurate R
      schur();
    }
    double noise = kSchurNoise * rounding;
    if (m_ridge > 0.0) noise = (std::min)(noise, 0.5 * m_ridge);
    if (!((std::min)(s, refined) > kDependent * scale && refined > noise)) return false;
    grow_cols(P + 1);
    m_R.append_from_schur(m_dir.head(P + 1), s, kappa);
  }
  grow_cols(P + 1);
  m_tx.save_q_col(*this, P);
  if (column) {
    m_Q.col(P).head(m_n) = column->head(m_n);
  } else {
    compute_column(i, m_col);
    m_Q.col(P).head(m_n) = m_col.head(m_n);
  }
  m_Q(i, P) = kappa;
  for (Index p = 0; p < P; ++p) {
    m_Qss(p, P) = m_Q(m_S[static_cast<std::size_t>(p)], P);
    m_Qss(P, p) = m_Q(i, p);
  }
  m_Qss(P, P) = kappa;
  m_S.push_back(i);
  m_slot[i] = P;
  m_set[i] = SVMSet::Margin;
  m_g(i) = 0.0;
  note_migration();
  return true;
}

/// One step of iterative refinement of the Schur complement computed by enter_margin
/// (v = m_rhs, w = R v = m_dir, both of size P + 1). Since J^{-1} v = w - J^{-1} (J w - v),
/// the exact s = Q_ii - v^T J^{-1} v is s + w^T (J w - v) to first order in R's error.
/// Returns that correction and sets rounding = eps (|Q_ii| + |w|^T (|J| |w| + |v|)), the
/// scale of the rounding error of the refined value. O(|S|^2) (J w from Q_SS, as build_J).
inline double IncrementalSVM::schur_correction(Index P, double kappa, double& rounding) {
  const auto w = m_dir.head(P + 1);
  // (J w)_p and (|J| |w|)_p, from Q_SS (m_Qss): rows p >= 1 of J are rows S[p-1] of Q_{:,S},
  // scattered over column-major storage; Q_SS's contiguous columns vectorise, each row's sum
  // still in the order q = 0, 1, ..., P-1 (the same values as from Q_{:,S}, bit for bit).
  m_jw(0) = m_ajw(0) = 0.0;
  for (Index q = 0; q < P; ++q) m_jw(0) += m_y(m_S[static_cast<std::size_t>(q)]) * w(q + 1), m_ajw(0) += std::abs(w(q + 1));
  for (Index p = 1; p <= P; ++p) {
    m_jw(p) = m_y(m_S[static_cast<std::size_t>(p - 1)]) * w(0);
    m_ajw(p) = std::abs(w(0));
  }
  auto jw = m_jw.segment(1, P), ajw = m_ajw.segment(1, P);
  for (Index q = 0; q < P; ++q) {
    const auto t = m_Qss.col(q).head(P) * w(q + 1);  // (Q_SS)_pq w_q for every p, vectorised
    jw += t;
    ajw += t.cwiseAbs();
  }
  double delta = 0.0, scale = std::abs(kappa);
  for (Index p = 0; p <= P; ++p) {
    delta += w(p) * (m_jw(p) - m_rhs(p));
    scale += std::abs(w(p)) * (m_ajw(p) + std::abs(m_rhs(p)));
  }
  rounding = std::numeric_limits<double>::epsilon() * scale;
  return delta;
}

/// Removes margin vector i from S (R: Schur downdate with swap-with-last, mirrored in S and Q).
inline void IncrementalSVM::leave_margin(Index i) {
  const Index p = m_slot[i], last = n_margin() - 1;
  bool erased = true;
  if (last == 0) {
    m_R.clear();
  } else {
    try {
      m_R.erase(p + 1);  // leaves R unchanged when it throws (G_pp zero or not finite)
    } catch (const std::runtime_error&) {
      erased = false;
    }
  }
  if (p != last) {
    m_tx.save_q_col(*this, p);
    m_Q.col(p).head(m_n) = m_Q.col(last).head(m_n);
    // Q_SS mirrors it: column p <- column last, then row p <- row last ((p, p) <- (last, last)).
    m_Qss.col(p).head(last + 1) = m_Qss.col(last).head(last + 1);
    m_Qss.row(p).head(last + 1) = m_Qss.row(last).head(last + 1);
    m_S[p] = m_S[last];
    m_slot[m_S[p]] = p;
  }
  m_S.pop_back();
  m_slot[i] = -1;
  note_migration();
  if (!erased) refactor();  // R of the new S from scratch (throws only if that J is singular)
}

/// Schedules a drift check every 8 migrations. The check (which may refactorise, and throw
/// if J is singular) runs between bookkeeping steps, never inside a migration: it builds J
/// from S and Q_{:,S}, which agree with R only between migrations.
inline void IncrementalSVM::note_migration() {
  if (++m_since_check >= 8) {
    m_since_check = 0;
    m_check_due = true;
  }
}

inline void IncrementalSVM::settle() {
  if (m_check_due) {
    m_check_due = false;
    check_inverse();
  }
}

/// Q_SS from Q_{:,S} and S (after a load or a rollback; enter_margin and leave_margin keep
/// it up to date in O(|S|)). O(|S|^2).
inline void IncrementalSVM::gather_qss() noexcept {
  const Index P = n_margin();
  for (Index q = 0; q < P; ++q)
    for (Index p = 0; p < P; ++p) m_Qss(p, q) = m_Q(m_S[static_cast<std::size_t>(p)], q);
}

/// J = [[0, y_S^T], [y_S, Q_SS]] (TVM eq. 2.1), (|S| + 1) x (|S| + 1). O(|S|^2).
inline Eigen::MatrixXd IncrementalSVM::build_J() const {
  const Index P = n_margin();
  Eigen::MatrixXd J(P + 1, P + 1);
  J(0, 0) = 0.0;
  for (Index p = 0; p < P; ++p) J(0, p + 1) = J(p + 1, 0) = m_y(m_S[p]);
  J.bottomRightCorner(P, P) = m_Qss.topLeftCorner(P, P);
  return J;
}

/// m_dir.head(P + 1) = -R m_rhs.head(P + 1): the direction of a path step (TVM eq. 2.1) and
/// of refine(). Zeroed, summed, then negated: the values of -(R * rhs) (Eigen evaluates that
/// product into a zeroed temporary and negates it), in compact order.
inline void IncrementalSVM::solve_direction(Index P) {
  auto dir = m_dir.head(P + 1);
  dir.setZero();
  detail::add_product_compact_order(dir, m_R.inverse(), m_rhs.head(P + 1));
  dir = -dir;
}

/// max |R J v - v| for the fixed +-1 probe vector v of IncrementalInverse. O(|S|^2).
inline double IncrementalSVM::probe_residual() const { return m_S.empty() ? 0.0 : m_R.probe_residual(build_J()); }

/// The drift check: R refactorised when its probe residual exceeds kRefactor (or is not finite).
inline void IncrementalSVM::check_inverse() {
  if (m_S.empty()) return;
  const double r = probe_residual();
  if (r > kRefactor || !std::isfinite(r)) refactor();
}

/// R = J^{-1} from scratch (O(|S|^3)). \throws std::runtime_error if J is singular,
/// detail::IDSVMScaleError when a ridge far above the kernel's scale is the cause.
inline void IncrementalSVM::refactor() {
  try {
    m_R.refactor(build_J());
  } catch (const std::runtime_error& e) {
    // A ridge far above the kernel's scale makes J = [[0, y^T], [y, ~ridge I]] ill-conditioned
    // by itself: eigenvalues ~ridge and ~-|S| / ridge, so cond(J) ~ ridge^2 / |S|. Then the
    // ridge, not the data, is what to change (docs/idsvm.md, "The ridge as the remedy for breakdown").
    if (m_ridge > kHugeRidge * kernel_scale()) throw detail::IDSVMScaleError(huge_ridge_message(e.what()));
    throw;
  }
  ++m_refactors;
}

}  // namespace budgetkernel
