// Passive-Aggressive family (PA, PA-I, PA-II, PA^R) and the budgeted BPA-S / BPA-NN / BPA-P /
// PA+Rand of Wang & Vucetic (AISTATS 2010), checked against: a naive dense reference PA,
// the closed form of eq. (12), a brute-force solve of problem (2)+(6) for every candidate r,
// a brute-force nearest-neighbour search, the ramp-loss label rule, and save/load round trips.
#include <budgetkernel/budgetkernel.hpp>
#include <budgetkernel/learners/passive_aggressive.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <random>

#include "test_util.hpp"

using namespace budgetkernel;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Stream {
  RowMatrix X;
  std::vector<std::int32_t> y;
};

// Gaussian points in d dimensions; the label is a noisy nonlinear function (cells of
// sin(x0 * 1.7) + x1^2 etc.), so PA keeps updating.
Stream make_stream(Index n, Index d, int n_classes, std::uint64_t seed, double noise = 0.1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Stream s{RowMatrix(n, d), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) s.X(i, j) = g(rng);
    const double v = std::sin(1.7 * s.X(i, 0)) + (d > 1 ? s.X(i, 1) * s.X(i, 1) - 1.0 : 0.0);
    int label = n_classes == 2 ? (v > 0.0 ? 1 : 0)
                               : static_cast<int>(std::floor(3.0 * (v + 3.0))) % n_classes;
    if (u(rng) < noise) label = static_cast<int>(u(rng) * n_classes) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label;
  }
  return s;
}

PAParams params(Index budget, BPAVariant v, PALoss loss = PALoss::Hinge, std::int32_t pa_type = 1) {
  PAParams p;
  p.kernel = Kernel(KernelType::RBF, 0.7);
  p.C = 0.8;
  p.pa_type = pa_type;
  p.loss = loss;
  p.budget = budget;
  p.variant = v;
  p.seed = 5;
  return p;
}

const BPAVariant all_variants[] = {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project,
                                   BPAVariant::Random};

double max_abs(const RowMatrix& a) { return a.size() ? a.cwiseAbs().maxCoeff() : 0.0; }

bool same_model(const PassiveAggressive& a, const PassiveAggressive& b) {
  const auto& sa = a.support_vectors();
  const auto& sb = b.support_vectors();
  if (sa.size() != sb.size()) return false;
  const Index n = sa.size();
  if (n == 0) return true;
  if (!(sa.X().topRows(n) == sb.X().topRows(n))) return false;
  if (!(sa.A().topRows(n) == sb.A().topRows(n))) return false;
  for (Index i = 0; i < n; ++i)
    if (sa.id(i) != sb.id(i)) return false;
  return true;
}

bool same_counters(const Counters& a, const Counters& b) {
  return a.examples == b.examples && a.updates == b.updates && a.maintenance == b.maintenance &&
         a.degradation == b.degradation && a.mistakes == b.mistakes && a.labels == b.labels;
}

// ---- naive reference PA: coefficients in a plain list, f recomputed densely per example ----
struct NaivePA {
  Kernel k;
  double C;
  int pa_type;
  bool ramp;
  Index c_out;
  std::vector<Vector> xs;
  std::vector<Vector> coef;

  Vector f(const Vector& x) const {
    Vector out = Vector::Zero(c_out);
    for (std::size_t j = 0; j < xs.size(); ++j) out += k.value(xs[j], x) * coef[j];
    return out;
  }
  void learn(const Vector& x, int y) {
    const Vector fx = f(x);
    Vector u = Vector::Zero(c_out);
    double m;
    if (c_out == 1) {
      u(0) = y == 1 ? 1.0 : -1.0;
      m = u(0) * fx(0);
    } else {
      int r = -1;
      for (int i = 0; i < c_out; ++i)
        if (i != y && (r < 0 || fx(i) > fx(r))) r = i;
      u(y) = 1.0;
      u(r) = -1.0;
      m = fx(y) - fx(r);
    }
    if (ramp) {
      // the label matters only inside the margin: binary |f| <= 1, multi-class top-two gap <= 1
      if (c_out == 1 && std::abs(fx(0)) > 1.0) return;
      if (c_out > 1) {
        Vector s = fx;
        std::sort(s.data(), s.data() + s.size());
        if (s(c_out - 1) - s(c_out - 2) > 1.0) return;
      }
      if (m < -1.0) return;
    }
    const double L = 1.0 - m;
    if (L <= 0.0) return;
    const double q = u.squaredNorm() * k.value(x, x);
    const double tau = pa_type == 0 ? L / q : pa_type == 1 ? std::min(C, L / q) : L / (q + 0.5 / C);
    xs.push_back(x);
    coef.push_back(tau * u);
  }
};

// ---- brute force of problem (2)+(6) for every candidate r ----
struct Brute {
  Vector Q;                   // objective per candidate (n + 1)
  std::vector<RowMatrix> W;   // w^r as coefficients over the n old SVs and x_t (row n)
};

// Nearest other point (Euclidean) among rows 0..n-1 of Z, excluding `self`.
Index brute_nn(const RowMatrix& Z, Index n, const Vector& x, Index self) {
  Index best = -1;
  double bd = kInf;
  for (Index j = 0; j < n; ++j) {
    if (j == self) continue;
    const double d = (Z.row(j).transpose() - x).squaredNorm();
    if (d < bd) bd = d, best = j;
  }
  return best;
}

Brute brute_force(const SupportVectors& sv, const Kernel& k, const Vector& x, int y, const PAParams& p) {
  const Index n = sv.size(), c = sv.n_coef(), d = sv.dim();
  RowMatrix Z(n + 1, d);
  Z.topRows(n) = sv.X().topRows(n);
  Z.row(n) = x.transpose();
  RowMatrix A0 = RowMatrix::Zero(n + 1, c);
  A0.topRows(n) = sv.A().topRows(n);
  Eigen::MatrixXd Kf(n + 1, n + 1);
  for (Index i = 0; i <= n; ++i)
    for (Index j = 0; j <= n; ++j) Kf(i, j) = k.value(Z.row(i), Z.row(j));
  const Vector ft = A0.transpose() * Kf.col(n);
  Vector u = Vector::Zero(c);
  if (c == 1) {
    u(0) = y == 1 ? 1.0 : -1.0;
  } else {
    int r = -1;
    for (int i = 0; i < c; ++i)
      if (i != y && (r < 0 || ft(i) > ft(r))) r = i;
    u(y) = 1.0;
    u(r) = -1.0;
  }
  const double u2 = u.squaredNorm();
  Brute b;
  b.Q.resize(n + 1);
  for (Index r = 0; r <= n; ++r) {
    std::vector<Index> S;
    switch (p.variant) {
      case BPAVariant::Simple:
        if (r < n) S.push_back(n);
        break;
      case BPAVariant::NearestNeighbor:
        if (r < n) {
          S.push_back(n);
          const Index m = brute_nn(Z, n, Z.row(r).transpose(), r);
          if (m >= 0) S.push_back(m);
        } else {
          S.push_back(brute_nn(Z, n, x, -1));
        }
        break;
      default:
        for (Index j = 0; j < n; ++j)
          if (j != r) S.push_back(j);
        if (r < n) S.push_back(n);
        break;
    }
    const Index s = static_cast<Index>(S.size());
    const Vector ar = A0.row(r).transpose();  // 0 for r = t
    Vector pr = Vector::Zero(s), pt = Vector::Zero(s);
    double q = 0.0, shift = 0.0;  // shift: change of u.f(x_t) from removing r and projecting it
    if (s > 0) {
      Eigen::MatrixXd KS(s, s);
      Vector kr(s), kt(s);
      for (Index i = 0; i < s; ++i) {
        for (Index j = 0; j < s; ++j) KS(i, j) = Kf(S[i], S[j]);
        kr(i) = Kf(S[i], r);
        kt(i) = Kf(S[i], n);
      }
      const auto lu = KS.fullPivLu();
      pr = lu.solve(kr);
      pt = lu.solve(kt);
      q = u2 * kt.dot(pt);
      shift = u.dot(ar) * (pr.dot(kt) - Kf(r, n));
    } else {
      shift = -u.dot(ar) * Kf(r, n);
    }
    // eq. (9) generalised to pa_type and to the vector u
    const double L0 = std::max(0.0, 1.0 - (u.dot(ft) + shift));
    double tau;
    if (p.pa_type == 0)
      tau = q > 0.0 ? L0 / q : kInf;
    else if (!(q > 0.0))
      tau = 0.0;
    else
      tau = p.pa_type == 1 ? std::min(p.C, L0 / q) : L0 / (q + 0.5 / p.C);
    if (!std::isfinite(tau)) {
      b.Q(r) = kInf;
      b.W.push_back(A0);
      continue;
    }
    RowMatrix W = A0;
    W.row(r) -= ar.transpose();
    for (Index i = 0; i < s; ++i) W.row(S[i]) += (pr(i) * ar + tau * pt(i) * u).transpose();
    const RowMatrix D = W - A0;
    const double dw2 = (D.transpose() * Kf * D).trace();
    const Vector fn = W.transpose() * Kf.col(n);
    const double xi = std::max(0.0, 1.0 - u.dot(fn));
    double pen = 0.0;
    if (p.pa_type == 1) pen = p.C * xi;
    if (p.pa_type == 2) pen = p.C * xi * xi;
    b.Q(r) = 0.5 * dw2 + pen;
    b.W.push_back(W);
  }
  return b;
}

bool rel_close(double a, double b, double tol) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("PA, PA-I, PA-II (hinge and ramp) equal a naive dense reference") {
  for (int c : {2, 4}) {
    const Stream s = make_stream(300, 3, c, 7);
    for (int pa : {0, 1, 2}) {
      for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
        PAParams p = params(0, BPAVariant::Simple, loss, pa);
        PassiveAggressive l(3, c, p);
        NaivePA ref{p.kernel, p.C, pa, loss == PALoss::Ramp, c == 2 ? 1 : c, {}, {}};
        double worst = 0.0;
        for (Index i = 0; i < s.X.rows(); ++i) {
          l.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
          ref.learn(s.X.row(i).transpose(), s.y[static_cast<std::size_t>(i)]);
        }
        const Index n = l.support_vectors().size();
        CHECK(n == static_cast<Index>(ref.xs.size()));
        CHECK(n > 20);
        if (n != static_cast<Index>(ref.xs.size())) continue;
        const RowMatrix A = l.coefficients();
        for (Index j = 0; j < n; ++j) {
          worst = std::max(worst, (A.row(j).transpose() - ref.coef[static_cast<std::size_t>(j)]).cwiseAbs().maxCoeff());
          worst = std::max(worst, (l.support_vectors().x(j).transpose() - ref.xs[static_cast<std::size_t>(j)]).cwiseAbs().maxCoeff());
        }
        CHECK(worst <= 1e-10);
        CHECK(l.counters().updates == n);
      }
    }
  }
}

TEST_CASE("budget >= stream length: every variant equals unbudgeted PA exactly") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(400, 2, c, 3);
    for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
      for (int pa : {1, 2}) {
        PassiveAggressive free(2, c, params(0, BPAVariant::Simple, loss, pa));
        free.partial_fit(s.X, s.y.data());
        CHECK(free.support_vectors().size() > 30);
        for (BPAVariant v : all_variants) {
          for (Index B : {Index{0}, Index{400}, Index{1000}}) {
            PassiveAggressive big(2, c, params(B, v, loss, pa));
            big.partial_fit(s.X, s.y.data());
            CHECK(big.counters().maintenance == 0);
            CHECK(same_model(big, free));
            CHECK(same_counters(big.counters(), free.counters()));
            CHECK(!big.projection().active());
          }
        }
      }
    }
  }
}

TEST_CASE("BPA-S applies eq. (12) in closed form") {
  const Stream s = make_stream(600, 2, 2, 21);
  PAParams p = params(6, BPAVariant::Simple);
  PassiveAggressive l(2, 2, p);
  int checked = 0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    const auto& sv = l.support_vectors();
    const Index n = sv.size();
    const RowMatrix X0 = sv.X().topRows(n), A0 = sv.A().topRows(n);
    const std::vector<std::int64_t> ids0(sv.ids().begin(), sv.ids().begin() + n);
    const Vector x = s.X.row(i).transpose();
    const int y = s.y[static_cast<std::size_t>(i)];
    double f = 0.0;
    l.decision(x.data(), &f);
    const std::int64_t maint = l.counters().maintenance;
    l.learn_one(x.data(), y);
    if (l.counters().maintenance == maint || l.last_removed() == n) continue;
    const Index r = l.last_removed();
    const double sy = y == 1 ? 1.0 : -1.0;
    const double ktt = p.kernel.value(x, x), krt = p.kernel.value(X0.row(r).transpose(), x);
    const double tau = std::min(p.C, (1.0 - sy * f) / ktt);
    const double beta_t = A0(r, 0) * krt / ktt + tau * sy;  // eq. (12)
    std::map<std::int64_t, double> after;
    for (Index j = 0; j < sv.size(); ++j) after[sv.id(j)] = sv.alpha(j)(0);
    CHECK(sv.size() == n);
    CHECK(after.count(ids0[static_cast<std::size_t>(r)]) == 0);
    CHECK_NEAR(after[l.counters().examples], beta_t, 1e-12);
    for (Index j = 0; j < n; ++j)
      if (j != r) CHECK(after[ids0[static_cast<std::size_t>(j)]] == A0(j, 0));
    ++checked;
  }
  CHECK(checked > 50);
}

TEST_CASE("BPA-S/NN/P: objectives, choice and update equal a brute-force solve of (2)+(6)") {
  int total = 0;
  for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project}) {
    int chose_t = 0, chose_old = 0;  // both branches of the update must be exercised
    for (int c : {2, 3}) {
      for (int kern = 0; kern < 2; ++kern) {
        for (int pa : {0, 1, 2}) {
          const Index d = 4;
          const Index B = 6 + (total % 7);
          PAParams p = params(B, v, PALoss::Hinge, pa);
          p.kernel = kern == 0 ? Kernel(KernelType::RBF, 0.4) : Kernel(KernelType::Polynomial, 0.3, 3, 1.0);
          p.C = 0.6;
          PassiveAggressive l(d, c, p);
          const Stream s = make_stream(300, d, c, 100 + static_cast<std::uint64_t>(total), 0.2);
          int checked = 0;
          for (Index i = 0; i < s.X.rows() && checked < 25; ++i) {
            const auto& sv = l.support_vectors();
            const Index n = sv.size();
            const Vector x = s.X.row(i).transpose();
            const int y = s.y[static_cast<std::size_t>(i)];
            const bool full = n == B;
            Brute b;
            std::vector<std::int64_t> ids0(sv.ids().begin(), sv.ids().begin() + n);
            if (full) b = brute_force(sv, p.kernel, x, y, p);
            const std::int64_t maint = l.counters().maintenance;
            l.learn_one(x.data(), y);
            if (l.counters().maintenance == maint) continue;
            CHECK(full);
            if (!full) continue;
            ++checked;
            const Vector& Q = l.last_objectives();
            CHECK(Q.size() == n + 1);
            bool ok = Q.size() == n + 1;
            for (Index r = 0; ok && r <= n; ++r)
              if (!rel_close(Q(r), b.Q(r), 1e-9)) {
                std::printf("  %s c=%d kern=%d pa=%d r=%ld: Q %.17g vs brute %.17g\n", bpa_variant_name(v), c, kern,
                            pa, static_cast<long>(r), Q(r), b.Q(r));
                ok = false;
              }
            CHECK(ok);
            // argmin: the learner's choice is a minimiser, and the brute-force argmin when clear
            Index bmin = 0;
            for (Index r = 1; r <= n; ++r)
              if (b.Q(r) < b.Q(bmin)) bmin = r;
            const Index chosen = l.last_removed();
            CHECK(chosen >= 0 && chosen <= n);
            ++(chosen == n ? chose_t : chose_old);
            if (chosen < 0 || chosen > n) continue;
            CHECK(b.Q(chosen) <= b.Q(bmin) + 1e-9 * std::max(1.0, std::abs(b.Q(bmin))));
            double second = kInf;
            for (Index r = 0; r <= n; ++r)
              if (r != bmin) second = std::min(second, b.Q(r));
            if (second - b.Q(bmin) > 1e-7 * std::max(1.0, std::abs(b.Q(bmin)))) CHECK(chosen == bmin);
            // the new coefficients = w^{r*}, matched by SV id (x_t has id = examples)
            const RowMatrix& W = b.W[static_cast<std::size_t>(chosen)];
            std::map<std::int64_t, Index> row_of;
            for (Index j = 0; j < n; ++j) row_of[ids0[static_cast<std::size_t>(j)]] = j;
            row_of[l.counters().examples] = n;
            double err = 0.0;
            Index covered = 0;
            for (Index j = 0; j < sv.size(); ++j) {
              const auto it = row_of.find(sv.id(j));
              CHECK(it != row_of.end());
              if (it == row_of.end()) continue;
              err = std::max(err, (sv.alpha(j) - W.row(it->second)).cwiseAbs().maxCoeff());
              ++covered;
            }
            // rows absent from the store must be zero in w^{r*}
            double missing = 0.0;
            for (const auto& [id, row] : row_of) {
              bool present = false;
              for (Index j = 0; j < sv.size(); ++j) present = present || sv.id(j) == id;
              if (!present) missing = std::max(missing, W.row(row).cwiseAbs().maxCoeff());
            }
            CHECK(err <= 1e-9 * std::max(1.0, max_abs(W)));
            CHECK(missing <= 1e-9 * std::max(1.0, max_abs(W)));
            CHECK(sv.size() <= B);
          }
          CHECK(checked >= 10);
          ++total;
        }
      }
    }
    std::printf("  %s: r* = t %d times, r* = old SV %d times\n", bpa_variant_name(v), chose_t, chose_old);
    CHECK(chose_t >= 10 && chose_old >= 100);
  }
}

TEST_CASE("BPA-NN bookkeeping names the true nearest neighbour after every step") {
  for (int c : {2, 3}) {
    for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
      const Stream s = make_stream(2500, 3, c, 40 + static_cast<std::uint64_t>(c), 0.25);
      PassiveAggressive l(3, c, params(25, BPAVariant::NearestNeighbor, loss));
      bool ok = true;
      for (Index i = 0; i < s.X.rows() && ok; ++i) {
        l.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
        const auto& sv = l.support_vectors();
        const auto& nn = l.nearest_neighbors();
        const Index n = sv.size();
        if (nn.size() != n) {
          ok = false;
          break;
        }
        for (Index a = 0; a < n && ok; ++a) {
          double best = kInf;
          for (Index b = 0; b < n; ++b)
            if (b != a) best = std::min(best, (sv.x(a) - sv.x(b)).squaredNorm());
          const Index m = nn.nn(a);
          if (n == 1) {
            ok = m == NearestNeighbors::none;
            continue;
          }
          if (m < 0 || m >= n || m == a) {
            ok = false;
            break;
          }
          const double dm = (sv.x(a) - sv.x(m)).squaredNorm();
          const double tol = 1e-9 * (1.0 + sv.sqnorm()(a) + sv.sqnorm()(m));
          ok = dm <= best + tol && std::abs(nn.distance2(a) - dm) <= tol &&
               std::abs(nn.kernel_value(a) - l.params().kernel.value(sv.x(a), sv.x(m))) <= 1e-12;
          if (!ok)
            std::printf("  step %ld SV %ld: nn %ld at %.17g, true min %.17g\n", static_cast<long>(i),
                        static_cast<long>(a), static_cast<long>(m), dm, best);
        }
      }
      CHECK(ok);
      CHECK(l.counters().maintenance > 100);
      // rebuilding from scratch finds the same distances
      NearestNeighbors fresh;
      fresh.rebuild(l.support_vectors(), l.params().kernel);
      double diff = 0.0;
      for (Index a = 0; a < fresh.size(); ++a)
        diff = std::max(diff, std::abs(fresh.distance2(a) - l.nearest_neighbors().distance2(a)));
      CHECK(fresh.size() == l.support_vectors().size());
      CHECK(diff <= 1e-9);
    }
  }
}

TEST_CASE("ramp loss: labels asked exactly inside the margin; active_run equals step()") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(1500, 2, c, 60 + static_cast<std::uint64_t>(c), 0.2);
    for (BPAVariant v : all_variants) {
      for (Index B : {Index{0}, Index{30}}) {
        PAParams p = params(B, v, PALoss::Ramp);
        PassiveAggressive l(2, c, p);
        Index needed = 0, skipped = 0;
        bool ok = true;
        Vector f(c == 2 ? 1 : c);
        for (Index i = 0; i < s.X.rows(); ++i) {
          l.decision(s.X.row(i).data(), f.data());
          bool need;
          if (c == 2) {
            need = std::abs(f(0)) <= 1.0;
          } else {
            Vector t = f;
            std::sort(t.data(), t.data() + t.size());
            need = t(c - 1) - t(c - 2) <= 1.0;
          }
          const RowMatrix A0 = l.coefficients();
          const auto before = l.counters();
          l.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
          const auto after = l.counters();
          ok = ok && (after.labels - before.labels == (need ? 1 : 0));
          if (!need) {
            ++skipped;
            ok = ok && after.updates == before.updates && l.coefficients() == A0;
          } else {
            ++needed;
          }
        }
        CHECK(ok);
        CHECK(l.counters().labels == needed);
        CHECK(skipped > 100 && needed > 100);

        // active learning: labels supplied on demand only
        PassiveAggressive a(2, c, p);
        std::vector<std::int32_t> pred(static_cast<std::size_t>(s.X.rows()), -1);
        Index i = 0, asked = 0;
        while (true) {
          i = a.active_run(s.X, i, pred.data());
          if (i >= s.X.rows()) break;
          a.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
          ++asked;
          ++i;
        }
        CHECK(same_model(a, l));
        CHECK(asked == needed);
        CHECK(a.counters().labels == l.counters().labels);
        CHECK(a.counters().examples == l.counters().examples);
        CHECK(a.counters().updates == l.counters().updates);
        CHECK(a.counters().maintenance == l.counters().maintenance);
      }
    }
  }
  // hinge learners need every label
  PassiveAggressive h(2, 2, params(0, BPAVariant::Simple));
  const Stream s = make_stream(50, 2, 2, 1);
  std::int32_t pr = -1;
  CHECK(h.observe(s.X.row(0).data(), &pr));
  CHECK(h.active_run(s.X, 3, nullptr) == 3);
  h.partial_fit(s.X, s.y.data());
  CHECK(h.counters().labels == 50);
  CHECK_THROWS(h.active_run(s.X, 51, nullptr));
  RowMatrix bad = s.X;
  bad(2, 1) = std::nan("");
  PassiveAggressive rl(2, 2, params(0, BPAVariant::Simple, PALoss::Ramp));
  CHECK(rl.active_run(bad, 0, nullptr) == 0);  // empty model: f = 0, every label is needed
  CHECK_THROWS(rl.active_run(bad, 2, nullptr));
}

TEST_CASE("budget never exceeded; same seed, same model; Random depends on the seed") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(1200, 3, c, 80, 0.3);
    for (BPAVariant v : all_variants) {
      for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
        for (Index B : {Index{1}, Index{2}, Index{17}}) {
          PassiveAggressive a(3, c, params(B, v, loss)), b(3, c, params(B, v, loss));
          Index worst = 0;
          for (Index i = 0; i < s.X.rows(); ++i) {
            a.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
            worst = std::max(worst, a.support_vectors().size());
          }
          b.partial_fit(s.X, s.y.data());
          CHECK(worst <= B);
          CHECK(a.support_vectors().size() == B);
          CHECK(a.counters().maintenance > 0);
          CHECK(same_model(a, b));
          CHECK(same_counters(a.counters(), b.counters()));
          CHECK(a.coefficients().allFinite());
        }
      }
    }
    PAParams p = params(10, BPAVariant::Random);
    PassiveAggressive r1(3, c, p);
    p.seed = 6;
    PassiveAggressive r2(3, c, p);
    r1.partial_fit(s.X, s.y.data());
    r2.partial_fit(s.X, s.y.data());
    CHECK(!same_model(r1, r2));
  }
}

TEST_CASE("BPA-P with repeated points: dependent SVs are folded and x_t in the span takes r = t") {
  // 8 distinct points, repeated: the store fills with duplicates (PA adds them as new SVs), so
  // the projection folds them on activation, marks pushes pending, and sees s = 0 for x_t.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  RowMatrix P(8, 2);
  for (Index i = 0; i < 8; ++i) P.row(i) << g(rng), g(rng);
  Stream s{RowMatrix(1500, 2), std::vector<std::int32_t>(1500)};
  for (Index i = 0; i < 1500; ++i) {
    const Index j = static_cast<Index>(rng() % 8);
    s.X.row(i) = P.row(j);
    s.y[static_cast<std::size_t>(i)] = (j % 2 == 0) != (rng() % 5 == 0) ? 1 : 0;
  }
  for (Index B : {Index{5}, Index{12}}) {
    PAParams p = params(B, BPAVariant::Project);
    PassiveAggressive l(2, 2, p);
    int span_steps = 0, dup_steps = 0;
    double worst = 0.0;
    for (Index i = 0; i < s.X.rows(); ++i) {
      Vector before(8), after(8);
      for (Index j = 0; j < 8; ++j) l.decision(P.row(j).data(), &before(j));
      const Vector x = s.X.row(i).transpose();
      const int y = s.y[static_cast<std::size_t>(i)];
      bool in_store = false;
      for (Index j = 0; j < l.support_vectors().size(); ++j)
        in_store = in_store || l.support_vectors().x(j).transpose() == x;
      double f = 0.0;
      l.decision(x.data(), &f);
      const std::int64_t maint = l.counters().maintenance;
      l.learn_one(x.data(), y);
      CHECK(l.support_vectors().size() <= B);
      if (l.counters().maintenance == maint || maint == 0 || !in_store) continue;
      // x_t is a stored point: whether as the r = t candidate (budgeted) or as a pending fold
      // (under the budget), projecting its step onto the SVs is the PA step itself.
      ++dup_steps;
      if (l.last_objectives().size() > 0 && std::isinf(l.last_objectives()(0))) {
        ++span_steps;
        CHECK(l.last_removed() == B);
      }
      const double sy = y == 1 ? 1.0 : -1.0;
      const double tau = std::min(p.C, (1.0 - sy * f) / p.kernel.value(x, x));
      for (Index j = 0; j < 8; ++j) l.decision(P.row(j).data(), &after(j));
      for (Index j = 0; j < 8; ++j)
        worst = std::max(worst, std::abs(after(j) - before(j) - tau * sy * p.kernel.value(x, P.row(j).transpose())));
    }
    CHECK(dup_steps > 50);
    if (B == 5) CHECK(span_steps > 50);
    if (B == 12) CHECK(l.support_vectors().size() <= 8);  // duplicates are folded
    CHECK(worst <= 1e-6);
    CHECK(l.coefficients().allFinite());
    CHECK(std::isfinite(l.counters().degradation));
    // resuming through these paths stays bit for bit
    PassiveAggressive full(2, 2, p), first(2, 2, p);
    full.partial_fit(s.X, s.y.data());
    first.partial_fit(s.X.topRows(700), s.y.data());
    FieldMap fm;
    first.save(fm);
    PassiveAggressive resumed;
    resumed.load(FieldMap::from_bytes(fm.to_bytes()));
    resumed.partial_fit(s.X.bottomRows(800), s.y.data() + 700);
    CHECK(same_model(resumed, full));
    CHECK(same_counters(resumed.counters(), full.counters()));
  }
}

TEST_CASE("an example with a zero feature vector is passed over") {
  PAParams p = params(3, BPAVariant::Simple);
  p.kernel = Kernel(KernelType::Linear);
  for (BPAVariant v : all_variants) {
    p.variant = v;
    PassiveAggressive l(2, 2, p);
    const double zero[2] = {0.0, 0.0}, a[2] = {1.0, 0.5}, b[2] = {-0.3, 2.0}, c[2] = {0.7, -1.0};
    l.learn_one(zero, 1);
    CHECK(l.support_vectors().size() == 0);
    for (const double* x : {a, b, c, zero, a, b}) l.learn_one(x, x == b ? 0 : 1);
    CHECK(l.coefficients().allFinite());
    CHECK(l.support_vectors().size() <= 3);
  }
}

TEST_CASE("save -> load -> continue equals an uninterrupted run bitwise") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(900, 3, c, 90, 0.25);
    for (BPAVariant v : all_variants) {
      for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
        for (Index B : {Index{0}, Index{1}, Index{20}}) {
          if (B == 0 && v != BPAVariant::Simple) continue;
          PAParams p = params(B, v, loss, 2);
          PassiveAggressive full(3, c, p), first(3, c, p);
          full.partial_fit(s.X, s.y.data());
          const Index half = 450;
          first.partial_fit(s.X.topRows(half), s.y.data());
          first.metadata = "labels: a b c";
          FieldMap fm;
          first.save(fm);
          const FieldMap back = FieldMap::from_bytes(fm.to_bytes());
          PassiveAggressive resumed;
          resumed.load(back);
          CHECK(resumed.metadata == "labels: a b c");
          CHECK(same_model(resumed, first));
          CHECK(resumed.params().variant == v && resumed.params().budget == B && resumed.params().pa_type == 2);
          resumed.partial_fit(s.X.bottomRows(s.X.rows() - half), s.y.data() + half);
          CHECK(same_model(resumed, full));
          CHECK(same_counters(resumed.counters(), full.counters()));
          // budgetkernel::Model (embedding) reads the PA file and predicts what the learner does
          FieldMap fm2;
          full.save(fm2);
          const Model m(FieldMap::from_bytes(fm2.to_bytes()));
          const RowMatrix D = m.decision_function(s.X.topRows(50));
          RowMatrix D2(50, full.n_outputs());
          full.decision_function(s.X.topRows(50), D2);
          CHECK(D == D2);
        }
      }
    }
  }
}

TEST_CASE("corrupt model fields raise; invalid parameters raise") {
  const Stream s = make_stream(300, 2, 3, 5);
  for (BPAVariant v : all_variants) {
    PassiveAggressive l(2, 3, params(12, v));
    l.partial_fit(s.X, s.y.data());
    FieldMap good;
    l.save(good);
    auto expect_bad = [&](auto&& edit) {
      FieldMap fm = FieldMap::from_bytes(good.to_bytes());
      edit(fm);
      PassiveAggressive t;
      CHECK_THROWS(t.load(fm));
      CHECK(t.support_vectors().size() == 0);  // a failed load leaves the learner unchanged
    };
    expect_bad([](FieldMap& fm) { fm.set_int("pa_type", 3); });
    expect_bad([](FieldMap& fm) { fm.set_int("variant", 4); });
    expect_bad([](FieldMap& fm) { fm.set_int("loss", 2); });
    expect_bad([](FieldMap& fm) { fm.set("C", -1.0); });
    expect_bad([](FieldMap& fm) { fm.set("C", std::nan("")); });
    expect_bad([](FieldMap& fm) { fm.set_int("budget", 5); });  // fewer than the stored SVs
    expect_bad([](FieldMap& fm) { fm.set_int("budget", -1); });
    expect_bad([](FieldMap& fm) { fm.set_bytes("learner", "bsgd"); });
    expect_bad([](FieldMap& fm) { fm.set_bytes("rng", "not a state"); });
    expect_bad([](FieldMap& fm) { fm.set_int("n_classes", 1); });
    expect_bad([](FieldMap& fm) { fm.set_ints("sv.id", std::vector<std::int64_t>(12, 100000)); });
    expect_bad([](FieldMap& fm) {
      RowMatrix A = fm.get_matrix("sv.alpha");
      A(0, 0) = std::numeric_limits<double>::infinity();
      fm.set_matrix("sv.alpha", A);
    });
    if (v == BPAVariant::NearestNeighbor) {
      expect_bad([](FieldMap& fm) {
        auto idx = fm.get_ints("nn.index");
        idx[0] = 0;  // itself
        fm.set_ints("nn.index", idx);
      });
      expect_bad([](FieldMap& fm) {
        auto idx = fm.get_ints("nn.index");
        idx[1] = 12;  // out of range
        fm.set_ints("nn.index", idx);
      });
      expect_bad([](FieldMap& fm) { fm.set_ints("nn.index", {1, 0}); });  // wrong length
      expect_bad([](FieldMap& fm) {
        RowMatrix d2 = fm.get_matrix("nn.d2");
        d2(3, 0) += 0.5;  // not the distance to the named neighbour
        fm.set_matrix("nn.d2", d2);
      });
    }
    if (v == BPAVariant::Project) {
      expect_bad([](FieldMap& fm) { fm.set_int("proj.active", 3); });
      expect_bad([](FieldMap& fm) { fm.set_matrix("proj.K", RowMatrix::Zero(3, 3)); });
    }
    if (v == BPAVariant::Simple) {
      // a Simple file claiming to be BPA-NN lacks the bookkeeping
      expect_bad([](FieldMap& fm) { fm.set_int("variant", 1); });
    }
  }
  auto bad_params = [](auto&& edit) {
    PAParams p;
    edit(p);
    CHECK_THROWS(p.validate());
    CHECK_THROWS(PassiveAggressive(2, 2, p));
  };
  bad_params([](PAParams& p) { p.C = 0.0; });
  bad_params([](PAParams& p) { p.C = -2.0; });
  bad_params([](PAParams& p) { p.C = std::numeric_limits<double>::infinity(); });
  bad_params([](PAParams& p) { p.C = std::nan(""); });
  bad_params([](PAParams& p) { p.pa_type = 3; });
  bad_params([](PAParams& p) { p.pa_type = -1; });
  bad_params([](PAParams& p) { p.budget = -1; });
  bad_params([](PAParams& p) { p.variant = static_cast<BPAVariant>(7); });
  bad_params([](PAParams& p) { p.loss = static_cast<PALoss>(2); });
  CHECK_THROWS(PassiveAggressive(0, 2, PAParams{}));
  CHECK_THROWS(PassiveAggressive(2, 1, PAParams{}));
  PAParams ok;
  ok.validate();
}

TEST_MAIN()
