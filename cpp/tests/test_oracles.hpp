#pragma once
// Brute-force references shared by the C++ tests.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace bk_test {
using budgetkernel::Index;
using budgetkernel::Kernel;
using budgetkernel::MaintenanceResult;
using budgetkernel::RowMatrix;
using budgetkernel::SupportVectors;
using budgetkernel::Vector;

/// K by Kernel::row with x_i as the query over every SV (the expression the learner uses),
/// k.self on the diagonal.
inline budgetkernel::RowMatrix brute_rows(const budgetkernel::SupportVectors& sv, const budgetkernel::Kernel& k) {
  using budgetkernel::Index;
  const Index n = sv.size();
  budgetkernel::RowMatrix K(n, n);
  budgetkernel::Vector row(std::max<Index>(n, 1));
  for (Index i = 0; i < n; ++i) {
    sv.kernel_row(k, sv.x(i).transpose(), sv.sqnorm()(i), row);
    K.row(i) = row.head(n).transpose();
    K(i, i) = k.self(sv.sqnorm()(i));
  }
  return K;
}

/// An n x d matrix of independent standard normal entries, reproducible from `seed`.
inline budgetkernel::RowMatrix random_matrix(budgetkernel::Index n, budgetkernel::Index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  budgetkernel::RowMatrix m(n, d);
  for (budgetkernel::Index i = 0; i < n; ++i)
    for (budgetkernel::Index j = 0; j < d; ++j) m(i, j) = g(rng);
  return m;
}

/// A labelled stream of 2-D points.
struct Stream {
  budgetkernel::RowMatrix X;
  std::vector<std::int32_t> y;
};

/// A 4x4 checkerboard on [-2, 2)^2 with labels (cell index) mod n_classes; with probability
/// `shift` a label moves to the next class (label noise that keeps every class present).
inline Stream noisy_board(budgetkernel::Index n, int n_classes, std::uint64_t seed, double shift) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 4.0);
  Stream s{budgetkernel::RowMatrix(n, 2), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (budgetkernel::Index i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    s.X(i, 0) = a - 2.0;
    s.X(i, 1) = b - 2.0;
    int label = (static_cast<int>(a) + static_cast<int>(b)) % n_classes;
    if (u(rng) < 4.0 * shift) label = (label + 1) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label;
  }
  return s;
}


// ---- shared by the tests of the PA-style learners and the averaged classifiers

inline std::vector<budgetkernel::Vector> probes() {
  const double p[][2] = {{-1.5, -1.5}, {0.3, 0.7}, {1.2, -0.4}, {-0.6, 1.8}, {0.0, 0.0}};
  std::vector<budgetkernel::Vector> out;
  for (const auto& q : p) {
    budgetkernel::Vector z(2);
    z << q[0], q[1];
    out.push_back(z);
  }
  return out;
}

// Max-loss direction, written independently of detail::max_loss_direction.
inline double direction(const budgetkernel::Vector& f, int y, budgetkernel::Vector& u) {
  u.setZero(f.size());
  if (f.size() == 1) {
    u(0) = y == 1 ? 1.0 : -1.0;
    return u(0) * f(0);
  }
  int r = -1;
  for (int i = 0; i < f.size(); ++i)
    if (i != y && (r < 0 || f(i) > f(r))) r = i;
  u(y) = 1.0;
  u(r) = -1.0;
  return f(y) - f(r);
}

// f(z) of an explicit expansion (rows of X, coefficient rows of A), by explicit kernel sums.
inline budgetkernel::Vector eval(const budgetkernel::Kernel& k, const budgetkernel::RowMatrix& X,
                                 const budgetkernel::RowMatrix& A, const budgetkernel::Vector& z) {
  budgetkernel::Vector f = budgetkernel::Vector::Zero(A.cols());
  for (budgetkernel::Index j = 0; j < X.rows(); ++j) f += k.value(X.row(j).transpose(), z) * A.row(j).transpose();
  return f;
}

template <class L>
budgetkernel::Vector dec(const L& l, const budgetkernel::Vector& z) {
  budgetkernel::Vector out(l.n_outputs());
  l.decision(z.data(), out.data());
  return out;
}

template <class L>
std::string bytes_of(const L& l) {
  budgetkernel::FieldMap fm;
  l.save(fm);
  return fm.to_bytes();
}


// Whether f throws std::invalid_argument (which = 0) or std::runtime_error (which = 1).
template <class F>
bool throws_type(F&& f, int which) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    return which == 0;
  } catch (const std::runtime_error&) {
    return which == 1;
  } catch (...) {
    return false;
  }
  return false;
}

/// ||sum_i a_i phi(x_i) - sum_j b_j phi(z_j)||^2 (summed over the coefficient columns) by the
/// Gram matrix of the points of both expansions.
inline double rkhs_dist2(const Kernel& k, const RowMatrix& X, const RowMatrix& A, const RowMatrix& Z,
                         const RowMatrix& B) {
  RowMatrix P(X.rows() + Z.rows(), X.cols()), C(X.rows() + Z.rows(), A.cols());
  P << X, Z;
  C << A, -B;
  const Index n = P.rows();
  Eigen::MatrixXd K(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) K(i, j) = k.value(P.row(i).transpose(), P.row(j).transpose());
  return (C.transpose() * K * C).trace();
}

/// Merges SVs m and n of the store (the pair merge_reduce chose) as Merging does: z takes
/// the slot of m (of n when m is the last row, which erase would move), alpha_z from eq. (22),
/// id max(id_m, id_n); n is erased. Reports the degradation and the norm change, from the
/// kernel rows of x_m, x_n and z computed before the store changes (see merge_reduce).
/// `work` holds x_m's kernel row (with 1 at m) and has room for max(size(), dim() + n_coef())
/// values, `work2` for size().
inline MaintenanceResult merge_apply(SupportVectors& sv, const Kernel& kernel, Index m, Index n, Vector& work,
                                     Vector& work2) {
  using namespace budgetkernel;
  using namespace budgetkernel::detail;
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  const RowMatrix& A = sv.A();
  MaintenanceResult res;
  const double f_m = merge_score_dot(sv, work, A.row(m));
  sv.kernel_row(kernel, sv.x(n).transpose(), sv.sqnorm()(n), work2);
  work2(n) = 1.0;
  const double f_n = merge_score_dot(sv, work2, A.row(n));

  // z and alpha_z go into `work`, which x_m's row no longer needs.
  const MergePair pair = merge_pair(sv, kernel, m, n, work.data(), work.data() + d);
  res.degradation = pair.degradation;
  const auto z = work.head(d);
  const auto alpha_z = work.segment(d, c);
  sv.kernel_row(kernel, z, z.squaredNorm(), work2);
  const double f_z = merge_score_dot(sv, work2, alpha_z);
  res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;

  const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
  const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
  sv.set_x(keep, z);
  sv.alpha(keep) = alpha_z.transpose();
  sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
  sv.set_id(keep, id);
  sv.erase(drop);
  return res;
}

/// The cache-free reference of Merging (budget/merging.hpp): the same search (smallest SV,
/// detail::merge_partner over a freshly computed kernel row of x_m) and the same merged pair
/// (detail::merge_pair), with f(x_m), f(x_n) and f(z) for norm_change from three fresh kernel
/// rows computed before the store changes. Merging, with its cached rows, must give the same
/// store and report the same numbers (to the rounding of its cached kernel values).
/// `work` is grown to max(size(), dim() + n_coef()) and `work2` to size().
inline MaintenanceResult merge_reduce(SupportVectors& sv, const Kernel& kernel, Vector& work, Vector& work2) {
  using namespace budgetkernel;
  if (!kernel.unit_diagonal()) detail::invalid("merge_reduce: merging needs the Gaussian (rbf) kernel (BSGD eq. 20)");
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  if (!(B >= 2)) detail::invalid("merge_reduce: needs at least two support vectors");
  if (work.size() < (std::max)(B, d + c)) work.resize((std::max)(B, d + c));
  if (work2.size() < B) work2.resize(B);

  double m_norm = 0.0;
  const Index m = detail::merge_smallest(sv, m_norm, work2);  // the squared norms stay in work2
  if (m_norm == 0.0) {  // contributes nothing to w
    sv.erase(m);
    return {};
  }
  // Kernel row of x_m: partner search and f(x_m) in one pass.
  sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), work);
  work(m) = 1.0;
  const Index n = detail::merge_partner(sv, m, work.data(), work2.data());
  return merge_apply(sv, kernel, m, n, work, work2);
}

}  // namespace bk_test
