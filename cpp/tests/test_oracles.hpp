#pragma once
// Brute-force references shared by the C++ tests.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>

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

}  // namespace bk_test
