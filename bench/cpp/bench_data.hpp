#pragma once
// The stream every C++ benchmark learns from: a 2-D noisy 4x4 checkerboard on [0,4)^2 (15% of
// the labels flipped), standardised with the exact moments of U[0,4) (mean 2, sd 4/sqrt(12)),
// as the Python benchmarks standardise it. Labels are class indices 0/1.
#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace bench {

struct Stream {
  budgetkernel::RowMatrix X;
  std::vector<std::int32_t> y;
};

inline Stream noisy_checkerboard(budgetkernel::Index n, std::uint64_t seed) {
  Stream s;
  s.X.resize(n, 2);
  s.y.resize(static_cast<std::size_t>(n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 4.0), flip(0.0, 1.0);
  const double sd = 4.0 / std::sqrt(12.0);
  for (budgetkernel::Index i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    int label = ((static_cast<int>(std::floor(a)) + static_cast<int>(std::floor(b))) % 2 == 0) ? 1 : 0;
    if (flip(rng) < 0.15) label = 1 - label;
    s.X(i, 0) = (a - 2.0) / sd;
    s.X(i, 1) = (b - 2.0) / sd;
    s.y[static_cast<std::size_t>(i)] = label;
  }
  return s;
}

}  // namespace bench
