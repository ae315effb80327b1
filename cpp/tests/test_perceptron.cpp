// The kernel perceptron family (learners/perceptron.hpp) against oracles written plainly
// here: a naive kernel perceptron, a naive self-tuned Forgetron (phi by bisection), the
// brute-force argmax of MaxMargin's post-removal margins with a dense margin cache, dense
// least-squares projections for Projectron(++) and a naive Projectron with a fresh inverse
// per step; then budget bounds, determinism, bit-for-bit resume and file validation.
#include "budgetkernel/learners/perceptron.hpp"
#include "test_util.hpp"

#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace budgetkernel;

namespace {

struct Stream {
  RowMatrix X;
  std::vector<std::int32_t> y;
};

// Uniform points on [-2, 2)^2 labelled by a 4x4 checkerboard (cell index mod c), a fraction
// `noise` of the labels moved to the next class.
Stream make_stream(Index n, int n_classes, std::uint64_t seed, double noise = 0.15, double half_width = 2.0) {
  std::mt19937_64 rng(seed);
  Stream s{RowMatrix(n, 2), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const double a = 4.0 * detail::uniform01(rng), b = 4.0 * detail::uniform01(rng);
    s.X(i, 0) = (a - 2.0) * half_width / 2.0;
    s.X(i, 1) = (b - 2.0) * half_width / 2.0;
    int label = (static_cast<int>(a) + static_cast<int>(b)) % n_classes;
    if (detail::uniform01(rng) < noise) label = (label + 1) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label;
  }
  return s;
}

PerceptronParams params(PerceptronBudget m, Index budget, double gamma = 1.0) {
  PerceptronParams p;
  p.kernel = Kernel(KernelType::RBF, gamma);
  p.budget = budget;
  p.maintenance = m;
  p.seed = 7;
  p.eta = 0.1;
  p.beta = 0.0;
  return p;
}

const PerceptronBudget all_rules[] = {PerceptronBudget::Stop,      PerceptronBudget::Random,
                                      PerceptronBudget::Forgetron, PerceptronBudget::MaxMargin,
                                      PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP};

// ---- naive references -----------------------------------------------------------------

struct NaiveSV {
  Vector x;
  Vector a;
  std::int64_t id;
  std::int32_t label;
};

// f(x) = sum_j a_j k(x_j, x), each term by Kernel::value.
Vector dense_scores(const Kernel& k, const std::vector<NaiveSV>& S, const Vector& x, Index c) {
  Vector f = Vector::Zero(c);
  for (const NaiveSV& s : S) f += s.a * k.value(s.x, x);
  return f;
}

// Update vector and margin, written out: binary u = +-1, margin y f; multi-class r' =
// first index of the largest wrong score, u = e_y - e_r', margin f_y - f_r'.
double naive_direction(const Vector& f, std::int32_t y, Vector& u) {
  u = Vector::Zero(f.size());
  if (f.size() == 1) {
    u(0) = y == 1 ? 1.0 : -1.0;
    return u(0) * f(0);
  }
  Index r = -1;
  for (Index i = 0; i < f.size(); ++i)
    if (i != y && (r < 0 || f(i) > f(r))) r = i;
  u(y) = 1.0;
  u(r) = -1.0;
  return f(y) - f(r);
}

// Largest coefficient difference between the learner's SVs and a reference list, matched by
// id; -1 when the sets of ids or the points differ.
double model_distance(const KernelPerceptron& l, const std::vector<NaiveSV>& S) {
  const SupportVectors& sv = l.support_vectors();
  if (sv.size() != static_cast<Index>(S.size())) return -1.0;
  double err = 0.0;
  for (Index i = 0; i < sv.size(); ++i) {
    const NaiveSV* m = nullptr;
    for (const NaiveSV& s : S)
      if (s.id == sv.id(i)) m = &s;
    if (!m || (m->x.transpose() - sv.x(i)).cwiseAbs().maxCoeff() != 0.0 ||
        m->label != l.sv_labels()[static_cast<std::size_t>(i)])
      return -1.0;
    err = std::max(err, (m->a.transpose() - sv.alpha(i)).cwiseAbs().maxCoeff());
  }
  return err;
}

// Self-tuned Forgetron written plainly (SVs in order of arrival, f recomputed densely):
// phi = the largest phi in (0, 1] with g(phi) = a phi^2 + b phi + c <= 0. g(0) = c < 0, so
// phi = 1 when g(1) <= 0, else the only root in (0, 1), found here by bisection.
struct NaiveForgetron {
  Kernel k;
  Index B, c;
  std::vector<NaiveSV> S;
  double Q = 0.0;
  std::int64_t M = 0;
  std::int64_t t = 0;
  std::int64_t removals = 0;

  void step(const Vector& x, std::int32_t y) {
    ++t;
    Vector u;
    if (naive_direction(dense_scores(k, S, x, c), y, u) > 0.0) return;
    S.push_back({x, u, t, y});
    ++M;
    if (static_cast<Index>(S.size()) <= B) return;
    const Vector br = S.front().a;
    const Vector fp = dense_scores(k, S, S.front().x, c);
    const double qa = br.squaredNorm() - 2.0 * br.dot(fp), qb = 2.0 * br.norm();
    const double qc = Q - 15.0 / 32.0 * static_cast<double>(M);
    auto g = [&](double p) { return qa * p * p + qb * p + qc; };
    double phi = 1.0;
    if (g(1.0) > 0.0) {
      double lo = 0.0, hi = 1.0;  // g(lo) <= 0 < g(hi)
      for (int it = 0; it < 200; ++it) {
        const double mid = 0.5 * (lo + hi);
        (g(mid) <= 0.0 ? lo : hi) = mid;
      }
      phi = lo;
    }
    for (NaiveSV& s : S) s.a *= phi;
    const Vector b2 = S.front().a;
    const double e = b2.norm();
    Q += e * e + 2.0 * e - 2.0 * b2.dot(dense_scores(k, S, S.front().x, c));
    S.erase(S.begin());
    ++removals;
  }
};

// Projectron / Projectron++ with a fresh dense solve per step (JMLR 2009, Figures 1-2).
struct NaiveProjectron {
  Kernel k;
  Index B, c;
  double eta;
  bool plus;
  std::vector<NaiveSV> S;
  std::int64_t t = 0, projections = 0, additions = 0, margin_updates = 0;

  // beta = K^{-1} k_x by LDLT of the explicitly built K; s = k(x,x) - k_x . beta.
  Vector solve(const Vector& x, double& s) const {
    const Index n = static_cast<Index>(S.size());
    Eigen::MatrixXd K(n, n);
    Vector kx(n);
    for (Index i = 0; i < n; ++i) {
      kx(i) = k.value(S[static_cast<std::size_t>(i)].x, x);
      for (Index j = 0; j < n; ++j) K(i, j) = k.value(S[static_cast<std::size_t>(i)].x, S[static_cast<std::size_t>(j)].x);
    }
    const Vector beta = n > 0 ? Vector(K.ldlt().solve(kx)) : Vector(0);
    s = k.value(x, x) - kx.dot(beta);
    return beta;
  }

  void step(const Vector& x, std::int32_t y) {
    ++t;
    Vector u;
    const double margin = naive_direction(dense_scores(k, S, x, c), y, u);
    if (margin <= 0.0) {
      double s;
      const Vector beta = solve(x, s);
      if (std::sqrt(std::max(s, 0.0)) <= eta || (B > 0 && static_cast<Index>(S.size()) >= B)) {
        for (std::size_t i = 0; i < S.size(); ++i) S[i].a += beta(static_cast<Index>(i)) * u;
        ++projections;
      } else {
        S.push_back({x, u, t, y});
        ++additions;
      }
    } else if (plus && margin <= 1.0 && eta > 0.0) {
      double s;
      const Vector beta = solve(x, s);
      const double L = 1.0 - margin, delta = std::sqrt(std::max(s, 0.0));
      const double q = u.squaredNorm() * (k.value(x, x) - std::max(s, 0.0));
      if (L - delta / eta > 0.0 && q > 0.0) {
        const double tau = std::min(std::min(L / q, 1.0), 2.0 * (L - delta / eta) / q);
        for (std::size_t i = 0; i < S.size(); ++i) S[i].a += tau * beta(static_cast<Index>(i)) * u;
        ++margin_updates;
      }
    }
  }
};

std::vector<NaiveSV> as_list(const KernelPerceptron& l) {
  std::vector<NaiveSV> S;
  const SupportVectors& sv = l.support_vectors();
  for (Index i = 0; i < sv.size(); ++i)
    S.push_back({sv.x(i).transpose(), sv.alpha(i).transpose(), sv.id(i), l.sv_labels()[static_cast<std::size_t>(i)]});
  return S;
}

bool same_model(const KernelPerceptron& a, const KernelPerceptron& b) {
  const SupportVectors &sa = a.support_vectors(), &sb = b.support_vectors();
  if (sa.size() != sb.size()) return false;
  const Index n = sa.size();
  if (n > 0 && ((sa.X().topRows(n).array() != sb.X().topRows(n).array()).any() ||
                (sa.A().topRows(n).array() != sb.A().topRows(n).array()).any()))
    return false;
  for (Index i = 0; i < n; ++i)
    if (sa.id(i) != sb.id(i)) return false;
  const Counters &ca = a.counters(), &cb = b.counters();
  return a.sv_labels() == b.sv_labels() && ca.examples == cb.examples && ca.updates == cb.updates &&
         ca.maintenance == cb.maintenance && ca.degradation == cb.degradation && ca.mistakes == cb.mistakes &&
         a.forgetron_q() == b.forgetron_q() && a.forgetron_updates() == b.forgetron_updates() &&
         (a.sv_scores().array() == b.sv_scores().array()).all();
}

}  // namespace

// ---- 1. reductions to the kernel perceptron --------------------------------------------

TEST_CASE("kernel perceptron equals a naive reference (binary and multi-class)") {
  for (int c : {2, 4}) {
    const Stream s = make_stream(400, c, 3);
    KernelPerceptron l(2, c, params(PerceptronBudget::Random, 0));
    NaiveForgetron ref{Kernel(KernelType::RBF, 1.0), 1 << 30, c == 2 ? 1 : c, {}};  // never removes
    double err = 0.0;
    std::int64_t mistakes = 0;
    for (Index i = 0; i < s.X.rows(); ++i) {
      const std::int32_t y = s.y[static_cast<std::size_t>(i)];
      l.learn_one(s.X.row(i).data(), y);
      ref.step(s.X.row(i).transpose(), y);
      err = std::max(err, model_distance(l, ref.S));
      if (model_distance(l, ref.S) < 0.0) err = 1.0;
    }
    for (const NaiveSV& sv : ref.S) mistakes += sv.a.size() > 0;
    CHECK(err == 0.0);  // coefficients are exactly u: no arithmetic on them
    CHECK(ref.removals == 0);
    CHECK(l.counters().updates == mistakes);
    CHECK(l.counters().maintenance == 0);
    CHECK(mistakes > 50);
    // Decision values against the dense sum.
    Vector out(l.n_outputs());
    double derr = 0.0;
    for (Index i = 0; i < 50; ++i) {
      l.decision(s.X.row(i).data(), out.data());
      derr = std::max(derr, (out - dense_scores(ref.k, ref.S, s.X.row(i).transpose(), out.size())).cwiseAbs().maxCoeff());
    }
    CHECK(derr < 1e-12);
  }
}

TEST_CASE("budget >= stream length: every rule equals the unbudgeted kernel perceptron exactly") {
  for (int c : {2, 3}) {
    // Spread out (8 x 8 square, RBF gamma 1) so that no new SV is numerically dependent on
    // the others: the Projection would fold such a point (a projection, unlike the perceptron).
    const Index n = 300;
    const Stream s = make_stream(n, c, 1, 0.15, 4.0);
    KernelPerceptron free(2, c, params(PerceptronBudget::Random, 0));
    std::vector<std::int32_t> pf(static_cast<std::size_t>(n));
    free.partial_fit(s.X, s.y.data(), pf.data());
    CHECK(free.support_vectors().size() > 60);
    for (PerceptronBudget m : all_rules) {
      for (Index budget : {Index(0), n}) {
        PerceptronParams p = params(m, budget);
        p.eta = 0.0;  // Projectron(++) with eta = 0 never projects
        KernelPerceptron big(2, c, p);
        std::vector<std::int32_t> pb(static_cast<std::size_t>(n));
        big.partial_fit(s.X, s.y.data(), pb.data());
        const bool same = big.support_vectors().size() == free.support_vectors().size() &&
                          (big.coefficients().array() == free.coefficients().array()).all() &&
                          (big.support_vectors().X().topRows(big.support_vectors().size()).array() ==
                           free.support_vectors().X().topRows(free.support_vectors().size()).array())
                              .all() &&
                          pb == pf && big.counters().maintenance == 0 && big.counters().degradation == 0.0 &&
                          big.counters().updates == free.counters().updates;
        if (!same)
          std::printf("  %s c=%d B=%ld: %ld SVs vs %ld, maintenance %ld\n", perceptron_budget_name(m), c,
                      static_cast<long>(budget), static_cast<long>(big.support_vectors().size()),
                      static_cast<long>(free.support_vectors().size()), static_cast<long>(big.counters().maintenance));
        CHECK(same);
      }
    }
  }
}

// ---- 2. Forgetron ----------------------------------------------------------------------

TEST_CASE("Forgetron equals a naive self-tuned Forgetron over many removals") {
  for (int c : {2, 3}) {
    for (Index B : {Index(3), Index(12)}) {
     for (const Kernel& kern : {Kernel(KernelType::RBF, 1.0), Kernel(KernelType::Polynomial, 0.5, 2, 1.0)}) {
      const Stream s = make_stream(700, c, 5, 0.25);
      PerceptronParams p = params(PerceptronBudget::Forgetron, B);
      p.kernel = kern;
      KernelPerceptron l(2, c, p);
      NaiveForgetron ref{kern, B, c == 2 ? 1 : c, {}};
      double err = 0.0, qerr = 0.0;
      bool ok = true;
      for (Index i = 0; i < s.X.rows(); ++i) {
        const std::int32_t y = s.y[static_cast<std::size_t>(i)];
        l.learn_one(s.X.row(i).data(), y);
        ref.step(s.X.row(i).transpose(), y);
        const double e = model_distance(l, ref.S);
        ok = ok && e >= 0.0;
        err = std::max(err, e);
        qerr = std::max(qerr, std::abs(l.forgetron_q() - ref.Q) / std::max(1.0, std::abs(ref.Q)));
        ok = ok && l.forgetron_updates() == ref.M && l.support_vectors().size() <= B;
      }
      CHECK(ok);
      CHECK(err < 1e-10);
      CHECK(qerr < 1e-10);
      CHECK(ref.removals > 100);
      CHECK(l.counters().maintenance == ref.removals);
      if (!(err < 1e-10) || !(qerr < 1e-10))
        std::printf("  %s c=%d B=%ld: coef err %g, Q err %g\n", kernel_name(kern.type()), c, (long)B, err, qerr);
     }
    }
  }
}

// ---- 3. MaxMargin ----------------------------------------------------------------------

TEST_CASE("MaxMargin removes the brute-force argmax of the post-removal margins; F stays exact") {
  for (int c : {2, 3}) {
    for (double beta : {0.0, 0.5}) {
     for (const Kernel& kern : {Kernel(KernelType::RBF, 1.0), Kernel(KernelType::Polynomial, 0.5, 2, 1.0)}) {
      const Stream s = make_stream(500, c, 9, 0.2);
      PerceptronParams p = params(PerceptronBudget::MaxMargin, 10);
      p.kernel = kern;
      p.beta = beta;
      KernelPerceptron l(2, c, p);
      const Index nc = l.n_outputs();
      std::int64_t removals = 0, wrong = 0, updates_expected = 0;
      double ferr = 0.0;
      for (Index t = 0; t < s.X.rows(); ++t) {
        const std::int32_t y = s.y[static_cast<std::size_t>(t)];
        const Vector x = s.X.row(t).transpose();
        // Before the step: the store plus x_t with its update vector (what the rule sees).
        std::vector<NaiveSV> S = as_list(l);
        Vector u;
        const double margin = naive_direction(dense_scores(p.kernel, S, x, nc), y, u);
        updates_expected += margin <= beta;
        const std::int64_t maint = l.counters().maintenance;
        l.learn_one(x.data(), y);
        if (l.counters().maintenance != maint) {
          ++removals;
          S.push_back({x, u, t + 1, y});
          // Brute force: margin of each SV's example under the dense expansion without it.
          Index best = -1;
          double best_v = 0.0;
          for (std::size_t i = 0; i < S.size(); ++i) {
            std::vector<NaiveSV> rest = S;
            rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
            Vector ui;
            const double v = naive_direction(dense_scores(p.kernel, rest, S[i].x, nc), S[i].label, ui);
            if (best < 0 || detail::smaller_or_older(-v, S[i].id, -best_v, S[static_cast<std::size_t>(best)].id))
              best = static_cast<Index>(i), best_v = v;
          }
          const std::int64_t removed = S[static_cast<std::size_t>(best)].id;
          bool still = false;
          for (Index i = 0; i < l.support_vectors().size(); ++i) still = still || l.support_vectors().id(i) == removed;
          wrong += still || l.support_vectors().size() != p.budget;
        }
        // F_i = f(x_i) recomputed densely.
        const RowMatrix F = l.sv_scores();
        const std::vector<NaiveSV> now = as_list(l);
        for (std::size_t i = 0; i < now.size(); ++i)
          ferr = std::max(ferr, (F.row(static_cast<Index>(i)).transpose() - dense_scores(p.kernel, now, now[i].x, nc))
                                    .cwiseAbs()
                                    .maxCoeff());
      }
      CHECK(removals > 50);
      CHECK(wrong == 0);
      CHECK(ferr < 1e-9);
      CHECK(l.counters().updates == updates_expected);
      if (wrong || !(ferr < 1e-9))
        std::printf("  %s c=%d beta=%g: %ld wrong of %ld, F err %g\n", kernel_name(kern.type()), c, beta, (long)wrong,
                    (long)removals, ferr);
     }
    }
  }
}

// ---- 4. Projectron / Projectron++ ------------------------------------------------------

TEST_CASE("Projectron(++) steps equal dense least-squares projections and the tau formula") {
  for (PerceptronBudget m : {PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP}) {
    for (int c : {2, 3}) {
      const Stream s = make_stream(300, c, 21, 0.2);
      PerceptronParams p = params(m, 25);
      p.eta = 0.3;
      KernelPerceptron l(2, c, p);
      std::int64_t projected = 0, added = 0, margin_steps = 0;
      double aerr = 0.0, derr = 0.0;
      for (Index t = 0; t < s.X.rows(); ++t) {
        const std::int32_t y = s.y[static_cast<std::size_t>(t)];
        const Vector x = s.X.row(t).transpose();
        const KernelPerceptron before = l;
        l.learn_one(x.data(), y);
        const SupportVectors &b = before.support_vectors(), &a = l.support_vectors();
        const Index n = b.size();
        if (a.size() == n + 1) {
          ++added;
          continue;
        }
        if (l.counters().updates == before.counters().updates) continue;
        // A projection step: dense K beta = k, then the expected coefficients.
        Eigen::MatrixXd K(n, n);
        Vector kx(n);
        for (Index i = 0; i < n; ++i) {
          kx(i) = p.kernel.value(b.x(i), x.transpose());
          for (Index j = 0; j < n; ++j) K(i, j) = p.kernel.value(b.x(i), b.x(j));
        }
        const Vector beta = K.ldlt().solve(kx);
        const double s2 = std::max(p.kernel.value(x, x) - kx.dot(beta), 0.0);
        Vector f = b.A().topRows(n).transpose() * kx, u;
        const double margin = naive_direction(f, y, u);
        double tau = 1.0;
        if (margin > 0.0) {  // Projectron++ margin error
          const double L = 1.0 - margin, q = u.squaredNorm() * (p.kernel.value(x, x) - s2);
          tau = std::min({L / q, 1.0, 2.0 * (L - std::sqrt(s2) / p.eta) / q});
          ++margin_steps;
          CHECK(l.counters().maintenance == before.counters().maintenance);
        } else {
          ++projected;
          CHECK(l.counters().maintenance == before.counters().maintenance + 1);
          derr = std::max(derr, std::abs((l.counters().degradation - before.counters().degradation) -
                                         u.squaredNorm() * s2));
        }
        const RowMatrix expect = b.A().topRows(n) + tau * beta * u.transpose();
        aerr = std::max(aerr, (a.A().topRows(n) - expect).cwiseAbs().maxCoeff());
      }
      CHECK(projected > 10);
      CHECK(added > 10);
      if (m == PerceptronBudget::ProjectronPP) CHECK(margin_steps > 10);
      CHECK(aerr < 1e-9);
      CHECK(derr < 1e-9);
      if (!(aerr < 1e-9)) std::printf("  %s c=%d: coefficient err %g\n", perceptron_budget_name(m), c, aerr);
    }
  }
}

TEST_CASE("Projectron(++) equals a naive dense reference (fresh inverse each step)") {
  for (PerceptronBudget m : {PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP}) {
    for (int c : {2, 3}) {
      for (Index B : {Index(0), Index(15)}) {
        const Stream s = make_stream(250, c, 33, 0.2);
        PerceptronParams p = params(m, B);
        p.eta = 0.3;
        KernelPerceptron l(2, c, p);
        NaiveProjectron ref{p.kernel, B, l.n_outputs(), p.eta, m == PerceptronBudget::ProjectronPP, {}};
        double err = 0.0;
        bool ok = true;
        for (Index t = 0; t < s.X.rows(); ++t) {
          const std::int32_t y = s.y[static_cast<std::size_t>(t)];
          l.learn_one(s.X.row(t).data(), y);
          ref.step(s.X.row(t).transpose(), y);
          const double e = model_distance(l, ref.S);
          ok = ok && e >= 0.0;
          err = std::max(err, e);
        }
        CHECK(ok);
        CHECK(err < 1e-8);
        CHECK(ref.projections > 10 && ref.additions > 10);
        CHECK(l.counters().maintenance == ref.projections);
        CHECK(l.counters().updates == ref.projections + ref.additions + ref.margin_updates);
        if (m == PerceptronBudget::ProjectronPP) CHECK(ref.margin_updates > 10);
        if (B > 0) CHECK(l.support_vectors().size() == B);
        if (!ok || !(err < 1e-8))
          std::printf("  %s c=%d B=%ld: err %g (proj %ld add %ld margin %ld)\n", perceptron_budget_name(m), c, (long)B,
                      err, (long)ref.projections, (long)ref.additions, (long)ref.margin_updates);
      }
    }
  }
}

TEST_CASE("Projectron with eta = 0 and the linear kernel in 2-D keeps 2 SVs and equals the linear perceptron") {
  // Every point beyond two independent ones lies in their span: it is projected (s <= 0) or,
  // when rounding leaves s slightly positive, pushed and folded back as a dependent SV. Either
  // way f stays the kernel perceptron's f(x) = w.x with w = sum of u_t x_t over mistakes.
  for (PerceptronBudget m : {PerceptronBudget::Projectron, PerceptronBudget::ProjectronPP}) {
    for (int c : {2, 3}) {
      const Stream s = make_stream(300, c, 41, 0.2);
      PerceptronParams p = params(m, 0);
      p.kernel = Kernel(KernelType::Linear);
      p.eta = 0.0;
      KernelPerceptron l(2, c, p);
      const Index nc = l.n_outputs();
      Eigen::MatrixXd W = Eigen::MatrixXd::Zero(2, nc);
      double ferr = 0.0;
      std::int64_t mistakes = 0;
      bool ok = true;
      for (Index t = 0; t < s.X.rows(); ++t) {
        const std::int32_t y = s.y[static_cast<std::size_t>(t)];
        const Vector x = s.X.row(t).transpose();
        Vector f(nc), u;
        l.decision(x.data(), f.data());
        const Vector fw = W.transpose() * x;
        ferr = std::max(ferr, (f - fw).cwiseAbs().maxCoeff());
        if (naive_direction(fw, y, u) <= 0.0) W += x * u.transpose(), ++mistakes;
        l.learn_one(x.data(), y);
        ok = ok && l.support_vectors().size() <= 2;
      }
      CHECK(ok);
      CHECK(ferr < 1e-9);
      CHECK(mistakes > 20);
      CHECK(l.counters().maintenance >= mistakes - 2);
      if (!ok || !(ferr < 1e-9)) std::printf("  %s c=%d: f err %g\n", perceptron_budget_name(m), c, ferr);
    }
  }
}

// ---- 5. budget, determinism, persistence, validation -----------------------------------

TEST_CASE("Random removes the SV the seeded generator picks; Stop stops at B") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(400, c, 4, 0.3);
    const Index B = 7;
    KernelPerceptron l(2, c, params(PerceptronBudget::Random, B));
    std::mt19937_64 rng(7);
    std::int64_t removals = 0, wrong = 0;
    double deg = 0.0;
    for (Index t = 0; t < s.X.rows(); ++t) {
      const KernelPerceptron before = l;
      l.learn_one(s.X.row(t).data(), s.y[static_cast<std::size_t>(t)]);
      if (l.counters().maintenance == before.counters().maintenance) continue;
      ++removals;
      const Index i = detail::uniform_index(rng, B);
      const SupportVectors& b = before.support_vectors();
      deg += b.alpha(i).squaredNorm();  // k_ii = 1 (RBF)
      bool still = false;
      for (Index j = 0; j < l.support_vectors().size(); ++j) still = still || l.support_vectors().id(j) == b.id(i);
      wrong += still || l.support_vectors().id(B - 1) != t + 1 || l.support_vectors().size() != B;
    }
    CHECK(removals > 50);
    CHECK(wrong == 0);
    CHECK_NEAR(l.counters().degradation, deg, 1e-9);

    KernelPerceptron stop(2, c, params(PerceptronBudget::Stop, B));
    KernelPerceptron free(2, c, params(PerceptronBudget::Stop, 0));
    bool ok = true;
    for (Index t = 0; t < s.X.rows(); ++t) {
      stop.learn_one(s.X.row(t).data(), s.y[static_cast<std::size_t>(t)]);
      free.learn_one(s.X.row(t).data(), s.y[static_cast<std::size_t>(t)]);
      // Identical to the kernel perceptron until the store fills, frozen afterwards.
      if (free.support_vectors().size() <= B)
        ok = ok && stop.support_vectors().size() == free.support_vectors().size() &&
             (stop.coefficients().array() == free.coefficients().array()).all();
    }
    CHECK(ok);
    CHECK(stop.support_vectors().size() == B);
    CHECK(stop.counters().updates == B);
    CHECK(stop.counters().maintenance == 0);
  }
}

TEST_CASE("budget never exceeded: every rule, binary and multi-class") {
  for (int c : {2, 3, 5}) {
    const Stream s = make_stream(300, c, 100 + static_cast<std::uint64_t>(c), 0.3, 3.0);
    for (PerceptronBudget m : all_rules) {
      for (Index B : {Index(1), Index(4), Index(20)}) {
        PerceptronParams p = params(m, B);
        p.beta = 0.3;
        p.eta = 0.2;
        KernelPerceptron l(2, c, p);
        bool ok = true;
        for (Index t = 0; t < s.X.rows(); ++t) {
          l.learn_one(s.X.row(t).data(), s.y[static_cast<std::size_t>(t)]);
          ok = ok && l.support_vectors().size() <= B &&
               static_cast<Index>(l.sv_labels().size()) == l.support_vectors().size() &&
               l.coefficients().allFinite();
        }
        CHECK(ok);
        CHECK(l.counters().examples == s.X.rows());
        if (!ok) std::printf("  %s c=%d B=%ld\n", perceptron_budget_name(m), c, (long)B);
      }
    }
  }
}

TEST_CASE("same seed gives an identical model; save -> load -> continue is bit for bit") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(400, c, 77, 0.3);
    for (PerceptronBudget m : all_rules) {
      for (Index B : {Index(0), Index(12)}) {
        PerceptronParams p = params(m, B);
        p.beta = 0.4;
        p.eta = 0.25;
        KernelPerceptron a(2, c, p), b(2, c, p);
        a.partial_fit(s.X, s.y.data());
        b.partial_fit(s.X, s.y.data());
        CHECK(same_model(a, b));

        const Index half = 170;
        KernelPerceptron full(2, c, p), first(2, c, p);
        full.partial_fit(s.X, s.y.data());
        first.partial_fit(s.X.topRows(half), s.y.data());
        first.metadata = "labels";
        FieldMap fm;
        first.save(fm);
        KernelPerceptron resumed;
        resumed.load(FieldMap::from_bytes(fm.to_bytes()));
        CHECK(resumed.metadata == "labels");
        CHECK(same_model(first, resumed));
        resumed.partial_fit(s.X.bottomRows(s.X.rows() - half), s.y.data() + half);
        const bool same = same_model(full, resumed);
        if (!same) std::printf("  resume differs: %s c=%d B=%ld\n", perceptron_budget_name(m), c, (long)B);
        CHECK(same);
        RowMatrix d1(s.X.rows(), full.n_outputs()), d2(s.X.rows(), full.n_outputs());
        full.decision_function(s.X, d1);
        resumed.decision_function(s.X, d2);
        CHECK((d1.array() == d2.array()).all());
        if (B > 0 && m != PerceptronBudget::Stop) CHECK(full.counters().maintenance > 0);
      }
    }
  }
}

TEST_CASE("corrupt model files raise") {
  const Stream s = make_stream(200, 3, 8, 0.3);
  for (PerceptronBudget m : all_rules) {
    PerceptronParams p = params(m, 6);
    KernelPerceptron l(2, 3, p);
    l.partial_fit(s.X, s.y.data());
    FieldMap good;
    l.save(good);
    const Index n = l.support_vectors().size();
    CHECK(n > 0);
    auto bad = [&](const std::function<void(FieldMap&)>& edit) {
      FieldMap fm = FieldMap::from_bytes(good.to_bytes());
      edit(fm);
      KernelPerceptron r;
      bool threw = false;
      try {
        r.load(fm);
      } catch (const std::runtime_error&) {
        threw = true;
      }
      return threw;
    };
    CHECK(!bad([](FieldMap&) {}));
    CHECK(bad([](FieldMap& fm) { fm.set_bytes("learner", "bsgd"); }));
    CHECK(bad([](FieldMap& fm) { fm.set_int("maintenance", 6); }));
    CHECK(bad([](FieldMap& fm) { fm.set_int("budget", -1); }));
    CHECK(bad([n](FieldMap& fm) { fm.set_int("budget", n - 1 > 0 ? n - 1 : -1); }));
    CHECK(bad([](FieldMap& fm) { fm.set("eta", -0.5); }));
    CHECK(bad([](FieldMap& fm) { fm.set("beta", std::nan("")); }));
    CHECK(bad([](FieldMap& fm) { fm.set_bytes("rng", "not a generator"); }));
    CHECK(bad([n](FieldMap& fm) { fm.set_ints("sv.label", std::vector<std::int64_t>(static_cast<std::size_t>(n), 3)); }));
    CHECK(bad([n](FieldMap& fm) { fm.set_ints("sv.label", std::vector<std::int64_t>(static_cast<std::size_t>(n + 1), 0)); }));
    CHECK(bad([](FieldMap& fm) { fm.set("forgetron.Q", std::numeric_limits<double>::infinity()); }));
    CHECK(bad([](FieldMap& fm) { fm.set_int("forgetron.M", -2); }));
    CHECK(bad([n](FieldMap& fm) {
      RowMatrix A = fm.get_matrix("sv.alpha", n, 3);
      A(0, 0) = std::nan("");
      fm.set_matrix("sv.alpha", A);
    }));
    CHECK(bad([n](FieldMap& fm) { fm.set_matrix("sv.x", RowMatrix::Zero(n, 3)); }));
    if (m == PerceptronBudget::MaxMargin) {
      CHECK(bad([n](FieldMap& fm) { fm.set_matrix("maxmargin.F", RowMatrix::Zero(n + 1, 3)); }));
      CHECK(bad([n](FieldMap& fm) {
        RowMatrix F = RowMatrix::Zero(n, 3);
        F(0, 1) = std::numeric_limits<double>::infinity();
        fm.set_matrix("maxmargin.F", F);
      }));
    }
    if (m == PerceptronBudget::Projectron || m == PerceptronBudget::ProjectronPP) {
      CHECK(bad([](FieldMap& fm) { fm.set_int("projection.active", 0); }));
      CHECK(bad([n](FieldMap& fm) { fm.set_matrix("projection.K", RowMatrix::Zero(n + 1, n + 1)); }));
      CHECK(bad([n](FieldMap& fm) {
        RowMatrix K = fm.get_matrix("projection.K", n, n);
        if (n > 1) K(0, 1) += 1.0; else K(0, 0) = std::nan("");
        fm.set_matrix("projection.K", K);
      }));
    }
    // Truncated bytes and a missing field.
    const std::string bytes = good.to_bytes();
    CHECK_THROWS(FieldMap::from_bytes(bytes.substr(0, bytes.size() / 2)));
  }
}

TEST_CASE("invalid parameters raise") {
  auto bad = [](const std::function<void(PerceptronParams&)>& edit, Index d = 2, Index c = 2) {
    PerceptronParams p;
    edit(p);
    bool threw = false;
    try {
      KernelPerceptron l(d, c, p);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    return threw;
  };
  CHECK(!bad([](PerceptronParams&) {}));
  CHECK(bad([](PerceptronParams& p) { p.budget = -1; }));
  CHECK(bad([](PerceptronParams& p) { p.maintenance = static_cast<PerceptronBudget>(6); }));
  CHECK(bad([](PerceptronParams& p) { p.maintenance = static_cast<PerceptronBudget>(-1); }));
  CHECK(bad([](PerceptronParams& p) { p.eta = -1e-3; }));
  CHECK(bad([](PerceptronParams& p) { p.eta = std::numeric_limits<double>::infinity(); }));
  CHECK(bad([](PerceptronParams& p) { p.beta = -0.1; }));
  CHECK(bad([](PerceptronParams& p) { p.beta = std::nan(""); }));
  CHECK(bad([](PerceptronParams&) {}, 0, 2));
  CHECK(bad([](PerceptronParams&) {}, 2, 1));
  CHECK_THROWS(Kernel(KernelType::RBF, -1.0));
  // The default-constructed learner is a valid 1-feature binary perceptron.
  KernelPerceptron d;
  const double x1[1] = {0.5};
  d.learn_one(x1, 1);
  d.learn_one(x1, 0);
  // f = 0 is a mistake (SV +1), then f = 1 on the class-0 copy (SV -1): f(x1) = 0 again.
  double f1 = 1.0;
  d.decision(x1, &f1);
  CHECK(d.n_features() == 1 && d.counters().examples == 2 && d.support_vectors().size() == 2 && f1 == 0.0);
  // Chunk validation of the base: bad labels, wrong width, NaN.
  KernelPerceptron l(2, 3, PerceptronParams{});
  RowMatrix X = RowMatrix::Zero(2, 2);
  std::vector<std::int32_t> y{0, 3};
  CHECK_THROWS(l.partial_fit(X, y.data()));
  RowMatrix W = RowMatrix::Zero(2, 3);
  std::vector<std::int32_t> y2{0, 1};
  CHECK_THROWS(l.partial_fit(W, y2.data()));
  X(1, 1) = std::nan("");
  CHECK_THROWS(l.partial_fit(X, y2.data()));
}

TEST_MAIN()
