#pragma once
/// \file common.hpp
/// Shared typedefs and small helpers of the core.
///
/// Convention of every header: (std::min)(a, b), (std::max)(a, b) and
/// (std::numeric_limits<T>::max)(), so that a program that includes <windows.h> without
/// NOMINMAX (whose min/max macros rewrite `std::min(`) can include ours after it
/// (cpp/tests/test_embedding.cpp checks it).

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace budgetkernel {

using Index = Eigen::Index;
/// Row-major dense matrix: one example (or SV) per contiguous row.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;
using IndexVector = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;

namespace detail {

[[noreturn]] inline void invalid(const std::string& what) { throw std::invalid_argument(what); }

inline void require(bool ok, const std::string& what) {
  if (!ok) invalid(what);
}

/// The two numeric ranges most Params fields have, worded once for every Params::validate().
/// The Python estimators forward their parameters to validate() and append "; got <value>"
/// (the value as the user wrote it), so these messages are the ones Python users read.
inline void require_positive(double v, const char* name) {
  if (!(std::isfinite(v) && v > 0.0)) invalid(std::string(name) + " must be a positive finite number");
}
inline void require_non_negative(double v, const char* name) {
  if (!(std::isfinite(v) && v >= 0.0)) invalid(std::string(name) + " must be a non-negative finite number");
}

inline bool all_finite(const double* p, Index n) {
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

/// m.setZero(size...) for an Eigen object that may own memory, for allocations that scale with
/// the budget. Eigen 3.4's DenseStorage::resize frees the old buffer before allocating the new
/// one, so a failed allocation (std::bad_alloc) left a dangling pointer that the destructor
/// freed again (found: a model with a large budget loaded under an address-space cap crashed
/// with "double free"). Releasing the old storage first leaves the object empty instead.
template <class M, class... Size>
void zero_fresh(M& m, Size... size) {
  M().swap(m);
  m.setZero(size...);
}

/// Largest squared norm of an input row the learners accept. Up to it every kernel
/// quantity of two rows stays finite (|x.z| <= 1e300, |x - z|^2 <= 4e300); a row whose
/// squared norm overflows would make RBF distances inf - inf = NaN and poison the model.
constexpr double kMaxRowSqNorm = 1e300;

/// Smallest nonzero |k(x, x)| a learner accepts from a row it learns from (Kernel::self_underflows).
/// Steps divide by k(x, x) (the PA step loss / k(x, x), Schur complements in inverse kernel
/// matrices): a self-similarity near the bottom of the double range made them overflow, and
/// a linear-kernel row of values ~1e-155 (k(x, x) subnormal) turned BPA and BSGD-project models
/// into NaN without an error. An exactly zero k(x, x) (an all-zero row under the linear
/// kernel) stays accepted: the learners skip or absorb it exactly. Never reached by RBF.
constexpr double kMinNonzeroSelf = 1e-200;

/// row_problem's answers, named so that a learner can tell them apart (by address) and
/// explain a too-large row by what set the bound (OnlineLearner::describe_row_problem).
inline constexpr char kRowNotFinite[] = "contains NaN or infinity";
inline constexpr char kRowTooLarge[] =
    "contains values too large for the kernel's arithmetic (its squared norm would make kernel values overflow); "
    "rescale it";

/// nullptr when the row x[0..n) is usable input, else what is wrong with it: NaN or infinity
/// (kRowNotFinite), or values so large that its squared norm exceeds `max_sqnorm`
/// (Kernel::max_input_sqnorm: kMaxRowSqNorm, lower for a polynomial kernel; kRowTooLarge).
/// One vectorised pass.
inline const char* row_problem(const double* x, Index n, double max_sqnorm = kMaxRowSqNorm) {
  const double s = Eigen::Map<const Eigen::VectorXd>(x, n).squaredNorm();  // NaN and inf propagate
  if (s <= max_sqnorm) return nullptr;
  return all_finite(x, n) ? kRowTooLarge : kRowNotFinite;
}

/// Whether every row of a row-major n x d block passes row_problem (model files: stored SVs).
inline bool rows_usable(const double* X, Index n, Index d) {
  for (Index i = 0; i < n; ++i)
    if (row_problem(X + i * d, d)) return false;
  return true;
}

}  // namespace detail
}  // namespace budgetkernel
