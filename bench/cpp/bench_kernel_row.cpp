// Throughput of the per-example hot path shared by every kernel learner: one kernel row
// k(s_i, x) over the B stored SVs (SupportVectors::kernel_row) followed by the scores
// f(x) = A^T k (SupportVectors::scores). Expected O(B d): one gemv plus a vectorised exp.
//
//   ./bench_kernel_row --benchmark_filter=d:20
#include <budgetkernel/kernel.hpp>
#include <budgetkernel/sv_store.hpp>

#include <benchmark/benchmark.h>

#include <random>

namespace {

using budgetkernel::Index;
using budgetkernel::Kernel;
using budgetkernel::KernelType;
using budgetkernel::RowMatrix;
using budgetkernel::SupportVectors;
using budgetkernel::Vector;

RowMatrix gaussian(Index n, Index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  RowMatrix m(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < d; ++j) m(i, j) = g(rng);
  return m;
}

template <int D>
void BM_kernel_row_scores(benchmark::State& state) {
  const Index B = static_cast<Index>(state.range(0));
  const Index d = D;
  const Index n_queries = 64;
  const Kernel k(KernelType::RBF, 1.0 / static_cast<double>(d));

  // A full store of B SVs with binary coefficients (c = 1), capacity B + 1 as the learners use.
  SupportVectors sv(d, 1, B + 1);
  const RowMatrix P = gaussian(B, d, 1);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (Index i = 0; i < B; ++i) sv.push(P.row(i).transpose(), Vector::Constant(1, u(rng)), i);

  const RowMatrix Q = gaussian(n_queries, d, 3);
  Vector q_sq(n_queries);
  for (Index i = 0; i < n_queries; ++i) q_sq(i) = Q.row(i).squaredNorm();

  Vector krow(sv.capacity());
  Vector score(1);
  Index q = 0;
  for (auto _ : state) {
    sv.kernel_row(k, Q.row(q).transpose(), q_sq(q), krow);
    sv.scores(krow, score);
    benchmark::DoNotOptimize(score.data());
    benchmark::ClobberMemory();
    q = (q + 1 == n_queries) ? 0 : q + 1;
  }
  // One "item" = one kernel evaluation (and its multiply-add into the score).
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(B));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  state.counters["d"] = static_cast<double>(d);
}

void budgets(benchmark::internal::Benchmark* b) {
  b->ArgName("B");
  for (int B : {50, 100, 200, 400, 800}) b->Arg(B);
  b->Complexity(benchmark::oN);
}

}  // namespace

BENCHMARK_TEMPLATE(BM_kernel_row_scores, 2)->Name("kernel_row+scores/rbf/d:2")->Apply(budgets);
BENCHMARK_TEMPLATE(BM_kernel_row_scores, 20)->Name("kernel_row+scores/rbf/d:20")->Apply(budgets);
