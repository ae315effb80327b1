// Issue 29's per-step costs on multi-class, higher-dimensional data: one merge step of
// Budgeted SGD against the number of coefficient columns c, the kernel row's arithmetic rate
// at d >= 64, and one core's measured FMA peak to judge that rate against.
//
// Data: a clustered stream (see Clustered): 3 Gaussian clusters per class whose centres are
// N(0, 4 I), unit-variance noise around them, standardised by the mixture's per-feature
// standard deviation sqrt(5). c = 10 and 26 learn 10 and 26 classes (Crammer-Singer, c
// coefficient columns); c = 1 is the binary store, learning the 10-class points with the
// label class % 2, so that c = 1 and c = 10 share the points. RBF gamma = 1/d, BSGDParams'
// defaults otherwise (lam = 1e-3, merging, averaging from the first example).
//
//  merge_step/c:<c>/d:<d>/B:<B>   one iteration = one merge maintenance step on a full store,
//      as a BSGD run has it: SupportVectors::push of the new SV, BudgetMaintainer::on_push
//      with the new example's kernel row, BudgetMaintainer::reduce (Merging::reduce). Norm
//      tracking is off, as KernelPegasos runs merging in its steady state (bound_norm, the
//      default: no kernel-matrix cache while lambda ||w||^2 <= 1/2). How the step is isolated:
//      a KernelPegasos is trained on the stream until the budget is full and then
//      max(3000, 6 B) more examples; its store and maintainer are then continued by a replay
//      of Algorithm 1 without the learner: score the next example with the store's kernel
//      row, shrink the scale by 1 - 1/t, and, when the example has a loss, push alpha =
//      beta / scale (beta of KernelPegasos: eta on y, -eta on the highest other class; eta y
//      when binary) and merge. The first 32-256 such steps (about 1 MiB of rows) are recorded
//      with their kernel rows (examples without a loss only shrink the scale and are not
//      steps). The timed loop
//      replays exactly these steps from the recorded start state, which is restored (not
//      timed) after the last of them; replaying gives the same store bit for bit (checked),
//      so each timed step gets the kernel row it would have been scored with, and only the
//      maintenance is timed. Not replayed: the averaged iterate's update and the ball
//      projection (neither changes which SVs merge). Counters: ns/step (= time per
//      iteration), m_new/step (fraction where the smallest SV was the new one, so the partner
//      search used the held row instead of computing one), merge/step (fraction that merged
//      rather than dropping a zero SV), untouched (fraction of the start store's SVs tied at
//      the smallest ||alpha||: never merged, so alpha = y / lambda; the oldest of them is m).
//  merge_search/c:<c>/d:<d>/B:<B>  the partner search alone: detail::merge_smallest +
//      detail::merge_partner on the store right after the push, with the row Merging::reduce
//      searches (the held row of the new SV, or the fresh canonical row of x_m), on a cycle of
//      up to 32 of the recorded states. The rest of the step (merge_pair: h, z, alpha_z; the
//      store's write and erase) is merge_step minus this.
//  kernel_row/d:<d>/B:<B>   one RBF kernel row of one query against B SVs
//      (SupportVectors::kernel_row: Kernel::dots + the vectorised exp); dots/d:<d>/B:<B> the
//      dot products alone (Kernel::dots); dots_rows64/d:<d>/B:<B> one block of 64 queries
//      (Kernel::dots_rows, what scoring a chunk uses; one iteration = 64 rows). SVs and
//      queries N(0, I/d), RBF gamma = 1, cycling over 64 queries. GFLOP/s counts 2 B d flops
//      per row (the exp not counted). learn_row/d:<d>/B:<B>: the kernel row as learning
//      computes it, SupportVectors::kernel_row of the row a chunk loop is learning (a
//      detail::ChunkScope over the 64 queries), answered from the store's blocks of rows
//      (detail/chunk_dots.hpp); learn_row_u1 also gives one SV a new point per row (set_x),
//      as a step that adds or merges an SV does, so each block patches a column per row.
//  fma_peak/<isa>   one core's FMA peak: 12 independent chains acc = acc * a + b on vector
//      registers (FMA latency 4 cycles x 2 pipes needs >= 8), 8 flops per 256-bit FMA, 16 per
//      512-bit one. avx2-256 is the ISA of the -mavx2 -mfma build (the _core_avx2 module);
//      avx512-512 only where the CPU has AVX-512F (the library does not use it);
//      sse2-128-muladd a separate multiply and add, the portable build's best.
//
// bench/run_cpp_bench.py --only bench_multiclass runs this and writes the checks to
// bench/results/bench_cpp_multiclass.{json,md}.
//
//   ./bench_multiclass --benchmark_filter='merge_step/c:26'
#include <budgetkernel/budgetkernel.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BK_BENCH_X86 1
#endif

namespace {

namespace bk = budgetkernel;
using bk::Index;
using bk::RowMatrix;
using bk::Vector;

constexpr int kClustersPerClass = 3;
constexpr double kSpread = 2.0;  // centres ~ N(0, kSpread^2 I)

/// The clustered stream of the header comment, drawn in chunks. `classes` point classes; the
/// label is class % label_mod (label_mod = classes: the class itself).
class Clustered {
 public:
  Clustered(Index d, int classes, int label_mod, std::uint64_t seed)
      : m_d(d), m_classes(classes), m_mod(label_mod), m_rng(seed), m_centres(classes * kClustersPerClass, d) {
    std::normal_distribution<double> g(0.0, kSpread);
    for (Index i = 0; i < m_centres.rows(); ++i)
      for (Index j = 0; j < d; ++j) m_centres(i, j) = g(m_rng);
  }
  void fill(Index n, RowMatrix& X, std::vector<std::int32_t>& y) {
    X.resize(n, m_d);
    y.resize(static_cast<std::size_t>(n));
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_int_distribution<Index> pick(0, m_centres.rows() - 1);
    const double sd = std::sqrt(kSpread * kSpread + 1.0);
    for (Index i = 0; i < n; ++i) {
      const Index k = pick(m_rng);
      for (Index j = 0; j < m_d; ++j) X(i, j) = (m_centres(k, j) + g(m_rng)) / sd;
      y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((k / kClustersPerClass) % m_mod);
    }
  }

 private:
  Index m_d;
  int m_classes, m_mod;
  std::mt19937_64 m_rng;
  RowMatrix m_centres;
};

/// One recorded merge step: the new SV and the kernel row it was scored with.
struct Step {
  Vector x, alpha, krow;
  std::int64_t id = 0;
};

/// A search state: the store right after a push and the row Merging::reduce searches.
struct SearchState {
  bk::SupportVectors sv;
  Vector km;
};

/// Everything one (c, d, B) cell times (see the header comment).
struct Cell {
  int c = 0;
  Index d = 0, B = 0;
  bk::Kernel kernel;
  bk::SupportVectors sv0;
  bk::BudgetMaintainer maint0;
  std::vector<Step> steps;
  std::vector<SearchState> search;
  double m_new = 0.0, merged = 0.0;  // fractions over the recorded steps
  double untouched = 0.0;            // fraction of the start store tied at the smallest ||alpha||
  bool replay_ok = false;
};

/// Steps recorded per cell: their rows and points take about 1 MiB (32 to 256 steps).
Index steps_for(Index d, Index c, Index B) {
  return std::clamp<Index>((Index{1} << 20) / (8 * (d + c + B + 1)), 32, 256);
}

bk::KernelPegasos warm_learner(Clustered& gen, int c, Index d, Index B) {
  bk::BSGDParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, 1.0 / static_cast<double>(d));
  p.budget = B;
  p.seed = 7;
  bk::KernelPegasos learner(d, c == 1 ? 2 : c, p);
  RowMatrix X;
  std::vector<std::int32_t> y;
  Index after_full = -1;
  const Index extra = std::max<Index>(3000, 6 * B);
  while (after_full < extra && learner.counters().examples < 200000) {
    gen.fill(500, X, y);
    learner.partial_fit(X, y.data());
    if (after_full >= 0) after_full += 500;
    else if (learner.support_vectors().size() >= B) after_full = 0;
  }
  return learner;
}

/// The row Merging::reduce searches for SV m of a store right after a push (untracked mode):
/// the new SV's row as on_push holds it, else x_m's row, both canonical, with 1 at m.
Vector search_row(Cell& cell, const bk::SupportVectors& sv, Index m, const Vector& krow) {
  const Index n = sv.size();
  Vector km = Vector::Zero(sv.capacity());
  bk::GramCache g;
  if (m == n - 1) {
    km.head(n - 1) = krow.head(n - 1);
    g.canonical_tail(sv, cell.kernel, n - 1, sv.x(m).transpose(), sv.sqnorm()(m), km);
  } else {
    sv.kernel_row(cell.kernel, sv.x(m).transpose(), sv.sqnorm()(m), km);
    g.canonical_tail(sv, cell.kernel, n, sv.x(m).transpose(), sv.sqnorm()(m), km);
  }
  km(m) = 1.0;
  return km;
}

/// Fraction of the SVs whose ||alpha||^2 ties the smallest (detail::argmin_oldest's rule):
/// SVs that no merge has touched keep alpha = beta / s = y / lambda (s = 1/t shrinks as eta
/// does), and merging picks the oldest of them, not the new SV.
double tied_smallest(const bk::SupportVectors& sv) {
  const Index n = sv.size();
  const Vector v = sv.A().topRows(n).rowwise().squaredNorm();
  const double vmin = v.minCoeff();
  Index ties = 0;
  for (Index j = 0; j < n; ++j) ties += !(v(j) > vmin + 1e-9 * (std::max)(std::abs(v(j)), std::abs(vmin)));
  return static_cast<double>(ties) / static_cast<double>(n);
}

/// Continues the warmed learner's store by Algorithm 1's replay and records steps_for() merges.
void record(Cell& cell, const bk::KernelPegasos& learner, Clustered& gen) {
  const Index c = learner.support_vectors().n_coef();
  const Index n_steps = steps_for(cell.d, c, cell.B);
  bk::SupportVectors sv = learner.support_vectors();
  bk::BudgetMaintainer maint = learner.maintainer();
  maint.track_norm(false, sv);
  cell.sv0 = sv;
  cell.maint0 = maint;
  cell.untouched = tied_smallest(sv);
  const double lam = learner.params().lam;
  double scale = learner.scale();
  std::int64_t t = learner.counters().examples;
  const std::size_t state_bytes = static_cast<std::size_t>(8 * sv.capacity() * (cell.d + 2 * c + 3));
  const std::size_t n_search = std::clamp<std::size_t>((std::size_t{8} << 20) / state_bytes, 2, 32);
  RowMatrix X;
  std::vector<std::int32_t> y;
  Vector krow = Vector::Zero(sv.capacity()), f(c), beta = Vector::Zero(c), norms;
  std::mt19937_64 rng(11);
  Index merges = 0, m_new = 0;
  while (static_cast<Index>(cell.steps.size()) < n_steps) {
    gen.fill(1, X, y);
    const auto x = X.row(0).transpose();
    sv.kernel_row(cell.kernel, x, x.squaredNorm(), krow);
    sv.scores(krow, f);
    f *= scale;
    ++t;
    scale *= 1.0 - 1.0 / static_cast<double>(t);
    if (bk::detail::pegasos_loss(f, y[0], 1.0 / (lam * static_cast<double>(t)), beta) <= 0.0) continue;
    Step s{x, beta / scale, krow, t};
    sv.push(s.x, s.alpha, s.id);
    maint.on_push(sv, s.krow, 1.0);
    double m_norm = 0.0;
    const Index m = bk::detail::merge_smallest(sv, m_norm, norms);
    m_new += m == sv.size() - 1;
    if (cell.search.size() < n_search && m_norm > 0.0) cell.search.push_back({sv, search_row(cell, sv, m, krow)});
    merges += maint.reduce(sv, cell.kernel, rng).degradation > 0.0;
    cell.steps.push_back(std::move(s));
  }
  cell.m_new = static_cast<double>(m_new) / static_cast<double>(n_steps);
  cell.merged = static_cast<double>(merges) / static_cast<double>(n_steps);
  // The timed loop's replay must reach the same store.
  bk::SupportVectors r = cell.sv0;
  bk::BudgetMaintainer rm = cell.maint0;
  for (const Step& s : cell.steps) {
    r.push(s.x, s.alpha, s.id);
    rm.on_push(r, s.krow, 1.0);
    rm.reduce(r, cell.kernel, rng);
  }
  const Index n = sv.size();
  cell.replay_ok = r.size() == n && r.X().topRows(n) == sv.X().topRows(n) && r.A().topRows(n) == sv.A().topRows(n);
}

/// The cell of (c, d, B), built on first use; one cell is kept (step and search of a cell
/// run one after the other).
const Cell& cell(int c, Index d, Index B) {
  static std::unique_ptr<Cell> cached;
  if (cached && cached->c == c && cached->d == d && cached->B == B) return *cached;
  cached.reset();
  auto out = std::make_unique<Cell>();
  out->c = c;
  out->d = d;
  out->B = B;
  out->kernel = bk::Kernel(bk::KernelType::RBF, 1.0 / static_cast<double>(d));
  const int classes = c == 1 ? 10 : c;
  Clustered gen(d, classes, c == 1 ? 2 : c, 1000 + static_cast<std::uint64_t>(d));
  const bk::KernelPegasos learner = warm_learner(gen, c, d, B);
  record(*out, learner, gen);
  cached = std::move(out);
  return *cached;
}

void merge_step(benchmark::State& state, int c, Index d, Index B) {
  const Cell& w = cell(c, d, B);
  if (!w.replay_ok) {
    state.SkipWithError("the replay did not reproduce the recorded store");
    return;
  }
  bk::SupportVectors sv = w.sv0;
  bk::BudgetMaintainer maint = w.maint0;
  std::mt19937_64 rng(11);
  const std::size_t n = w.steps.size();
  std::size_t j = 0;
  for (auto _ : state) {
    if (j == n) {
      state.PauseTiming();
      sv = w.sv0;
      maint = w.maint0;
      j = 0;
      state.ResumeTiming();
    }
    const Step& s = w.steps[j++];
    sv.push(s.x, s.alpha, s.id);
    maint.on_push(sv, s.krow, 1.0);
    const bk::MaintenanceResult r = maint.reduce(sv, w.kernel, rng);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["ns/step"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e-9,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["m_new/step"] = w.m_new;
  state.counters["merge/step"] = w.merged;
  state.counters["untouched"] = w.untouched;
  state.counters["steps"] = static_cast<double>(n);
}

void merge_search(benchmark::State& state, int c, Index d, Index B) {
  const Cell& w = cell(c, d, B);
  if (w.search.empty()) {
    state.SkipWithError("no search state recorded");
    return;
  }
  Vector norms(w.B + 2);
  std::size_t j = 0;
  for (auto _ : state) {
    const SearchState& s = w.search[j];
    j = j + 1 == w.search.size() ? 0 : j + 1;
    double m_norm = 0.0;
    const Index m = bk::detail::merge_smallest(s.sv, m_norm, norms);
    const Index partner = bk::detail::merge_partner(s.sv, m, s.km.data());
    benchmark::DoNotOptimize(partner);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["ns/search"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e-9,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["states"] = static_cast<double>(w.search.size());
}

// ---- kernel rows ---------------------------------------------------------------------------

RowMatrix gaussian(Index n, Index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  RowMatrix m(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < d; ++j) m(i, j) = g(rng) / std::sqrt(static_cast<double>(d));
  return m;
}

enum class RowKind { KernelRow, Dots, DotsRows64, LearnRow, LearnRowU1 };

void kernel_rows(benchmark::State& state, RowKind kind, Index d, Index B) {
  constexpr Index kQueries = 64;
  const bk::Kernel k(bk::KernelType::RBF, 1.0);
  bk::SupportVectors sv(d, 1, B + 1);
  const RowMatrix P = gaussian(B, d, 1);
  for (Index i = 0; i < B; ++i) sv.push(P.row(i).transpose(), Vector::Constant(1, 1.0), i);
  const RowMatrix Q = gaussian(kQueries, d, 3);
  Vector q_sq(kQueries);
  for (Index i = 0; i < kQueries; ++i) q_sq(i) = Q.row(i).squaredNorm();
  Vector out(sv.capacity());
  RowMatrix D(kQueries, B);
  const bool learning = kind == RowKind::LearnRow || kind == RowKind::LearnRowU1;
  bk::detail::ChunkScope chunk(Q.data(), Q.outerStride(), kQueries, d, learning);
  Index q = 0, slot = 0;
  for (auto _ : state) {
    if (kind == RowKind::LearnRowU1) {
      sv.set_x(slot, P.row(slot).transpose());  // the same point, but a new one to the block
      slot = slot + 1 == B ? 0 : slot + 1;
    }
    chunk.at(q);
    if (kind == RowKind::KernelRow || learning) sv.kernel_row(k, Q.row(q).transpose(), q_sq(q), out);
    else if (kind == RowKind::Dots) bk::Kernel::dots(sv.X(), B, Q.row(q).transpose(), out);
    else bk::Kernel::dots_rows(sv.X(), B, Q, D);
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(D.data());
    benchmark::ClobberMemory();
    q = q + 1 == kQueries ? 0 : q + 1;
  }
  const double rows = static_cast<double>(state.iterations()) * (kind == RowKind::DotsRows64 ? kQueries : 1);
  state.SetItemsProcessed(static_cast<std::int64_t>(rows));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * rows * static_cast<double>(B) * static_cast<double>(d), benchmark::Counter::kIsRate);
  state.counters["simd_bits"] = static_cast<double>(64 * bk::detail::dot_block::kLanes);
}

// ---- FMA peak ------------------------------------------------------------------------------

constexpr int kChains = 12;
constexpr std::int64_t kInner = 1 << 14;  // vector operations per chain per iteration

#if defined(BK_BENCH_X86)
__attribute__((target("avx2,fma"))) double fma_chains_avx2(double a, double b) {
  __m256d acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_pd(1.0 + 1e-3 * k);
  const __m256d va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b);
  for (std::int64_t i = 0; i < kInner; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_pd(acc[k], va, vb);
  }
  alignas(32) double lanes[4];
  double sum = 0.0;
  for (int k = 0; k < kChains; ++k) {
    _mm256_store_pd(lanes, acc[k]);
    sum += lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }
  return sum;
}

__attribute__((target("avx512f"))) double fma_chains_avx512(double a, double b) {
  __m512d acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_pd(1.0 + 1e-3 * k);
  const __m512d va = _mm512_set1_pd(a), vb = _mm512_set1_pd(b);
  for (std::int64_t i = 0; i < kInner; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_pd(acc[k], va, vb);
  }
  alignas(64) double lanes[8];
  double sum = 0.0;
  for (int k = 0; k < kChains; ++k) {
    _mm512_store_pd(lanes, acc[k]);
    for (double v : lanes) sum += v;
  }
  return sum;
}

// The portable module's multiply + add; the empty asm keeps a -mfma build from contracting
// the pair into an FMA.
double muladd_chains_sse2(double a, double b) {
  __m128d acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm_set1_pd(1.0 + 1e-3 * k);
  const __m128d va = _mm_set1_pd(a), vb = _mm_set1_pd(b);
  for (std::int64_t i = 0; i < kInner; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) {
      __m128d p = _mm_mul_pd(acc[k], va);
      asm("" : "+x"(p));
      acc[k] = _mm_add_pd(p, vb);
    }
  }
  alignas(16) double lanes[2];
  double sum = 0.0;
  for (int k = 0; k < kChains; ++k) {
    _mm_store_pd(lanes, acc[k]);
    sum += lanes[0] + lanes[1];
  }
  return sum;
}

enum class Isa { Sse2, Avx2Fma, Avx512 };

bool cpu_has(Isa isa) {
  switch (isa) {
    case Isa::Sse2: return true;
    case Isa::Avx2Fma: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

/// `lanes` doubles per vector operation, 2 flops per lane (one FMA or one multiply + add).
void fma_peak(benchmark::State& state, double (*chains)(double, double), int lanes, Isa isa) {
  if (!cpu_has(isa)) {
    state.SkipWithError("the CPU lacks this instruction set");
    return;
  }
  double a = 1.0 - 1e-9, b = 1e-9;  // acc -> 1: no overflow, no subnormals
  benchmark::DoNotOptimize(a);
  benchmark::DoNotOptimize(b);
  for (auto _ : state) {
    double s = chains(a, b);
    benchmark::DoNotOptimize(s);
  }
  const double flops = 2.0 * lanes * kChains * static_cast<double>(kInner) * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
}
#endif

// ---- registration --------------------------------------------------------------------------

std::string cell_name(const char* family, int c, Index d, Index B) {
  return std::string(family) + "/c:" + std::to_string(c) + "/d:" + std::to_string(d) + "/B:" + std::to_string(B);
}

int register_all() {
  // Step and search of one cell next to each other (one cached cell at a time).
  for (Index B : {100, 500})
    for (Index d : {2, 16, 64, 784})
      for (int c : {1, 10, 26}) {
        benchmark::RegisterBenchmark(cell_name("merge_step", c, d, B).c_str(), merge_step, c, d, B)
            ->Unit(benchmark::kNanosecond);
        benchmark::RegisterBenchmark(cell_name("merge_search", c, d, B).c_str(), merge_search, c, d, B)
            ->Unit(benchmark::kNanosecond);
      }
  const std::pair<const char*, RowKind> kinds[] = {
      {"kernel_row", RowKind::KernelRow},     {"dots", RowKind::Dots},
      {"dots_rows64", RowKind::DotsRows64},   {"learn_row", RowKind::LearnRow},
      {"learn_row_u1", RowKind::LearnRowU1}};
  for (const auto& [name, kind] : kinds)
    for (Index d : {64, 256, 784})
      for (Index B : {100, 500}) {
        const std::string n = std::string(name) + "/d:" + std::to_string(d) + "/B:" + std::to_string(B);
        benchmark::RegisterBenchmark(n.c_str(), kernel_rows, kind, d, B)->Unit(benchmark::kNanosecond);
      }
#if defined(BK_BENCH_X86)
  benchmark::RegisterBenchmark("fma_peak/avx2-256", fma_peak, fma_chains_avx2, 4, Isa::Avx2Fma);
  benchmark::RegisterBenchmark("fma_peak/avx512-512", fma_peak, fma_chains_avx512, 8, Isa::Avx512);
  benchmark::RegisterBenchmark("fma_peak/sse2-128-muladd", fma_peak, muladd_chains_sse2, 2, Isa::Sse2);
#endif
  return 0;
}

[[maybe_unused]] const int registered = register_all();

}  // namespace
