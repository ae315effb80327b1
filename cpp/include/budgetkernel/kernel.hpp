#pragma once
/// \file kernel.hpp
/// Mercer kernels: linear, polynomial and Gaussian (RBF).
///
/// Every kernel is evaluated from a dot product and the two squared norms, so a whole
/// kernel row k(s_i, x) over the stored SVs costs one matrix-vector product plus an
/// element-wise map (a vectorised exp for RBF).

#include "common.hpp"
#include "detail/dot_block.hpp"
#include "detail/enum_names.hpp"
#include "detail/rbf_exp.hpp"

#include <algorithm>
#include <cmath>

namespace budgetkernel {

/// The kernel functions (the numbers are what model files store).
enum class KernelType : std::int32_t { Linear = 0, Polynomial = 1, RBF = 2 };

/// The kernels' names (Python's `kernel` parameter; files store the number).
inline constexpr detail::EnumName<KernelType> kernel_names[] = {
    {KernelType::Linear, "linear"}, {KernelType::Polynomial, "poly"}, {KernelType::RBF, "rbf"}};

/// \param t  a kernel type.
/// \return its name in kernel_names ("linear", "poly", "rbf").
inline const char* kernel_name(KernelType t) { return detail::enum_name(kernel_names, t); }

/// A kernel with its parameters. Plain value type; cheap to copy.
///   linear      k(x, z) = x.z
///   polynomial  k(x, z) = (gamma x.z + coef0)^degree
///   rbf         k(x, z) = exp(-gamma |x - z|^2)
class Kernel {
 public:
  Kernel() = default;
  /// \param type    which kernel.
  /// \param gamma   the scale of x.z (polynomial) or of |x - z|^2 (RBF): > 0, finite; unused by
  ///                the linear kernel.
  /// \param degree  the polynomial kernel's exponent, >= 1.
  /// \param coef0   the polynomial kernel's constant term, finite, |coef0|^degree <= 1e300.
  /// \throws std::invalid_argument on a non-positive gamma or degree, or a non-finite value.
  Kernel(KernelType type, double gamma = 1.0, int degree = 3, double coef0 = 0.0)
      : m_type(type), m_gamma(gamma), m_degree(degree), m_coef0(coef0) {
    detail::require_enum(kernel_names, type, "kernel");
    if (type != KernelType::Linear)
      detail::require(std::isfinite(gamma) && gamma > 0.0, "kernel: gamma must be a positive finite number");
    if (type == KernelType::Polynomial) detail::require(degree >= 1, "kernel: degree must be >= 1");
    detail::require(std::isfinite(coef0), "kernel: coef0 must be finite");
    // k(0, 0) = coef0^degree, and |k(x, z)| >= |coef0|^degree for every pair with gamma x.z of
    // coef0's sign: beyond 1e300 no input row is usable (max_input_sqnorm() would be 0 and admit
    // the zero row only, whose kernel value is itself inf: coef0 = 1e31, degree 10 gave NaN
    // decision values for every learner).
    if (type == KernelType::Polynomial)
      detail::require(std::abs(coef0) <= std::pow(detail::kMaxRowSqNorm, 1.0 / static_cast<double>(degree)),
                      "kernel: |coef0|^degree must be at most 1e300 (else every polynomial kernel value overflows)");
  }

  /// \return the kernel function.
  KernelType type() const { return m_type; }
  double gamma() const { return m_gamma; }
  int degree() const { return m_degree; }
  double coef0() const { return m_coef0; }

  /// k from the dot product x.z and the squared norms |x|^2, |z|^2.
  /// \param dot  x.z.
  /// \param nx2  |x|^2 (read by RBF only).
  /// \param nz2  |z|^2 (read by RBF only).
  /// \return k(x, z); for RBF with |x - z|^2 = |x|^2 + |z|^2 - 2 x.z clamped at 0 against rounding.
  double from_dot(double dot, double nx2, double nz2) const {
    switch (m_type) {
      case KernelType::Linear: return dot;
      case KernelType::Polynomial: return ipow(m_gamma * dot + m_coef0, m_degree);
      case KernelType::RBF: return std::exp(-m_gamma * (std::max)(0.0, nx2 + nz2 - 2.0 * dot));
    }
    return 0.0;
  }

  /// k(x, z) for two vectors.
  /// \param x  a vector (any Eigen expression).
  /// \param z  a vector of the same size.
  /// \return k(x, z); RBF from |x - z|^2 directly (no cancellation in the difference of norms).
  template <class A, class B>
  double value(const Eigen::MatrixBase<A>& x, const Eigen::MatrixBase<B>& z) const {
    if (m_type == KernelType::RBF) return std::exp(-m_gamma * (x - z).squaredNorm());
    return from_dot(x.dot(z), 0.0, 0.0);
  }

  /// k(x, x); 1 for RBF without calling exp (from_dot would give exp(-0) = 1 exactly too,
  /// at the price of an exp in loops over SVs).
  /// \param nx2  |x|^2.
  /// \return k(x, x).
  double self(double nx2) const { return m_type == KernelType::RBF ? 1.0 : from_dot(nx2, nx2, nx2); }

  /// Whether k(x, x), given |x|^2, is nonzero but below detail::kMinNonzeroSelf in magnitude:
  /// too small to divide by (see there). Rows learned from must not have it.
  /// \param nx2  |x|^2.
  /// \return true when 0 < |k(x, x)| < detail::kMinNonzeroSelf (never for RBF).
  bool self_underflows(double nx2) const {
    if (m_type == KernelType::RBF) return false;
    const double k = std::abs(self(nx2));
    return k > 0.0 && k < detail::kMinNonzeroSelf;
  }

  /// Whether k is positive semi-definite (a Mercer kernel) for all inputs. Linear and RBF are;
  /// the polynomial kernel is iff coef0 >= 0: (gamma x.z + coef0)^d = sum_j C(d, j) coef0^(d-j)
  /// gamma^j (x.z)^j is then a nonnegative combination of PSD kernels (Schur product theorem),
  /// while with coef0 < 0, k(x, x) = (gamma |x|^2 + coef0)^d is zero or negative for some x.
  bool positive_semidefinite() const { return m_type != KernelType::Polynomial || m_coef0 >= 0.0; }
  /// Whether k(x, x) = 1 for every x (the merging derivation of the BSGD paper needs it).
  bool unit_diagonal() const { return m_type == KernelType::RBF; }

  /// Largest squared norm of an input row for which every kernel value of two such rows stays
  /// below 1e300: detail::kMaxRowSqNorm, and for the polynomial kernel s with
  /// (gamma s + |coef0|)^degree <= 1e300 (|x.z| <= s), e.g. ~1e42 at degree 7, gamma 1: beyond
  /// it the kernel rows overflowed to inf and models turned NaN without an error.
  double max_input_sqnorm() const {
    if (m_type != KernelType::Polynomial) return detail::kMaxRowSqNorm;
    const double root = std::pow(1e300, 1.0 / static_cast<double>(m_degree));
    return (std::min)(detail::kMaxRowSqNorm, (std::max)(0.0, root - std::abs(m_coef0)) / m_gamma);
  }

  /// out(i) = k(S_i, x) for the first n rows of S, given their squared norms and |x|^2.
  /// One pass of dot products over the contiguous SV block, then one element-wise map.
  /// `dots`: x's dot products with S's rows when already known (a row of dots_rows), else
  /// null; the values are the same, bit for bit (the map runs on out either way).
  /// \param S       the SVs, one per row.
  /// \param sqnorm  their squared norms.
  /// \param n       how many leading rows of S to use.
  /// \param x       the query (d values).
  /// \param x_sq    |x|^2.
  /// \param out     receives the n kernel values in out.head(n).
  /// \param dots    x's dot products with the n rows, or null to compute them.
  template <class X>
  void row(const RowMatrix& S, const Vector& sqnorm, Index n, const Eigen::MatrixBase<X>& x, double x_sq,
           Eigen::Ref<Vector> out, const double* dots = nullptr) const {
    if (dots)
      out.head(n) = Eigen::Map<const Vector>(dots, n);
    else
      Kernel::dots(S, n, x, out);
    finish_row(sqnorm, n, x_sq, out);
  }

  /// out.head(n) = S.topRows(n) * x. For the low dimensions typical of streams a fixed-size
  /// inner product per row beats a general gemv, whose set-up dominates when d is 2 or 3.
  /// From detail::kDotBlockMinDim features on, detail::dot_rows, so that dots_rows gives the
  /// same values for a block of queries.
  /// \param S    the SVs, one per row.
  /// \param n    how many leading rows of S to use.
  /// \param x    the query (S.cols() values).
  /// \param out  receives the n dot products in out.head(n).
  template <class X>
  static void dots(const RowMatrix& S, Index n, const Eigen::MatrixBase<X>& x, Eigen::Ref<Vector> out) {
    const Index d = S.cols();
    switch (d) {
      case 1: out.head(n).noalias() = S.col(0).head(n) * x(0); return;
      case 2: dots_fixed<2>(S, n, x, out); return;
      case 3: dots_fixed<3>(S, n, x, out); return;
      case 4: dots_fixed<4>(S, n, x, out); return;
      default:
        if (d >= detail::kDotBlockMinDim) {
          const Eigen::Ref<const Vector> xc(x);  // no copy for a contiguous x
          detail::dot_rows(xc.data(), d, 1, S.data(), d, n, d, out.data(), n);
        } else {
          out.head(n).noalias() = S.topRows(n) * x;
        }
        return;
    }
  }

  /// out(r, j) = X_r . S_j for every row r of X and j < n: dots() for each row, bit for bit,
  /// but from detail::kDotBlockMinDim features on in register tiles over the rows (scoring a
  /// chunk; see detail/dot_block.hpp). out must be X.rows() x n or wider.
  /// \param S    the SVs, one per row.
  /// \param n    how many leading rows of S to use.
  /// \param X    the queries, one per row.
  /// \param out  receives X.rows() x n dot products.
  static void dots_rows(const RowMatrix& S, Index n, const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out) {
    const Index d = S.cols();
    if (d >= detail::kDotBlockMinDim) {
      detail::dot_rows(X.data(), X.outerStride(), X.rows(), S.data(), d, n, d, out.data(), out.outerStride());
      return;
    }
    for (Index r = 0; r < X.rows(); ++r) dots(S, n, X.row(r).transpose(), out.row(r).transpose());
  }

  /// Turns dot products already in out.head(n) into kernel values.
  /// \param sqnorm  the squared norms of the n SVs (read by RBF only).
  /// \param n       how many values.
  /// \param x_sq    the query's |x|^2 (read by RBF only).
  /// \param out     dot products in, kernel values out (out.head(n)).
  void finish_row(const Vector& sqnorm, Index n, double x_sq, Eigen::Ref<Vector> out) const {
    auto o = out.head(n).array();
    switch (m_type) {
      case KernelType::Linear: break;
      case KernelType::Polynomial: {
        const double g = m_gamma, c0 = m_coef0;
        const int deg = m_degree;
        o = o.unaryExpr([g, c0, deg](double v) { return ipow(g * v + c0, deg); });
        break;
      }
      case KernelType::RBF:
        detail::rbf_finish(sqnorm.data(), n, x_sq, m_gamma, out.data());
        break;
    }
  }

 private:
  template <int D, class X>
  static void dots_fixed(const RowMatrix& S, Index n, const Eigen::MatrixBase<X>& x, Eigen::Ref<Vector> out) {
    double xv[D];
    for (int k = 0; k < D; ++k) xv[k] = x(k);
    const double* s = S.data();
    for (Index i = 0; i < n; ++i) {
      double acc = s[i * D] * xv[0];
      for (int k = 1; k < D; ++k) acc += s[i * D + k] * xv[k];
      out(i) = acc;
    }
  }

  static double ipow(double b, int e) {
    double r = 1.0;
    for (; e > 0; e >>= 1, b *= b)
      if (e & 1) r *= b;
    return r;
  }

  KernelType m_type = KernelType::RBF;
  double m_gamma = 1.0;
  int m_degree = 3;
  double m_coef0 = 0.0;
};

namespace detail {

/// The online learners (Pegasos/BSGD, PA/BPA, the perceptrons, SPA, OGD/BOGD) are derived for
/// a Mercer kernel: their steps divide by k(x, x) (PA, SPA, projections), and ||w||^2, the
/// projection residuals and the degradation of maintenance are quadratic forms of the kernel
/// matrix. An indefinite kernel turns these into garbage: with a polynomial kernel and
/// coef0 = -1, hard-margin PA's L / k(x, x) steps for k(x, x) near 0 overflowed to NaN, and
/// BSGD's removal reported negative degradations whose square root made ||w|| NaN (a model
/// that then failed to load). So such a kernel is refused up front.
/// \throws std::invalid_argument for a kernel that is not positive semi-definite.
inline void require_psd_kernel(const Kernel& k) {
  require(k.positive_semidefinite(),
          "kernel: the polynomial kernel needs coef0 >= 0 here (with coef0 < 0 it is not positive "
          "semi-definite: k(x, x) = (gamma |x|^2 + coef0)^degree is zero or negative for some x, and "
          "learning divides by k(x, x))");
}

/// What is wrong with a row x[0..n) to *learn* from under kernel k (nullptr: nothing):
/// row_problem against k.max_input_sqnorm(), or a self-similarity k.self_underflows().
/// Predicting needs only row_problem: scoring a near-zero row divides by nothing.
inline const char* learn_row_problem(const Kernel& k, const double* x, Index n) {
  if (const char* problem = row_problem(x, n, k.max_input_sqnorm())) return problem;
  if (k.unit_diagonal()) return nullptr;  // k(x, x) = 1: no second pass over x
  if (k.self_underflows(Eigen::Map<const Eigen::VectorXd>(x, n).squaredNorm()))
    return "is so close to zero that k(x, x) underflows the kernel's arithmetic (0 < |k(x, x)| < 1e-200, and "
           "learning divides by it); rescale it (an all-zero row is accepted)";
  return nullptr;
}

}  // namespace detail
}  // namespace budgetkernel
