// Per-example training cost of Budgeted SGD (budgetkernel::KernelPegasos) against the
// budget B, for each budget-maintenance strategy, and the cost of one maintenance step alone.
//
// Data: a 2-D noisy checkerboard (4x4 cells on [0,4)^2, 15% label noise), standardised with
// the exact moments of U[0,4) (mean 2, sd 4/sqrt(12)), as the Python benchmarks do.
// Kernel RBF gamma = kGamma, lam = kLam: a setting in which every budget up to 800 fills
// (see the warm-up note on projection) and ~55-75% of the examples add an SV; the SVs
// column reports the store size actually reached.
//
//  bsgd_train/<strategy>/B:<B>   one learner per (strategy, B), warmed up on the stream until
//      the budget is full and then kWarmupAfterFull more examples (cached across the
//      benchmark's repeated invocations); one iteration = partial_fit over the next chunk of
//      kChunk examples (the stream continues, cycling over a pool of kPool examples).
//      items_per_second = examples/s; counters: upd/ex (fraction of examples that added an
//      SV) and maint/ex (fraction that ran a maintenance step) measured in the timed part.
//      The per-example cost is O(B d) scoring + maint/ex * (maintenance cost).
//  maintenance/<strategy>/B:<B>  the maintenance work alone: push of the new SV +
//      BudgetMaintainer::on_push (the projection's O(B^2) inverse update; a no-op otherwise)
//      + BudgetMaintainer::reduce, on a copy of the warmed learner's full store and
//      maintainer, without norm tracking (merging and removal as the learner runs them once
//      it bounds ||w||, see KernelPegasos: no kernel-matrix cache), with the new SV's
//      alpha = y / (lam t) / scale and kernel row computed as KernelPegasos::step computes
//      them (outside the timed region, as is the copying). Expected O(B) merge (plus one
//      kernel row when m is not the new SV), O(d + c) random removal (the draw and the
//      swap-erase), O(B^2) projection (O(B^3) whenever its inverse is refactored; counter
//      refactor/step).
//
// ->Complexity(oAuto) reports Google Benchmark's best-fitting big-O; bench/run_bench_bsgd.py
// runs this executable, fits log-log slopes and writes bench/results/bench_bsgd.{json,md}.
//
//   ./bench_bsgd --benchmark_filter=merge
#include <budgetkernel/budgetkernel.hpp>

#include <benchmark/benchmark.h>

#include "bench_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace {

namespace bk = budgetkernel;
using bk::Index;

constexpr double kGamma = 16.0;
constexpr double kLam = 1e-3;
constexpr Index kPool = 1 << 18;         // distinct stream examples (cycled)
constexpr Index kChunk = 1000;           // examples per timed iteration
constexpr Index kWarmupAfterFull = 5000; // examples learned after the budget first fills

using bench::Stream;

const Stream& pool() {
  static const Stream s = bench::noisy_checkerboard(kPool, 12345);
  return s;
}

bk::BSGDParams params(bk::Maintenance m, Index B) {
  bk::BSGDParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, kGamma);
  p.lam = kLam;
  p.budget = B;
  p.maintenance = m;
  p.seed = 7;
  return p;
}

/// A learner warmed up to a full budget, plus where in the pool its stream continues.
struct Warm {
  bk::KernelPegasos learner;
  Index next = 0;
};

/// Cached per (strategy, B): Google Benchmark calls a benchmark function several times.
const Warm& warm(bk::Maintenance m, Index B) {
  static std::map<std::pair<int, Index>, Warm> cache;
  const auto key = std::make_pair(static_cast<int>(m), B);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const Stream& s = pool();
  Warm w;
  w.learner = bk::KernelPegasos(2, 2, params(m, B));
  Index i = 0, after_full = -1;
  while (after_full < kWarmupAfterFull) {
    const Index n = std::min<Index>(kChunk, kPool - i);
    w.learner.partial_fit(s.X.middleRows(i, n), s.y.data() + i);
    i = (i + n) % kPool;
    if (after_full >= 0) after_full += n;
    else if (w.learner.support_vectors().size() >= B) after_full = 0;
    // Projection can refuse to fill: it folds a numerically dependent new SV (Schur
    // complement < 1e-8) into the others at once, so with many SVs per kernel width the
    // store plateaus below B (e.g. ~780 of 800 at gamma = 8). Stop the warm-up anyway.
    if (after_full < 0 && w.learner.counters().examples >= 100000) break;
  }
  w.next = i;
  return cache.emplace(key, std::move(w)).first->second;
}

void train(benchmark::State& state, bk::Maintenance m) {
  const Index B = static_cast<Index>(state.range(0));
  const Stream& s = pool();
  const Warm& w = warm(m, B);
  bk::KernelPegasos learner = w.learner;  // every invocation starts from the same state
  Index i = w.next;
  const bk::Counters c0 = learner.counters();
  const Index r0 = learner.maintainer().projection().refactor_count();
  for (auto _ : state) {
    if (i + kChunk > kPool) i = 0;
    learner.partial_fit(s.X.middleRows(i, kChunk), s.y.data() + i);
    i += kChunk;
  }
  const bk::Counters& c1 = learner.counters();
  const double ex = static_cast<double>(c1.examples - c0.examples);
  state.SetItemsProcessed(static_cast<std::int64_t>(ex));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  state.counters["upd/ex"] = ex > 0 ? static_cast<double>(c1.updates - c0.updates) / ex : 0.0;
  state.counters["maint/ex"] = ex > 0 ? static_cast<double>(c1.maintenance - c0.maintenance) / ex : 0.0;
  state.counters["SVs"] = static_cast<double>(learner.support_vectors().size());
  if (learner.maintainer().uses_projection() && c1.maintenance > c0.maintenance)
    state.counters["refactor/step"] = static_cast<double>(learner.maintainer().projection().refactor_count() - r0) /
                                      static_cast<double>(c1.maintenance - c0.maintenance);
}

/// A full store (B SVs) and the next SV to add, with everything KernelPegasos::step has
/// computed by then: alpha = y / (lam t) / scale and the kernel row of x over the store.
struct Prepared {
  bk::SupportVectors sv;
  bk::BudgetMaintainer maint;
  bk::Vector x, alpha, krow;
  double kappa = 1.0;
  std::int64_t id = 0;
};

Prepared prepare(const Warm& w, Index j) {
  const Stream& s = pool();
  const bk::KernelPegasos& l = w.learner;
  const bk::BSGDParams& p = l.params();
  Prepared out{l.support_vectors(), l.maintainer(), {}, {}, {}, 1.0, 0};
  // The learner's steady state: merging and removal without the kernel-matrix cache (the
  // learner bounds ||w|| once w is well inside the ball). Fixed here, so that the step does
  // not depend on where the warm-up happened to stop.
  out.maint.track_norm(false, out.sv);
  const Index row = (w.next + 17 * j) % kPool;
  out.x = s.X.row(row).transpose();
  const double sign = s.y[static_cast<std::size_t>(row)] == 1 ? 1.0 : -1.0;
  out.id = l.counters().examples + 1;
  out.alpha.resize(1);
  out.alpha(0) = sign / (p.lam * static_cast<double>(out.id)) / l.scale();
  out.krow.setZero(out.sv.capacity() + 1);
  const double xsq = out.x.squaredNorm();
  out.sv.kernel_row(p.kernel, out.x, xsq, out.krow);
  out.kappa = p.kernel.self(xsq);
  return out;
}

void maintenance(benchmark::State& state, bk::Maintenance m) {
  const Index B = static_cast<Index>(state.range(0));
  const Warm& w = warm(m, B);
  const bool proj = m == bk::Maintenance::Project || m == bk::Maintenance::ProjectExact;
  // Every copy carries O(B^2) side state (the projection's K and K^-1, the Gram cache of
  // merging and removal). Keep all K copies together at ~8-16 MB, well inside the L3 cache,
  // so that each timed step finds its store about as warm as the learner's single store
  // would be (64 cold copies of an 800-SV cache would measure DRAM misses, not the step).
  const Index K = std::max<Index>(2, std::min<Index>(64, 1000000 / ((B + 2) * (B + 2))));
  std::vector<Prepared> tmpl;
  tmpl.reserve(static_cast<std::size_t>(K));
  for (Index j = 0; j < K; ++j) tmpl.push_back(prepare(w, j));
  std::vector<Prepared> work = tmpl;
  std::mt19937_64 rng(11);
  const bk::Kernel kernel = w.learner.params().kernel;
  Index j = 0, pending = 0, refactors = 0, steps = 0;
  double degradation = 0.0;
  for (auto _ : state) {
    if (j == K) {
      state.PauseTiming();
      for (Index q = 0; q < K; ++q) {
        refactors += work[static_cast<std::size_t>(q)].maint.projection().refactor_count() -
                     tmpl[static_cast<std::size_t>(q)].maint.projection().refactor_count();
      }
      work = tmpl;
      j = 0;
      state.ResumeTiming();
    }
    Prepared& pr = work[static_cast<std::size_t>(j)];
    pr.sv.push(pr.x, pr.alpha, pr.id);
    pr.maint.on_push(pr.sv, pr.krow, pr.kappa);
    if (proj && pr.maint.must_reduce()) ++pending;
    const bk::MaintenanceResult r = pr.maint.reduce(pr.sv, kernel, rng);
    benchmark::DoNotOptimize(r);
    degradation += r.degradation;
    ++j;
    ++steps;
  }
  for (Index q = 0; q < j; ++q)
    refactors += work[static_cast<std::size_t>(q)].maint.projection().refactor_count() -
                 tmpl[static_cast<std::size_t>(q)].maint.projection().refactor_count();
  state.SetItemsProcessed(static_cast<std::int64_t>(steps));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  if (proj) {
    state.counters["pending"] = steps ? static_cast<double>(pending) / static_cast<double>(steps) : 0.0;
    state.counters["refactor/step"] = steps ? static_cast<double>(refactors) / static_cast<double>(steps) : 0.0;
  }
  state.counters["copies"] = static_cast<double>(K);
}

void budgets(benchmark::internal::Benchmark* b) {
  b->ArgName("B");
  for (int B : {25, 50, 100, 200, 400, 800}) b->Arg(B);
  b->Complexity(benchmark::oAuto);
  b->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(train, merge, bk::Maintenance::Merge)->Name("bsgd_train/merge")->Apply(budgets);
BENCHMARK_CAPTURE(train, remove_random, bk::Maintenance::RemoveRandom)->Name("bsgd_train/remove-random")->Apply(budgets);
BENCHMARK_CAPTURE(train, project, bk::Maintenance::Project)->Name("bsgd_train/project")->Apply(budgets);
BENCHMARK_CAPTURE(maintenance, merge, bk::Maintenance::Merge)->Name("maintenance/merge")->Apply(budgets);
BENCHMARK_CAPTURE(maintenance, remove_random, bk::Maintenance::RemoveRandom)
    ->Name("maintenance/remove-random")
    ->Apply(budgets);
BENCHMARK_CAPTURE(maintenance, project, bk::Maintenance::Project)->Name("maintenance/project")->Apply(budgets);
