#pragma once
/// \file learners/learner_common.hpp
/// What every online learner shares whatever its task (classifiers, learner_base.hpp;
/// regressors, regressor_base.hpp): the checks of input rows and chunk widths, the budget's
/// size limit, the random generator's state in model files, and Pegasos' lambda range.

#include "../io.hpp"

#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace budgetkernel {
namespace detail {

inline std::string rng_state(const std::mt19937_64& rng) {
  std::ostringstream ss;
  ss << rng;
  return ss.str();
}

inline void set_rng_state(std::mt19937_64& rng, const std::string& s) {
  std::istringstream ss(s);
  ss >> rng;
  if (ss.fail()) corrupt("invalid random generator state");
  // A state whose significant bits are all zero (e.g. 312 zero words) parses, but the engine
  // then returns 0 forever and uniform_index's rejection loop never ends. A live state yields a
  // non-zero output within two regenerations (624 draws); probe a copy.
  std::mt19937_64 probe = rng;
  bool live = false;
  for (int i = 0; i < 2 * 312 && !live; ++i) live = probe() != 0;
  if (!live) corrupt("degenerate random generator state");
}

/// Whether learner L has params().kernel (every kernel learner; not LinearPegasos).
template <class L, class = void>
struct has_kernel_params : std::false_type {};
template <class L>
struct has_kernel_params<L, std::void_t<decltype(std::declval<const L&>().params().kernel)>> : std::true_type {};

/// Pegasos' lambda: below 1e-30 the first step 1/lambda already squares past the double range
/// for ordinary inputs (lam = 1e-160 silently ended with w = 0, 1e-310 with NaN).
inline void check_lam(double lam) {
  require(std::isfinite(lam) && lam >= 1e-30, "lam must be a finite number >= 1e-30");
}

/// `budget` > 0: a store is preallocated with budget + 1 rows of n_features values, so
/// (budget + 1) * n_features is capped at 2^31 values (16 GiB); this also keeps budget + 1
/// from overflowing for a budget read from a crafted model file.
inline void check_budget_size(Index n_features, Index budget) {
  require(n_features >= 1, "n_features must be >= 1");
  constexpr Index max_values = Index{1} << 31;
  require(budget <= max_values / n_features - 1, "budget too large: " + std::to_string(budget) +
                                                     " support vectors of " + std::to_string(n_features) +
                                                     " features exceed 2^31 preallocated values");
}

/// \throws std::invalid_argument "<what> has n entries, X has rows rows" unless n == rows.
inline void check_length(const char* what, Index n, Index rows) {
  if (n != rows)
    invalid(std::string(what) + " has " + std::to_string(n) + " entries, X has " + std::to_string(rows) + " rows");
}

/// What is wrong with one input row x[0..d) that learner `l` is to score (nullptr: nothing):
/// NaN, infinity, or a squared norm beyond the kernel's Kernel::max_input_sqnorm
/// (kMaxRowSqNorm without a kernel).
template <class L>
const char* row_problem_of(const L& l, const double* x, Index d) {
  if constexpr (has_kernel_params<L>::value)
    return row_problem(x, d, l.params().kernel.max_input_sqnorm());
  else
    return (void)l, row_problem(x, d);
}

/// The same for a row to learn from: also a k(x, x) too small to divide by (learn_row_problem).
template <class L>
const char* learn_row_problem_of(const L& l, const double* x, Index d) {
  if constexpr (has_kernel_params<L>::value)
    return learn_row_problem(l.params().kernel, x, d);
  else
    return (void)l, row_problem(x, d);
}

/// The message for a row x that row_problem_of / learn_row_problem_of rejected with `problem`:
/// `problem` itself, except for a finite row beyond the squared-norm bound. That bound comes
/// from the data's scale for RBF and linear kernels (|x|^2 <= 1e300), but from the kernel's
/// parameters for a polynomial one ((gamma |x|^2 + |coef0|)^degree <= 1e300: degree 300
/// allows |x|^2 <= 10 / gamma), where "rescale it" blamed ordinary data for a huge degree;
/// such a row is described with the kernel's parameters and its bound. A learner without a
/// kernel (LinearPegasos) names no kernel. The message has no row number.
template <class L>
std::string describe_row_problem_of(const L& l, const double* x, Index d, const char* problem) {
  if (problem != kRowTooLarge) return problem;
  if constexpr (has_kernel_params<L>::value) {
    const Kernel& k = l.params().kernel;
    const double s = Eigen::Map<const Vector>(x, d).squaredNorm();
    if (k.type() != KernelType::Polynomial || !(s <= kMaxRowSqNorm)) return problem;
    std::ostringstream msg;
    msg.precision(4);
    msg << "has squared norm " << s << ", too large for the polynomial kernel with degree=" << k.degree()
        << ", gamma=" << k.gamma() << ", coef0=" << k.coef0() << ": its values (gamma x.z + coef0)^degree stay "
        << "finite only for |x|^2 <= " << k.max_input_sqnorm() << " (so that (gamma |x|^2 + |coef0|)^degree <= "
        << "1e300); lower degree (or gamma, coef0) or scale X down";
    return msg.str();
  } else {
    (void)l, (void)x, (void)d;
    return "contains values too large for the model's arithmetic (its squared norm exceeds 1e300, so its "
           "products with the weights could overflow); rescale it";
  }
}

/// The width of a chunk and each of its rows, for learner `l` of `d` features (learning: the
/// stricter learn_row_problem_of). Messages are built only on failure: this runs once per
/// chunk, ahead of the hot loop. \throws std::invalid_argument naming the row.
template <class L>
void check_rows(const L& l, const Eigen::Ref<const RowMatrix>& X, Index d, bool learning) {
  if (X.cols() != d) invalid("X has " + std::to_string(X.cols()) + " features, expected " + std::to_string(d));
  for (Index i = 0; i < X.rows(); ++i) {
    const double* row = X.row(i).data();
    if (const char* problem = learning ? learn_row_problem_of(l, row, d) : row_problem_of(l, row, d))
      invalid("X row " + std::to_string(i) + " " + describe_row_problem_of(l, row, d, problem));
  }
}

}  // namespace detail
}  // namespace budgetkernel
