// Per-example training cost of the Passive-Aggressive learners (budgetkernel::PassiveAggressive:
// BPA-S, BPA-NN, BPA-P, PA+Rand, and the ramp-loss BPA^R-NN) and the budgeted kernel
// perceptrons (budgetkernel::KernelPerceptron: Stoptron, Random, Forgetron, MaxMargin,
// Projectron, Projectron++) against the budget B, with a full store.
//
// Data: the 2-D noisy checkerboard of bench_bsgd.cpp (4x4 cells on [0,4)^2, 15% label
// noise), standardised with the exact moments of U[0,4). Kernel RBF gamma = kGamma (= 2, the
// region the BPA table's tuning picks for these learners: a kernel width of ~0.5 sd against a
// checkerboard cell of ~0.87 sd), C = 1 (PA-I), Projectron eta = kEta (small, so that the
// store fills: the budget is then the cap and every further update is a projection).
//
//  pa_train/<learner>/B:<B>, perceptron_train/<learner>/B:<B>
//      one learner per (learner, B), warmed up on the stream until the store holds B SVs and
//      then kWarmupAfterFull more examples (cached across Google Benchmark's repeated calls);
//      one iteration = partial_fit over the next kChunk examples of the stream (cycling over a
//      pool of kPool examples). items_per_second = examples/s. Counters, measured in the timed
//      part: upd/ex (fraction of examples that changed the model), maint/ex (fraction that ran
//      a budget-maintenance step), SVs (store size reached), s/upd (seconds per *updating*
//      example = time / updates: an upper bound of the update cost, since it also carries the
//      scoring of the examples that did not update).
//      Per example: O(B d) scoring + upd/ex * (update cost). Throughput per example therefore
//      mixes examples with and without an update: a learner with a lower upd/ex looks faster.
//  pa_update/<learner>/B:<B>, perceptron_update/<learner>/B:<B>
//      the cost of one *updating* example alone: learn_one on a copy of the warmed learner with
//      a stream example it misclassifies inside its margin (|f(x)| <= 0.9), so that every
//      learner updates (the ramp loss too: it updates only inside the margin); the Stoptron,
//      whose store is full, only scores. Copies are made outside the timed region (K copies,
//      re-copied every K steps with the timer paused). Counters: upd/step = fraction of the
//      timed steps that changed the model (BPA-S and BPA-NN may keep the store and discard or
//      fold the example: a maintenance step without an SV change), maint/step.
//      Such a mistake usually takes the budget path that removes an SV, the most expensive
//      one, so the time per update here is above the average one of the *_train families.
//      Expected: O(B) for BPA-S, BPA-NN (expected O(B): the nearest neighbour is searched
//      among the SVs), PA+Rand and the perceptrons; O(B^2) for BPA-P, Projectron and
//      Projectron++ (a maintained inverse of the SVs' kernel matrix).
//
// ->Complexity(oAuto) reports Google Benchmark's best-fitting big-O; bench/run_cpp_bench.py
// runs this executable, fits log-log slopes vs B and writes bench/results/bench_cpp.{json,md}.
//
//   ./bench_pa --benchmark_filter='pa_train/bpa-s/'
#include <budgetkernel/budgetkernel.hpp>
#include <budgetkernel/learners/passive_aggressive.hpp>
#include <budgetkernel/learners/perceptron.hpp>

#include <benchmark/benchmark.h>

#include "bench_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace bk = budgetkernel;
using bk::Index;

constexpr double kGamma = 2.0;
// The learners that keep K^{-1} of the SVs: with gamma = 2 a 2-D store holds only ~240
// numerically independent SVs (the projection folds the rest in at once), so B = 400 and 800
// would never fill; gamma = 16 (as in bench_bsgd.cpp) fills every budget.
constexpr double kGammaProjection = 16.0;
constexpr double kC = 1.0;
constexpr double kEta = 1e-3;             // Projectron(++): small, so that every budget fills
constexpr Index kPool = 1 << 18;          // distinct stream examples (cycled)
constexpr Index kChunk = 1000;            // examples per timed iteration
constexpr Index kWarmupAfterFull = 5000;  // examples learned after the store first fills
constexpr Index kMaxWarmup = 200000;      // give up filling after this many examples

using bench::Stream;

const Stream& pool() {
  static const Stream s = bench::noisy_checkerboard(kPool, 12345);
  return s;
}

/// One benchmarked learner: its name in the benchmark family and how to build it.
struct PASpec {
  const char* name;
  bk::BPAVariant variant;
  bk::PALoss loss;
  bool quadratic;  // O(B^2) side state (the projection's inverse): fewer copies fit in cache
  double gamma;
};

struct PerceptronSpec {
  const char* name;
  bk::PerceptronBudget maintenance;
  bool quadratic;
  double gamma;
};

const PASpec kPASpecs[] = {
    {"bpa-s", bk::BPAVariant::Simple, bk::PALoss::Hinge, false, kGamma},
    {"bpa-nn", bk::BPAVariant::NearestNeighbor, bk::PALoss::Hinge, false, kGamma},
    {"bpa-p", bk::BPAVariant::Project, bk::PALoss::Hinge, true, kGammaProjection},
    {"pa-rand", bk::BPAVariant::Random, bk::PALoss::Hinge, false, kGamma},
    {"bpa-r-nn", bk::BPAVariant::NearestNeighbor, bk::PALoss::Ramp, false, kGamma},
};

const PerceptronSpec kPerceptronSpecs[] = {
    {"stoptron", bk::PerceptronBudget::Stop, false, kGamma},
    {"random", bk::PerceptronBudget::Random, false, kGamma},
    {"forgetron", bk::PerceptronBudget::Forgetron, false, kGamma},
    {"max-margin", bk::PerceptronBudget::MaxMargin, false, kGamma},
    {"projectron", bk::PerceptronBudget::Projectron, true, kGammaProjection},
    {"projectron-pp", bk::PerceptronBudget::ProjectronPP, true, kGammaProjection},
};

bk::PassiveAggressive make(const PASpec& s, Index B) {
  bk::PAParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, s.gamma);
  p.C = kC;
  p.pa_type = 1;
  p.loss = s.loss;
  p.budget = B;
  p.variant = s.variant;
  p.seed = 7;
  return bk::PassiveAggressive(2, 2, p);
}

bk::KernelPerceptron make(const PerceptronSpec& s, Index B) {
  bk::PerceptronParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, s.gamma);
  p.budget = B;
  p.maintenance = s.maintenance;
  p.eta = kEta;
  p.beta = 0.0;
  p.seed = 7;
  return bk::KernelPerceptron(2, 2, p);
}

/// A learner warmed up to a full store, plus where in the pool its stream continues.
template <class L>
struct Warm {
  L learner;
  Index next;
};

/// Cached per (learner, B): Google Benchmark calls a benchmark function several times.
template <class L, class Spec>
const Warm<L>& warm(const Spec& spec, Index B) {
  static std::map<std::pair<std::string, Index>, Warm<L>> cache;
  const auto key = std::make_pair(std::string(spec.name), B);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const Stream& s = pool();
  Warm<L> w{make(spec, B), 0};
  Index i = 0, after_full = -1, seen = 0;
  while (after_full < kWarmupAfterFull) {
    const Index n = std::min<Index>(kChunk, kPool - i);
    w.learner.partial_fit(s.X.middleRows(i, n), s.y.data() + i);
    i = (i + n) % kPool;
    seen += n;
    if (after_full >= 0) after_full += n;
    else if (w.learner.support_vectors().size() >= B) after_full = 0;
    // A learner that projects can plateau below B (numerically dependent SVs are folded in
    // at once); the SVs counter reports the size reached.
    if (after_full < 0 && seen >= kMaxWarmup) break;
  }
  w.next = i;
  return cache.emplace(key, std::move(w)).first->second;
}

template <class L, class Spec>
void train(benchmark::State& state, const Spec& spec) {
  const Index B = static_cast<Index>(state.range(0));
  const Stream& s = pool();
  const Warm<L>& w = warm<L>(spec, B);
  L learner = w.learner;  // every invocation starts from the same state
  Index i = w.next;
  const bk::Counters c0 = learner.counters();
  for (auto _ : state) {
    if (i + kChunk > kPool) i = 0;
    learner.partial_fit(s.X.middleRows(i, kChunk), s.y.data() + i);
    i += kChunk;
  }
  const bk::Counters& c1 = learner.counters();
  const double ex = static_cast<double>(c1.examples - c0.examples);
  const double upd = static_cast<double>(c1.updates - c0.updates);
  state.SetItemsProcessed(static_cast<std::int64_t>(ex));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  state.counters["upd/ex"] = ex > 0 ? upd / ex : 0.0;
  state.counters["maint/ex"] = ex > 0 ? static_cast<double>(c1.maintenance - c0.maintenance) / ex : 0.0;
  state.counters["SVs"] = static_cast<double>(learner.support_vectors().size());
  // kIsRate | kInvert: seconds per update (elapsed / updates).
  state.counters["s/upd"] = benchmark::Counter(upd, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// Stream examples that the warmed learner gets wrong and that lie inside its margin
/// (|f(x)| <= 0.9, with their own, possibly noisy, label): every learner updates on them (hinge
/// and ramp PA, the perceptrons' mistake rule); their loss 1 + |f| >= 1 is that of a typical
/// mistake.
template <class L>
void margin_examples(const Warm<L>& w, Index count, std::vector<bk::Vector>& xs, std::vector<std::int32_t>& ys) {
  const Stream& s = pool();
  double f = 0.0;
  for (Index j = 0, row = w.next; static_cast<Index>(xs.size()) < count && j < kPool; ++j, row = (row + 1) % kPool) {
    w.learner.decision(s.X.row(row).data(), &f);
    const std::int32_t y = s.y[static_cast<std::size_t>(row)];
    if (std::abs(f) > 0.9 || (f > 0.0) == (y == 1)) continue;  // binary: class 1 <-> f > 0
    xs.emplace_back(s.X.row(row).transpose());
    ys.push_back(y);
  }
  // (If too few are found, the last ones are reused.)
  while (!xs.empty() && static_cast<Index>(xs.size()) < count) {
    xs.push_back(xs.back());
    ys.push_back(ys.back());
  }
}

template <class L, class Spec>
void update(benchmark::State& state, const Spec& spec) {
  const Index B = static_cast<Index>(state.range(0));
  const Warm<L>& w = warm<L>(spec, B);
  // Keep all K copies together within a few MB (the projection's (B+1)^2 matrices), so that
  // each timed step finds its learner about as warm as a single learner's would be.
  const Index K = spec.quadratic ? std::max<Index>(2, std::min<Index>(64, 1000000 / ((B + 2) * (B + 2)))) : 64;
  std::vector<bk::Vector> xs;
  std::vector<std::int32_t> ys;
  margin_examples(w, K, xs, ys);
  if (xs.empty()) {
    state.SkipWithError("no example inside the margin");
    return;
  }
  const std::vector<L> tmpl(static_cast<std::size_t>(K), w.learner);
  std::vector<L> work = tmpl;
  Index j = 0, steps = 0, updates = 0, maint = 0;
  auto tally = [&](Index n) {
    for (Index q = 0; q < n; ++q) {
      const std::size_t u = static_cast<std::size_t>(q);
      updates += work[u].counters().updates - tmpl[u].counters().updates;
      maint += work[u].counters().maintenance - tmpl[u].counters().maintenance;
    }
  };
  for (auto _ : state) {
    if (j == K) {
      state.PauseTiming();
      tally(K);
      work = tmpl;
      j = 0;
      state.ResumeTiming();
    }
    const std::size_t u = static_cast<std::size_t>(j);
    const std::int32_t p = work[u].learn_one(xs[u].data(), ys[u]);
    benchmark::DoNotOptimize(p);
    ++j;
    ++steps;
  }
  tally(j);
  state.SetItemsProcessed(static_cast<std::int64_t>(steps));
  state.SetComplexityN(static_cast<std::int64_t>(B));
  state.counters["upd/step"] = steps ? static_cast<double>(updates) / static_cast<double>(steps) : 0.0;
  state.counters["maint/step"] = steps ? static_cast<double>(maint) / static_cast<double>(steps) : 0.0;
  state.counters["SVs"] = static_cast<double>(w.learner.support_vectors().size());
  state.counters["copies"] = static_cast<double>(K);
}

void budgets(benchmark::internal::Benchmark* b) {
  b->ArgName("B");
  for (int B : {25, 50, 100, 200, 400, 800}) b->Arg(B);
  b->Complexity(benchmark::oAuto);
  b->Unit(benchmark::kMicrosecond);
}

[[maybe_unused]] const int registered = [] {
  for (const PASpec& s : kPASpecs) {
    benchmark::RegisterBenchmark((std::string("pa_train/") + s.name).c_str(),
                                 [s](benchmark::State& st) { train<bk::PassiveAggressive>(st, s); })
        ->Apply(budgets);
  }
  for (const PerceptronSpec& s : kPerceptronSpecs) {
    benchmark::RegisterBenchmark((std::string("perceptron_train/") + s.name).c_str(),
                                 [s](benchmark::State& st) { train<bk::KernelPerceptron>(st, s); })
        ->Apply(budgets);
  }
  for (const PASpec& s : kPASpecs) {
    benchmark::RegisterBenchmark((std::string("pa_update/") + s.name).c_str(),
                                 [s](benchmark::State& st) { update<bk::PassiveAggressive>(st, s); })
        ->Apply(budgets);
  }
  for (const PerceptronSpec& s : kPerceptronSpecs) {
    benchmark::RegisterBenchmark((std::string("perceptron_update/") + s.name).c_str(),
                                 [s](benchmark::State& st) { update<bk::KernelPerceptron>(st, s); })
        ->Apply(budgets);
  }
  return 0;
}();

}  // namespace
