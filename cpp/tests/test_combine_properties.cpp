// The properties combine() (learners/combine.hpp) promises for every learner, each written once
// over the table of learners below (the learner-specific oracles, e.g. that the union is
// reduced by the learner's own maintenance, stay in test_combine*.cpp):
//  - combine({m}) with its own budget is a copy of m, byte for byte (its saved fields);
//  - the weights are validated (negative, all zero, one per model), an empty list refused;
//  - the models' parameters must agree, except the seed;
//  - without a budget, or within one, the union's outputs are sum_k w_k f_k (binary and
//    3 classes; not the TVM, which retrains on the pooled twins, nor QKLMS, which quantises);
//  - counters with a base count it once: base + sum_k (m_k - base), without one sum_k m_k;
//  - class maps are validated (classifiers) or refused (regressors).
#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

const RowMatrix& features() {
  static const bk_test::Stream s = bk_test::noisy_board(600, 3, 11, 0.1);
  return s.X;
}
// Labels of the same points for a classifier of c = 2 or 3 classes.
const std::vector<std::int32_t>& labels(Index c) {
  static const bk_test::Stream s2 = bk_test::noisy_board(600, 2, 11, 0.1), s3 = bk_test::noisy_board(600, 3, 11, 0.1);
  return c == 2 ? s2.y : s3.y;
}
// Regression targets of the same points: a smooth function plus an offset.
const Vector& targets() {
  static const Vector y = [] {
    Vector t(features().rows());
    for (Index i = 0; i < t.size(); ++i) t(i) = 2.0 + std::sin(1.5 * features()(i, 0)) + 0.5 * features()(i, 1);
    return t;
  }();
  return y;
}

template <class L>
void train(L& m, Index from, Index to) {
  if constexpr (detail::has_classes<L>::value)
    m.partial_fit(features().middleRows(from, to - from), labels(m.n_classes()).data() + from);
  else
    m.partial_fit(features().middleRows(from, to - from), targets().segment(from, to - from));
}

// The table of learners: make<L>(0, c) the reference model (c classes for a classifier),
// make<L>(1, c) one parameter different (combine must refuse it), make<L>(2, c) only the seed
// different (combine must accept it; the reference again where there is no seed).
template <class L>
L make(int which, Index c) {
  const Kernel rbf(KernelType::RBF, 1.0);
  const bool other = which == 1;
  const std::uint64_t seed = which == 2 ? 9 : 3;
  if constexpr (std::is_same_v<L, KernelPegasos>) {
    BSGDParams p;
    p.kernel = Kernel(KernelType::RBF, 2.0), p.budget = 30, p.seed = seed, p.lam = other ? 0.5 : p.lam;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, LinearPegasos>) {
    return L(2, c, other ? 0.5 : 1e-3, 1);
  } else if constexpr (std::is_same_v<L, PassiveAggressive>) {
    PAParams p;
    p.kernel = rbf, p.C = 0.8, p.budget = 10, p.averaged = true, p.seed = seed;
    p.variant = other ? BPAVariant::NearestNeighbor : BPAVariant::Project;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, SparsePA>) {
    SPAParams p;
    p.kernel = rbf, p.beta = other ? 3.0 : 2.0, p.seed = seed;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, BOGD>) {
    BOGDParams p;
    p.kernel = rbf, p.eta = other ? 0.5 : 0.3, p.lam = 0.01, p.budget = 15, p.seed = seed;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, KernelPerceptron>) {
    PerceptronParams p;
    p.kernel = rbf, p.budget = 15, p.maintenance = PerceptronBudget::Forgetron, p.eta = 0.1, p.seed = seed;
    p.beta = other ? 0.5 : 0.3;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, TwinVectorMachine>) {
    TVMParams p;
    p.kernel = rbf, p.budget = 20, p.seed = seed, p.C = other ? 2.0 : p.C;
    return L(2, c, p);
  } else if constexpr (std::is_same_v<L, BSGDRegressor>) {
    BSGDRegressorParams p;
    p.kernel = Kernel(KernelType::RBF, 1.5), p.budget = 20, p.seed = seed, p.lam = other ? 0.5 : p.lam;
    return L(2, p);
  } else if constexpr (std::is_same_v<L, PARegressor>) {
    PARegressorParams p;
    p.kernel = Kernel(KernelType::RBF, 1.5), p.budget = 15, p.variant = BPAVariant::Project, p.C = 0.5;
    p.epsilon = other ? 0.1 : 0.05, p.seed = seed;
    return L(2, p);
  } else if constexpr (std::is_same_v<L, KLMS>) {
    KLMSParams p;
    p.eta = other ? 0.25 : p.eta;
    return L(2, p);
  } else {
    static_assert(std::is_same_v<L, QKLMS>, "a learner missing from the table");
    QKLMSParams p;
    p.epsilon = other ? 0.2 : p.epsilon;
    return L(2, p);
  }
}

template <class L>
L trained(int which, Index from, Index to, Index c = 3) {
  L m = make<L>(which, c);
  train(m, from, to);
  return m;
}

template <class L>
void single_model_is_a_copy() {
  const L a = trained<L>(0, 0, 300);
  CombineReport rep;
  CHECK(bk_test::bytes_of(combine<L>({&a}, {}, nullptr, &rep)) == bk_test::bytes_of(a));
  CHECK(rep.union_size == a.combine_size());
}

template <class L>
void weights_are_validated() {
  const L a = trained<L>(0, 0, 100), b = trained<L>(0, 100, 200);
  for (const std::vector<double>& w : std::vector<std::vector<double>>{
           {1.0, -1.0}, {0.0, 0.0}, {1.0}, {1.0, std::nan("")}, {1.0, HUGE_VAL}}) {
    CombineOptions bad;
    bad.weights = w;
    CHECK(bk_test::throws_type([&] { combine<L>({&a, &b}, bad); }, 0));
  }
  CHECK(bk_test::throws_type([&] { combine<L>({}); }, 0));
  CHECK(bk_test::throws_type([&] { combine<L>({&a, nullptr}); }, 0));
}

template <class L>
void parameters_must_agree() {
  const L a = trained<L>(0, 0, 100), other = trained<L>(1, 100, 200), seeded = trained<L>(2, 100, 200);
  CHECK(bk_test::throws_type([&] { combine<L>({&a, &other}); }, 0));
  CHECK(combine<L>({&a, &seeded}).counters().examples == 200);  // the seed may differ
}

template <class L>
void base_is_counted_once() {
  const L base = trained<L>(0, 0, 200);
  L a = base, b = base;
  train(a, 200, 400);
  train(b, 400, 600);
  const L out = combine<L>({&a, &b}, {}, &base);
  CHECK(out.counters().examples == 600);
  const auto &c = out.counters(), &ca = a.counters(), &cb = b.counters(), &c0 = base.counters();
  CHECK(c.updates == ca.updates + cb.updates - c0.updates);
  if constexpr (detail::has_classes<L>::value) {
    CHECK(c.mistakes == ca.mistakes + cb.mistakes - c0.mistakes);
    CHECK(c.labels == ca.labels + cb.labels - c0.labels);
  } else {
    CHECK_NEAR(c.sse, ca.sse + cb.sse - c0.sse, 1e-9 * (1.0 + ca.sse + cb.sse));
    CHECK_NEAR(c.sae, ca.sae + cb.sae - c0.sae, 1e-9 * (1.0 + ca.sae + cb.sae));
  }
  CHECK(combine<L>({&a, &b}).counters().examples == 800);  // without the base: the sum
}

template <class L>
void class_maps_are_checked() {
  const L a = trained<L>(0, 0, 100), b = trained<L>(0, 100, 200);
  CombineOptions maps;
  if constexpr (detail::has_classes<L>::value) {
    maps.n_classes = 3;
    maps.class_maps = {{0, 1, 2}, {0, 0, 2}};  // a class twice
    CHECK(bk_test::throws_type([&] { combine<L>({&a, &b}, maps); }, 0));
    maps.class_maps = {{0, 1, 2}, {0, 1, 3}};  // out of range
    CHECK(bk_test::throws_type([&] { combine<L>({&a, &b}, maps); }, 0));
    maps.class_maps = {{0, 1, 2}};  // one map for two models
    CHECK(bk_test::throws_type([&] { combine<L>({&a, &b}, maps); }, 0));
  } else {
    maps.class_maps = {{0, 1}, {0, 1}};  // a regressor has no classes
    CHECK(bk_test::throws_type([&] { combine<L>({&a, &b}, maps); }, 0));
  }
}

// The outputs of m at z (a regressor's one value, intercept included).
template <class L>
Vector outputs(const L& m, const Vector& z) {
  if constexpr (detail::has_classes<L>::value) return bk_test::dec(m, z);
  else return Vector::Constant(1, m.decision(z.data()));
}

// Without a budget, or with one that holds the union, f = sum_k w_k f_k (to rounding).
// (Not the TVM, which retrains its machines on the pooled twins, nor QKLMS, which quantises the
// union by its rule: test_combine_tvm.cpp, test_combine_regression.cpp.)
template <class L>
void union_is_the_weighted_average() {
  for (const Index c : {Index(2), Index(3)}) {
    const L a = trained<L>(0, 0, 200, c), b = trained<L>(0, 200, 400, c), d = trained<L>(0, 400, 600, c);
    CombineOptions opt;
    opt.weights = std::vector<double>{1.0, 2.0, 0.5};
    opt.budget = 0;
    CombineReport rep;
    const L out = combine<L>({&a, &b, &d}, opt, nullptr, &rep);
    CHECK(rep.reductions == 0 && rep.degradation == 0.0);
    CHECK(rep.union_size == a.combine_size() + b.combine_size() + d.combine_size() - rep.duplicates);
    CHECK(out.counters().examples == 600);
    if (rep.union_size > 0) opt.budget = rep.union_size;  // a budget that holds the union (a linear model has none)
    const L held = combine<L>({&a, &b, &d}, opt);
    for (const Vector& z : bk_test::probes()) {
      const Vector f = (outputs(a, z) + 2.0 * outputs(b, z) + 0.5 * outputs(d, z)) / 3.5;
      const double scale = (std::max)(1.0, f.cwiseAbs().maxCoeff());
      CHECK((outputs(out, z) - f).cwiseAbs().maxCoeff() <= 1e-12 * scale);
      CHECK((outputs(held, z) - f).cwiseAbs().maxCoeff() <= 1e-12 * scale);
    }
    if constexpr (!detail::has_classes<L>::value) break;
  }
}

template <class... Ls>
struct Learners {
  template <class F>
  static void each(const F& property) {
    (property(static_cast<Ls*>(nullptr)), ...);
  }
};
using Expansions = Learners<KernelPegasos, LinearPegasos, PassiveAggressive, SparsePA, BOGD, KernelPerceptron,
                            BSGDRegressor, PARegressor, KLMS>;
using All = Learners<KernelPegasos, LinearPegasos, PassiveAggressive, SparsePA, BOGD, KernelPerceptron,
                     TwinVectorMachine, BSGDRegressor, PARegressor, KLMS, QKLMS>;

}  // namespace

TEST_CASE("every learner: combine({m}) is a copy") {
  All::each([](auto* l) { single_model_is_a_copy<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_CASE("every learner but the TVM and QKLMS: the union, within a budget or none, is sum_k w_k f_k") {
  Expansions::each([](auto* l) { union_is_the_weighted_average<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_CASE("every learner: the weights are validated") {
  All::each([](auto* l) { weights_are_validated<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_CASE("every learner: the parameters must agree, the seed aside") {
  All::each([](auto* l) { parameters_must_agree<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_CASE("every learner: a base is counted once") {
  All::each([](auto* l) { base_is_counted_once<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_CASE("every learner: class maps are validated, or refused by a regressor") {
  All::each([](auto* l) { class_maps_are_checked<std::remove_pointer_t<decltype(l)>>(); });
}

TEST_MAIN()
