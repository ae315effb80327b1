// Tests of combine() for the regressors (learners/combine_regression.hpp): one reduction's
// degradation against the brute-force RKHS distance, KLMS's exact union and QKLMS's quantised one, model files of combined filters,
// the PA regressor's BPA reductions (their degradation, BPA-NN's neighbours and BPA-P's
// inverse rebuilt, the average kept), and a budget a filter cannot keep. What every learner
// shares (copy, weights, parameters, counters): test_combine_properties.cpp.
#include "test_oracles.hpp"
#include "test_util.hpp"

#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <cstdio>
#include <random>

using namespace budgetkernel;

namespace {

struct Data {
  RowMatrix X;
  Vector y;
};

Data sine(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Data s{RowMatrix(n, 2), Vector(n)};
  for (Index i = 0; i < n; ++i) {
    s.X(i, 0) = u(rng);
    s.X(i, 1) = u(rng);
    s.y(i) = 2.0 + std::sin(3.0 * s.X(i, 0)) + s.X(i, 1);
  }
  return s;
}

BSGDRegressorParams bsgd(Index budget, Maintenance m) {
  BSGDRegressorParams p;
  p.kernel = Kernel(KernelType::RBF, 1.5);
  p.budget = budget;
  p.maintenance = m;
  return p;
}

/// Models of class L, each trained on every k-th row from its offset.
template <class L, class P>
std::vector<L> parts(const Data& s, const P& p, int k) {
  std::vector<L> out;
  for (int j = 0; j < k; ++j) {
    L m(2, p);
    for (Index i = j; i < s.X.rows(); i += k) m.partial_fit(s.X.row(i), s.y.segment(i, 1));
    out.push_back(m);
  }
  return out;
}

template <class L>
std::vector<const L*> ptrs(const std::vector<L>& v) {
  std::vector<const L*> out;
  for (const L& m : v) out.push_back(&m);
  return out;
}

/// max_x |f(x) - sum_k w_k f_k(x)| over the rows of X, relative to the magnitude of the terms
/// the sums add (max_k sum_j |alpha_j|, k <= 1, and the values), which bounds their rounding.
template <class L>
double average_error(const L& out, const std::vector<L>& models, const std::vector<double>& w, const RowMatrix& X) {
  double scale = 1.0;
  for (const L& m : models) scale = (std::max)(scale, m.coefficients().cwiseAbs().sum());
  double worst = 0.0;
  for (Index i = 0; i < X.rows(); ++i) {
    double want = 0.0;
    for (std::size_t k = 0; k < models.size(); ++k) want += w[k] * models[k].decision(X.row(i).data());
    scale = (std::max)(scale, std::abs(want));
    worst = (std::max)(worst, std::abs(out.decision(X.row(i).data()) - want));
  }
  if (!(worst <= 1e-12 * scale)) std::printf("  average error %.3g (scale %.3g)\n", worst, scale);
  return worst / scale;
}

// ||sum_i a_i phi(x_i) - sum_j b_j phi(z_j)||^2.
double dist2(const RowMatrix& X, const Vector& a, const RowMatrix& Z, const Vector& b, const Kernel& k) {
  return bk_test::rkhs_dist2(k, X, RowMatrix(a), Z, RowMatrix(b));
}

using bk_test::bytes_of;

}  // namespace

TEST_CASE("BSGDRegressor: one reduction reports ||f_union - f||^2") {
  const Data s = sine(400, 2);
  const auto models = parts<BSGDRegressor>(s, bsgd(10, Maintenance::Merge), 2);
  CombineOptions opt;
  opt.budget = 0;
  const BSGDRegressor exact = combine(ptrs(models), opt);
  const Index n = exact.support_vectors().size();
  opt.budget = n - 1;
  CombineReport rep;
  const BSGDRegressor out = combine(ptrs(models), opt, nullptr, &rep);
  CHECK(rep.reductions == 1 && out.support_vectors().size() == n - 1);
  const auto X = [](const BSGDRegressor& r) { return RowMatrix(r.support_vectors().X().topRows(r.support_vectors().size())); };
  const double d2 = dist2(X(exact), exact.coefficients().col(0), X(out), out.coefficients().col(0), exact.params().kernel);
  CHECK_NEAR(rep.degradation, d2, 1e-8 * (1.0 + d2));
  CHECK_NEAR(out.norm2(), dist2(X(out), out.coefficients().col(0), X(out), Vector::Zero(n - 1), exact.params().kernel),
             1e-9 * (1.0 + out.norm2()));
}

TEST_CASE("KLMS: the exact union, renumbered; a combined KLMS with shared centres saves and loads") {
  const Data s = sine(300, 4);
  const auto models = parts<KLMS>(s, KLMSParams{Kernel(KernelType::RBF, 1.5), 0.3}, 2);
  const KLMS out = combine(ptrs(models));
  CHECK(average_error(out, models, {0.5, 0.5}, s.X) < 1e-12);
  CHECK(out.n_support() == 300 && out.steps() == 300);
  for (Index i = 0; i < out.n_support(); ++i) CHECK(out.support_vectors().id(i) == i);
  const KLMS twice = combine(std::vector<const KLMS*>{&models[0], &models[0]});  // every centre shared
  CHECK(twice.n_support() == 150 && twice.steps() == 300);
  KLMS back;
  back.load(FieldMap::from_bytes(bytes_of(twice)));
  CHECK(bytes_of(back) == bytes_of(twice));
}

TEST_CASE("QKLMS: the union quantised by its rule, centres epsilon apart") {
  const Data s = sine(600, 5);
  QKLMSParams p{Kernel(KernelType::RBF, 1.5), 0.4, 0.3};
  const auto models = parts<QKLMS>(s, p, 2);
  CombineReport rep;
  const QKLMS out = combine(ptrs(models), {}, nullptr, &rep);
  const Index n = out.n_support();
  CHECK(rep.union_size == models[0].n_support() + models[1].n_support());
  CHECK(rep.reductions == rep.union_size - n && rep.reductions > 0 && rep.degradation > 0.0);
  const RowMatrix C = out.support_vectors().X().topRows(n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < i; ++j) CHECK((C.row(i) - C.row(j)).squaredNorm() > p.epsilon * p.epsilon);
  QKLMS back;
  back.load(FieldMap::from_bytes(bytes_of(out)));
  CHECK(bytes_of(back) == bytes_of(out));
}

TEST_CASE("a filter without a budget refuses a budget below its union") {
  const Data s = sine(100, 6);
  const auto filters = parts<KLMS>(s, KLMSParams{}, 2);
  CombineOptions small;
  small.budget = 10;
  CHECK_THROWS(combine(ptrs(filters), small));
}

namespace {

PARegressorParams pa(Index budget, BPAVariant v, bool averaged = false) {
  PARegressorParams p;
  p.kernel = Kernel(KernelType::RBF, 1.5);
  p.budget = budget;
  p.variant = v;
  p.C = 0.5;
  p.epsilon = 0.05;
  p.averaged = averaged;
  return p;
}

}  // namespace

TEST_CASE("PARegressor: the weighted average within the budget; one reduction reports ||f_union - f||^2") {
  const Data s = sine(400, 7);
  for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project}) {
    const auto models = parts<PARegressor>(s, pa(10, v), 2);
    CombineOptions opt;
    opt.weights = {1.0, 3.0};
    opt.budget = 0;
    const PARegressor exact = combine(ptrs(models), opt);
    CHECK(average_error(exact, models, {0.25, 0.75}, s.X) < 1e-12);
    CHECK_NEAR(exact.intercept(), 0.25 * models[0].intercept() + 0.75 * models[1].intercept(), 1e-15);
    const Index n = exact.support_vectors().size();
    opt.budget = n - 1;
    CombineReport rep;
    const PARegressor out = combine(ptrs(models), opt, nullptr, &rep);
    CHECK(rep.reductions == 1 && rep.union_size == n && out.support_vectors().size() == n - 1);
    const auto X = [](const PARegressor& r) { return RowMatrix(r.support_vectors().X().topRows(r.support_vectors().size())); };
    const double d2 = dist2(X(exact), exact.coefficients().col(0), X(out), out.coefficients().col(0), exact.params().kernel);
    CHECK(rep.degradation > 0.0);
    CHECK_NEAR(rep.degradation, d2, 1e-8 * (1.0 + d2));
    CHECK(out.counters().maintenance == models[0].counters().maintenance + models[1].counters().maintenance + 1);
  }
}

TEST_CASE("PARegressor: after a reduction, BPA-NN's neighbours and BPA-P's inverse are those of the store") {
  const Data s = sine(1200, 8);
  for (BPAVariant v : {BPAVariant::NearestNeighbor, BPAVariant::Project}) {
    const auto models = parts<PARegressor>(s, pa(20, v), 3);
    CombineReport rep;
    PARegressor out = combine(ptrs(models), {}, nullptr, &rep);
    CHECK(rep.reductions > 0 && out.support_vectors().size() <= 20);
    FieldMap fm;
    out.save(fm);
    const SupportVectors& sv = out.support_vectors();
    const Kernel& k = out.params().kernel;
    if (v == BPAVariant::NearestNeighbor) {
      NearestNeighbors nn;
      nn.rebuild(sv, k);
      FieldMap ref;
      nn.save(ref, "nn.");
      CHECK(fm.get_ints("nn.index") == ref.get_ints("nn.index"));
    } else {
      CHECK(fm.get_i64("proj.active") == 1);
      const RowMatrix K = fm.get_matrix("proj.K"), G = fm.get_matrix("proj.G");
      CHECK(K.rows() == sv.size());
      for (Index i = 0; i < sv.size(); ++i)
        for (Index j = 0; j < sv.size(); ++j) CHECK_NEAR(K(i, j), k.value(sv.x(i).transpose(), sv.x(j).transpose()), 1e-12);
      // G = K^{-1} (projection.hpp's maintained inverse), to the precision its drift check keeps
      const RowMatrix I = RowMatrix::Identity(sv.size(), sv.size());
      CHECK((K * G - I).cwiseAbs().maxCoeff() < 1e-6);
    }
    // it keeps learning as a model loaded from its file does
    PARegressor back;
    back.load(FieldMap::from_bytes(bytes_of(out)));
    out.partial_fit(s.X.topRows(300), s.y.head(300));
    back.partial_fit(s.X.topRows(300), s.y.head(300));
    CHECK(bytes_of(out) == bytes_of(back));
  }
}

TEST_CASE("PARegressor: averaged, the reduction keeps the average") {
  const Data s = sine(900, 9);
  const auto models = parts<PARegressor>(s, pa(15, BPAVariant::Project, true), 3);
  CombineReport rep;
  const PARegressor out = combine(ptrs(models), {}, nullptr, &rep);
  CHECK(rep.reductions > 0 && out.support_vectors().size() <= 15);
  double scale = 1.0;
  for (const PARegressor& m : models) {
    RowMatrix X, A;
    m.average().predictor(m.support_vectors(), m.n_classifiers(), X, A);
    scale = (std::max)(scale, A.cwiseAbs().sum());
  }
  double worst = 0.0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    double want = 0.0;
    for (const PARegressor& m : models) want += m.decision(s.X.row(i).data()) / 3.0;
    worst = (std::max)(worst, std::abs(out.decision(s.X.row(i).data()) - want));
  }
  CHECK(worst < 1e-12 * scale);
}

TEST_MAIN()
