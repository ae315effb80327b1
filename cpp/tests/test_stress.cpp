// Numerical stress regressions of the online learners: kernel parameter regions that cannot
// work are refused up front (std::invalid_argument) instead of producing NaN models.
#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <type_traits>

#include "test_util.hpp"

using namespace budgetkernel;

namespace {

// Every learner family's parameters with kernel k; true when the constructor throws.
template <class Learner, class Params>
bool refuses(const Kernel& k) {
  Params p;
  p.kernel = k;
  if constexpr (!std::is_same_v<Params, SPAParams>) p.budget = 5;  // SPA has no budget
  // BSGD's default, merging, is for the RBF kernel only (a refusal of its own).
  if constexpr (std::is_same_v<Params, BSGDParams>) p.maintenance = Maintenance::Project;
  try {
    Learner l(2, 2, p);
  } catch (const std::invalid_argument&) {
    return true;
  }
  return false;
}

// How many of the five online learner families refuse kernel k.
int refusals(const Kernel& k) {
  return refuses<KernelPegasos, BSGDParams>(k) + refuses<PassiveAggressive, PAParams>(k) +
         refuses<KernelPerceptron, PerceptronParams>(k) + refuses<BOGD, BOGDParams>(k) +
         refuses<SparsePA, SPAParams>(k);
}

bool all_refuse(const Kernel& k) { return refusals(k) == 5; }
bool none_refuse(const Kernel& k) { return refusals(k) == 0; }

}  // namespace

TEST_CASE("indefinite polynomial kernels (coef0 < 0) are refused by the online learners") {
  // (gamma x.z + coef0)^d is PSD iff coef0 >= 0; with coef0 = -1, hard-margin PA went NaN and
  // BSGD's removal reported negative degradations (NaN ||w||).
  for (int degree : {1, 2, 3, 10}) {
    const Kernel bad(KernelType::Polynomial, 1.0, degree, -1.0);
    CHECK(!bad.positive_semidefinite());
    CHECK(all_refuse(bad));
    const Kernel good(KernelType::Polynomial, 1.0, degree, 0.0);
    CHECK(good.positive_semidefinite());
    CHECK(none_refuse(good));
  }
  // coef0 means nothing to the other kernels.
  CHECK(none_refuse(Kernel(KernelType::Linear, 1.0, 3, -1.0)));
  CHECK(none_refuse(Kernel(KernelType::RBF, 1.0, 3, -1.0)));
  // The kernel itself stays constructible (the exact SVM's tests evaluate such kernels).
  const Kernel k(KernelType::Polynomial, 1.3, 3, -0.25);
  CHECK(k.from_dot(1.0, 0.0, 0.0) == std::pow(1.3 - 0.25, 3));
}

TEST_CASE("polynomial kernels whose coef0^degree overflows are refused") {
  // k(0, 0) = coef0^degree = 1e310 = inf: every kernel value, even of the zero row, was inf.
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, 10, 1e31));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, 10, -1e31));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, 1, 1e301));
  // The edge 1e30^10 = 1e300 is finite: a PA learner on zero rows keeps finite scores.
  PAParams p;
  p.kernel = Kernel(KernelType::Polynomial, 1.0, 10, 1e30);
  p.budget = 3;
  p.variant = BPAVariant::Project;
  PassiveAggressive l(2, 2, p);
  RowMatrix X = RowMatrix::Zero(20, 2);
  IndexVector y(20);
  for (Index i = 0; i < 20; ++i) y(i) = static_cast<std::int32_t>(i % 2);
  l.partial_fit(X, y);
  double f = 0.0;
  const double zero[2] = {0.0, 0.0};
  l.decision(zero, &f);
  CHECK(std::isfinite(f) && std::abs(f) <= 1.0 + 1e-12);
  CHECK(l.support_vectors().size() <= 3);
}

TEST_CASE("Pegasos steps whose ||w||^2 overflows still project onto the ball") {
  // lambda = 1e-30: the first step is 1e30 phi(x), with k(x, x) = |x|^2 = 1e280 here, so
  // ||w||^2 = 1e340 overflowed; the projection divided by sqrt(inf): kernel Pegasos went NaN,
  // linear Pegasos reset w to 0 at every such step.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  const Index n = 300;
  RowMatrix X(n, 2);
  IndexVector y(n);
  for (Index i = 0; i < n; ++i) {
    X(i, 0) = normal(rng);
    X(i, 1) = normal(rng);
    y(i) = X(i, 0) * X(i, 1) > 0.0 ? 1 : 0;
    X.row(i) *= 1e140 / X.row(i).norm();
  }
  const double lam = 1e-30;
  LinearPegasos lin(2, 2, lam, 1);
  lin.partial_fit(X, y);
  const double wn = std::sqrt(lam) * lin.weights().norm();
  CHECK(wn >= 0.99 && wn <= 1.0 + 1e-9);
  for (Maintenance m : {Maintenance::Project, Maintenance::ProjectExact, Maintenance::RemoveRandom,
                        Maintenance::RemoveSmallest}) {
    for (Index budget : {Index(0), Index(5)}) {
      BSGDParams p;
      p.kernel = Kernel(KernelType::Linear);
      p.lam = lam;
      p.budget = budget;
      p.maintenance = m;
      p.average_start = 0;  // the last iterate, as the linear Pegasos predicts with
      KernelPegasos ker(2, 2, p);
      ker.partial_fit(X, y);
      CHECK(std::isfinite(ker.norm2()) && ker.norm2() * lam <= 1.0 + 1e-9);
      CHECK(!std::isnan(ker.counters().degradation));  // may be +inf: the true sum passes 1e308
      for (Index i = 0; i < 20; ++i) {
        double fk = 0.0, fl = 0.0;
        ker.decision(X.row(i).data(), &fk);
        lin.decision(X.row(i).data(), &fl);
        CHECK(std::isfinite(fk) && std::abs(fk) <= 1e155 * (1.0 + 1e-9));
        // Without a budget kernel Pegasos with the linear kernel is linear Pegasos.
        if (budget == 0) CHECK(std::abs(fk - fl) <= 1e-8 * std::abs(fl));
      }
    }
  }
}

TEST_MAIN()
