// combine() of Twin Vector Machines and of their Random baseline (learners/combine.hpp,
// TwinVectorMachine::combine_from): within the budget every machine holds exactly the pooled
// twins of the documented rule (counts times w_k N / n_k, class maps, a binary model's twins
// swapped into its class-0 machine) and equals an IDSVM trained from scratch on them at
// C_t = C B / max(B, sum s); over the budget, `budget` twins by the TVM's own merging with the
// reported degradation equal to the brute-force best pair's distortion; the Random baseline's
// pooled reservoir (all kept within the budget, a weighted sample over it); the combined model
// saves, loads and keeps learning bit for bit. What every learner shares (copy, weights,
// parameters, counters): test_combine_properties.cpp.
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>

#include <random>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

const double inf = std::numeric_limits<double>::infinity();

using bk_test::Stream;

// Noisy 4x4 checkerboard on [-2, 2)^2 (20% relabelled); labels = the cell index mod c.
Stream make_stream(Index n, int n_classes, std::uint64_t seed) { return bk_test::noisy_board(n, n_classes, seed, 0.05); }

TVMParams tvm_params(Index budget, bool random = false) {
  TVMParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.budget = budget;
  p.random_baseline = random;
  return p;
}

TwinVectorMachine fit(Index c, const TVMParams& p, const Stream& s, std::uint64_t seed = 0) {
  TVMParams q = p;
  q.seed = seed;
  TwinVectorMachine m(2, c, q);
  m.partial_fit(s.X, s.y.data());
  return m;
}

struct Twin {
  std::vector<double> q;
  double sp, sm;
};

// Twins of machine j of m, counts times f, sides swapped on request.
void append_twins(std::vector<Twin>& out, const TwinVectorMachine& m, Index j, double f, bool swap) {
  const detail::TwinSet& tw = m.twins(j);
  for (Index t = 0; t < tw.size(); ++t) {
    const double* q = tw.points().data() + t * tw.dim();
    const double a = f * tw.s_plus(t), b = f * tw.s_minus(t);
    out.push_back({std::vector<double>(q, q + tw.dim()), swap ? b : a, swap ? a : b});
  }
}

// Whether machine k of m holds exactly these twins, in this order (points bitwise).
bool holds(const TwinVectorMachine& m, Index k, const std::vector<Twin>& want) {
  const detail::TwinSet& tw = m.twins(k);
  if (tw.size() != static_cast<Index>(want.size())) return false;
  for (Index t = 0; t < tw.size(); ++t) {
    const Twin& w = want[static_cast<std::size_t>(t)];
    for (Index l = 0; l < tw.dim(); ++l)
      if (tw.points()(t, l) != w.q[static_cast<std::size_t>(l)]) return false;
    if (tw.s_plus(t) != w.sp || tw.s_minus(t) != w.sm) return false;
  }
  return true;
}

// IDSVM from scratch on twins at C_t = C B / max(B, sum s) (fixed_C_total).
IncrementalSVM scratch(const std::vector<Twin>& twins, const TVMParams& p) {
  double total = 0.0;
  for (const Twin& t : twins) total += t.sp + t.sm;
  const double B = static_cast<double>(p.budget);
  IncrementalSVM svm(2, p.kernel, p.C * B / std::max(B, total), p.ridge);
  for (const Twin& t : twins) {
    if (t.sp > 0.0) svm.learn(t.q.data(), 1.0, t.sp);
    if (t.sm > 0.0) svm.learn(t.q.data(), -1.0, t.sm);
  }
  return svm;
}

RowMatrix probe_points(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.5, 2.5);
  RowMatrix P(n, 2);
  for (Index i = 0; i < n; ++i) P(i, 0) = u(rng), P(i, 1) = u(rng);
  return P;
}

// Largest |f_a - f_b| on the probes, the dual objectives' relative gap and a's KKT violation.
double machine_gap(const IncrementalSVM& a, const IncrementalSVM& b) {
  const RowMatrix P = probe_points(200, 7);
  double gap = std::fabs(a.dual_objective() - b.dual_objective()) / (1.0 + std::fabs(b.dual_objective()));
  for (Index i = 0; i < P.rows(); ++i)
    gap = std::max(gap, std::fabs(a.decision(P.row(i).data()) - b.decision(P.row(i).data())));
  return std::max(gap, a.kkt_violation());
}

std::string bytes_of(const TwinVectorMachine& m) {
  FieldMap fm;
  m.save(fm);
  return fm.to_bytes();
}

TwinVectorMachine from_bytes(const std::string& b) {
  TwinVectorMachine m;
  m.load(FieldMap::from_bytes(b));
  return m;
}

// The partners of every twin of machine k against a brute-force scan of the pair rule.
bool partners_fresh(const TwinVectorMachine& m, Index k) {
  const detail::TwinSet& tw = m.twins(k);
  for (Index i = 0; i < tw.size(); ++i) {
    Index p = -1;
    double d = inf;
    for (Index j = 0; j < tw.size(); ++j)
      if (j != i && tw.pair_distortion(i, j) < d) d = tw.pair_distortion(i, j), p = j;
    if (p != tw.partner(i) || d != tw.partner_distortion(i)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("binary TVM within the budget: the pooled twins, and the exact SVM on them") {
  const TVMParams p = tvm_params(60);
  const Stream a = make_stream(120, 2, 1), b = make_stream(80, 2, 2);
  const TwinVectorMachine ma = fit(2, p, a), mb = fit(2, p, b);
  CombineOptions opt;
  opt.budget = 200;
  CombineReport rep;
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, opt, nullptr, &rep);
  std::vector<Twin> want;
  append_twins(want, ma, 0, 1.0, false);  // default weights n_k / N: factor 1
  append_twins(want, mb, 0, 1.0, false);
  CHECK(holds(out, 0, want));
  CHECK(rep.union_size == ma.n_twins() + mb.n_twins());
  CHECK(rep.duplicates == 0 && rep.reductions == 0 && rep.degradation == 0.0);
  TVMParams pb = p;
  pb.budget = 200;
  CHECK(machine_gap(out.machine(0), scratch(want, pb)) < 1e-9);
  CHECK(out.params().budget == 200);
  CHECK(out.counters().examples == 200);
  CHECK(out.counters().maintenance == ma.counters().maintenance + mb.counters().maintenance);
  CHECK(partners_fresh(out, 0));
}

TEST_CASE("explicit weights scale the counts by w_k N / n_k") {
  const TVMParams p = tvm_params(40);
  const Stream a = make_stream(100, 2, 3), b = make_stream(60, 2, 4);
  const TwinVectorMachine ma = fit(2, p, a), mb = fit(2, p, b);
  CombineOptions opt;
  opt.budget = 100;
  opt.weights = {1.0, 3.0};
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, opt);
  std::vector<Twin> want;
  append_twins(want, ma, 0, 0.25 * 160.0 / 100.0, false);
  append_twins(want, mb, 0, 0.75 * 160.0 / 60.0, false);
  const detail::TwinSet& tw = out.twins(0);
  CHECK(tw.size() == static_cast<Index>(want.size()));
  double worst = 0.0;
  for (Index t = 0; t < tw.size() && t < static_cast<Index>(want.size()); ++t) {
    const Twin& w = want[static_cast<std::size_t>(t)];
    worst = std::max({worst, std::fabs(tw.s_plus(t) - w.sp), std::fabs(tw.s_minus(t) - w.sm)});
  }
  CHECK(worst < 1e-12);
  TVMParams pb = p;
  pb.budget = 100;
  CHECK(machine_gap(out.machine(0), scratch(want, pb)) < 1e-9);
}

TEST_CASE("class maps: binary models on {0,1} and {1,2}, and a three-class model") {
  const TVMParams p = tvm_params(50);
  const Stream a = make_stream(90, 2, 5), b = make_stream(70, 2, 6), c3 = make_stream(90, 3, 7);
  const TwinVectorMachine ma = fit(2, p, a), mb = fit(2, p, b), mc = fit(3, p, c3);
  CombineOptions opt;
  opt.budget = 400;
  opt.n_classes = 3;
  opt.class_maps = {{0, 1}, {1, 2}, {0, 1, 2}};
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb, &mc}, opt);
  CHECK(out.n_classes() == 3);
  std::vector<Twin> want[3];
  // model order within each machine: a, b, then c
  append_twins(want[0], ma, 0, 1.0, true);   // a's class 0 = its negatives
  append_twins(want[1], ma, 0, 1.0, false);  // a's class 1 = its positives
  append_twins(want[1], mb, 0, 1.0, true);   // b's class 0 is class 1
  append_twins(want[2], mb, 0, 1.0, false);
  for (Index k = 0; k < 3; ++k) append_twins(want[k], mc, k, 1.0, false);
  TVMParams pb = p;
  pb.budget = 400;
  for (Index k = 0; k < 3; ++k) {
    CHECK(holds(out, k, want[k]));
    CHECK(machine_gap(out.machine(k), scratch(want[k], pb)) < 1e-9);
    CHECK(partners_fresh(out, k));
  }
}

TEST_CASE("over the budget: budget twins by the TVM's merging; one merge = the best pair's distortion") {
  TVMParams p = tvm_params(30);
  p.rejection_eta = -1.0;  // no Rejection, no removal: every overflow merges
  p.m2 = inf;
  p.one_sided = false;
  const Stream a = make_stream(150, 2, 8), b = make_stream(150, 2, 9);
  const TwinVectorMachine ma = fit(2, p, a), mb = fit(2, p, b);
  CHECK(ma.n_twins() == 30 && mb.n_twins() == 30);
  std::vector<Twin> pool;
  append_twins(pool, ma, 0, 1.0, false);
  append_twins(pool, mb, 0, 1.0, false);
  double best = inf;
  for (std::size_t i = 0; i < pool.size(); ++i)
    for (std::size_t j = i + 1; j < pool.size(); ++j) {
      const double si = pool[i].sp + pool[i].sm, sj = pool[j].sp + pool[j].sm;
      double d2 = 0.0;
      for (std::size_t l = 0; l < 2; ++l) d2 += (pool[i].q[l] - pool[j].q[l]) * (pool[i].q[l] - pool[j].q[l]);
      best = std::min(best, si * sj * d2 / (si + sj));
    }
  CombineOptions opt;
  opt.budget = 59;
  CombineReport rep;
  const TwinVectorMachine one = combine<TwinVectorMachine>({&ma, &mb}, opt, nullptr, &rep);
  CHECK(one.n_twins() == 59);
  CHECK(rep.reductions == 1);
  CHECK_NEAR(rep.degradation, best, 1e-12 * best);
  CHECK(rep.degradation > 0.0);
  CHECK(one.counters().maintenance == ma.counters().maintenance + mb.counters().maintenance + 1);
  CHECK_NEAR(one.counters().degradation, rep.degradation, 0.0);
  opt.budget = 30;  // the models' own budget
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, opt, nullptr, &rep);
  CHECK(out.n_twins() == 30);
  CHECK(rep.reductions == 30 && rep.degradation > 0.0);
  double total = 0.0;  // merging keeps every count
  for (const Twin& t : pool) total += t.sp + t.sm;
  CHECK_NEAR(out.twins(0).total_weight(), total, 1e-9);
  std::vector<Twin> held;
  append_twins(held, out, 0, 1.0, false);
  CHECK(machine_gap(out.machine(0), scratch(held, out.params())) < 1e-9);
  CHECK(partners_fresh(out, 0));
}

TEST_CASE("over the budget with the default TVM (One-Sided, Rejection, removal): budget twins") {
  const TVMParams p = tvm_params(25);
  const Stream a = make_stream(300, 3, 10), b = make_stream(300, 3, 11);
  const TwinVectorMachine ma = fit(3, p, a), mb = fit(3, p, b);
  CombineReport rep;
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, {}, nullptr, &rep);
  for (Index k = 0; k < 3; ++k) {
    CHECK(out.n_twins(k) <= 25);
    CHECK(out.n_twins(k) >= std::min<Index>(25, std::max(ma.n_twins(k), mb.n_twins(k))));
    std::vector<Twin> held;
    append_twins(held, out, k, 1.0, false);
    CHECK(machine_gap(out.machine(k), scratch(held, out.params())) < 1e-9);
  }
  CHECK(rep.reductions > 0 && rep.degradation > 0.0);
}

TEST_CASE("combine({m}) with its own budget is a copy; with another one the twins are retrained") {
  const TVMParams p = tvm_params(30);
  const TwinVectorMachine m = fit(2, p, make_stream(200, 2, 12));
  CombineOptions opt;
  opt.budget = 30;
  CHECK(bytes_of(combine<TwinVectorMachine>({&m}, opt)) == bytes_of(m));
  opt.budget = 50;
  const TwinVectorMachine out = combine<TwinVectorMachine>({&m}, opt);
  std::vector<Twin> want;
  append_twins(want, m, 0, 1.0, false);
  CHECK(holds(out, 0, want));
  CHECK(machine_gap(out.machine(0), scratch(want, out.params())) < 1e-9);
}

TEST_CASE("duplicates: a model combined with itself keeps each twin once, counts added") {
  const TVMParams p = tvm_params(30);
  const TwinVectorMachine m = fit(2, p, make_stream(200, 2, 13));
  CombineOptions opt;
  opt.weights = {1.0, 1.0};
  CombineReport rep;
  const TwinVectorMachine out = combine<TwinVectorMachine>({&m, &m}, opt, nullptr, &rep);
  CHECK(rep.duplicates == m.n_twins() && rep.union_size == m.n_twins());
  // each copy: w = 1/2, N = 400, n = 200: factor 1; added: twice the counts
  std::vector<Twin> want;
  append_twins(want, m, 0, 2.0, false);
  CHECK(holds(out, 0, want));
}

TEST_CASE("the combined TVM saves, loads and keeps learning bit for bit") {
  const TVMParams p = tvm_params(25);
  const TwinVectorMachine ma = fit(3, p, make_stream(200, 3, 16)), mb = fit(3, p, make_stream(200, 3, 17));
  TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb});
  TwinVectorMachine back = from_bytes(bytes_of(out));
  CHECK(bytes_of(back) == bytes_of(out));
  const Stream more = make_stream(200, 3, 18);
  out.partial_fit(more.X, more.y.data());
  back.partial_fit(more.X, more.y.data());
  CHECK(bytes_of(back) == bytes_of(out));
  CHECK(out.counters().examples == 600);
  for (Index k = 0; k < 3; ++k) {
    std::vector<Twin> held;
    append_twins(held, out, k, 1.0, false);
    CHECK(machine_gap(out.machine(k), scratch(held, out.params())) < 1e-9);
    CHECK(partners_fresh(out, k));
  }
}

// ---------------------------------------------------------------- Random baseline (ReservoirSVC)

// (point, class) of every reservoir example of m, classes through map.
std::vector<std::pair<std::vector<double>, int>> reservoir(const TwinVectorMachine& m, const std::vector<int>& map) {
  std::vector<std::pair<std::vector<double>, int>> out;
  const detail::TwinSet& tw = m.twins(0);
  for (Index j = 0; j < tw.size(); ++j) {
    int cls = 0;
    if (m.n_outputs() == 1) {
      cls = tw.s_plus(j) > 0.0 ? 1 : 0;
    } else {
      for (Index k = 0; k < m.n_outputs(); ++k)
        if (m.twins(k).s_plus(j) > 0.0) cls = static_cast<int>(k);
    }
    const double* q = tw.points().data() + j * tw.dim();
    out.emplace_back(std::vector<double>(q, q + tw.dim()), map[static_cast<std::size_t>(cls)]);
  }
  return out;
}

TEST_CASE("Random baseline within the budget: the pooled reservoirs, every example of weight 1") {
  const TVMParams p = tvm_params(40, true);
  const TwinVectorMachine ma = fit(2, p, make_stream(300, 2, 19), 1), mb = fit(2, p, make_stream(500, 2, 20), 2);
  CombineOptions opt;
  opt.budget = 80;
  opt.n_classes = 3;
  opt.class_maps = {{0, 1}, {1, 2}};
  CombineReport rep;
  const TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, opt, nullptr, &rep);
  auto want = reservoir(ma, {0, 1});
  for (auto& e : reservoir(mb, {1, 2})) want.push_back(e);
  CHECK(rep.union_size == 80 && rep.reductions == 0);
  CHECK(reservoir(out, {0, 1, 2}) == want);
  for (Index k = 0; k < 3; ++k) {
    std::vector<Twin> held;
    append_twins(held, out, k, 1.0, false);
    for (const Twin& t : held) CHECK(t.sp + t.sm == 1.0);
    CHECK(out.machine(k).C() == p.C);
    IncrementalSVM svm(2, p.kernel, p.C);
    for (const Twin& t : held) svm.learn(t.q.data(), t.sp > 0.0 ? 1.0 : -1.0, 1.0);
    CHECK(machine_gap(out.machine(k), svm) < 1e-9);
  }
  TwinVectorMachine back = from_bytes(bytes_of(out));  // load checks the weight-1 examples
  CHECK(bytes_of(back) == bytes_of(out));
}

TEST_CASE("Random baseline over the budget: a sample of the pooled reservoirs, in proportion") {
  const TVMParams p = tvm_params(20, true);
  // model a saw 300 examples, b 100: a's examples should fill about 3/4 of the sample
  double from_a = 0.0;
  const int runs = 40;
  for (int r = 0; r < runs; ++r) {
    const auto seed = static_cast<std::uint64_t>(r);
    const TwinVectorMachine ma = fit(2, p, make_stream(300, 2, 100 + seed), seed);
    const TwinVectorMachine mb = fit(2, p, make_stream(100, 2, 200 + seed), seed + 1000);
    CombineReport rep;
    TwinVectorMachine out = combine<TwinVectorMachine>({&ma, &mb}, {}, nullptr, &rep);
    CHECK(out.n_twins() == 20 && rep.reductions == 20 && rep.degradation == 0.0);
    const auto ra = reservoir(ma, {0, 1}), rb = reservoir(mb, {0, 1});
    for (const auto& e : reservoir(out, {0, 1})) {
      const bool in_a = std::find(ra.begin(), ra.end(), e) != ra.end();
      const bool in_b = std::find(rb.begin(), rb.end(), e) != rb.end();
      CHECK(in_a || in_b);
      from_a += in_a ? 1.0 : 0.0;
    }
    if (r == 0) {  // keeps learning; Algorithm R goes on from t = 400
      const Stream more = make_stream(100, 2, 300);
      TwinVectorMachine back = from_bytes(bytes_of(out));
      out.partial_fit(more.X, more.y.data());
      back.partial_fit(more.X, more.y.data());
      CHECK(bytes_of(back) == bytes_of(out));
      CHECK(out.n_twins() == 20 && out.counters().examples == 500);
    }
  }
  const double frac = from_a / (20.0 * runs);  // sd about sqrt(3/16 / 800) = 0.015
  CHECK(frac > 0.68 && frac < 0.82);
}

TEST_CASE("a TVM and a Random baseline do not combine") {
  const Stream s = make_stream(200, 2, 14);
  const TwinVectorMachine tvm = fit(2, tvm_params(20), s), rnd = fit(2, tvm_params(20, true), s);
  CHECK_THROWS(combine<TwinVectorMachine>({&tvm, &rnd}));
}

TEST_MAIN()
