// combine() (learners/combine.hpp) for the Passive-Aggressive family (every BPA variant, hinge
// and ramp), SparsePA and BOGD, binary and 3-class, with and without averaging:
//  - within the budget, decision values (of the average when averaged) are sum_k w_k f_k;
//  - over it, the store holds the budget, the averaged predictor is still exact, and the
//    degradation of a single maintenance step is the brute-force ||f_before - f_after||^2;
//  - side state (BPA-NN's neighbours, BPA-P's inverse) is consistent: the combined model
//    saves, loads and keeps learning bit for bit like its loaded copy;
//  - SparsePA refuses a budget below the union.
// What every learner shares (copy, weights, parameters, counters): test_combine_properties.cpp.
#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <vector>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

using bk_test::bytes_of;
using bk_test::dec;
using bk_test::Stream;

Stream stream(Index n, int c, std::uint64_t seed) { return bk_test::noisy_board(n, c, seed, 0.1); }

template <class L>
void train(L& l, const Stream& s, Index from, Index to) {
  l.partial_fit(s.X.middleRows(from, to - from), s.y.data() + from);
}

PAParams pa(Index budget, BPAVariant v, bool averaged, PALoss loss = PALoss::Hinge) {
  PAParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.C = 0.8;
  p.budget = budget;
  p.variant = v;
  p.averaged = averaged;
  p.loss = loss;
  p.seed = 3;
  return p;
}

BOGDParams bogd(Index budget, BOGDSampling s, bool averaged) {
  BOGDParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.eta = 0.3;
  p.lam = 0.01;
  p.budget = budget;
  p.sampling = s;
  p.averaged = averaged;
  p.seed = 4;
  return p;
}

SPAParams spa(bool averaged) {
  SPAParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.beta = 2.0;
  p.averaged = averaged;
  return p;
}

// Random probe points (the board is on [-2, 2)^2).
RowMatrix probe_points() { return 1.5 * bk_test::random_matrix(25, 2, 99); }

// max_z |f(z) - sum_k w_k f_k(z)| over the probes, relative to the scale of the f_k.
template <class L>
double mixture_error(const L& out, const std::vector<const L*>& ms, const std::vector<double>& w) {
  const RowMatrix Z = probe_points();
  double err = 0.0, scale = 1e-300;
  for (Index i = 0; i < Z.rows(); ++i) {
    const Vector z = Z.row(i).transpose();
    Vector f = Vector::Zero(out.n_outputs());
    for (std::size_t k = 0; k < ms.size(); ++k) {
      const Vector fk = dec(*ms[k], z);
      f += w[k] * fk;
      scale = std::max(scale, fk.cwiseAbs().maxCoeff());
    }
    err = std::max(err, (dec(out, z) - f).cwiseAbs().maxCoeff());
  }
  return err / scale;
}

// Saves, loads, and trains the combined model and its loaded copy on the same rows: equal bytes.
template <class L>
void check_resumes(L& out, const Stream& s) {
  FieldMap fm;
  out.save(fm);
  L copy;
  copy.load(FieldMap::from_bytes(fm.to_bytes()));
  CHECK(bytes_of(copy) == bytes_of(out));
  train(out, s, 0, 150);
  train(copy, s, 0, 150);
  CHECK(bytes_of(copy) == bytes_of(out));
}

const BPAVariant kVariants[] = {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project,
                                BPAVariant::Random};

TEST_CASE("PA family: within the budget the combination is sum_k w_k f_k, averaged too") {
  for (int c : {2, 3})
    for (BPAVariant v : kVariants)
      for (bool avg : {false, true})
        for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
          const Stream s = stream(600, c, 7 + static_cast<std::uint64_t>(c));
          PassiveAggressive a(2, c, pa(20, v, avg, loss)), b(2, c, pa(20, v, avg, loss));
          train(a, s, 0, 300);
          train(b, s, 300, 600);
          CombineOptions opt;
          // (a vector, not the braces: assigning those is a -Wnonnull false positive of GCC 12)
          opt.weights = std::vector<double>{0.3, 0.9};
          opt.budget = 0;  // the whole union
          CombineReport rep;
          PassiveAggressive out = combine<PassiveAggressive>({&a, &b}, opt, nullptr, &rep);
          CHECK(rep.union_size == a.support_vectors().size() + b.support_vectors().size());
          CHECK(rep.reductions == 0 && rep.degradation == 0.0);
          CHECK(out.support_vectors().size() == rep.union_size);
          CHECK(mixture_error<PassiveAggressive>(out, {&a, &b}, {0.25, 0.75}) < 1e-12);
          CHECK(out.counters().examples == 600);
          check_resumes(out, s);
        }
}

TEST_CASE("PA family over the budget: B SVs, exact average, one step's degradation is ||f_before - f_after||^2") {
  for (int c : {2, 3})
    for (BPAVariant v : kVariants)
      for (bool avg : {false, true}) {
        const Stream s = stream(500, c, 11);
        PassiveAggressive a(2, c, pa(12, v, avg)), b(2, c, pa(12, v, avg));
        train(a, s, 0, 250);
        train(b, s, 250, 500);
        const Index un = a.support_vectors().size() + b.support_vectors().size();
        CombineOptions whole;
        whole.weights = std::vector<double>{1.0, 1.0};
        whole.budget = 0;
        const PassiveAggressive ref = combine<PassiveAggressive>({&a, &b}, whole);
        for (Index budget : {un - 1, Index{12}}) {
          CombineOptions opt = whole;
          opt.budget = budget;
          CombineReport rep;
          PassiveAggressive out = combine<PassiveAggressive>({&a, &b}, opt, nullptr, &rep);
          CHECK(out.support_vectors().size() <= budget);
          if (v != BPAVariant::Project) CHECK(out.support_vectors().size() == budget);
          CHECK(out.params().budget == budget);
          CHECK(rep.reductions >= un - budget && rep.degradation > 0.0);
          CHECK(out.counters().maintenance == a.counters().maintenance + b.counters().maintenance + rep.reductions);
          if (avg) CHECK(mixture_error<PassiveAggressive>(out, {&a, &b}, {0.5, 0.5}) < 1e-12);
          if (rep.reductions == 1) {
            const SupportVectors& r = ref.support_vectors();
            const SupportVectors& o = out.support_vectors();
            const double d2 = bk_test::rkhs_dist2(out.params().kernel, r.X().topRows(r.size()), r.A().topRows(r.size()),
                                         o.X().topRows(o.size()), o.A().topRows(o.size()));
            CHECK_NEAR(rep.degradation, d2, 1e-9 * (1.0 + d2));
          }
          check_resumes(out, s);
        }
      }
}

TEST_CASE("SparsePA: the exact union, averaged too; no budget below it") {
  for (int c : {2, 3})
    for (bool avg : {false, true}) {
      const Stream s = stream(600, c, 17);
      SparsePA a(2, c, spa(avg)), b(2, c, spa(avg));
      train(a, s, 0, 300);
      train(b, s, 300, 600);
      CombineReport rep;
      CombineOptions opt;
      opt.weights = std::vector<double>{2.0, 1.0};
      SparsePA out = combine<SparsePA>({&a, &b}, opt, nullptr, &rep);
      CHECK(out.support_vectors().size() == a.support_vectors().size() + b.support_vectors().size());
      CHECK(mixture_error<SparsePA>(out, {&a, &b}, {2.0 / 3.0, 1.0 / 3.0}) < 1e-12);
      CHECK_NEAR(out.expected_support(), a.expected_support() + b.expected_support(), 1e-9);
      const Index n = out.support_vectors().size();
      check_resumes(out, s);
      opt.budget = n;  // the union fits: fine
      CHECK(combine<SparsePA>({&a, &b}, opt).support_vectors().size() == n);
      opt.budget = n - 1;
      bool said = false;
      try {
        combine<SparsePA>({&a, &b}, opt);
      } catch (const std::invalid_argument& e) {
        said = std::string(e.what()).find("SparsePA keeps no budget") != std::string::npos;
      }
      CHECK(said);
      CHECK(bytes_of(combine<SparsePA>({&a})) == bytes_of(a));
    }
}

TEST_CASE("BOGD: exact within the budget; over it B SVs by discard_one, the average still exact") {
  for (int c : {2, 3})
    for (BOGDSampling smp : {BOGDSampling::Uniform, BOGDSampling::NonUniform})
      for (bool avg : {false, true}) {
        const Stream s = stream(500, c, 19);
        BOGD a(2, c, bogd(15, smp, avg)), b(2, c, bogd(15, smp, avg));
        train(a, s, 0, 250);
        train(b, s, 250, 500);
        CombineOptions opt;
        opt.weights = std::vector<double>{1.0, 3.0};
        opt.budget = 0;
        BOGD whole = combine<BOGD>({&a, &b}, opt);
        CHECK(mixture_error<BOGD>(whole, {&a, &b}, {0.25, 0.75}) < 1e-12);
        check_resumes(whole, s);
        opt.budget = -1;  // their own: 15
        CombineReport rep;
        BOGD out = combine<BOGD>({&a, &b}, opt, nullptr, &rep);
        CHECK(out.support_vectors().size() == 15);
        CHECK(rep.reductions == rep.union_size - 15 && rep.degradation > 0.0);
        if (avg) CHECK(mixture_error<BOGD>(out, {&a, &b}, {0.25, 0.75}) < 1e-12);
        check_resumes(out, s);
        CHECK(bytes_of(combine<BOGD>({&a})) == bytes_of(a));
      }
}

}  // namespace

TEST_MAIN()
