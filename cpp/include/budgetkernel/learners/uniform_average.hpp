#pragma once
/// \file learners/uniform_average.hpp
/// The exact uniform average of every classifier an online kernel learner has held
/// (online-to-batch conversion; the SPA paper's f_bar, Lu, Zhao & Hoi, SDM 2016).

#include "combine.hpp"
#include "kernel_expansion.hpp"
#include "learner_base.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace budgetkernel {

/// Exact running mean f_bar = (1/N) sum_{k=1..N} f_k of the classifiers f_1 = 0, f_2, ...,
/// f_N held by a learner whose model is a kernel expansion in a SupportVectors store. After
/// t examples the learner has held N = t + 1 classifiers (f_{t+1} is the current one); the
/// prediction of example t uses the mean of f_1..f_t, as in the SPA paper's Table 2.
///
/// Lazy sums, O(1) per changed coefficient: for SV i the sum of its coefficient over all
/// classifiers is S_i(N) = C_i + N alpha_i, with C_i kept in the store's (unmapped) carried
/// columns. When step t changes alpha_i from a to a' (a' first appears in f_{t+1}), S_i(N) =
/// t a + (N - t) a' = N a' + t (a - a'): so C_i += t a (begin) before the change and C_i -=
/// t a' (end) after it. A new SV has a = 0 (push() starts C_i at 0), so only end() is needed.
/// A removed SV keeps contributing its frozen sum C_i + t a to the mean: retire() moves it to
/// a second store, which is why the averages of learners that remove SVs (BOGD, BPA) are not
/// sparse; SPA and the unbudgeted learners never retire anything.
class UniformAverage {
 public:
  /// Off (no carried columns, every call a no-op) or on for the store `sv`.
  void reset(SupportVectors& sv, bool enabled) {
    m_on = enabled;
    sv.set_carry_columns(enabled ? sv.n_coef() : 0, /*mapped=*/false);
    m_retired.reset(sv.dim(), sv.n_coef(), enabled ? 16 : 1);
  }
  bool enabled() const { return m_on; }

  /// Before step t changes alpha_i (or every alpha): C_i += t alpha_i.
  void begin(SupportVectors& sv, Index i, double t) const {
    if (m_on) sv.C().row(i) += t * sv.alpha(i);
  }
  /// After step t changed (or pushed) alpha_i: C_i -= t alpha_i.
  void end(SupportVectors& sv, Index i, double t) const {
    if (m_on) sv.C().row(i) -= t * sv.alpha(i);
  }
  void begin_all(SupportVectors& sv, double t) const {
    if (m_on) sv.C().topRows(sv.size()) += t * sv.A().topRows(sv.size());
  }
  void end_all(SupportVectors& sv, double t) const {
    if (m_on) sv.C().topRows(sv.size()) -= t * sv.A().topRows(sv.size());
  }

  /// SV i is about to leave the store; its row must be in the begun state (C_i = its sum over
  /// every classifier so far). Keeps (x_i, C_i) in the retired store unless the sum is 0.
  void retire(const SupportVectors& sv, Index i) {
    if (!m_on || sv.C().row(i).isZero(0.0)) return;
    m_retired.push(sv.x(i).transpose(), sv.C().row(i).transpose(), sv.id(i));
  }

  /// Retires every SV of `before` (a copy of the store in the begun state) that is no longer
  /// in `after`: for a maintenance step that may fold SVs it does not name. An SV is found by
  /// its id, then its point: ids are unique along one stream, but a combined model
  /// (combine_from) may hold several SVs of one id (from different models), never at one point.
  void retire_missing(const SupportVectors& before, const SupportVectors& after) {
    if (!m_on) return;
    std::vector<std::pair<std::int64_t, Index>> kept;
    kept.reserve(static_cast<std::size_t>(after.size()));
    for (Index j = 0; j < after.size(); ++j) kept.emplace_back(after.id(j), j);
    std::sort(kept.begin(), kept.end());
    for (Index i = 0; i < before.size(); ++i) {
      bool found = false;
      auto it = std::lower_bound(kept.begin(), kept.end(), std::make_pair(before.id(i), Index{-1}));
      for (; !found && it != kept.end() && it->first == before.id(i); ++it) found = before.x(i) == after.x(it->second);
      if (!found) retire(before, i);
    }
  }

  /// combine_from: SV i was just pushed into a combined model's store (N classifiers) with the
  /// carried row `carried` of detail::averaged_union. `begun`: the maintenance steps of a
  /// reduction follow, so the row is put in the begun state for t = N (C_i + N alpha_i, its sum
  /// over the N classifiers), and end_all(sv, N) closes them all afterwards (see
  /// detail::averaged_union).
  template <class Row>
  void enter(SupportVectors& sv, Index i, const Eigen::MatrixBase<Row>& carried, double N, bool begun) const {
    if (!m_on) return;
    sv.C().row(i) = carried.transpose();
    if (begun) sv.C().row(i) += N * sv.alpha(i);
  }

  /// combine_from: appends the retired SVs of a combine, the union of the models' retired
  /// SVs with their sums mapped and scaled (detail::averaged_union).
  void add_retired(const detail::ExpansionUnion& retired) {
    if (!m_on) return;
    for (Index r = 0; r < retired.size(); ++r)
      m_retired.push(Eigen::Map<const Vector>(retired.x(r), m_retired.dim()), retired.alpha(r), retired.id(r));
  }

  /// Adds the average's correction to f = A^T krow (the current scores of x, krow = the
  /// current SVs' kernel row): f += (C^T krow + R^T k(retired, x)) / N. O((n + r) c + r d);
  /// thread-safe for concurrent readers (thread-local work buffers).
  /// `retired_dots`: x's dot products with the retired SVs when already known, else null.
  template <class X>
  void add_to_scores(const SupportVectors& sv, const Kernel& k, const Eigen::MatrixBase<X>& x, double xsq,
                     const Vector& krow, double N, Eigen::Ref<Vector> f,
                     const double* retired_dots = nullptr) const {
    if (!m_on) return;
    thread_local Vector corr, part, kr;
    corr.setZero(f.size());
    if (sv.size() > 0) sv.carry_scores(krow, corr);
    if (m_retired.size() > 0) {
      if (kr.size() < m_retired.size()) kr.resize(m_retired.size());
      part.resize(f.size());
      m_retired.kernel_row(k, x, xsq, kr, retired_dots);
      m_retired.scores(kr, part);
      corr += part;
    }
    f += corr / N;
  }

  /// The prediction for the example `ex` scored last (at x): from the current scores, or from
  /// the average over N classifiers when enabled (`work` receives those scores).
  std::int32_t predict_scored(const KernelExpansion& ex, const double* x, double N, Vector& work) const {
    if (!m_on) return detail::predict_from_scores(ex.f());
    work = ex.f();
    add_to_scores(ex.sv(), ex.kernel(), Eigen::Map<const Vector>(x, ex.sv().dim()), ex.last_sqnorm(), ex.krow(), N,
                  work);
    return detail::predict_from_scores(work);
  }

  /// Decision values of `ex`'s model (of the average over N classifiers when enabled);
  /// thread-safe for concurrent readers.
  /// `dots` / `retired_dots`: x's dot products with the current / retired SVs when already
  /// known (rows of SupportVectors::dots_rows), else null.
  void decision(const KernelExpansion& ex, const double* xp, double N, double* out, const double* dots = nullptr,
                const double* retired_dots = nullptr) const {
    thread_local Vector krow;
    ex.decision(xp, out, krow, dots);
    if (!m_on) return;
    const Eigen::Map<const Vector> x(xp, ex.sv().dim());
    add_to_scores(ex.sv(), ex.kernel(), x, x.squaredNorm(), krow, N, Eigen::Map<Vector>(out, ex.sv().n_coef()),
                  retired_dots);
  }

  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// (with the current and the retired SVs) taken per block of rows.
  void decision_rows(const KernelExpansion& ex, const Eigen::Ref<const RowMatrix>& X, double N,
                     Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    if (!m_on) return ex.decision_rows(X, out, stop);
    thread_local RowMatrix D, R;
    detail::for_row_blocks(X.rows(), size(ex.sv()), stop, [&](Index i, Index b) {
      ex.sv().dots_rows(X.middleRows(i, b), D);
      m_retired.dots_rows(X.middleRows(i, b), R);
      for (Index r = 0; r < b; ++r)
        decision(ex, X.row(i + r).data(), N, out.row(i + r).data(), D.row(r).data(), R.row(r).data());
    });
  }

  /// SVs the average predicts with: the current ones plus the retired ones.
  Index size(const SupportVectors& sv) const { return m_on ? sv.size() + m_retired.size() : sv.size(); }
  const SupportVectors& retired() const { return m_retired; }

  /// The average as one kernel expansion (current SVs, then retired ones) for N classifiers.
  void predictor(const SupportVectors& sv, double N, RowMatrix& X, RowMatrix& A) const {
    const Index n = sv.size(), r = m_on ? m_retired.size() : 0;
    X.resize(n + r, sv.dim());
    A.resize(n + r, sv.n_coef());
    X.topRows(n) = sv.X().topRows(n);
    A.topRows(n) = sv.A().topRows(n);
    if (m_on) A.topRows(n) += sv.C().topRows(n) / N;
    if (r > 0) {
      X.bottomRows(r) = m_retired.X().topRows(r);
      A.bottomRows(r) = m_retired.A().topRows(r) / N;
    }
  }

  /// Writes the lazy sums and the retired SVs, plus predict.x / predict.alpha (the averaged
  /// predictor for N classifiers) so that budgetkernel::Model predicts with the average.
  void save(FieldMap& fm, const SupportVectors& sv, double N) const {
    fm.set_int("avg.on", m_on ? 1 : 0);
    if (!m_on) return;
    const Index n = sv.size(), r = m_retired.size();
    fm.set_matrix("avg.carry", sv.C().topRows(n));
    fm.set_matrix("avg.retired.x", m_retired.X().topRows(r));
    fm.set_matrix("avg.retired.sum", m_retired.A().topRows(r));
    fm.set_ints("avg.retired.id", std::vector<std::int64_t>(m_retired.ids().begin(), m_retired.ids().begin() + r));
    RowMatrix X, A;
    predictor(sv, N, X, A);
    fm.set_matrix("predict.x", X);
    fm.set_matrix("predict.alpha", A);
  }

  /// Restores what save() wrote into `sv` (already loaded with its SVs and coefficients).
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or non-finite fields.
  void load(const FieldMap& fm, SupportVectors& sv) {
    const bool on = fm.get_i64("avg.on") != 0;
    reset(sv, on);
    if (!on) return;
    const RowMatrix C = fm.get_matrix("avg.carry", sv.size(), sv.n_coef());
    const RowMatrix X = fm.get_matrix("avg.retired.x", -1, sv.dim());
    const RowMatrix S = fm.get_matrix("avg.retired.sum", X.rows(), sv.n_coef());
    const auto ids = fm.get_ints("avg.retired.id", X.rows());
    if (!detail::all_finite(C.data(), C.size()) || !detail::rows_usable(X.data(), X.rows(), X.cols()) ||
        !detail::all_finite(S.data(), S.size()))
      detail::corrupt("non-finite averaged coefficients");
    sv.C().topRows(sv.size()) = C;
    m_retired.assign(X, S, ids, std::max<Index>(X.rows(), 16));
  }

 private:
  bool m_on = false;
  SupportVectors m_retired{1, 1, 1};  // retired SVs, their coefficient sums in A
};

namespace detail {

/// combine_from's union for the learners whose model is a KernelExpansion with a
/// UniformAverage `avg` (PassiveAggressive, SparsePA, BOGD; they have support_vectors(),
/// average(), n_classifiers() and counters()). N: the combined model's n_classifiers(), from
/// its combined counters. Returns the union of the models' current SVs (coefficients w_k
/// alpha, mapped by plan.add_row) and, when averaging, gives `avg` the union of their retired
/// SVs. Both are unions of points (ExpansionUnion): models that continued from one base
/// (parameter mixing) share its SVs and retired SVs, which are then kept once, not once per
/// model and round.
///
/// The averaged predictor. Model k (N_k classifiers, lazy sums C_k, retired sums R_k) predicts
///   fbar_k = sum_i (alpha_k,i + C_k,i / N_k) k(x_i, .) + sum_j (R_k,j / N_k) k(r_j, .),
/// and the combined one (current SVs alpha, C; retired R; N classifiers)
///   fbar = sum_i (alpha_i + C_i / N) k(x_i, .) + sum_j (R_j / N) k(r_j, .).
/// alpha_i = sum_k w_k alpha_k,i makes f = sum_k w_k f_k; then C_i = N sum_k w_k C_k,i / N_k
/// (the carried rows returned here) and the retired rows R_k,j scaled by w_k N / N_k make
/// fbar = sum_k w_k fbar_k exactly. A reduction to the budget keeps that: each entering SV is
/// put in the begun state for t = N (UniformAverage::enter), so an SV the maintenance removes
/// retires with its sum C_i + N alpha_i over the N classifiers, and end_all(sv, N) afterwards
/// (C_i += N (alpha_i - alpha'_i)) leaves every sum unchanged while the current classifier,
/// from which learning continues, becomes the reduced one (it enters the average as the
/// classifier N + 1 at the next example).
template <class L>
ExpansionUnion averaged_union(const std::vector<const L*>& models, const CombinePlan& plan, double N,
                              UniformAverage& avg) {
  const bool on = avg.enabled();
  const Index d = models[0]->n_features();
  ExpansionUnion u(d, plan.n_outputs(), on ? plan.n_outputs() : 0), retired(d, plan.n_outputs(), 0);
  for (std::size_t k = 0; k < models.size(); ++k) {
    const L& m = *models[k];
    const SupportVectors& sv = m.support_vectors();
    const RowMatrix A = sv.A().topRows(sv.size());
    if (!on) {
      u.add(plan, k, sv.X(), sv.size(), A, nullptr, sv.ids());
      continue;
    }
    const double scale = N / m.n_classifiers();
    const RowMatrix C = scale * sv.C().topRows(sv.size());
    u.add(plan, k, sv.X(), sv.size(), A, &C, sv.ids());
    const SupportVectors& R = m.average().retired();
    const RowMatrix S = scale * R.A().topRows(R.size());
    retired.add(plan, k, R.X(), R.size(), S, nullptr, R.ids());
  }
  avg.add_retired(retired);
  return u;
}

/// The counters of a combined model (combined_counters over the models' counters()).
template <class L>
Counters combined_counters_of(const std::vector<const L*>& models, const L* base) {
  std::vector<const Counters*> counts;
  for (const L* m : models) counts.push_back(&m->counters());
  return combined_counters(counts, base ? &base->counters() : nullptr);
}

/// After a combine's reduction, which counted its maintenance steps and their degradation
/// into `c` (zeroed before it): reports them and sets c = combined + them.
inline void finish_combined_counters(Counters& c, const Counters& combined, CombineReport& rep) {
  rep.degradation = c.degradation;
  rep.reductions = c.maintenance;
  c = combined;
  c.degradation += rep.degradation;
  c.maintenance += rep.reductions;
}

/// combine_from's check that the models' parameters agree (`ok`), naming the parameter.
inline void require_same(bool ok, const char* what) {
  require(ok, std::string("combine: the models' ") + what + " differ");
}

}  // namespace detail

}  // namespace budgetkernel
