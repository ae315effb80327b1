// combine() for the kernel perceptron family (learners/perceptron.hpp, learners/combine.hpp):
// different class sets, each rule's own reduction over the budget checked against a
// brute-force RKHS norm and the rule's invariant, consistent side state (MaxMargin's F,
// Projectron's K^{-1}, the Forgetron's Q <= 15/32 M) shown by continuing bit for bit after
// save/load, the Forgetron's counters with a base, and the parameter checks naming the
// parameter. What every learner shares (copy, weights, parameters, counters, the exact union):
// test_combine_properties.cpp.
#include "budgetkernel/learners/perceptron.hpp"
#include "test_oracles.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <random>
#include <vector>

using namespace budgetkernel;

namespace {

struct Stream {
  RowMatrix X;
  std::vector<std::int32_t> y;
};

// Uniform points on [-2, 2)^2 labelled by a 4x4 checkerboard (cell index mod c, plus `first`),
// a fraction `noise` of the labels moved to the next class.
Stream make_stream(Index n, int n_classes, std::uint64_t seed, double noise = 0.2, int first = 0) {
  std::mt19937_64 rng(seed);
  Stream s{RowMatrix(n, 2), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const double a = 4.0 * detail::uniform01(rng), b = 4.0 * detail::uniform01(rng);
    s.X(i, 0) = a - 2.0;
    s.X(i, 1) = b - 2.0;
    int label = (static_cast<int>(a) + static_cast<int>(b)) % n_classes;
    if (detail::uniform01(rng) < noise) label = (label + 1) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label + first;
  }
  return s;
}

PerceptronParams params(PerceptronBudget m, Index budget) {
  PerceptronParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.budget = budget;
  p.maintenance = m;
  p.seed = 7;
  p.eta = 0.1;
  p.beta = 0.3;
  return p;
}

const PerceptronBudget all_rules[] = {PerceptronBudget::Stop,      PerceptronBudget::Random,
                                      PerceptronBudget::Forgetron, PerceptronBudget::MaxMargin,
                                      PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP};

KernelPerceptron trained(const PerceptronParams& p, Index c, Index n, std::uint64_t seed, int first = 0) {
  const Stream s = make_stream(n, static_cast<int>(c), seed, 0.2, first);
  std::vector<std::int32_t> y = s.y;
  for (auto& v : y) v -= first;
  KernelPerceptron m(2, c, p);
  m.partial_fit(s.X, y.data());
  return m;
}

RowMatrix decisions(const KernelPerceptron& m, const RowMatrix& X) {
  RowMatrix out(X.rows(), m.n_outputs());
  m.decision_function(X, out);
  return out;
}

// ||sum_i a_i phi(x_i) - sum_j b_j phi(z_j)||^2, summed over the outputs: a Gram-matrix
// quadratic form over the stacked points.
RowMatrix svx(const KernelPerceptron& m) { return m.support_vectors().X().topRows(m.support_vectors().size()); }

std::string bytes_of(const KernelPerceptron& m) {
  FieldMap fm;
  m.save(fm);
  return fm.to_bytes();
}

KernelPerceptron reloaded(const KernelPerceptron& m) {
  KernelPerceptron r;
  FieldMap fm;
  m.save(fm);
  r.load(FieldMap::from_bytes(fm.to_bytes()));
  return r;
}

}  // namespace

TEST_CASE("different class sets: binary models on {0,1} and {1,2} give f_1 - f_0 = a and f_2 - f_1 = b") {
  const Stream probe = make_stream(40, 3, 98);
  for (PerceptronBudget m : all_rules) {
    const PerceptronParams p = params(m, 15);
    const KernelPerceptron a = trained(p, 2, 120, 4), b = trained(p, 2, 120, 5, 1);
    const KernelPerceptron t = trained(p, 3, 120, 6);
    CombineOptions opt;
    opt.budget = 0;
    opt.weights = std::vector<double>{0.25, 0.25, 0.5};
    opt.class_maps = {{0, 1}, {1, 2}, {0, 1, 2}};
    opt.n_classes = 3;
    const KernelPerceptron r = combine<KernelPerceptron>({&a, &b, &t}, opt);
    CHECK(r.n_classes() == 3 && r.n_outputs() == 3);
    const RowMatrix fa = decisions(a, probe.X), fb = decisions(b, probe.X), ft = decisions(t, probe.X);
    RowMatrix f = 0.5 * ft;
    f.col(1) += 0.25 * 0.5 * fa.col(0);  // CombinePlan::add_row: +a/2 on class 1, -a/2 on class 0
    f.col(0) -= 0.25 * 0.5 * fa.col(0);
    f.col(2) += 0.25 * 0.5 * fb.col(0);
    f.col(1) -= 0.25 * 0.5 * fb.col(0);
    CHECK((f - decisions(r, probe.X)).cwiseAbs().maxCoeff() <= 1e-12 * std::max(1.0, f.cwiseAbs().maxCoeff()));
    // the labels of the SVs are mapped too: model b's labels 0, 1 are classes 1, 2
    const auto& lab = r.sv_labels();
    CHECK(static_cast<Index>(lab.size()) == r.combine_size());
    for (std::size_t i = 0; i < lab.size(); ++i) CHECK(lab[i] >= 0 && lab[i] < 3);
    const Index na = a.combine_size();
    for (Index i = 0; i < na; ++i)
      CHECK(lab[static_cast<std::size_t>(i)] == a.sv_labels()[static_cast<std::size_t>(i)]);
    for (Index i = 0; i < b.combine_size(); ++i)
      CHECK(lab[static_cast<std::size_t>(na + i)] == b.sv_labels()[static_cast<std::size_t>(i)] + 1);
  }
}

TEST_CASE("a weight of 0 adds nothing, for every rule") {
  for (PerceptronBudget m : all_rules) {
    for (Index c : {Index(2), Index(3)}) {
      const KernelPerceptron a = trained(params(m, 15), c, 200, 7);
      const KernelPerceptron b = trained(params(m, 15), c, 200, 8);
      CombineOptions opt;
      opt.weights = std::vector<double>{1.0, 0.0};
      const KernelPerceptron r0 = combine<KernelPerceptron>({&a, &b}, opt);
      const Stream probe = make_stream(30, 3, 97);
      CHECK((decisions(r0, probe.X) - decisions(a, probe.X)).cwiseAbs().maxCoeff() <= 1e-12);
    }
  }
}

TEST_CASE("one overflow: the reported degradation is the brute-force ||f_before - f_after||^2") {
  const Stream probe = make_stream(30, 3, 96);
  for (PerceptronBudget m : all_rules) {
    for (Index c : {Index(2), Index(3)}) {
      const PerceptronParams p = params(m, 0);
      const KernelPerceptron a = trained(p, c, 60, 10), b = trained(p, c, 60, 11);
      CombineOptions opt;
      opt.weights = std::vector<double>{0.6, 0.4};
      opt.budget = 0;
      const KernelPerceptron u = combine<KernelPerceptron>({&a, &b}, opt);  // the exact union
      const Index n = u.combine_size();
      opt.budget = n - 1;
      CombineReport rep;
      const KernelPerceptron r = combine<KernelPerceptron>({&a, &b}, opt, nullptr, &rep);
      CHECK(r.combine_size() == n - 1);
      CHECK(rep.reductions == 1 && rep.degradation > 0.0);
      const double bf = bk_test::rkhs_dist2(p.kernel, svx(u), u.coefficients(), svx(r), r.coefficients());
      CHECK_NEAR(rep.degradation, bf, 1e-9 * std::max(1.0, bf));
      CHECK(r.counters().maintenance == a.counters().maintenance + b.counters().maintenance + 1);
      CHECK_NEAR(r.counters().degradation, a.counters().degradation + b.counters().degradation + rep.degradation,
                 1e-12 * std::max(1.0, r.counters().degradation));
      (void)probe;
    }
  }
}

TEST_CASE("over the budget: every rule keeps B SVs by its own rule") {
  for (Index c : {Index(2), Index(3)}) {
    const Index B = 12;
    for (PerceptronBudget m : all_rules) {
      const PerceptronParams p = params(m, B);
      const KernelPerceptron a = trained(p, c, 300, 20), b = trained(p, c, 300, 21), d = trained(p, c, 300, 22);
      CombineOptions all;
      all.budget = 0;
      CombineReport urep;
      const KernelPerceptron u = combine<KernelPerceptron>({&a, &b, &d}, all, nullptr, &urep);
      CombineReport rep;
      const KernelPerceptron r = combine<KernelPerceptron>({&a, &b, &d}, {}, nullptr, &rep);
      CHECK(rep.union_size == urep.union_size && rep.union_size > B);
      const Index n = r.combine_size();
      CHECK(n <= B && rep.degradation > 0.0);
      const SupportVectors& sv = r.support_vectors();
      const SupportVectors& su = u.support_vectors();
      // importance of every union SV, as ExpansionUnion::by_importance ranks them
      std::vector<double> imp;
      for (Index i = 0; i < su.size(); ++i) imp.push_back(su.alpha(i).squaredNorm() * p.kernel.self(su.sqnorm()(i)));
      std::vector<double> sorted = imp;
      std::sort(sorted.begin(), sorted.end(), std::greater<double>());
      switch (m) {
        case PerceptronBudget::Stop: {  // the B most important, unchanged
          CHECK(n == B && rep.reductions == rep.union_size - B);
          for (Index i = 0; i < n; ++i)
            CHECK(sv.alpha(i).squaredNorm() * p.kernel.self(sv.sqnorm()(i)) >= sorted[static_cast<std::size_t>(B - 1)]);
          double dropped = 0.0;
          for (std::size_t i = static_cast<std::size_t>(B); i < sorted.size(); ++i) dropped += sorted[i];
          CHECK_NEAR(rep.degradation, dropped, 1e-12 * dropped);
          break;
        }
        case PerceptronBudget::Random:
        case PerceptronBudget::MaxMargin:
          CHECK(n == B && rep.reductions == rep.union_size - B);
          break;
        case PerceptronBudget::Forgetron: {  // the B newest (largest ids)
          CHECK(n == B && rep.reductions == rep.union_size - B);
          std::vector<std::int64_t> ids(su.ids().begin(), su.ids().begin() + su.size());
          std::sort(ids.begin(), ids.end(), std::greater<std::int64_t>());
          for (Index i = 0; i < n; ++i) CHECK(sv.id(i) >= ids[static_cast<std::size_t>(B - 1)]);
          CHECK(r.forgetron_q() <= 15.0 / 32.0 * static_cast<double>(r.forgetron_updates()));
          CHECK(r.forgetron_updates() == a.forgetron_updates() + b.forgetron_updates() + d.forgetron_updates());
          break;
        }
        case PerceptronBudget::Projectron:
        case PerceptronBudget::ProjectronPP: {  // the rest projected onto the span of the kept
          CHECK(n == B);
          const auto K = r.projection().kernel_matrix();
          const auto& G = r.projection().inverse().inverse();
          CHECK(K.rows() == n && G.rows() == n);
          CHECK((G * K - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff() < 1e-6);
          // alpha minimises ||f_union - f||: the residual is orthogonal to every kept phi(x_j)
          RowMatrix KA(n, r.n_outputs());
          for (Index j = 0; j < n; ++j) {
            Vector kr(su.size() + 1), kk(n + 1);
            su.kernel_row(p.kernel, sv.x(j).transpose(), sv.sqnorm()(j), kr);
            sv.kernel_row(p.kernel, sv.x(j).transpose(), sv.sqnorm()(j), kk);
            KA.row(j) = kr.head(su.size()).transpose() * su.A().topRows(su.size()) -
                        kk.head(n).transpose() * sv.A().topRows(n);
          }
          CHECK(KA.cwiseAbs().maxCoeff() < 1e-6);
          break;
        }
      }
      if (m == PerceptronBudget::MaxMargin) {  // F = f(x_i) of the combined model
        const RowMatrix F = r.sv_scores();
        const RowMatrix f = decisions(r, svx(r));
        CHECK((F - f).cwiseAbs().maxCoeff() <= 1e-10 * std::max(1.0, f.cwiseAbs().maxCoeff()));
      }
    }
  }
}

TEST_CASE("Projectron: numerically dependent SVs of the union are folded as step() folds them") {
  // Model b learned from a's points moved by 1e-9: its SVs are in the span of a's numerically.
  for (PerceptronBudget m : {PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP}) {
    const PerceptronParams p = params(m, 0);
    const Stream s = make_stream(150, 3, 60);
    KernelPerceptron a(2, 3, p), b(2, 3, p);
    a.partial_fit(s.X, s.y.data());
    const RowMatrix X2 = (s.X.array() + 1e-9).matrix();
    b.partial_fit(X2, s.y.data());
    CombineReport rep;
    const KernelPerceptron r = combine<KernelPerceptron>({&a, &b}, {}, nullptr, &rep);
    CHECK(rep.reductions > 0 && r.combine_size() == rep.union_size - rep.reductions);
    const Index n = r.combine_size();
    const auto K = r.projection().kernel_matrix();
    CHECK(K.rows() == n);
    const Eigen::MatrixXd GK = r.projection().inverse().inverse() * K;
    CHECK((GK - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff() < 1e-6);
    const RowMatrix f = 0.5 * decisions(a, s.X) + 0.5 * decisions(b, s.X);
    CHECK((f - decisions(r, s.X)).cwiseAbs().maxCoeff() < 1e-4);
    CHECK(rep.degradation >= 0.0 && rep.degradation < 1e-6);
  }
}

TEST_CASE("the combined model keeps learning, and save -> load -> continue is bit for bit") {
  for (Index c : {Index(2), Index(3)}) {
    const Stream more = make_stream(200, static_cast<int>(c), 30);
    for (PerceptronBudget m : all_rules) {
      for (Index B : {Index(0), Index(10)}) {
        const PerceptronParams p = params(m, B);
        const KernelPerceptron a = trained(p, c, 200, 31), b = trained(p, c, 200, 32);
        KernelPerceptron r = combine<KernelPerceptron>({&a, &b});
        KernelPerceptron s = reloaded(r);
        CHECK(bytes_of(s) == bytes_of(r));
        r.partial_fit(more.X, more.y.data());
        s.partial_fit(more.X, more.y.data());
        CHECK(bytes_of(s) == bytes_of(r));
        CHECK(r.counters().examples == 600);
        if (B > 0) CHECK(r.combine_size() <= B);
      }
    }
  }
}

TEST_CASE("counters with a base: maintenance and the Forgetron's, for every rule") {
  for (PerceptronBudget m : all_rules) {
    const PerceptronParams p = params(m, 10);
    const KernelPerceptron base = trained(p, 3, 100, 40);
    KernelPerceptron a = base, b = base;
    const Stream sa = make_stream(80, 3, 41), sb = make_stream(120, 3, 42);
    a.partial_fit(sa.X, sa.y.data());
    b.partial_fit(sb.X, sb.y.data());
    CombineReport rep;
    const KernelPerceptron r = combine<KernelPerceptron>({&a, &b}, {}, &base, &rep);
    CHECK(r.counters().maintenance ==
          a.counters().maintenance + b.counters().maintenance - base.counters().maintenance + rep.reductions);
    CHECK(r.forgetron_updates() == a.forgetron_updates() + b.forgetron_updates() - base.forgetron_updates());
    CHECK(r.forgetron_q() <= 15.0 / 32.0 * static_cast<double>(r.forgetron_updates()));
  }
}

TEST_CASE("models with different parameters do not combine, the error naming the parameter") {
  const KernelPerceptron a = trained(params(PerceptronBudget::MaxMargin, 10), 2, 50, 50);
  const auto fails = [&](PerceptronParams q, const char* what) {
    const KernelPerceptron b = trained(q, 2, 50, 51);
    bool named = false;
    try {
      (void)combine<KernelPerceptron>({&a, &b});
    } catch (const std::invalid_argument& e) {
      named = std::string(e.what()).find(what) != std::string::npos;
    }
    CHECK(named);
  };
  PerceptronParams q = params(PerceptronBudget::MaxMargin, 10);
  q.beta = 0.5;
  fails(q, "beta");
  q = params(PerceptronBudget::MaxMargin, 10);
  q.eta = 0.5;
  fails(q, "eta");
  fails(params(PerceptronBudget::MaxMargin, 11), "budgets");
  fails(params(PerceptronBudget::Random, 10), "maintenance");
  q = params(PerceptronBudget::MaxMargin, 10);
  q.kernel = Kernel(KernelType::RBF, 2.0);
  fails(q, "kernels");
  q = params(PerceptronBudget::MaxMargin, 10);
  q.seed = 123;
  const KernelPerceptron b = trained(q, 2, 50, 51);
  CHECK(combine<KernelPerceptron>({&a, &b}).params().seed == a.params().seed);
}

TEST_MAIN()
