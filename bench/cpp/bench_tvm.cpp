// Per-update cost of the Twin Vector Machine (budgetkernel::TwinVectorMachine) against the
// budget B: the paper's O(B^2) UpdateTVM (section 4.4 of Wang & Vucetic, SDM 2009).
//
// Data: a 2-D noisy checkerboard (4x4 cells on [0,4)^2, 15% label noise), standardised with
// the exact moments of U[0,4) (mean 2, sd 4/sqrt(12)), as the Python benchmarks do. RBF
// gamma = 1 / (2 * 0.37) (the paper's width on the checkerboards), C = 100 (the paper's C;
// C * sum of twin weights kept at C * B), TVM defaults m1 = 1, m2 = 2, input-space one-sided
// merging, rejection eta = 0.2.
//
//  tvm_update/B:<B>  one learner per B, warmed up on kWarmup stream examples (the budget is
//      full and the twins sit near the boundary; cached across Google Benchmark's repeated
//      invocations, every invocation continues from a copy). One iteration = step() on the
//      next stream example that Beneficial accepts (|TVM(x)| <= m1, found with the timer
//      paused, O(B d) each), i.e. prediction + UpdateTV (removal beyond m2 or the merge with
//      rejection) + UpdateTVM (decremental unlearning of the replaced twins, the C rescaling of
//      section 4.3 and incremental learning of the new ones on the exact SVM). Counters:
//      changed = fraction of those steps that changed the twin set (the rest were ignored
//      because Rejection refused every merge candidate: O(B d) only), merge = fraction that
//      merged. The time per *changing* update is time / changed.
//  tvm_train/B:<B>  the same warmed learner, one iteration = partial_fit over the next kChunk
//      stream examples (Beneficial's O(B d) prediction for all, the update for the accepted
//      ones); counter accepted = labels / examples.
//
// ->Complexity(oAuto) reports Google Benchmark's best-fitting big-O; bench/bench_tvm.py
// --cpp-json <file> turns the JSON output into log-log slopes (bench/results/bench_tvm_cpp.md).
//
//   ./bench_tvm --benchmark_filter=tvm_update
#include <budgetkernel/budgetkernel.hpp>

#include <benchmark/benchmark.h>

#include "bench_data.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace {

namespace bk = budgetkernel;
using bk::Index;

constexpr double kGamma = 1.0 / (2.0 * 0.37);
constexpr double kC = 100.0;
constexpr Index kPool = 1 << 18;  // distinct stream examples (cycled)
constexpr Index kChunk = 1000;    // examples per tvm_train iteration
constexpr Index kWarmup = 30000;  // stream examples learned before timing

using bench::Stream;

const Stream& pool() {
  static const Stream s = bench::noisy_checkerboard(kPool, 2009);
  return s;
}

struct Warm {
  bk::TwinVectorMachine learner;
  Index next = 0;
};

const Warm& warm(Index B) {
  static std::map<Index, Warm> cache;
  auto it = cache.find(B);
  if (it != cache.end()) return it->second;
  bk::TVMParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, kGamma);
  p.budget = B;
  p.C = kC;
  Warm w;
  w.learner = bk::TwinVectorMachine(2, 2, p);
  const Stream& s = pool();
  for (Index i = 0; i < kWarmup; i += kChunk) w.learner.partial_fit(s.X.middleRows(i, kChunk), s.y.data() + i);
  w.next = kWarmup;
  return cache.emplace(B, std::move(w)).first->second;
}

void tvm_update(benchmark::State& state) {
  const Index B = static_cast<Index>(state.range(0));
  const Stream& s = pool();
  const Warm& w = warm(B);
  bk::TwinVectorMachine learner = w.learner;
  const double m1 = learner.params().m1;
  Index i = w.next;
  std::int64_t steps = 0, scanned = 0;
  const bk::Counters c0 = learner.counters();
  double f = 0.0;
  for (auto _ : state) {
    state.PauseTiming();
    for (;;) {  // the next example Beneficial accepts (the budget is full: |TVM(x)| <= m1)
      learner.decision(s.X.row(i).data(), &f);
      ++scanned;
      if (std::fabs(f) <= m1) break;
      i = (i + 1) % kPool;
    }
    state.ResumeTiming();
    benchmark::DoNotOptimize(learner.step(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]));
    i = (i + 1) % kPool;
    ++steps;
  }
  const bk::Counters& c1 = learner.counters();
  state.SetItemsProcessed(steps);
  state.SetComplexityN(static_cast<std::int64_t>(B));
  const double st = steps > 0 ? static_cast<double>(steps) : 1.0;
  state.counters["changed"] = static_cast<double>(c1.updates - c0.updates) / st;
  state.counters["merge"] = static_cast<double>(c1.maintenance - c0.maintenance) / st;
  state.counters["accept_rate"] = scanned > 0 ? st / static_cast<double>(scanned) : 0.0;
  state.counters["twins"] = static_cast<double>(learner.n_twins());
}

void tvm_train(benchmark::State& state) {
  const Index B = static_cast<Index>(state.range(0));
  const Stream& s = pool();
  const Warm& w = warm(B);
  bk::TwinVectorMachine learner = w.learner;
  Index i = w.next;
  const bk::Counters c0 = learner.counters();
  for (auto _ : state) {
    if (i + kChunk > kPool) i = 0;
    learner.partial_fit(s.X.middleRows(i, kChunk), s.y.data() + i);
    i += kChunk;
  }
  const bk::Counters& c1 = learner.counters();
  const double ex = static_cast<double>(c1.examples - c0.examples);
  state.SetItemsProcessed(static_cast<std::int64_t>(ex));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  state.counters["accepted"] = ex > 0 ? static_cast<double>(c1.labels - c0.labels) / ex : 0.0;
  state.counters["changed"] = ex > 0 ? static_cast<double>(c1.updates - c0.updates) / ex : 0.0;
}

void budgets(benchmark::internal::Benchmark* b) {
  b->ArgName("B");
  for (int B : {20, 50, 100, 200, 500}) b->Arg(B);
  b->Complexity(benchmark::oAuto);
  b->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(tvm_update)->Name("tvm_update")->Apply(budgets);
BENCHMARK(tvm_train)->Name("tvm_train")->Apply(budgets);
