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

#include <limits>
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
