#pragma once
/// \file svm/numerical_guard.hpp
/// Part of svm/incremental_svm.hpp (included at its end; include that header, not this one):
/// how IncrementalSVM refuses to give a silently wrong answer.
///
/// After every operation the Kuhn-Tucker conditions of the (weighted, possibly ridged) dual
///   S: g_i = 0, 0 <= a_i <= C s_i;  E: g_i <= 0, a_i = C s_i;  R: g_i >= 0, a_i = 0;
///   sum_i y_i a_i = 0
/// are verified in O(N), to 1e-6 in g and 1e-8 relative in alpha. They hold to ~1e-12 unless
/// J is badly conditioned (a numerically rank-deficient kernel matrix: RBF with
/// gamma * spread^2 <= 0.01 at any C, or ~0.1 with C ~ 1e5, where cond(J) reaches 1e10 and
/// more). A violation triggers one repair (R refactorised, g recomputed from the alphas,
/// refinement) and then std::runtime_error naming the violation and the remedies (a larger
/// gamma, a smaller C, a small ridge), the operation undone by the journal.
/// Parameters out of double precision's reach are a detail::IDSVMScaleError (a
/// std::invalid_argument) instead, naming C or the ridge: a step's scale
/// C x weight x max(k(x, x) + ridge) of max_scale() = 1e14 or more, at which no example can
/// enter an empty margin set, or a ridge more than kHugeRidge = 1e3 times max k(x, x) when J
/// fails to refactorise (cond(J) ~ ridge^2 / |S|).

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace budgetkernel {

/// Largest violation of the g conditions and of the alpha conditions (boxes, sets, sum y a).
inline void IncrementalSVM::violations(double& gv, double& av, double& ascale) const {
  double ya = 0.0;
  gv = av = 0.0;
  ascale = 1.0;
  for (Index i = 0; i < m_n; ++i) {
    const double a = m_alpha(i), u = m_C * m_s(i), g = m_g(i);
    ascale = (std::max)(ascale, u);
    ya += m_y(i) * a;
    switch (m_set[i]) {
      case SVMSet::Margin: gv = (std::max)(gv, std::abs(g)), av = (std::max)({av, -a, a - u}); break;
      case SVMSet::Error: gv = (std::max)(gv, g), av = (std::max)(av, std::abs(a - u)); break;
      case SVMSet::Reserve: gv = (std::max)(gv, -g), av = (std::max)(av, std::abs(a)); break;
    }
  }
  av = (std::max)(av, std::abs(ya));
}

inline bool IncrementalSVM::violated(double gv, double av, double ascale) const {
  return gv > 1e-6 || av > 1e-8 * ascale || !std::isfinite(gv) || !std::isfinite(av);
}

/// The guard against silent wrong answers: after every operation the KT conditions must
/// hold to 1e-6 in g and 1e-8 relative in the alphas. They hold to ~1e-12 unless J is badly
/// conditioned, which happens when the kernel matrix is numerically rank-deficient without
/// being exactly so (e.g. RBF with gamma << 1 / spread^2 and a large C). Then one repair is
/// tried (R refactorised, g recomputed from the alphas in O(N n_SV d), refinement); if the
/// conditions still fail, std::runtime_error is thrown (the operation, repair included, is
/// then undone by the journal). The message points to the remedies: a larger gamma, a
/// smaller C, or a small ridge.
inline void IncrementalSVM::verify(const char* what) {
  double gv, av, ascale;
  violations(gv, av, ascale);
  if (!violated(gv, av, ascale)) return;
  ++m_repairs;
  if (!m_S.empty()) refactor();
  recompute_g();
  refine();
  violations(gv, av, ascale);
  if (!violated(gv, av, ascale)) return;
  std::ostringstream msg;
  msg << "IncrementalSVM::" << what << ": numerical breakdown, the KT conditions are violated by " << gv
      << " in g and " << av << " in alpha (bound scale " << ascale
      << ") after the update and a repair: the bordered Jacobian is ill-conditioned (the kernel matrix is "
         "numerically rank-deficient without being exactly so). Use a larger gamma, a smaller C or ";
  if (m_ridge > kHugeRidge * kernel_scale())
    msg << "a smaller ridge than " << m_ridge << " (far above the kernel's scale, max k(x, x) = " << kernel_scale()
        << ": at most ~1e6 times it works)";
  else if (m_ridge > 0.0)
    msg << "a larger ridge than " << m_ridge;
  else
    msg << "a small ridge (e.g. 1e-8 to 1e-6 times the kernel scale; ~10 / C at a large C, 1e-4 at C = 1e5)";
  msg << ", which trains the SVM on K + ridge I (kernel scale here: max |k(x, x) + ridge| = " << m_kmax
      << "). The operation is undone";
  throw std::runtime_error(msg.str());
}

/// g_i = y_i f(x_i) - 1 from the alphas (kernel columns of the examples with alpha > 0).
inline void IncrementalSVM::recompute_g() {
  const Index n = m_n;
  m_g.head(n) = m_b * m_y.head(n) - Vector::Ones(n);
  for (Index j = 0; j < n; ++j)
    if (m_alpha(j) != 0.0) {
      compute_column(j, m_col);
      m_g.head(n) += m_alpha(j) * m_col.head(n);
    }
}

/// max |k(x, x)| over the stored examples (1 for RBF), for the messages of a failure: O(N).
inline double IncrementalSVM::kernel_scale() const {
  if (m_kernel.unit_diagonal()) return 1.0;
  double k = 0.0;
  for (Index i = 0; i < m_n; ++i) k = (std::max)(k, std::abs(m_kernel.self(m_sq(i))));
  return k;
}

inline std::string IncrementalSVM::huge_ridge_message(const char* cause) const {
  std::ostringstream msg;
  msg << "IncrementalSVM: ridge = " << m_ridge << " is too large for the kernel's scale (max k(x, x) = "
      << kernel_scale() << "): the bordered Jacobian J = [[0, y^T], [y, K + ridge I]] then has a condition number "
      << "of about ridge^2 / |S| and is numerically singular (|S| = " << n_margin()
      << "). Use a ridge of at most ~1e6 times max k(x, x); as a remedy for the numerical breakdown a ridge of "
         "1e-8 to 1e-6 times it is enough (" << cause << "); the operation is undone";
  return msg.str();
}

/// Throws the IDSVMScaleError of run_path's empty-margin-set stop at scale >= max_scale().
[[noreturn]] inline void IncrementalSVM::scale_failure(Mode mode, Index c, double from, double to) const {
  // The factors of the step's scale (rate_scale in run_path).
  double C = m_C, weight = 0.0;
  const char* what = "learn/set_weight";
  if (mode == Mode::RegC) {
    C = (std::max)(std::abs(to), std::abs(from));
    weight = m_s.head(m_n).maxCoeff();
    what = "set_C";
  } else if (mode == Mode::Unlearn) {
    weight = m_s(c);
    what = "unlearn";
  } else {
    weight = (std::max)(std::abs(to), std::abs(from));
  }
  throw detail::IDSVMScaleError(std::string("IncrementalSVM::") + what + ": " +
                                scale_message(C, weight, kernel_scale(), m_ridge) + "; the operation is undone");
}

/// Why C x weight x max(k(x, x) + ridge) >= max_scale() cannot be learned, and what to change.
inline std::string IncrementalSVM::scale_message(double C, double weight, double kscale, double ridge) {
  std::ostringstream msg;
  const double qmax = kscale + ridge;
  // The ridge is at fault when the same C and weight would be within the limit without it.
  const bool ridge_at_fault = ridge > 0.0 && C * weight * kscale < max_scale();
  if (ridge_at_fault)
    msg << "ridge = " << ridge << " is too large";
  else
    msg << "C = " << C << " is too large for the kernel's scale";
  msg << ": the exact SVM's path works in double precision only while C x weight x max(k(x, x) + ridge) < "
      << max_scale() << ", and here it is " << C << " x " << weight << " x " << qmax << " = " << C * weight * qmax
      << " (max k(x, x) = " << kscale << ", ridge = " << ridge
      << "). At that scale the rounding noise of the path's steps exceeds the unit rate at which the "
         "margins move while only the bias moves, so no example can enter the empty margin set. ";
  if (ridge_at_fault)
    msg << "A ridge is meant to be small against k(x, x): 1e-8 to 1e-6 times it as a remedy for the numerical "
           "breakdown, and at most ~1e6 times it (beyond, the bordered Jacobian is numerically singular)";
  else
    msg << "Use a smaller C (or smaller sample weights): for the RBF kernel k(x, x) = 1, so C x (1 + ridge) < "
        << max_scale() << "; for linear and polynomial kernels k(x, x) grows with |x|^2, so scaling the features "
        << "down allows a larger C. A large C is accurate only while the kernel matrix is well conditioned (see "
           "ridge)";
  return msg.str();
}

}  // namespace budgetkernel
