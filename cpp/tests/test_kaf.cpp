// Tests of the kernel adaptive filters (learners/kaf.hpp): first steps against hand-computed
// closed forms, QKLMS(epsilon = 0) == KLMS bit for bit, KRLS(nu = 0) == kernel ridge
// regression and KRLS(nu > 0) == the regularised least-squares solution over its ALD
// approximations by dense solves, the sliding window == a fresh solve on the window, and
// save / load / continue == the uninterrupted run, bit for bit.
#include "budgetkernel/learners/kaf.hpp"
#include "test_oracles.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace budgetkernel;

namespace {

/// Prequential pass over valid rows through the regression base's chunk loop:
/// pred[i] = the prediction made before learning row i.
template <class Filter>
void learn_rows(Filter& filter, const Eigen::Ref<const RowMatrix>& X, const Eigen::Ref<const Vector>& y,
                double* pred = nullptr) {
  CHECK(y.size() == X.rows());
  filter.partial_fit(X, y.data(), pred);
}

const Kernel rbf(KernelType::RBF, 0.5);

Vector targets_of(const RowMatrix& X, std::uint64_t seed) {
  const RowMatrix noise = bk_test::random_matrix(X.rows(), 1, seed);
  Vector y(X.rows());
  for (Index i = 0; i < X.rows(); ++i) y(i) = std::sin(X.row(i).sum()) + 0.1 * noise(i, 0);
  return y;
}

double k(const Kernel& kern, const RowMatrix& X, Index i, Index j) {
  return kern.value(X.row(i).transpose(), X.row(j).transpose());
}

/// Dense kernel ridge regression: (K + lam I)^{-1} y over the rows `rows` of X.
Vector krr(const Kernel& kern, const RowMatrix& X, const Vector& y, const std::vector<Index>& rows, double lam) {
  const Index n = static_cast<Index>(rows.size());
  Eigen::MatrixXd K(n, n);
  Vector yy(n);
  for (Index i = 0; i < n; ++i) {
    yy(i) = y(rows[static_cast<std::size_t>(i)]);
    for (Index j = 0; j < n; ++j) K(i, j) = k(kern, X, rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
  }
  K.diagonal().array() += lam;
  return K.ldlt().solve(yy);
}

double rel_err(const Vector& a, const Vector& b) {
  return (a - b).cwiseAbs().maxCoeff() / (std::max)(1.0, b.cwiseAbs().maxCoeff());
}

/// FieldMap round trip through the file's bytes.
template <class L>
FieldMap saved(const L& l) {
  FieldMap fm;
  l.save(fm);
  return FieldMap::from_bytes(fm.to_bytes());
}

}  // namespace

TEST_CASE("KLMS: the first three steps equal the closed form") {
  const RowMatrix X = bk_test::random_matrix(3, 2, 1);
  const Vector y = targets_of(X, 2);
  KLMSParams p;
  p.kernel = rbf;
  p.eta = 0.3;
  KLMS f(2, p);
  const double f1 = f.step(X.row(0).data(), y(0));
  const double a1 = 0.3 * y(0);
  const double f2 = f.step(X.row(1).data(), y(1));
  const double a2 = 0.3 * (y(1) - a1 * k(rbf, X, 0, 1));
  const double f3 = f.step(X.row(2).data(), y(2));
  CHECK(f1 == 0.0);
  CHECK_NEAR(f2, a1 * k(rbf, X, 0, 1), 1e-15);
  CHECK_NEAR(f3, a1 * k(rbf, X, 0, 2) + a2 * k(rbf, X, 1, 2), 1e-15);
  CHECK(f.n_support() == 3);
  CHECK_NEAR(f.coefficients()(1), a2, 1e-15);
  CHECK_NEAR(f.coefficients()(2), 0.3 * (y(2) - f3), 1e-15);
  CHECK(f.support_vectors().id(2) == 2 && f.steps() == 3);
}

TEST_CASE("QKLMS: a near input updates its nearest centre, a far one becomes a centre (closed form)") {
  RowMatrix X(4, 2);
  X << 0.0, 0.0, 2.0, 0.0, 0.05, 0.0, 1.95, 0.05;  // rows 2 and 3 are within 0.1 of rows 0 and 1
  const Vector y = (Vector(4) << 1.0, -1.0, 0.5, 2.0).finished();
  QKLMSParams p;
  p.kernel = rbf;
  p.eta = 0.5;
  p.epsilon = 0.1;
  QKLMS f(2, p);
  f.step(X.row(0).data(), y(0));
  const double a1 = 0.5 * y(0);
  const double f2 = f.step(X.row(1).data(), y(1));
  CHECK_NEAR(f2, a1 * k(rbf, X, 0, 1), 1e-15);
  double a2 = 0.5 * (y(1) - f2);
  const double f3 = f.step(X.row(2).data(), y(2));
  CHECK_NEAR(f3, a1 * k(rbf, X, 0, 2) + a2 * k(rbf, X, 1, 2), 1e-15);
  const double a1b = a1 + 0.5 * (y(2) - f3);  // quantised to centre 0
  const double f4 = f.step(X.row(3).data(), y(3));
  CHECK_NEAR(f4, a1b * k(rbf, X, 0, 3) + a2 * k(rbf, X, 1, 3), 1e-15);
  a2 += 0.5 * (y(3) - f4);  // quantised to centre 1
  CHECK(f.n_support() == 2);
  CHECK_NEAR(f.coefficients()(0), a1b, 1e-15);
  CHECK_NEAR(f.coefficients()(1), a2, 1e-15);
  CHECK(f.support_vectors().x(0) == X.row(0) && f.support_vectors().x(1) == X.row(1));
  // Distance exactly epsilon quantises (||x - c|| <= epsilon): 0.25 and 0.5 are exact in binary.
  QKLMSParams q = p;
  q.epsilon = 0.25;
  QKLMS g(1, q);
  const double a = 0.0, b = 0.25, c = 0.5;
  g.step(&a, 1.0);
  g.step(&b, 1.0);
  CHECK(g.n_support() == 1);
  g.step(&c, 1.0);
  CHECK(g.n_support() == 2);
}

TEST_CASE("QKLMS with epsilon = 0 equals KLMS bit for bit (duplicate inputs too)") {
  for (Index d : {Index{3}, Index{40}}) {  // 40: dot products in register tiles
    RowMatrix X = bk_test::random_matrix(300, d, 3);
    for (Index i = 10; i < 300; i += 7) X.row(i) = X.row(i - 5);  // exact duplicates of earlier centres
    const Vector y = targets_of(X, 4);
    const Kernel kern(KernelType::RBF, 1.0 / static_cast<double>(d));
    KLMSParams pk;
    pk.kernel = kern;
    pk.eta = 0.4;
    QKLMSParams pq;
    pq.kernel = kern;
    pq.eta = 0.4;
    pq.epsilon = 0.0;
    KLMS a(d, pk);
    QKLMS b(d, pq);
    Vector pa(300), pb(300);
    learn_rows(a, X, y, pa.data());
    learn_rows(b, X, y, pb.data());
    CHECK(pa == pb);
    CHECK(a.n_support() == 300 && b.n_support() == 300);
    CHECK(a.coefficients() == b.coefficients());
    CHECK(a.support_vectors().X().topRows(300) == b.support_vectors().X().topRows(300));
    const RowMatrix T = bk_test::random_matrix(20, d, 5);
    for (Index i = 0; i < 20; ++i) CHECK(a.decision(T.row(i).data()) == b.decision(T.row(i).data()));
    // And quantisation does quantise: fewer centres, the duplicates among them.
    pq.epsilon = 1e-9;
    QKLMS c(d, pq);
    learn_rows(c, X, y);
    CHECK(c.n_support() < 300);
  }
}

TEST_CASE("KRLS with nu = 0 equals kernel ridge regression on the seen examples (1e-8)") {
  // 300 points in 3-D: K itself is numerically singular long before the end, K + lam I is not.
  const RowMatrix X = bk_test::random_matrix(300, 3, 6);
  const Vector y = targets_of(X, 7);
  for (double lam : {1.0, 1e-1, 1e-3, 1e-5}) {
    KRLSParams p;
    p.kernel = rbf;
    p.nu = 0.0;
    p.lam = lam;
    KRLS f(3, p);
    double worst = 0.0, worst_pred = 0.0;
    std::vector<Index> seen;
    Vector alpha_prev;
    for (Index t = 0; t < X.rows(); ++t) {
      const bool check = t < 40 || t % 37 == 0 || t == X.rows() - 1;
      const double pred = f.step(X.row(t).data(), y(t));
      if (t > 0 && check) {  // the prediction is KRR's on the examples before t
        const Vector a = krr(rbf, X, y, seen, lam);
        double ref = 0.0;
        for (Index j = 0; j < t; ++j) ref += a(j) * k(rbf, X, j, t);
        worst_pred = (std::max)(worst_pred, std::abs(pred - ref) / (std::max)(1.0, std::abs(ref)));
      }
      seen.push_back(t);
      CHECK(f.n_support() == t + 1);
      if (check) worst = (std::max)(worst, rel_err(f.coefficients(), krr(rbf, X, y, seen, lam)));
    }
    if (!(worst <= 1e-8 && worst_pred <= 1e-8)) std::printf("  lam %g: %g %g\n", lam, worst, worst_pred);
    CHECK(worst <= 1e-8);
    CHECK(worst_pred <= 1e-8);
    CHECK(f.kernel_inverse().size() == 0);  // no ALD test, no K~^{-1}
  }
}

TEST_CASE("KRLS: a dependent second example takes the reduced step (closed form)") {
  RowMatrix X(2, 2);
  X << 0.3, -0.2, 0.31, -0.2;  // delta_2 = 1 - k^2 ~ 1e-4 < nu
  const double y1 = 0.7, y2 = -0.4, lam = 0.05;
  KRLSParams p;
  p.kernel = rbf;
  p.nu = 1e-2;
  p.lam = lam;
  KRLS f(2, p);
  f.step(X.row(0).data(), y1);
  CHECK_NEAR(f.coefficients()(0), y1 / (1.0 + lam), 1e-15);
  const double k12 = k(rbf, X, 0, 1);
  const double pred = f.step(X.row(1).data(), y2);
  CHECK_NEAR(pred, k12 * y1 / (1.0 + lam), 1e-15);
  CHECK(f.n_support() == 1);
  // argmin_a (y1 - a)^2 + (y2 - k12 a)^2 + lam a^2 (a_2 = k12 / k11 = k12, k11 = 1).
  CHECK_NEAR(f.coefficients()(0), (y1 + k12 * y2) / (1.0 + k12 * k12 + lam), 1e-14);
  CHECK_NEAR(f.P()(0, 0), 1.0 / (1.0 + k12 * k12), 1e-15);
}

TEST_CASE("KRLS with nu > 0 minimises ||y - A K~ alpha||^2 + lam alpha^T K~ alpha over its ALD rows") {
  const RowMatrix X = bk_test::random_matrix(150, 2, 8);
  const Vector y = targets_of(X, 9);
  for (double nu : {1e-3, 1e-1}) {
    KRLSParams p;
    p.kernel = rbf;
    p.nu = nu;
    p.lam = 0.1;
    KRLS f(2, p);
    learn_rows(f, X, y);
    const SupportVectors& sv = f.support_vectors();
    const Index m = sv.size();
    CHECK(m > 3 && m < 150);
    // A's row for step t: e_j if t added element j, else K~_t^{-1} k_t over the elements added before t.
    Eigen::MatrixXd Kd(m, m), A = Eigen::MatrixXd::Zero(150, m);
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < m; ++j) Kd(i, j) = rbf.value(sv.x(i).transpose(), sv.x(j).transpose());
    for (Index t = 0; t < 150; ++t) {
      Index before = 0;
      while (before < m && sv.id(before) < t) ++before;
      if (before < m && sv.id(before) == t) {
        A(t, before) = 1.0;
        continue;
      }
      Vector kt(before);
      for (Index j = 0; j < before; ++j) kt(j) = rbf.value(sv.x(j).transpose(), X.row(t).transpose());
      A.row(t).head(before) = Kd.topLeftCorner(before, before).ldlt().solve(kt).transpose();
      const double delta = 1.0 - kt.dot(A.row(t).head(before).transpose());
      CHECK(delta <= nu + 1e-9);  // only dependent examples stay out
    }
    const Eigen::MatrixXd M = A.transpose() * A * Kd + 0.1 * Eigen::MatrixXd::Identity(m, m);
    const Vector ref = M.partialPivLu().solve(A.transpose() * y);
    CHECK(rel_err(f.coefficients(), ref) <= 1e-8);
  }
}

TEST_CASE("KRLS with lam = 0 is Engel's KRLS: it interpolates the targets of its dictionary") {
  const RowMatrix X = bk_test::random_matrix(12, 2, 10);
  const Vector y = targets_of(X, 11);
  KRLSParams p;
  p.kernel = rbf;
  p.nu = 1e-6;
  p.lam = 0.0;
  KRLS f(2, p);
  learn_rows(f, X, y);
  CHECK(f.n_support() == 12);
  for (Index i = 0; i < 12; ++i) CHECK_NEAR(f.decision(X.row(i).data()), y(i), 1e-8);
}

TEST_CASE("KRLS with lam = 0 follows Engel's Table 1 (a dense re-implementation)") {
  const RowMatrix X = bk_test::random_matrix(120, 2, 20);
  const Vector y = targets_of(X, 21);
  const double nu = 1e-2;
  KRLSParams p;
  p.kernel = rbf;
  p.nu = nu;
  p.lam = 0.0;
  KRLS f(2, p);
  // Engel, Mannor & Meir 2004, Table 1, with dense inverses.
  std::vector<Index> dict;
  Eigen::MatrixXd Kinv, P;
  Vector alpha;
  double worst = 0.0;
  for (Index t = 0; t < X.rows(); ++t) {
    const Index m = static_cast<Index>(dict.size());
    Vector kt(m);
    for (Index j = 0; j < m; ++j) kt(j) = k(rbf, X, dict[static_cast<std::size_t>(j)], t);
    const double pred = f.step(X.row(t).data(), y(t));
    CHECK_NEAR(pred, m > 0 ? kt.dot(alpha) : 0.0, 1e-8);
    const Vector a = m > 0 ? Vector(Kinv * kt) : Vector();
    const double delta = 1.0 - (m > 0 ? kt.dot(a) : 0.0);
    const double e = y(t) - (m > 0 ? kt.dot(alpha) : 0.0);
    if (delta > nu) {
      Eigen::MatrixXd Kn(m + 1, m + 1);
      if (m > 0) Kn.topLeftCorner(m, m) = Kinv * delta + a * a.transpose();
      Kn.topRightCorner(m, 1) = -a;
      Kn.bottomLeftCorner(1, m) = -a.transpose();
      Kn(m, m) = 1.0;
      Kinv = Kn / delta;
      Eigen::MatrixXd Pn = Eigen::MatrixXd::Zero(m + 1, m + 1);
      Pn.topLeftCorner(m, m) = P;
      Pn(m, m) = 1.0;
      P = Pn;
      Vector an(m + 1);
      an.head(m) = alpha - a * e / delta;
      an(m) = e / delta;
      alpha = an;
      dict.push_back(t);
    } else {
      const Vector q = P * a / (1.0 + a.dot(P * a));
      P -= q * (a.transpose() * P);
      alpha += Kinv * q * e;
    }
    CHECK(f.n_support() == static_cast<Index>(dict.size()));
    if (f.n_support() == alpha.size()) worst = (std::max)(worst, rel_err(f.coefficients(), alpha));
  }
  CHECK(worst <= 1e-8);
}

TEST_CASE("Sliding-window KRLS: the first steps equal the closed form (B = 2)") {
  const RowMatrix X = bk_test::random_matrix(3, 2, 22);
  const Vector y = targets_of(X, 23);
  const double lam = 0.3;
  SlidingWindowKRLS f(2, SlidingKRLSParams{rbf, 2, lam});
  CHECK(f.step(X.row(0).data(), y(0)) == 0.0);
  CHECK_NEAR(f.coefficients()(0), y(0) / (1.0 + lam), 1e-15);
  const double k01 = k(rbf, X, 0, 1), k02 = k(rbf, X, 0, 2), k12 = k(rbf, X, 1, 2);
  CHECK_NEAR(f.step(X.row(1).data(), y(1)), k01 * y(0) / (1.0 + lam), 1e-15);
  const double det01 = (1.0 + lam) * (1.0 + lam) - k01 * k01;
  const double a0 = ((1.0 + lam) * y(0) - k01 * y(1)) / det01, a1 = ((1.0 + lam) * y(1) - k01 * y(0)) / det01;
  CHECK_NEAR(f.step(X.row(2).data(), y(2)), a0 * k02 + a1 * k12, 1e-14);
  // Window {x_1, x_2}: x_0 left, x_2 took its slot (swap-with-last).
  const double det12 = (1.0 + lam) * (1.0 + lam) - k12 * k12;
  CHECK(f.n_support() == 2 && f.support_vectors().id(0) == 2 && f.support_vectors().id(1) == 1);
  CHECK_NEAR(f.coefficients()(0), ((1.0 + lam) * y(2) - k12 * y(1)) / det12, 1e-14);
  CHECK_NEAR(f.coefficients()(1), ((1.0 + lam) * y(1) - k12 * y(2)) / det12, 1e-14);
}

TEST_CASE("IncrementalInverse::add_outer is the Sherman-Morrison rank-one change, exactly symmetric") {
  const RowMatrix Z = bk_test::random_matrix(6, 6, 24);
  Eigen::MatrixXd A = Z.transpose() * Z + Eigen::MatrixXd::Identity(6, 6);
  IncrementalInverse G(2);
  G.refactor(A);
  const Vector u = bk_test::random_matrix(6, 1, 25).col(0) * 0.3;
  // (A - u u^T)^{-1} = G + G u u^T G / (1 - u^T G u)
  const Vector v = G.inverse() * u;
  G.add_outer(v / std::sqrt(1.0 - u.dot(v)));
  const Eigen::MatrixXd ref = (A - u * u.transpose()).inverse();
  CHECK((G.inverse() - ref).cwiseAbs().maxCoeff() <= 1e-12 * ref.cwiseAbs().maxCoeff());
  CHECK(G.inverse() == G.inverse().transpose());
  G.add_outer(v / std::sqrt(1.0 - u.dot(v)), true);  // and back
  CHECK((G.inverse() - A.inverse()).cwiseAbs().maxCoeff() <= 1e-12 * A.inverse().cwiseAbs().maxCoeff());
}

TEST_CASE("Sliding-window KRLS equals a fresh kernel ridge solve on the window (1e-8)") {
  const RowMatrix X = bk_test::random_matrix(400, 3, 12);
  const Vector y = targets_of(X, 13);
  SlidingKRLSParams p;
  p.kernel = rbf;
  p.budget = 15;
  p.lam = 0.05;
  SlidingWindowKRLS f(3, p);
  double worst = 0.0, worst_pred = 0.0;
  Vector ref_prev;
  std::vector<Index> prev_rows;
  for (Index t = 0; t < X.rows(); ++t) {
    const double pred = f.step(X.row(t).data(), y(t));
    if (t > 0) {
      double ref = 0.0;
      for (std::size_t j = 0; j < prev_rows.size(); ++j) ref += ref_prev(static_cast<Index>(j)) * k(rbf, X, prev_rows[j], t);
      worst_pred = (std::max)(worst_pred, std::abs(pred - ref) / (std::max)(1.0, std::abs(ref)));
    }
    const SupportVectors& sv = f.support_vectors();
    CHECK(sv.size() == (std::min)(t + 1, Index{15}));
    std::vector<Index> rows;  // the window in the store's order
    for (Index i = 0; i < sv.size(); ++i) rows.push_back(static_cast<Index>(sv.id(i)));
    for (Index r : rows) CHECK(r > t - 15 && r <= t);
    for (Index i = 0; i < sv.size(); ++i) CHECK(sv.x(i) == X.row(rows[static_cast<std::size_t>(i)]));
    ref_prev = krr(rbf, X, y, rows, 0.05);
    prev_rows = rows;
    worst = (std::max)(worst, rel_err(f.coefficients(), ref_prev));
  }
  CHECK(worst <= 1e-8);
  CHECK(worst_pred <= 1e-8);
}

TEST_CASE("Sliding-window KRLS stays exact over a long stream (drift probe), small lam") {
  const RowMatrix X = bk_test::random_matrix(4000, 2, 14);
  const Vector y = targets_of(X, 15);
  SlidingKRLSParams p;
  p.kernel = Kernel(KernelType::RBF, 0.2);
  p.budget = 40;
  p.lam = 1e-4;
  SlidingWindowKRLS f(2, p);
  learn_rows(f, X, y);
  const SupportVectors& sv = f.support_vectors();
  std::vector<Index> rows;
  for (Index i = 0; i < sv.size(); ++i) rows.push_back(static_cast<Index>(sv.id(i)));
  CHECK_NEAR(rel_err(f.coefficients(), krr(p.kernel, X, y, rows, 1e-4)), 0.0, 1e-8);
}

namespace {

/// Runs `first` rows, saves, loads into a learner built with other (default) parameters,
/// continues both over the remaining rows: predictions and final files must agree bit for bit.
template <class L, class P>
void check_resume(const P& p, const RowMatrix& X, const Vector& y, Index first, const char* what) {
  L a(X.cols(), p);
  learn_rows(a, X.topRows(first), y.head(first));
  L b(X.cols());
  b.load(saved(a));
  CHECK(b.n_support() == a.n_support());
  const Index rest = X.rows() - first;
  Vector pa(rest), pb(rest);
  learn_rows(a, X.bottomRows(rest), y.tail(rest), pa.data());
  learn_rows(b, X.bottomRows(rest), y.tail(rest), pb.data());
  const bool same = pa == pb && saved(a).to_bytes() == saved(b).to_bytes();
  if (!same) std::printf("  resume differs: %s\n", what);
  CHECK(same);
  // The file predicts through budgetkernel::Model exactly as the learner (the base's fields).
  const Model model(saved(a));
  const RowMatrix D = model.decision_function(X.topRows(30));
  for (Index i = 0; i < 30; ++i) CHECK(D(i, 0) == a.decision(X.row(i).data()));
}

}  // namespace

TEST_CASE("save / load / continue equals the uninterrupted run, bit for bit (every filter)") {
  const RowMatrix X = bk_test::random_matrix(600, 5, 16);
  const Vector y = targets_of(X, 17);
  const Kernel kern(KernelType::RBF, 0.3);
  check_resume<KLMS>(KLMSParams{kern, 0.2}, X, y, 250, "klms");
  check_resume<QKLMS>(QKLMSParams{kern, 0.2, 1.0}, X, y, 250, "qklms");
  KRLSParams pk{kern, 1e-4, 1e-2};
  check_resume<KRLS>(pk, X, y, 300, "krls");
  check_resume<KRLS>(KRLSParams{kern, 0.0, 1e-2}, X, y, 200, "krls (nu = 0)");
  {
    KRLS big(5, pk);  // the dictionary outgrows 128 (Eigen's blocked products) before the save
    learn_rows(big, X.topRows(300), y.head(300));
    CHECK(big.n_support() > 128);
  }
  check_resume<SlidingWindowKRLS>(SlidingKRLSParams{kern, 150, 1e-2}, X, y, 333, "sliding_krls");
  check_resume<SlidingWindowKRLS>(SlidingKRLSParams{kern, 7, 1e-2}, X, y, 5, "sliding_krls (window not full)");
}

TEST_CASE("invalid parameters are rejected with the parameter's name") {
  const Kernel bad_poly(KernelType::Polynomial, 1.0, 2, -1.0);
  const double nan = std::nan("");
  CHECK_THROWS(KLMS(2, KLMSParams{rbf, 0.0}));
  CHECK_THROWS(KLMS(2, KLMSParams{rbf, nan}));
  CHECK_THROWS(KLMS(2, KLMSParams{bad_poly, 0.5}));
  CHECK_THROWS(KLMS(0, KLMSParams{rbf, 0.5}));
  CHECK_THROWS(QKLMS(2, QKLMSParams{rbf, 0.5, -1.0}));
  CHECK_THROWS(QKLMS(2, QKLMSParams{rbf, 0.5, nan}));
  CHECK_THROWS(QKLMS(2, QKLMSParams{rbf, -0.5, 0.1}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, -1e-3, 0.1}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 1e-3, -0.1}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 1e-3, std::numeric_limits<double>::infinity()}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 0.0, 0.0}));  // no ALD test and no regularisation
  CHECK_THROWS(SlidingWindowKRLS(2, SlidingKRLSParams{rbf, 0, 0.1}));
  CHECK_THROWS(SlidingWindowKRLS(2, SlidingKRLSParams{rbf, 10, 0.0}));
  try {
    KLMS(2, KLMSParams{rbf, -1.0});
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("eta") != std::string::npos);
  }
  try {
    QKLMS(2, QKLMSParams{rbf, 0.5, -1.0});
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("epsilon") != std::string::npos);
  }
}

TEST_CASE("corrupt or inconsistent files are rejected and leave the learner unchanged") {
  const RowMatrix X = bk_test::random_matrix(60, 2, 18);
  const Vector y = targets_of(X, 19);
  KRLS krls(2, KRLSParams{rbf, 1e-3, 0.1});
  learn_rows(krls, X, y);
  const FieldMap good = saved(krls);
  const Index m = krls.n_support();
  const auto rejected = [&](FieldMap fm) {
    KRLS other(2);
    bool threw = false;
    try {
      other.load(fm);
    } catch (const std::runtime_error&) {
      threw = true;
    }
    return threw && other.n_support() == 0;
  };
  FieldMap f1 = good;
  Eigen::MatrixXd R = krls.regularised_inverse();
  R(0, 1) += 1e-3;  // asymmetric
  f1.set_matrix("kaf.R", R);
  CHECK(rejected(f1));
  FieldMap f2 = good;
  f2.set_matrix("kaf.beta", Vector::Ones(m));  // alpha != R beta
  CHECK(rejected(f2));
  FieldMap f3 = good;
  f3.set("nu", -1.0);
  CHECK(rejected(f3));
  FieldMap f4 = good;
  f4.set_matrix("kaf.P", Eigen::MatrixXd::Identity(m + 1, m + 1));
  CHECK(rejected(f4));
  FieldMap f5 = good;
  f5.set_int("kaf.steps", 3);  // ids beyond the steps taken
  CHECK(rejected(f5));
  FieldMap f6 = good;
  Eigen::MatrixXd K = krls.dictionary_kernel();
  K(1, 1) = 0.5;  // not the kernel of the stored dictionary
  f6.set_matrix("kaf.K", K);
  CHECK(rejected(f6));

  KLMS klms(2, KLMSParams{rbf, 0.5});
  learn_rows(klms, X.topRows(10), y.head(10));
  FieldMap g = saved(klms);
  g.set_int("kaf.steps", 11);  // one centre per step
  KLMS k2(2);
  CHECK_THROWS(k2.load(g));

  SlidingWindowKRLS sw(2, SlidingKRLSParams{rbf, 8, 0.1});
  learn_rows(sw, X, y);
  FieldMap h = saved(sw);
  h.set_int("kaf.steps", 100);  // the window is no longer the last 8 steps
  SlidingWindowKRLS s2(2);
  CHECK_THROWS(s2.load(h));
  FieldMap h2 = saved(sw);
  h2.set_int("budget", 9);  // a window shorter than the budget after 60 steps
  CHECK_THROWS(s2.load(h2));
  CHECK(s2.n_support() == 0);
}

TEST_MAIN()

// ---- issue 41: divergence, validation and the budgeted KRLS ----

TEST_CASE("KLMS: eta >= 2 is refused with RBF (eta k(x, x) >= 2 overshoots every example)") {
  CHECK_THROWS(KLMS(2, KLMSParams{rbf, 2.0}));
  CHECK_THROWS(QKLMS(2, QKLMSParams{rbf, 100.0, 0.1}));
  KLMS ok(2, KLMSParams{rbf, 1.99});  // below the limit: accepted
  CHECK(ok.params().eta == 1.99);
  try {
    KLMS(2, KLMSParams{rbf, 5.0});
    CHECK(false);
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("eta must be < 2") != std::string::npos);
  }
}

TEST_CASE("KLMS / QKLMS: a diverging filter raises at the first non-finite prediction and stays finite") {
  // poly degree 3, coef0 1, gamma 2 on standard normal inputs: k(x, x) = (2 |x|^2 + 1)^3 is
  // mostly far above 4, so eta = 0.5 gives eta k(x, x) >> 2 and the coefficients grow geometrically.
  const RowMatrix X = bk_test::random_matrix(3000, 2, 41);
  const Vector y = targets_of(X, 42);
  const Kernel poly(KernelType::Polynomial, 2.0, 3, 1.0);
  for (double epsilon : {0.0, 0.05}) {
    QKLMS f(2, QKLMSParams{poly, 0.5, epsilon});
    bool threw = false;
    std::string msg;
    Index learned = 0;
    for (Index i = 0; i < X.rows() && !threw; ++i) {
      try {
        f.partial_fit(X.middleRows(i, 1), y.data() + i);
        ++learned;
      } catch (const std::runtime_error& e) {
        threw = true;
        msg = e.what();
      }
    }
    CHECK(threw);
    CHECK(msg.find("diverged") != std::string::npos && msg.find("eta k(x, x)") != std::string::npos);
    CHECK(f.steps() == learned);  // the failing example was not learned
    const Vector a = f.coefficients();
    CHECK(detail::all_finite(a.data(), a.size()));
    QKLMS g(2);
    g.load(saved(f));  // what it saves loads
    CHECK(g.coefficients() == f.coefficients());
  }
}

TEST_CASE("KRLS: nu >= 1 with RBF and a budget without the ALD test are refused") {
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 1.0, 1e-3}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 5.0, 1e-3}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 0.0, 1e-3, 10}));
  CHECK_THROWS(KRLS(2, KRLSParams{rbf, 0.1, 1e-3, -1}));
  KRLS lin(2, KRLSParams{Kernel(KernelType::Linear), 5.0, 1e-3});  // k(x, x) unbounded: nu >= 1 is a scale
  CHECK(lin.params().nu == 5.0);
}

TEST_CASE("KRLS with a budget: after every removal alpha equals the dense solution over the substituted rows") {
  // The oracle follows the filter's dictionary (its ids) and rebuilds everything densely: A's
  // row for an example that joined is e_j, otherwise K~^{-1} k_t; a removed element p is
  // substituted in every row by a_p = K~_{-p}^{-1} k_{-p}(c_p) (A <- A T); after each step
  // alpha must solve (A^T A K~ + lam I) alpha = A^T y, and the removed element must have the
  // least ALD distance 1 / [K~^{-1}]_pp.
  const RowMatrix X = bk_test::random_matrix(160, 3, 43);
  const Vector y = targets_of(X, 44);
  const Kernel kern(KernelType::RBF, 1.0);
  for (double lam : {1e-2, 0.0}) {
    const Index B = 12;
    KRLS f(3, KRLSParams{kern, 0.05, lam, B});
    std::vector<std::int64_t> ids;  // the oracle's dictionary, in its own order
    Eigen::MatrixXd A(0, 0);        // rows: examples so far; columns: ids' elements
    Vector yy(0);
    double worst = 0.0;
    Index removals = 0;
    const auto kmat = [&](const std::vector<std::int64_t>& d) {
      const Index m = static_cast<Index>(d.size());
      Eigen::MatrixXd K(m, m);
      for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < m; ++j) K(i, j) = k(kern, X, d[static_cast<std::size_t>(i)], d[static_cast<std::size_t>(j)]);
      return K;
    };
    for (Index t = 0; t < X.rows(); ++t) {
      f.partial_fit(X.middleRows(t, 1), y.data() + t);
      const SupportVectors& sv = f.support_vectors();
      const std::vector<std::int64_t> now(sv.ids().begin(), sv.ids().begin() + sv.size());
      // Example t's row: e_new if it entered (possibly to leave at once), else its ALD row.
      const Index m = static_cast<Index>(ids.size());
      const bool grew = f.counters().updates > static_cast<std::int64_t>(m) + removals;
      Eigen::MatrixXd A2 = Eigen::MatrixXd::Zero(t + 1, m + (grew ? 1 : 0));
      A2.topLeftCorner(t, m) = A;
      if (grew) {
        A2(t, m) = 1.0;
        ids.push_back(t);
      } else if (m > 0) {
        Vector kt(m);
        for (Index j = 0; j < m; ++j) kt(j) = k(kern, X, ids[static_cast<std::size_t>(j)], t);
        A2.row(t).head(m) = kmat(ids).ldlt().solve(kt).transpose();
      }
      A = A2;
      yy.conservativeResize(t + 1);
      yy(t) = y(t);
      if (ids.size() > now.size()) {  // a removal: find the element that left
        ++removals;
        Index p = -1;
        for (Index i = 0; i < static_cast<Index>(ids.size()); ++i)
          if (std::find(now.begin(), now.end(), ids[static_cast<std::size_t>(i)]) == now.end()) p = i;
        CHECK(p >= 0);
        const Eigen::MatrixXd Kinv = kmat(ids).inverse();
        CHECK(Kinv(p, p) >= Kinv.diagonal().maxCoeff() * (1.0 - 1e-9));  // the least ALD distance left
        std::vector<std::int64_t> rest = ids;
        rest.erase(rest.begin() + p);
        const Index r = static_cast<Index>(rest.size());
        Vector kp(r);
        for (Index j = 0; j < r; ++j) kp(j) = k(kern, X, rest[static_cast<std::size_t>(j)], ids[static_cast<std::size_t>(p)]);
        const Vector ap = kmat(rest).ldlt().solve(kp);
        Eigen::MatrixXd A3(A.rows(), r);
        for (Index j = 0, c = 0; j < m + 1; ++j)
          if (j != p) {
            A3.col(c) = A.col(j) + A.col(p) * ap(c);
            ++c;
          }
        A = A3;
        ids = rest;
      }
      CHECK(ids.size() == now.size() && static_cast<Index>(now.size()) <= B);
      // alpha in the filter's order: map the oracle's columns onto the filter's ids.
      const Index n = static_cast<Index>(ids.size());
      if (n == 0) continue;
      const Eigen::MatrixXd K = kmat(ids);
      const Vector ref = (A.transpose() * A * K + lam * Eigen::MatrixXd::Identity(n, n)).partialPivLu().solve(A.transpose() * yy);
      const Vector alpha = f.coefficients();
      Vector mine(n);
      for (Index i = 0; i < n; ++i)
        mine(i) = alpha(std::find(now.begin(), now.end(), ids[static_cast<std::size_t>(i)]) - now.begin());
      worst = (std::max)(worst, rel_err(mine, ref));
    }
    CHECK(removals > 20);
    CHECK(f.counters().maintenance == removals);
    std::printf("  budgeted KRLS lam=%g: %ld removals, worst rel err %.2e\n", lam, static_cast<long>(removals), worst);
    CHECK(worst <= 1e-8);
  }
}

TEST_CASE("KRLS with a budget: save / load / continue bit for bit, and the file keeps the cap") {
  const RowMatrix X = bk_test::random_matrix(400, 4, 45);
  const Vector y = targets_of(X, 46);
  const Kernel kern(KernelType::RBF, 1.0);
  check_resume<KRLS>(KRLSParams{kern, 0.05, 1e-2, 20}, X, y, 150, "krls (budget 20)");
  KRLS f(4, KRLSParams{kern, 0.05, 1e-2, 20});
  learn_rows(f, X, y);
  CHECK(f.n_support() == 20);
  KRLS g(4);
  g.load(saved(f));
  CHECK(g.params().budget == 20);
  KRLS unbudgeted(4, KRLSParams{kern, 0.05, 1e-2});
  learn_rows(unbudgeted, X.topRows(50), y.head(50));
  CHECK(!saved(unbudgeted).has("budget"));  // files without a budget are as before
}

TEST_CASE("the KRLS filters' singular-ridge message prints lam in %g and says what to do") {
  const RowMatrix X = bk_test::random_matrix(2, 2, 47);
  const double y[2] = {1.0, 2.0};
  // A duplicate's Schur complement is ~2 lam, below the 1e-12 threshold for lam = 1e-13.
  SlidingWindowKRLS f(2, SlidingKRLSParams{rbf, 10, 1e-13});
  f.step(X.row(0).data(), y[0]);
  try {
    f.step(X.row(0).data(), y[1]);  // an exact duplicate
    CHECK(false);
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("lam = 1e-13") != std::string::npos);
    CHECK(msg.find("use lam >=") != std::string::npos);
  }
  CHECK(f.n_support() == 1);
}
