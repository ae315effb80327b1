#pragma once
// Brute-force references shared by the C++ tests.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>
#include <random>
#include <vector>

namespace bk_test {

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

}  // namespace bk_test
