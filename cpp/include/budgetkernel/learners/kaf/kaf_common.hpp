#pragma once
/// \file learners/kaf/kaf_common.hpp
/// What the kernel adaptive filters (klms.hpp, krls.hpp, sliding_krls.hpp) share: the
/// model-file checks of their state. Each filter is an OnlineRegressor (regressor_base.hpp),
/// whose chunk loop validates rows, counts and stops at Ctrl-C around the filter's step().
///
/// Every filter predicts f(x) = sum_j alpha_j k(c_j, x) over a KernelExpansion with one
/// coefficient column (the centres c_j are its SVs), so budgetkernel::Model reads their files,
/// and exposes the same surface:
///   Filter();  explicit Filter(Index n_features, const Params& p);
///   double step(const double* x, double y);   // predict f(x), then learn (x, y); returns f(x)
///   double decision(const double* x) const;   // f(x)
///   void save(FieldMap&) const; void load(const FieldMap&);
///   Index n_support() const; support_vectors(); coefficients();
/// Input rows are checked by the caller (the base's chunk validation), not here.

#include "../../incremental_inverse.hpp"
#include "../kernel_expansion.hpp"
#include "../regressor_base.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace budgetkernel {

namespace detail {

/// The number of steps a filter has taken ("kaf.steps"): a saved counter, range-checked and
/// equal to the examples the regression base counted (every step is one example).
inline std::int64_t read_kaf_steps(const FieldMap& fm, const RegressionCounters& count) {
  const std::int64_t t = fm.get_i64("kaf.steps");
  if (t < 0 || t > kMaxLoadedCount || t != count.examples) corrupt("invalid step counter");
  return t;
}

/// n_features as the regression base wrote it, range-checked before it sizes a filter.
inline Index read_kaf_dim(const FieldMap& fm) {
  const std::int64_t d = fm.get_i64("n_features");
  if (d < 1 || d > (std::int64_t{1} << 40)) corrupt("invalid dimensions");
  return static_cast<Index>(d);
}

/// Centres that only ever enter (KLMS, QKLMS, KRLS's dictionary): ids strictly increasing and
/// below the step counter (an id is the step that added the centre).
inline void check_appended_ids(const SupportVectors& sv, std::int64_t steps) {
  for (Index i = 0; i < sv.size(); ++i)
    if (sv.id(i) < 0 || sv.id(i) >= steps || (i > 0 && sv.id(i) <= sv.id(i - 1)))
      corrupt("invalid centre ids (each must be the step that added it, in order)");
}

/// An n x n matrix field that must be the inverse of a symmetric positive definite matrix as
/// the filters keep it: finite, exactly symmetric (their updates are +-w w^T), positive diagonal.
inline Eigen::MatrixXd read_spd_inverse(const FieldMap& fm, const std::string& name, Index n) {
  const Eigen::MatrixXd M = fm.get_matrix(name, n, n);
  if (!all_finite(M.data(), M.size()) || M != M.transpose() || (n > 0 && !(M.diagonal().minCoeff() > 0.0)))
    corrupt("field '" + name + "' is not a finite symmetric matrix with a positive diagonal");
  return M;
}

/// The kernel matrix of the stored centres, as a filter keeps it (entries from its kernel
/// rows): finite, exactly symmetric, and each entry within 1e-8 (1 + |k|) of k(c_i, c_j)
/// recomputed from the centres (the same formula, Kernel::from_dot; only the summation order
/// of the dot products may differ).
inline Eigen::MatrixXd read_kernel_matrix(const FieldMap& fm, const std::string& name, const SupportVectors& sv,
                                          const Kernel& kernel) {
  const Index n = sv.size();
  const Eigen::MatrixXd K = fm.get_matrix(name, n, n);
  if (!all_finite(K.data(), K.size()) || K != K.transpose())
    corrupt("field '" + name + "' is not a finite symmetric matrix");
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j <= i; ++j) {
      const double sq_i = sv.sqnorm()(i), sq_j = sv.sqnorm()(j);
      const double k = i == j ? kernel.self(sq_i) : kernel.from_dot(sv.x(i).dot(sv.x(j)), sq_i, sq_j);
      if (!(std::abs(K(i, j) - k) <= 1e-8 * (1.0 + std::abs(k))))
        corrupt("field '" + name + "' disagrees with the kernel values of the stored centres");
    }
  return K;
}

/// An n-vector stored as an n x 1 matrix field, finite.
inline Vector read_finite_vector(const FieldMap& fm, const std::string& name, Index n) {
  const RowMatrix M = fm.get_matrix(name, n, 1);
  if (!all_finite(M.data(), M.size())) corrupt("field '" + name + "' holds non-finite values");
  return Eigen::Map<const Vector>(M.data(), n);
}

/// The step-size limit of KLMS / QKLMS with the RBF kernel, checked up front. The LMS
/// recursion f_t = f_{t-1} + eta e_t k(x_t, .) leaves the a posteriori error at x_t
/// y_t - f_t(x_t) = (1 - eta k(x_t, x_t)) e_t, which is no smaller than e_t once
/// eta k(x_t, x_t) >= 2: every step then overshoots its own example. Liu, Pokharel & Principe
/// (IEEE Trans. Signal Processing 56(2), 2008, Section III) bound the step for mean-square
/// convergence by eta < N / tr(G_phi) = 1 / mean_t k(x_t, x_t), the normalised LMS's
/// eta < 2 / ||u||^2 read in the feature space. RBF has k(x, x) = 1 for every x, so eta >= 2
/// is refused here; other kernels' k(x, x) depends on the data: step_guard() checks every step.
inline void require_lms_step(const Kernel& kernel, double eta) {
  if (kernel.type() == KernelType::RBF)
    require(eta < 2.0, "eta must be < 2 with the RBF kernel (k(x, x) = 1): KLMS is stable only for eta k(x, x) < 2 "
                       "(Liu, Pokharel & Principe 2008 bound eta < 1 / mean k(x, x) = 1)");
}

/// The numerical guard of KLMS / QKLMS, before the step changes anything: a prediction f or a
/// new coefficient that is not finite means the filter diverged (eta k(x, x) above the
/// stability limit of require_lms_step for this data). Throws std::runtime_error naming the
/// cause, the step and eta k(x_t, x_t), so the model stays finite (it saves and loads).
inline void step_guard(const char* filter, double f, double coef, double eta, double ktt, std::int64_t t) {
  if (std::isfinite(f) && std::isfinite(coef)) return;
  std::ostringstream msg;
  msg << filter << " diverged at example " << t + 1 << ": its prediction or a coefficient is no longer finite. "
      << "The step eta k(x, x) is " << eta * ktt << " at this example (eta = " << eta << ", k(x, x) = " << ktt
      << "); KLMS is stable only for eta k(x, x) < 2 at every example, and converges in the mean square for "
      << "eta < 1 / mean k(x, x) (Liu, Pokharel & Principe 2008). Refit with a smaller eta (or a kernel with a "
         "smaller k(x, x), e.g. scaled inputs for 'poly'); the examples before this one are learned, it is not.";
  throw std::runtime_error(msg.str());
}

/// The KRLS filters' refusal of an example that makes K + lam I numerically singular (a
/// duplicate of a stored example with a lam near the double precision of k(x, x)): the Schur
/// complement s of the new row is at most 1e-12 max(k(x, x) + lam, 1). Throws
/// std::runtime_error with lam in %g and what to do; the filter learns nothing of the example.
[[noreturn]] inline void singular_ridge(const char* filter, double lam, double s, double kappa) {
  std::ostringstream msg;
  msg << filter << ": K + lam I is numerically singular with the new example (its Schur complement " << s
      << " is below 1e-12 * max(k(x, x) + lam, 1) = " << 1e-12 * (std::max)(std::abs(kappa), 1.0)
      << "): lam = " << lam << " is too small for this kernel, which happens with a (near) duplicate of a "
      << "stored example; use lam >= " << 1e-10 * (std::max)(std::abs(kappa - lam), 1.0)
      << " (1e-10 max(k(x, x), 1)) or larger, e.g. 1e-3";
  throw std::runtime_error(msg.str());
}

/// save()'s check that load() will accept the state: every value finite (a filter whose
/// arithmetic overflowed must not write a file that cannot be read back). O(size).
template <class... M>
void require_finite_state(const char* filter, const M&... parts) {
  if (!(parts.allFinite() && ...))
    throw std::runtime_error(std::string(filter) + ": the model holds non-finite values (its arithmetic "
                             "overflowed), so it cannot be saved: load would refuse the file; refit it");
}

/// out = G v over the valid n x n block of an IncrementalInverse (the maintained inverses), in
/// the order detail::add_product_compact_order fixes: the same bits whatever the storage's
/// capacity, so a filter loaded from a file continues exactly as the one that wrote it.
template <class G, class V>
void inverse_times(const G& inv, const V& v, Eigen::Ref<Vector> out) {
  const Index n = inv.size();
  out.head(n).setZero();
  add_product_compact_order(out.head(n), inv.inverse(), v.head(n));
}

/// The coefficient column of a one-output store, as a vector view (A is n x 1, row-major).
inline Eigen::Map<Vector> coef_column(SupportVectors& sv) { return Eigen::Map<Vector>(sv.A().data(), sv.size()); }

/// Throws std::runtime_error ("model file: ...") with the message of an invalid parameter read
/// from a file (Params::validate throws std::invalid_argument).
template <class P>
void validate_loaded(const P& p) {
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    corrupt(e.what());
  }
}

}  // namespace detail

}  // namespace budgetkernel
