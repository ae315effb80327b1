#pragma once
/// \file learners/pegasos_common.hpp
/// What kernel Pegasos (pegasos.hpp) and linear Pegasos (linear_pegasos.hpp) share: the
/// hinge loss of eq. (2) with its coefficient row, the logistic loss of kernel logistic
/// regression (kernel Pegasos' loss = Log), and the floor of the global scale.
/// Equation numbers refer to the BSGD paper (Wang, Crammer, Vucetic, ICML 2010).

#include "../common.hpp"
#include "../detail/enum_names.hpp"

#include <cstdint>

namespace budgetkernel {

/// The loss kernel Pegasos takes its stochastic (sub)gradient steps on: the SVM's hinge loss
/// of eq. (2), or the logistic loss (kernel logistic regression: binary log(1 + exp(-y f)),
/// multinomial softmax cross-entropy), whose decision values are log-odds.
enum class PegasosLoss : std::int32_t { Hinge = 0, Log = 1 };

inline constexpr detail::EnumName<PegasosLoss> pegasos_loss_names[] = {{PegasosLoss::Hinge, "hinge"},
                                                                       {PegasosLoss::Log, "log"}};

namespace detail {

/// Hinge loss of eq. (2) and the coefficient row beta_t of section 2.1 (scaled by `step`).
/// Binary (one column): loss = max(0, 1 - y f), beta = step * y. Multi-class: r = the
/// highest-scoring wrong class, loss = max(0, 1 + f_r - f_y), beta_y = step, beta_r = -step.
/// Returns the loss; writes beta only when the loss is positive.
template <class F, class B>
double pegasos_loss(const Eigen::MatrixBase<F>& f, std::int32_t y, double step, Eigen::MatrixBase<B>& beta) {
  if (f.size() == 1) {
    const double sy = y == 1 ? 1.0 : -1.0;
    const double loss = 1.0 - sy * f(0);
    if (loss > 0.0) beta(0) = step * sy;
    return loss;
  }
  Index r = y == 0 ? 1 : 0;
  for (Index i = 0; i < f.size(); ++i)
    if (i != y && f(i) > f(r)) r = i;
  const double loss = 1.0 + f(r) - f(y);
  if (loss > 0.0) {
    beta.setZero();
    beta(y) = step;
    beta(r) = -step;
  }
  return loss;
}

/// The logistic loss and its coefficient row beta = -step * (gradient of the loss in f), the
/// logistic counterpart of pegasos_loss (the same step of eq. 3-4 with the loss swapped).
/// Binary (one column, y in {-1, +1}): loss = log(1 + exp(-y f)), beta = step * y sigma(-y f).
/// Multi-class (c columns): p = softmax(f), loss = -log p_y, beta_k = step * ([k = y] - p_k).
/// Every example has a nonzero gradient, so beta is always written; the loss is returned (> 0
/// up to rounding: it underflows to 0 only for an example classified with a margin beyond
/// ~37 in log-odds, whose beta is then 0 too or below 1e-16 step).
template <class F, class B>
double logistic_loss(const Eigen::MatrixBase<F>& f, std::int32_t y, double step, Eigen::MatrixBase<B>& beta) {
  if (f.size() == 1) {
    const double sy = y == 1 ? 1.0 : -1.0, m = sy * f(0);
    // sigma(-m) = 1 / (1 + exp(m)), without overflow for either sign of m.
    const double s = m >= 0.0 ? std::exp(-m) / (1.0 + std::exp(-m)) : 1.0 / (1.0 + std::exp(m));
    beta(0) = step * sy * s;
    return (std::max)(-m, 0.0) + std::log1p(std::exp(-std::abs(m)));
  }
  const double top = f.maxCoeff();
  double z = 0.0;
  for (Index k = 0; k < f.size(); ++k) z += std::exp(f(k) - top);
  for (Index k = 0; k < f.size(); ++k) beta(k) = -step * std::exp(f(k) - top) / z;
  beta(y) += step;
  return top + std::log(z) - f(y);
}

/// Below this the global scale s of w = s * sum_j alpha_j phi(x_j) is folded back into the
/// coefficients (alpha <- s alpha, s <- 1). s only shrinks (by 1 - 1/t per step and by the
/// ball projection) and new coefficients are stored as beta / s, so without the fold the
/// stored alpha would grow without bound and s would eventually underflow; folding at 1e-9
/// keeps both well inside the double range for one O(B c) pass now and then
/// (docs/derivations.md, "Pegasos: the scale trick").
inline constexpr double min_scale = 1e-9;

}  // namespace detail

}  // namespace budgetkernel
