#pragma once
/// \file learners/calibration.hpp
/// Probabilities from decision values: the map itself (ProbabilityMap: Platt's sigmoid for
/// two classes, a softmax with a temperature for more) and its online fit on the prequential
/// decision values of a stream (PlattCalibration).
///
/// Two classes (one decision value f): a logistic fit in the manner of Platt ("Probabilistic
/// outputs for support vector machines", 1999: his smoothed targets, Newton's method with a
/// backtracking line search as in Lin, Lin & Weng, "A note on Platt's probabilistic outputs
/// for support vector machines", Machine Learning 2007), with two parameters: a slope on each
/// side of the decision boundary, P(y = 1 | f) = 1 / (1 + exp(a_pos f)) for f >= 0 and
/// 1 / (1 + exp(a_neg f)) for f < 0. Platt's own second parameter, the offset B of
/// 1 / (1 + exp(A f + B)), moves the point P = 1/2 away from f = 0, so the class of highest
/// probability would differ from predict() for every f between 0 and -B/A (scikit-learn's
/// classifier contract, and its check_classifiers_train, require them to agree). Two slopes
/// keep that point at f = 0 and still let the two classes' sides calibrate differently (what
/// B does for a biased f). More classes (c decision values): P = softmax(a f) with one
/// temperature 1/a shared by the classes (temperature scaling, Guo et al., ICML 2017), on
/// Platt's targets carried over to c classes (fit_temperature). The slopes are kept <= 0 and
/// a >= 0, so probabilities grow with the decision value and argmax P = predict().
///
/// Online: the fit uses the last kWindow prequential pairs (f, y), each example's decision
/// values before it was learned (as the prequential mistake count uses). The model's decision
/// values drift as it learns, so old pairs describe an older model: a sliding window keeps
/// the fit about the current one. It is refitted (warm-started) at 1, 2, 4, ..., kRefitEvery
/// recorded pairs, then every kRefitEvery pairs, so its cost per example is amortised to a
/// few exp per window entry per kRefitEvery examples, and the result does not depend on how
/// the stream was cut into chunks.

#include "../io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace budgetkernel {

namespace detail {

/// log(1 + exp(z)) without overflow or cancellation.
inline double softplus(double z) { return (std::max)(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

}  // namespace detail

/// The map from decision values to class probabilities.
/// n_outputs = 1 (two classes): P(class 1) = 1 / (1 + exp(z)), P(class 0) = 1 - that, with
/// z = a_pos f for f >= 0 and a_neg f for f < 0 (a_pos = a_neg = -1: the sigmoid of f).
/// n_outputs = c > 1: P = softmax(a f) (a = 1 / temperature).
struct ProbabilityMap {
  double a_pos = -1.0, a_neg = -1.0;  ///< two classes: the slopes on either side of f = 0
  double a = 1.0;                     ///< more classes

  /// Probabilities (or their logarithms) of every class for each row of decision values D.
  /// Logarithms are computed directly (softplus, log-sum-exp), so they stay finite where the
  /// probability underflows to 0.
  /// \param D    n x n_outputs decision values.
  /// \param out  n x n_classes, receives the probabilities (rows sum to 1) or their logs.
  /// \param log  whether to write log-probabilities.
  void apply(const Eigen::Ref<const RowMatrix>& D, Eigen::Ref<RowMatrix> out, bool log) const {
    if (D.cols() == 1) {
      for (Index i = 0; i < D.rows(); ++i) {
        const double f = D(i, 0), z = (f >= 0.0 ? a_pos : a_neg) * f;
        const double l1 = -detail::softplus(z), l0 = -detail::softplus(-z);
        out(i, 0) = log ? l0 : std::exp(l0);
        out(i, 1) = log ? l1 : std::exp(l1);
      }
      return;
    }
    for (Index i = 0; i < D.rows(); ++i) {
      auto o = out.row(i);
      o = a * D.row(i);
      const double m = o.maxCoeff();
      if (std::isfinite(m)) {
        o.array() -= m + std::log((o.array() - m).exp().sum());
      } else {  // a f beyond the double range: the softmax's limit, shared by the largest values
        const double top = static_cast<double>((o.array() == m).count());
        for (Index k = 0; k < o.size(); ++k)
          o(k) = o(k) == m ? -std::log(top) : -std::numeric_limits<double>::infinity();
      }
      if (!log) o = o.array().exp().matrix();
    }
  }
};

/// One slope a <= 0 of the two-class map, on the pairs (g_i, t_i) of one side of the decision
/// boundary: minimises the cross-entropy sum_i -t_i log p_i - (1 - t_i) log(1 - p_i) with
/// p_i = 1 / (1 + exp(a g_i)), convex in a, by Newton steps with backtracking (the 1-D case of
/// Lin, Lin & Weng 2007, Algorithm 1). An optimum a > 0 (decision values on this side
/// anti-correlated with the labels) is clamped to 0: P = 1/2 on this side.
/// \param g  n decision values (all of one sign).
/// \param t  n targets in (0, 1).
/// \param n  the number of pairs (0: a is left as it is).
/// \param a  in: the starting point; out: the fit.
inline void fit_slope(const double* g, const double* t, Index n, double& a) {
  if (n == 0) return;
  const auto objective = [&](double s) {
    double F = 0.0;
    for (Index i = 0; i < n; ++i) {
      const double z = s * g[i];
      F += z >= 0.0 ? t[i] * z + std::log1p(std::exp(-z)) : (t[i] - 1.0) * z + std::log1p(std::exp(z));
    }
    return F;
  };
  double s = std::isfinite(a) && a <= 0.0 ? a : 0.0, F = objective(s);
  for (int it = 0; it < 100; ++it) {
    double h = 1e-12, grad = 0.0;  // 1e-12 keeps h > 0 (Lin et al.'s sigma)
    for (Index i = 0; i < n; ++i) {
      // p = 1 / (1 + exp(z)) and q = 1 - p, from one exp and without overflow.
      const double z = s * g[i], e = std::exp(-std::abs(z)), r = 1.0 / (1.0 + e);
      const double p = z >= 0.0 ? e * r : r, q = z >= 0.0 ? r : e * r;
      grad += g[i] * (t[i] - p);
      h += g[i] * g[i] * p * q;
    }
    if (s == 0.0 && grad <= 0.0) break;  // the constraint a <= 0 is active (F falls as a grows)
    double d = -grad / h;
    if (s + d > 0.0) d = -s;
    const double decrement = grad * d;  // < 0: a descent direction
    if (!(std::abs(decrement) > 1e-13 * (1.0 + std::abs(F)))) break;  // converged (quadratically)
    double step = 1.0, Fn = F;
    while (step >= 1e-10) {
      Fn = objective(s + step * d);
      if (Fn < F + 1e-4 * step * decrement) break;
      step /= 2.0;
    }
    if (step < 1e-10) break;  // no further progress in double precision
    s += step * d;
    F = Fn;
  }
  a = s;
}

/// The two slopes of the two-class map fitted to pairs (f_i, y_i), y_i in {0, 1}, with Platt's
/// targets t_i = (N+ + 1) / (N+ + 2) for y_i = 1 and 1 / (N- + 2) for y_i = 0 (N+-: the
/// window's counts of each class). The map z = a_pos max(f, 0) + a_neg min(f, 0) is a logistic
/// regression without intercept on the two features (max(f, 0), min(f, 0)), which never are
/// nonzero together: its Hessian is diagonal and the fit is two independent 1-D fits
/// (fit_slope), on the pairs with f > 0 and those with f < 0 (pairs with f = 0 get P = 1/2).
/// \param f      n decision values.
/// \param y      n labels 0 / 1.
/// \param n      the number of pairs (>= 1).
/// \param slope  in: the starting point {a_pos, a_neg}; out: the fit.
inline void fit_platt(const double* f, const std::int32_t* y, Index n, double slope[2]) {
  double np = 0.0;
  for (Index i = 0; i < n; ++i) np += y[i] == 1 ? 1.0 : 0.0;
  const double nm = static_cast<double>(n) - np;
  const double hi = (np + 1.0) / (np + 2.0), lo = 1.0 / (nm + 2.0);
  thread_local std::vector<double> g, t;
  for (int side = 0; side < 2; ++side) {
    g.clear();
    t.clear();
    for (Index i = 0; i < n; ++i)
      if (side == 0 ? f[i] > 0.0 : f[i] < 0.0) {
        g.push_back(f[i]);
        t.push_back(y[i] == 1 ? hi : lo);
      }
    fit_slope(g.data(), t.data(), static_cast<Index>(g.size()), slope[side]);
  }
}

/// The inverse temperature a >= 0 of P = softmax(a f) fitted to pairs (f_i, y_i) over c
/// classes: minimises sum_i [lse(a f_i) - a q_i . f_i], convex in a, by safeguarded Newton
/// steps. Targets q_i are Platt's smoothing for c classes: (N_y + 1) / (N_y + 2) on the label
/// y and 1 / ((N_y + 2) (c - 1)) on each other class (N_y: pairs of class y), which is Platt's
/// for c = 2 and keeps a finite when the data are separable.
/// \param F   n x c decision values, row-major.
/// \param y   n labels in [0, c).
/// \param n   the number of pairs (>= 1).
/// \param c   classes (>= 3).
/// \param a   in: the starting point; out: the fit.
inline void fit_temperature(const double* F, const std::int32_t* y, Index n, Index c, double& a) {
  std::vector<double> count(static_cast<std::size_t>(c), 0.0);
  for (Index i = 0; i < n; ++i) count[static_cast<std::size_t>(y[i])] += 1.0;
  // Value, slope and curvature of the objective at a.
  const auto eval = [&](double s, double& g, double& h) {
    double L = 0.0;
    g = h = 0.0;
    for (Index i = 0; i < n; ++i) {
      const double* f = F + i * c;
      const double Ny = count[static_cast<std::size_t>(y[i])];
      const double qy = (Ny + 1.0) / (Ny + 2.0), qo = 1.0 / ((Ny + 2.0) * static_cast<double>(c - 1));
      double m = -std::numeric_limits<double>::infinity(), qf = 0.0;
      for (Index k = 0; k < c; ++k) {
        m = (std::max)(m, s * f[k]);
        qf += (k == y[i] ? qy : qo) * f[k];
      }
      double z = 0.0, ef = 0.0, ef2 = 0.0;
      for (Index k = 0; k < c; ++k) {
        const double e = std::exp(s * f[k] - m);
        z += e;
        ef += e * f[k];
        ef2 += e * f[k] * f[k];
      }
      ef /= z;
      ef2 /= z;
      L += m + std::log(z) - s * qf;
      g += ef - qf;
      h += (std::max)(0.0, ef2 - ef * ef);
    }
    return L;
  };
  double s = std::isfinite(a) && a >= 0.0 ? a : 1.0, g = 0.0, h = 0.0;
  double L = eval(s, g, h);
  for (int it = 0; it < 100; ++it) {
    if (s == 0.0 && g >= 0.0) break;  // the constraint a >= 0 is active
    double d = h > 0.0 ? -g / h : (g < 0.0 ? 1.0 : -s);
    if (s + d < 0.0) d = -s;
    if (!(std::abs(g * d) > 1e-14 * (1.0 + std::abs(L)))) break;
    double step = 1.0, gn = 0.0, hn = 0.0, Ln = L;
    while (step >= 1e-10) {
      Ln = eval(s + step * d, gn, hn);
      if (Ln < L + 1e-4 * step * g * d) break;
      step /= 2.0;
    }
    if (step < 1e-10) break;
    s += step * d;
    L = Ln;
    g = gn;
    h = hn;
  }
  a = s;
}

/// Online Platt scaling of a learner's decision values (the file comment): a window of the
/// last kWindow prequential pairs and the map last fitted on it.
class PlattCalibration {
 public:
  static constexpr Index kWindow = 1024;
  static constexpr Index kRefitEvery = 1024;

  /// Starts empty (not fitted) for a learner with these outputs and classes.
  /// \param n_outputs  the learner's decision values per example (1 for two classes, else c).
  /// \param n_classes  c; recorded labels are class indices 0 .. c-1.
  void reset(Index n_outputs, Index n_classes) {
    m_k = n_outputs;
    m_c = n_classes;
    m_f.clear();
    m_y.clear();
    m_next = 0;
    m_seen = 0;
    m_map = ProbabilityMap{};
    m_map.a_pos = m_map.a_neg = 0.0;  // the fits start from P = 1/2
    m_map.a = 1.0;
  }

  /// Whether a map has been fitted (at least one pair recorded).
  bool fitted() const { return m_seen > 0; }
  /// Pairs recorded so far (the window holds the last min(seen, kWindow)).
  std::int64_t seen() const { return m_seen; }
  /// The map last fitted (valid when fitted()).
  const ProbabilityMap& map() const { return m_map; }
  /// Pairs in the window, and its decision values (row-major, n_outputs per pair) and labels,
  /// in ring order: once the window is full the oldest pair is at seen() % kWindow.
  Index size() const { return static_cast<Index>(m_y.size()); }
  const std::vector<double>& window_f() const { return m_f; }
  const std::vector<std::int32_t>& window_y() const { return m_y; }

  /// Records one prequential pair: the decision values f (n_outputs) of an example scored
  /// before learning it, and its class y; refits on the schedule of the file comment.
  /// \param f  n_outputs decision values.
  /// \param y  the example's class index.
  void record(const double* f, std::int32_t y) {
    const std::size_t k = static_cast<std::size_t>(m_k);
    if (m_y.size() < static_cast<std::size_t>(kWindow)) {
      m_f.insert(m_f.end(), f, f + k);
      m_y.push_back(y);
    } else {
      std::copy(f, f + k, m_f.begin() + static_cast<std::ptrdiff_t>(m_next * m_k));
      m_y[static_cast<std::size_t>(m_next)] = y;
    }
    m_next = (m_next + 1) % kWindow;
    ++m_seen;
    const bool due = m_seen <= kRefitEvery ? (m_seen & (m_seen - 1)) == 0 : m_seen % kRefitEvery == 0;
    if (due) refit();
  }

  /// Fits the map on the window now (record() does it on its schedule).
  void refit() {
    const Index n = size();
    if (n == 0) return;
    if (m_k == 1) {
      double slope[2] = {m_map.a_pos, m_map.a_neg};
      fit_platt(m_f.data(), m_y.data(), n, slope);
      m_map.a_pos = slope[0];
      m_map.a_neg = slope[1];
    } else {
      fit_temperature(m_f.data(), m_y.data(), n, m_k, m_map.a);
    }
  }

  /// The calibration of a model mixed from models that all continued from one model
  /// (iterative parameter mixing): `base`'s pairs, then the pairs each of `parts` recorded
  /// after base (the newest min(seen - base's seen, window) of its window), pooled as if the
  /// parts had learned their examples in step: the j-th newest pair of every part before the
  /// (j-1)-th newest of any, ties in the order of `parts`. The window keeps the newest
  /// kWindow, and the map is refitted on it. One part gives that part's window.
  /// \param base   the calibration every part continued from, or null (an empty one).
  /// \param parts  calibrations of the same outputs and classes as this one.
  /// \return the pooled calibration (this one is not changed).
  /// \throws std::invalid_argument on a part or base of other outputs or classes.
  PlattCalibration pooled(const PlattCalibration* base, const std::vector<const PlattCalibration*>& parts) const {
    const auto same = [&](const PlattCalibration& c) {
      detail::require(c.m_k == m_k && c.m_c == m_c, "pool_calibration: a calibration of other outputs or classes");
    };
    PlattCalibration out;
    out.reset(m_k, m_c);
    if (base) {
      same(*base);
      out = *base;
    }
    const std::int64_t before = base ? base->m_seen : 0;
    std::vector<Index> fresh;
    Index most = 0;
    for (const PlattCalibration* c : parts) {
      same(*c);
      const std::int64_t after = (std::max)(c->m_seen - before, std::int64_t{0});
      fresh.push_back(static_cast<Index>((std::min)(after, static_cast<std::int64_t>(c->size()))));
      most = (std::max)(most, fresh.back());
    }
    for (Index age = most; age >= 1; --age)  // age 1: a part's newest pair
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (fresh[i] >= age) {
          const PlattCalibration& c = *parts[i];
          // the ring's newest pair is at m_next - 1 (before the window fills, m_next == size)
          const Index slot = (c.m_next - age + kWindow) % kWindow;
          out.record(c.m_f.data() + slot * m_k, c.m_y[static_cast<std::size_t>(slot)]);
        }
    out.refit();
    return out;
  }

  /// Writes the "platt.*" fields (nothing for a calibration that never recorded a pair).
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    if (m_seen == 0) return;
    fm.set_int("platt.seen", m_seen);
    fm.set_int("platt.next", m_next);
    fm.set_matrix("platt.f", Eigen::Map<const RowMatrix>(m_f.data(), size(), m_k));
    fm.set_ints("platt.y", std::vector<std::int64_t>(m_y.begin(), m_y.end()));
    if (m_k == 1) {
      fm.set("platt.a_pos", m_map.a_pos);
      fm.set("platt.a_neg", m_map.a_neg);
    } else {
      fm.set("platt.a", m_map.a);
    }
  }

  /// Reads what save() wrote; a file without "platt.*" fields (older, or nothing recorded)
  /// leaves the calibration empty (reset() first).
  /// \param fm  a model file's fields.
  /// \throws std::runtime_error on inconsistent fields.
  void load(const FieldMap& fm) {
    if (!fm.has("platt.seen")) return;
    m_seen = fm.get_i64("platt.seen");
    m_next = fm.get_i64("platt.next");
    const std::vector<std::int64_t> y = fm.get_ints("platt.y");
    const Index n = static_cast<Index>(y.size());
    if (m_seen < 1 || n < 1 || n > kWindow || n != (std::min)(m_seen, static_cast<std::int64_t>(kWindow)) ||
        m_next < 0 || m_next >= kWindow || m_next != m_seen % kWindow)
      detail::corrupt("invalid calibration window");
    const RowMatrix F = fm.get_matrix("platt.f", n, m_k);
    if (!detail::all_finite(F.data(), F.size())) detail::corrupt("invalid calibration window");
    m_f.assign(F.data(), F.data() + F.size());
    m_y.resize(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
      if (y[static_cast<std::size_t>(i)] < 0 || y[static_cast<std::size_t>(i)] >= m_c)
        detail::corrupt("invalid calibration labels");
      m_y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(y[static_cast<std::size_t>(i)]);
    }
    if (m_k == 1) {
      m_map.a_pos = fm.get_f64("platt.a_pos");
      m_map.a_neg = fm.get_f64("platt.a_neg");
    } else {
      m_map.a = fm.get_f64("platt.a");
    }
    const bool ok = m_k == 1 ? std::isfinite(m_map.a_pos) && std::isfinite(m_map.a_neg) && m_map.a_pos <= 0.0 &&
                                   m_map.a_neg <= 0.0
                             : std::isfinite(m_map.a) && m_map.a >= 0.0;
    if (!ok) detail::corrupt("invalid calibration parameters");
  }

 private:
  Index m_k = 1, m_c = 2;
  std::vector<double> m_f;          // window x n_outputs, row-major, ring order
  std::vector<std::int32_t> m_y;    // window labels
  Index m_next = 0;                 // the ring slot the next pair overwrites
  std::int64_t m_seen = 0;
  ProbabilityMap m_map;
};

}  // namespace budgetkernel
