// The properties combine() (learners/combine.hpp) promises for every learner, each written once
// over the table of learners below (the learner-specific oracles, e.g. that the union is
// reduced by the learner's own maintenance, stay in test_combine*.cpp):
//  - combine({m}) with its own budget is a copy of m, byte for byte (its saved fields);
//  - the weights are validated (negative, all zero, one per model), an empty list refused;
//  - the models' parameters must agree, except the seed;
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
const std::vector<std::int32_t>& labels() {
  static const bk_test::Stream s = bk_test::noisy_board(600, 3, 11, 0.1);
  return s.y;
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
    m.partial_fit(features().middleRows(from, to - from), labels().data() + from);
  else
    m.partial_fit(features().middleRows(from, to - from), targets().segment(from, to - from));
}

// One entry of the table per learner: make(0) the reference model (3 classes for a
// classifier), make(1) one parameter different (combine must refuse it), make(2) only the seed
// different (combine must accept it; make(0) again where there is no seed).
template <class L>
struct Case;

template <>
struct Case<KernelPegasos> {
  static KernelPegasos make(int which) {
    BSGDParams p;
    p.kernel = Kernel(KernelType::RBF, 2.0);
    p.budget = 30;
    p.maintenance = Maintenance::Merge;
    if (which == 1) p.lam = 0.5;
    if (which == 2) p.seed = 9;
    return KernelPegasos(2, 3, p);
  }
};
template <>
struct Case<LinearPegasos> {
  static LinearPegasos make(int which) { return LinearPegasos(2, 3, which == 1 ? 0.5 : 1e-3, 1); }
};
template <>
struct Case<PassiveAggressive> {
  static PassiveAggressive make(int which) {
    PAParams p;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    p.C = 0.8;
    p.budget = 10;
    p.variant = which == 1 ? BPAVariant::NearestNeighbor : BPAVariant::Project;
    p.averaged = true;
    p.seed = which == 2 ? 9 : 3;
    return PassiveAggressive(2, 3, p);
  }
};
template <>
struct Case<SparsePA> {
  static SparsePA make(int which) {
    SPAParams p;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    p.beta = which == 1 ? 3.0 : 2.0;
    p.seed = which == 2 ? 9 : 0;
    return SparsePA(2, 3, p);
  }
};
template <>
struct Case<BOGD> {
  static BOGD make(int which) {
    BOGDParams p;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    p.eta = which == 1 ? 0.5 : 0.3;
    p.lam = 0.01;
    p.budget = 15;
    p.seed = which == 2 ? 9 : 4;
    return BOGD(2, 3, p);
  }
};
template <>
struct Case<KernelPerceptron> {
  static KernelPerceptron make(int which) {
    PerceptronParams p;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    p.budget = 15;
    p.maintenance = PerceptronBudget::Forgetron;
    p.eta = 0.1;
    p.beta = which == 1 ? 0.5 : 0.3;
    p.seed = which == 2 ? 9 : 7;
    return KernelPerceptron(2, 3, p);
  }
};
template <>
struct Case<TwinVectorMachine> {
  static TwinVectorMachine make(int which) {
    TVMParams p;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    p.budget = 20;
    if (which == 1) p.C = 2.0;
    if (which == 2) p.seed = 9;
    return TwinVectorMachine(2, 3, p);
  }
};
template <>
struct Case<BSGDRegressor> {
  static BSGDRegressor make(int which) {
    BSGDRegressorParams p;
    p.kernel = Kernel(KernelType::RBF, 1.5);
    p.budget = 20;
    p.maintenance = Maintenance::Merge;
    if (which == 1) p.lam = 0.5;
    if (which == 2) p.seed = 9;
    return BSGDRegressor(2, p);
  }
};
template <>
struct Case<PARegressor> {
  static PARegressor make(int which) {
    PARegressorParams p;
    p.kernel = Kernel(KernelType::RBF, 1.5);
    p.budget = 15;
    p.variant = BPAVariant::Project;
    p.C = 0.5;
    p.epsilon = which == 1 ? 0.1 : 0.05;
    p.seed = which == 2 ? 9 : 0;
    return PARegressor(2, p);
  }
};
template <>
struct Case<KLMS> {
  static KLMS make(int which) {
    KLMSParams p;
    if (which == 1) p.eta = 0.25;
    return KLMS(2, p);
  }
};
template <>
struct Case<QKLMS> {
  static QKLMS make(int which) {
    QKLMSParams p;
    if (which == 1) p.epsilon = 0.2;
    return QKLMS(2, p);
  }
};

template <class L>
L trained(int which, Index from, Index to) {
  L m = Case<L>::make(which);
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

template <class... Ls>
struct Learners {
  template <class F>
  static void each(const F& property) {
    (property(static_cast<Ls*>(nullptr)), ...);
  }
};
using All = Learners<KernelPegasos, LinearPegasos, PassiveAggressive, SparsePA, BOGD, KernelPerceptron,
                     TwinVectorMachine, BSGDRegressor, PARegressor, KLMS, QKLMS>;

}  // namespace

TEST_CASE("every learner: combine({m}) is a copy") {
  All::each([](auto* l) { single_model_is_a_copy<std::remove_pointer_t<decltype(l)>>(); });
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
