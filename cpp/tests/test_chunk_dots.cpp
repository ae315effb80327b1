// Learning a chunk with blocked dot products (detail/chunk_dots.hpp) equals learning it one
// row per call, bit for bit: for kernel learners whose budget maintenance runs every few
// examples (merging, projection, removal, nearest-neighbour, perceptron budgets, SPA's and
// BOGD's sampling) on random multi-class data with 40 and 100 features, the saved model bytes
// (SVs, coefficients, counters, random state), the predictions and the decision values agree.
// Also the store's own bookkeeping: prefetched dots after pushes, point changes and erases
// equal freshly computed ones. Built twice: baseline (where learning does not block, see
// detail::kChunkDotsPay, but the store's blocks are still checked) and AVX2+FMA.
#include <budgetkernel/budgetkernel.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

using bk_test::bytes_of;

struct Data {
  RowMatrix X;
  std::vector<std::int32_t> y;
};

// A Gaussian mixture (c centres, unit noise) with label noise.
Data mixture(Index n, Index d, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  RowMatrix centres(c, d);
  for (Index k = 0; k < centres.size(); ++k) centres.data()[k] = 1.5 * g(rng);
  Data s{RowMatrix(n, d), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const auto y = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(c));
    for (Index j = 0; j < d; ++j) s.X(i, j) = centres(y, j) + g(rng);
    // A quarter of the labels at random, so that every learner keeps updating.
    s.y[static_cast<std::size_t>(i)] = rng() % 4 == 0 ? static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(c)) : y;
  }
  return s;
}

// The learner after the whole stream in chunks of `chunk` rows (0: one call; -1: the plain
// example-by-example loop, learn_one without a chunk loop), its predictions in `pred`.
template <class L>
L learn(const L& fresh, const Data& s, Index chunk, std::vector<std::int32_t>& pred) {
  L l = fresh;
  const Index n = s.X.rows();
  pred.assign(static_cast<std::size_t>(n), -1);
  if (chunk < 0) {
    for (Index i = 0; i < n; ++i)
      pred[static_cast<std::size_t>(i)] = l.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
    return l;
  }
  const Index step = chunk > 0 ? chunk : n;
  for (Index i = 0; i < n; i += step) {
    const Index b = (std::min)(step, n - i);
    l.partial_fit(s.X.middleRows(i, b), s.y.data() + i, pred.data() + i);
  }
  return l;
}

// partial_fit over the chunk (whole, in uneven pieces, one row per call) equals the plain
// example-by-example loop.
template <class L>
void check_same(const char* what, const L& fresh, const Data& s) {
  std::vector<std::int32_t> p0, p1, pc, pp;
  const std::uint64_t blocks = detail::chunk_blocks_started();
  const L plain = learn(fresh, s, -1, p0);
  CHECK(detail::chunk_blocks_started() == blocks);  // no chunk loop, no blocks
  const L one = learn(fresh, s, 1, p1);
  const L whole = learn(fresh, s, 0, pc);
  const L pieces = learn(fresh, s, 37, pp);
  // The block path ran (in a build where blocks pay; the baseline x86-64 build learns row by
  // row, and this test then checks that too).
  CHECK(detail::chunk_blocks_started() > blocks || !detail::kChunkDotsPay);
  const std::string b0 = bytes_of(plain);
  const bool same = bytes_of(one) == b0 && bytes_of(whole) == b0 && bytes_of(pieces) == b0 && p1 == p0 &&
                    pc == p0 && pp == p0;
  const RowMatrix probe = s.X.topRows(50) * 0.9;
  const RowMatrix d0 = plain.decision_function(probe);
  const bool dec_same = (one.decision_function(probe).array() == d0.array()).all() &&
                        (whole.decision_function(probe).array() == d0.array()).all() &&
                        (pieces.decision_function(probe).array() == d0.array()).all();
  if (!same || !dec_same) std::printf("  differs: %s (bytes/predictions %d, decisions %d)\n", what, same, dec_same);
  CHECK(same);
  CHECK(dec_same);
  CHECK(plain.counters().updates > 0);
}

// Runs f(d, c, data) over the grid: 40 and 100 features, 3 and 10 classes.
void for_grid(const std::function<void(Index, int, const Data&)>& f) {
  std::uint64_t seed = 1;
  for (Index d : {Index{40}, Index{100}})
    for (int c : {3, 10}) f(d, c, mixture(400, d, c, seed++));
}

Kernel rbf(Index d) { return Kernel(KernelType::RBF, 1.0 / static_cast<double>(d)); }

// A budget whose full store just passes detail::kChunkDotsMinValues (blocks start once the
// store holds that many values), plus `extra` SVs.
Index budget_for(Index d, Index extra) { return detail::kChunkDotsMinValues / d + extra; }

TEST_CASE("pegasos: merge, projection, removal; chunk == row by row") {
  for_grid([](Index d, int c, const Data& s) {
    for (Maintenance m : {Maintenance::Merge, Maintenance::Project, Maintenance::RemoveRandom,
                          Maintenance::RemoveSmallest}) {
      for (Index B : {budget_for(d, 5), budget_for(d, 30)}) {
        BSGDParams p;
        p.kernel = rbf(d);
        p.lam = 1e-3;
        p.budget = B;
        p.maintenance = m;
        p.seed = 7;
        p.average_start = m == Maintenance::Merge ? 100 : 0;
        check_same(("pegasos " + std::string(maintenance_name(m)) + " d=" + std::to_string(d)).c_str(),
                   KernelPegasos(d, c, p), s);
      }
    }
  });
}

TEST_CASE("passive-aggressive: nn, simple, project, random (and averaged); chunk == row by row") {
  for_grid([](Index d, int c, const Data& s) {
    for (BPAVariant v : {BPAVariant::NearestNeighbor, BPAVariant::Simple, BPAVariant::Project, BPAVariant::Random}) {
      PAParams p;
      p.kernel = rbf(d);
      p.budget = budget_for(d, 10);
      p.variant = v;
      p.averaged = v == BPAVariant::Simple;
      check_same(("pa variant " + std::to_string(static_cast<int>(v)) + " d=" + std::to_string(d)).c_str(),
                 PassiveAggressive(d, c, p), s);
    }
    PAParams unbudgeted;
    unbudgeted.kernel = rbf(d);
    check_same("pa unbudgeted", PassiveAggressive(d, c, unbudgeted), s);
  });
}

TEST_CASE("perceptron budgets; chunk == row by row") {
  for_grid([](Index d, int c, const Data& s) {
    for (PerceptronBudget m : {PerceptronBudget::Random, PerceptronBudget::Forgetron, PerceptronBudget::MaxMargin,
                               PerceptronBudget::ProjectronPP}) {
      PerceptronParams p;
      p.kernel = rbf(d);
      p.budget = m == PerceptronBudget::ProjectronPP ? 0 : budget_for(d, 10);
      p.maintenance = m;
      p.beta = m == PerceptronBudget::MaxMargin ? 0.5 : 0.0;
      check_same(("perceptron " + std::to_string(static_cast<int>(m))).c_str(), KernelPerceptron(d, c, p), s);
    }
  });
}

TEST_CASE("sparse PA and BOGD; chunk == row by row") {
  for_grid([](Index d, int c, const Data& s) {
    SPAParams sp;
    sp.kernel = rbf(d);
    sp.beta = 2.0;  // sample often: the store must grow past the block threshold
    sp.averaged = c == 3;
    check_same("spa", SparsePA(d, c, sp), s);
    for (BOGDSampling m : {BOGDSampling::Uniform, BOGDSampling::NonUniform}) {
      BOGDParams bp;
      bp.kernel = rbf(d);
      bp.budget = budget_for(d, 10);
      bp.sampling = m;
      bp.lam = 0.01;
      bp.averaged = m == BOGDSampling::Uniform;
      check_same("bogd", BOGD(d, c, bp), s);
    }
  });
}

TEST_CASE("store: prefetched dots follow pushes, point changes, erases and clears") {
  const Index d = 48, n0 = 100, m = 40;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  auto randvec = [&] {
    Vector v(d);
    for (Index j = 0; j < d; ++j) v(j) = g(rng);
    return v;
  };
  RowMatrix X(m, d);
  for (Index i = 0; i < m; ++i) X.row(i) = randvec().transpose();
  SupportVectors sv(d, 1, 8);
  const Vector a = Vector::Ones(1);
  for (Index i = 0; i < n0; ++i) sv.push(randvec(), a, i);
  detail::ChunkScope chunk(X.data(), X.outerStride(), X.rows(), X.cols());
  Vector got(4 * n0), want(4 * n0);
  bool all_same = true;
  for (Index i = 0; i < m; ++i) {
    chunk.at(i);
    // Several changes between consecutive rows, each kind, so blocks see every mapping.
    for (int k = 0; k < 3; ++k) {
      const auto r = rng() % 5;
      const Index slot = static_cast<Index>(rng() % static_cast<std::uint64_t>(sv.size()));
      if (r == 0) sv.push(randvec(), a, 100 + i);
      if (r == 1) sv.set_x(slot, randvec());
      if (r == 2 && sv.size() > 90) sv.erase(slot);
      if (r == 3 && sv.size() > 90) sv.erase(sv.size() - 1);
    }
    if (i == 23) {  // a clear then refill: every slot is new
      sv.clear();
      for (Index j = 0; j < n0; ++j) sv.push(randvec(), a, 200 + j);
    }
    const Eigen::Map<const Vector> x(X.row(i).data(), d);
    for (Index n : {sv.size(), sv.size() - 3}) {
      sv.dots(x, n, got);
      Kernel::dots(sv.X(), n, Vector(x), want);  // a copy: computed without the block
      all_same = all_same && (got.head(n).array() == want.head(n).array()).all();
    }
    Vector k1(sv.size()), k2(sv.size());
    sv.kernel_row(rbf(d), x, x.squaredNorm(), k1);
    rbf(d).row(sv.X(), sv.sqnorm(), sv.size(), Vector(x), x.squaredNorm(), k2);
    all_same = all_same && (k1.array() == k2.array()).all();
  }
  CHECK(all_same);
  CHECK(detail::chunk_blocks_started() > 3);
}

}  // namespace

int main() {
#if defined(BUDGETKERNEL_TEST_NEEDS_AVX2)
  // The AVX2+FMA build of this file (test_chunk_dots_avx2): nothing to test without them.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("CPU without AVX2/FMA: skipped\n");
    return 0;
  }
#endif
  return bk_test::run_all();
}
