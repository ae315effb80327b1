#pragma once
/// \file learners/pegasos_common.hpp
/// What kernel Pegasos (pegasos.hpp) and linear Pegasos (linear_pegasos.hpp) share: the
/// hinge loss of eq. (2) with its coefficient row, and the floor of the global scale.
/// Equation numbers refer to the BSGD paper (Wang, Crammer, Vucetic, ICML 2010).

#include "../common.hpp"

#include <cstdint>

namespace budgetkernel {

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

/// Below this the global scale s of w = s * sum_j alpha_j phi(x_j) is folded back into the
/// coefficients (alpha <- s alpha, s <- 1). s only shrinks (by 1 - 1/t per step and by the
/// ball projection) and new coefficients are stored as beta / s, so without the fold the
/// stored alpha would grow without bound and s would eventually underflow; folding at 1e-9
/// keeps both well inside the double range for one O(B c) pass now and then
/// (docs/derivations.md, "Pegasos: the scale trick").
inline constexpr double min_scale = 1e-9;

}  // namespace detail

}  // namespace budgetkernel
