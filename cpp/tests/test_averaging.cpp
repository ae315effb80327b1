// Averaged BSGD (Polyak averaging of the iterates, carried through budget maintenance):
//  - without maintenance the averaged coefficients are the explicit mean of the iterates;
//  - carried coefficients follow every maintenance step exactly as the model's do (a carried
//    copy of A stays equal to A through removals, merges, projections, folds);
//  - save / load resume bit for bit; budgetkernel::Model predicts with the averaged model.
#include <budgetkernel/budgetkernel.hpp>

#include <random>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

using bk_test::Stream;

Stream make_stream(Index n, int n_classes, std::uint64_t seed) { return bk_test::noisy_board(n, n_classes, seed, 0.2); }

BSGDParams params(Maintenance m, Index budget, std::int64_t average_start, double decay = 10.0) {
  BSGDParams p;
  p.kernel = Kernel(KernelType::RBF, 2.0);
  p.lam = 1e-3;
  p.budget = budget;
  p.maintenance = m;
  p.seed = 5;
  p.average_start = average_start;
  p.average_decay = decay;
  return p;
}

const Maintenance all_strategies[] = {Maintenance::RemoveRandom, Maintenance::RemoveOldest,
                                      Maintenance::RemoveSmallest, Maintenance::Project,
                                      Maintenance::ProjectExact, Maintenance::Merge};

}  // namespace

TEST_CASE("no maintenance: the averaged coefficients are the weighted mean of the iterates") {
  for (int c : {2, 3})
    for (std::int64_t t0 : {std::int64_t(1), std::int64_t(40)})
      for (double eta : {0.0, 10.0}) {
      const Stream s = make_stream(400, c, 3);
      KernelPegasos learner(2, c, params(Maintenance::Merge, 0, t0, eta));
      // Unbudgeted: SVs are only appended (after the reset at t = 1), so row j is the same SV
      // throughout; the iterate w_t has coefficients s_t A_t.
      // Explicit weights: iterate k (k = 1..K) of the average has weight
      // rho_k prod_{j>k} (1 - rho_j), rho_k = (eta + 1) / (k + eta) (rho_1 = 1).
      std::vector<RowMatrix> iterates;
      for (Index i = 0; i < 400; ++i) {
        learner.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
        if (i + 1 >= t0) iterates.push_back(learner.coefficients());
      }
      const auto count = static_cast<std::int64_t>(iterates.size());
      CHECK(learner.averaged_iterates() == count);
      const RowMatrix avg = learner.predictor_coefficients();
      RowMatrix expect = RowMatrix::Zero(avg.rows(), avg.cols());
      for (std::int64_t k = 1; k <= count; ++k) {
        double w = (eta + 1.0) / (static_cast<double>(k) + eta);
        for (std::int64_t j = k + 1; j <= count; ++j) w *= 1.0 - (eta + 1.0) / (static_cast<double>(j) + eta);
        const RowMatrix& it = iterates[static_cast<std::size_t>(k - 1)];
        expect.topRows(it.rows()) += w * it;
      }
      const double err = (avg - expect).cwiseAbs().maxCoeff();
      CHECK(err < 1e-12);
      // Predictions use the averaged model: f_bar(x) = sum_j avg_j k(x_j, x).
      Vector f(learner.n_outputs()), krow(avg.rows());
      learner.decision(s.X.row(7).data(), f.data());
      learner.support_vectors().kernel_row(learner.params().kernel, s.X.row(7).transpose(), s.X.row(7).squaredNorm(),
                                           krow);
      CHECK(((avg.transpose() * krow) - f).cwiseAbs().maxCoeff() < 1e-12);
      std::printf("  c=%d t0=%ld eta=%g: %ld iterates, max |avg - explicit weighted mean| %.3g\n", c,
                  static_cast<long>(t0), eta, static_cast<long>(count), err);
      }
}

TEST_CASE("carried coefficients follow every maintenance step as the model's do") {
  // A carried copy of the coefficients must stay equal to them: each step applies one linear
  // map to both (projection / fold: + beta alpha_p; merge: eq. 22; removal: drop the row).
  std::mt19937_64 rng(9);
  std::normal_distribution<double> g;
  for (Maintenance m : all_strategies)
    for (Index c : {Index(1), Index(3)}) {
      // A small gamma makes projections fold dependent SVs now and then (pending, activation).
      const Kernel k(KernelType::RBF, m == Maintenance::Merge ? 1.0 : 0.05);
      SupportVectors sv(3, c, 21);
      sv.set_carry_columns(c);
      BudgetMaintainer maint(m, k, true);
      std::mt19937_64 pick(1);
      Vector krow(64);
      double worst = 0.0;
      for (int t = 0; t < 400; ++t) {
        Vector x(3), a(c);
        for (Index j = 0; j < 3; ++j) x(j) = g(rng);
        for (Index j = 0; j < c; ++j) a(j) = g(rng) * (1.0 + 0.01 * t);
        sv.kernel_row(k, x, x.squaredNorm(), krow);
        const Index i = sv.push(x, a, t);
        CHECK(sv.C().row(i).isZero());  // push starts the carried row at 0
        sv.C().row(i) = a.transpose();
        maint.on_push(sv, krow, k.self(x.squaredNorm()));
        if (sv.size() > 20 || maint.must_reduce()) maint.reduce(sv, k, pick);
        const Index n = sv.size();
        worst = std::max(worst, (sv.C().topRows(n) - sv.A().topRows(n)).cwiseAbs().maxCoeff());
      }
      CHECK(worst < 1e-12);
      std::printf("  %-15s c=%ld: max |carried - alpha| %.3g\n", maintenance_name(m), static_cast<long>(c), worst);
    }
}

TEST_CASE("averaged learners resume bit for bit; Model predicts with the averaged coefficients") {
  for (Maintenance m : all_strategies)
    for (int c : {2, 3}) {
      const Stream s = make_stream(3000, c, 4);
      const BSGDParams p = params(m, 30, 100);
      KernelPegasos full(2, c, p);
      full.partial_fit(s.X, s.y.data());
      KernelPegasos half(2, c, p);
      half.partial_fit(s.X.topRows(1500), s.y.data());
      FieldMap fm;
      half.save(fm);
      KernelPegasos resumed;
      resumed.load(FieldMap::from_bytes(fm.to_bytes()));
      const Model model(FieldMap::from_bytes(fm.to_bytes()));
      RowMatrix d1(1500, half.n_outputs());
      half.decision_function(s.X.bottomRows(1500), d1);
      CHECK((model.decision_function(s.X.bottomRows(1500)) - d1).cwiseAbs().maxCoeff() == 0.0);
      resumed.partial_fit(s.X.bottomRows(1500), s.y.data() + 1500);
      CHECK(resumed.predictor_coefficients() == full.predictor_coefficients());
      CHECK(resumed.coefficients() == full.coefficients());
      CHECK(resumed.averaged_iterates() == full.averaged_iterates());
      CHECK(resumed.counters().mistakes == full.counters().mistakes);
    }
  CHECK_THROWS(KernelPegasos(2, 2, params(Maintenance::Merge, 10, -2)));  // -1 is kAverageAuto
  CHECK_THROWS(KernelPegasos(2, 2, params(Maintenance::Merge, 10, 1, -1.0)));
}

TEST_MAIN()

TEST_CASE("the default averaging is resolved by the maintenance: on with merging, projection or no budget, off with removal") {
  CHECK(BSGDParams().average_start == BSGDParams::kAverageAuto);
  const Stream s = make_stream(300, 2, 3);
  for (Maintenance m : all_strategies) {
    for (Index budget : {Index(0), Index(20)}) {
      const bool removal = budget > 0 && (m == Maintenance::RemoveRandom || m == Maintenance::RemoveOldest ||
                                          m == Maintenance::RemoveSmallest);
      KernelPegasos k(2, 2, params(m, budget, BSGDParams::kAverageAuto));
      CHECK(k.params().average_start == (removal ? 0 : 1));  // the model (and its file) holds the start
      k.partial_fit(s.X, s.y.data());
      CHECK((k.averaged_iterates() > 0) == !removal);
      KernelPegasos same(2, 2, params(m, budget, removal ? 0 : 1));
      same.partial_fit(s.X, s.y.data());
      CHECK(same.predictor_coefficients() == k.predictor_coefficients());
    }
  }
}
