#pragma once
/// \file common.hpp
/// Shared typedefs and small helpers of the core.

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

inline bool all_finite(const double* p, Index n) {
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

}  // namespace detail
}  // namespace budgetkernel
