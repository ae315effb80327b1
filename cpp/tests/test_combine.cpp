// budgetkernel::combine for Budgeted SGD and linear Pegasos, from C++ alone (a program that
// aggregates models trained elsewhere, e.g. on devices, uses exactly this):
//  - over the budget the union is reduced by the learner's maintenance to B SVs.
// What every learner shares (copy, weights, parameters, counters): test_combine_properties.cpp.
#include <budgetkernel/budgetkernel.hpp>

#include <limits>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

BSGDParams params(Maintenance m, Index budget) {
  BSGDParams p;
  p.kernel = Kernel(KernelType::RBF, 2.0);
  p.budget = budget;
  p.maintenance = m;
  return p;
}

std::vector<KernelPegasos> parts(const BSGDParams& p, int n_classes, int k) {
  const bk_test::Stream s = bk_test::noisy_board(600 * k, n_classes, 11, 0.1);
  std::vector<KernelPegasos> out;
  for (int i = 0; i < k; ++i) {
    out.emplace_back(2, n_classes, p);
    out.back().partial_fit(s.X.middleRows(600 * i, 600), s.y.data() + 600 * i);
  }
  return out;
}

std::vector<const KernelPegasos*> pointers(const std::vector<KernelPegasos>& v) {
  std::vector<const KernelPegasos*> p;
  for (const auto& m : v) p.push_back(&m);
  return p;
}

}  // namespace

TEST_CASE("over the budget the union is reduced by the learner's own maintenance") {
  for (Maintenance m : {Maintenance::Merge, Maintenance::ProjectExact, Maintenance::RemoveRandom}) {
    const auto models = parts(params(m, 25), 2, 4);
    CombineReport rep;
    KernelPegasos out = combine(pointers(models), {}, nullptr, &rep);
    CHECK(out.support_vectors().size() == 25);
    CHECK(rep.union_size == 100 && rep.reductions == 75 && rep.degradation > 0.0);
    CHECK(out.counters().maintenance == 75 + [&] {
      std::int64_t s = 0;
      for (const auto& x : models) s += x.counters().maintenance;
      return s;
    }());
    const bk_test::Stream more = bk_test::noisy_board(200, 2, 12, 0.1);
    out.partial_fit(more.X, more.y.data());  // keeps learning, within its budget
    CHECK(out.support_vectors().size() <= 25 && out.counters().examples == 4 * 600 + 200);
  }
}

TEST_CASE("linear Pegasos: the weights average exactly") {
  const bk_test::Stream s = bk_test::noisy_board(900, 3, 14, 0.1);
  std::vector<LinearPegasos> models;
  for (int i = 0; i < 3; ++i) {
    models.emplace_back(2, 3, 1e-3, 1);
    models.back().partial_fit(s.X.middleRows(300 * i, 300), s.y.data() + 300 * i);
  }
  const LinearPegasos out = combine<LinearPegasos>({&models[0], &models[1], &models[2]});
  const Eigen::MatrixXd want = (models[0].weights() + models[1].weights() + models[2].weights()) / 3.0;
  CHECK((out.weights() - want).cwiseAbs().maxCoeff() < 1e-12);
  CHECK(out.iterations() == 900 && out.counters().examples == 900);
}

int main() { return bk_test::run_all(); }
