#pragma once
/// \file budget/merge_solver.hpp
/// The 1-D problem of merging two SVs (BSGD paper, section 4.3, eqs. 20-22): the position h
/// of the merged point, its coefficient and the weight degradation. Gaussian kernel only.
///
/// With k_mn = k(x_m, x_n) = exp(-s), s = gamma |x_m - x_n|^2, and z = h x_m + (1 - h) x_n
/// on the line through the pair (eq. 20):
///   k(x_m, z) = k_mn^{(1-h)^2} = exp(-s (1-h)^2),   k(x_n, z) = k_mn^{h^2} = exp(-s h^2),
///   alpha_z^(i) = alpha_m^(i) k(x_m, z) + alpha_n^(i) k(x_n, z)                  (eq. 22)
///   degradation = sum_i alpha_m^(i)^2 + alpha_n^(i)^2 + 2 alpha_m^(i) alpha_n^(i) k_mn - alpha_z^(i)^2
/// (the least-squares residual of eq. 22: ||u - alpha_z phi(z)||^2 = ||u||^2 - alpha_z^2 since
/// <u, phi(z)> = alpha_z and ||phi(z)|| = 1).
///
/// The 1-D search of eq. (21) is solved exactly: on each interval where g(h) = A k^{(1-h)^2} +
/// B k^{h^2} is unimodal (derived at merge_inside), g' = 0 in log form is monotone and is
/// solved to ~1e-13 relative in h (kMergeTol; by a certified Chebyshev step from a bracket end
/// where it needs no exp, else safeguarded Newton/bisection). That is the paper's
/// golden-section maximiser carried to full precision (golden section on g stalls near
/// sqrt(eps), the top being flat) and free of the exps that underflow for distant points.
/// The scalar exps are detail::fast_exp / fast_expm1 (rbf_exp.hpp). Derivations:
/// docs/derivations.md, "Merging two Gaussian SVs".

#include "../common.hpp"
#include "../detail/rbf_exp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace budgetkernel {
namespace detail {

/// exp(-s t^2) = k^{t^2} with k = exp(-s); exactly 1 when t == 0 or s == 0 (no 0 * inf NaN
/// for k == 0, i.e. s == inf).
inline double merge_kpow(double s, double t) { return (t == 0.0 || s == 0.0) ? 1.0 : fast_exp(-s * t * t); }

/// s = -ln k: +inf for k <= 0 (too far apart to matter), 0 for k >= 1 (identical points).
inline double merge_s_from_k(double k) { return k <= 0.0 ? std::numeric_limits<double>::infinity() : k >= 1.0 ? 0.0 : -std::log(k); }

inline double merge_logistic(double x) { return 1.0 / (1.0 + fast_exp(-x)); }

/// ln(a/b) for a, b > 0, skipping the log of an argument equal to 1 (binary stores pass the
/// class weights scaled so that the larger one is 1, see merge_h_s): then exactly ln of the other.
inline double merge_log_ratio(double a, double b) { return (a == 1.0 ? 0.0 : std::log(a)) - (b == 1.0 ? 0.0 : std::log(b)); }

/// The accuracy the 1-D solves of eq. (21) stop at early: h to ~1e-13 relative (see
/// merge_solve_decreasing; the degradation is then evaluated exactly at that h).
inline constexpr double kMergeTol = 1e-13;

/// Root of a function decreasing on [lo, hi] with f(lo) >= 0 >= f(hi) (the end values are
/// never evaluated, they may be infinite), from x. `f(x, fx, dfx, final2)` gives the value, the
/// derivative and final2 >= 0: a Newton step from x no longer than sqrt(final2) lands within
/// the caller's accuracy of the root, so it is returned without another evaluation. (Newton's
/// error after a step dx from x is |F''(xi)| (x* - x)^2 / (2 |F'(x)|), xi between x and the root
/// x*: the callers bound |F''| near x; by Kantorovich's theorem x* lies within ~|dx| of x once
/// that bound times |dx| is small against |F'(x)|.) Otherwise Newton steps, replaced by
/// bisection when they leave the bracket or shrink too slowly, to ~1e-15 in x. From the
/// callers' starting points (merge_chebyshev's step) one evaluation usually suffices
/// (docs/derivations.md, "Merging two Gaussian SVs").
template <class Fn>
double merge_solve_decreasing(const Fn& f, double lo, double hi, double x) {
  if (!(hi > lo)) return lo;
  if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
  double step_old = hi - lo, step = step_old;
  for (int it = 0; it < 300; ++it) {
    double fx = 0.0, dfx = 0.0, final2 = 0.0;
    f(x, fx, dfx, final2);
    if (fx == 0.0) return x;
    if (fx > 0.0) lo = x; else hi = x;
    const double tol = 1e-15 * (std::max)(1.0, std::fabs(x));
    if (hi - lo <= tol) return 0.5 * (lo + hi);
    const double dx = fx / dfx;
    double xn = x - dx;
    const bool in = xn > lo && xn < hi;
    // A Newton correction below the resolution means x is the root to rounding. (It cannot be
    // accepted as a step: it may round to x itself, i.e. onto the bracket end just moved.)
    if (std::fabs(dx) <= tol) return in ? xn : x;
    if (in && dx * dx <= final2) return xn;
    if (!in || std::fabs(xn - x) > 0.5 * std::fabs(step_old)) xn = 0.5 * (lo + hi);
    step_old = step;
    step = xn - x;
    if (std::fabs(step) <= tol) return xn;
    x = xn;
  }
  return x;
}

/// A root of F from a point x where F, F' and F'' are known without an exp (the free end of a
/// bracket, see the callers): Chebyshev's step y = d (1 - F'' d / (2 F')), d = -F/F', into y.
/// Returns whether |x + y - x*| <= tol is certain for the root x* nearest x, given m3 >= |F'''|
/// between x and x + 1.03 d. Why: Taylor's theorem at x gives 0 = F + F' y* + F'' y*^2/2 + R,
/// |R| <= m3 |y*|^3/6, for y* = x* - x; with c2 = |F''|/(2|F'|), c2 |d| <= 0.01 and
/// m3 d^2 <= 0.06 |F'| this puts |y*| within 1.03 |d|, and then
/// |y* - y| <= |d|^3 (2.2 c2^2 + 0.19 m3/|F'|). From the free ends of the callers that is
/// ~(2 s e)^4 / 2, e the end's e^{-|u|}: below kMergeTol for most merges, which then take
/// no log and no exp of the solve (just k_mn's and one to map the step back).
inline bool merge_chebyshev(double f, double df, double d2, double m3, double tol, double& y) {
  const double d = -f / df, ad = std::fabs(d), adf = std::fabs(df), c2 = std::fabs(d2) / (2.0 * adf);
  y = d * (1.0 - d2 * d / (2.0 * df));
  return ad <= 0.005 && c2 * ad <= 0.01 && m3 * ad * ad <= 0.06 * adf &&
         ad * ad * ad * (2.2 * c2 * c2 + 0.19 * m3 / adf) <= tol;
}

/// Largest excess t of the opposite-sign case: for P >= N > 0, the t >= 0 maximising
/// P exp(-s t^2) - N exp(-s (1+t)^2), i.e. eq. (21) with h = 1 + t beyond the dominant end.
/// Its derivative has the sign of ln(N/P) + ln((1+t)/t) - s(1+2t), strictly decreasing from
/// +inf, so the maximiser is unique. Solved in w = ln(1 + 1/t) (t = 1/expm1(w), 1 + 2t =
/// coth(w/2)), where that is F(w) = -l - w + s coth(w/2), l = ln(N/P) <= 0: a line plus a term
/// flat away from w = 0, as merge_inside's F (in t, the log singularity at 0 costs Newton
/// extra evaluations, each with a log, and its absolute stopping rule loses relative accuracy
/// for small t). With p = expm1(w) = 1/t: coth(w/2) = 1 + 2/p, F'(w) = -1 - (s/2) csch^2(w/2) =
/// -1 - 2 s t (1 + t). The root is w* = -l + s coth(w*/2) and 1 <= coth(w/2) <= 1 + 2/w, so
/// it lies in [s - l, s - l + 2s/(s - l)]. w >= ln(1 + 1e-8), i.e. t <= 1e8, binds only for
/// s < ~1e-16, where k_mn already rounds to 1.
inline double merge_beyond(double P, double N, double s) {
  if (std::isinf(s)) return 0.0;
  static const double w_cap = std::log1p(1e-8);
  // Free start: the bracket's lower end w_a = s - l, where t_a = 1/expm1(w_a) = N k/(P - N k)
  // (k = k_mn = e^{-s}; no cancellation for N k <= P/2) and F(w_a) = 2 s t_a; F''' =
  // -2 s t (1+t) (1 + 6t (1+t)) decreases in size with w, so its value at w_a bounds it up to
  // the root (to the right).
  const double k = fast_exp(-s);
  const bool free_start = 2.0 * N * k <= P;
  double y = 0.0;
  if (free_start) {
    const double t = N * k / (P - N * k), tt = t * (1.0 + t);
    if (merge_chebyshev(2.0 * s * t, -1.0 - 2.0 * s * tt, 2.0 * s * tt * (1.0 + 2.0 * t), 2.0 * s * tt * (1.0 + 6.0 * tt),
                        kMergeTol / (1.0 + t), y))
      return t / (1.0 + (1.0 + t) * fast_expm1(y));  // 1/expm1(w_a + y)
  }
  const double l = merge_log_ratio(N, P);
  auto F_at = [&](double w, double t, double& f, double& df, double& final2) {
    f = -l - w + s * (1.0 + 2.0 * t);
    df = -1.0 - 2.0 * s * t * (1.0 + t);
    // F'' = (s/2) csch^2(w/2) coth(w/2) = 2 s t (1+t) (1+2t) decreases in w; within rho =
    // min(w, 1)/4 of w, p = 1/t is at least p/2 (expm1' = 1 + p), so there |F''|/2 <=
    // 2 s t (1+2t)(1+4t). Accuracy: |dt|/t = (1+t) |dw| <= kMergeTol.
    const double rho = 0.25 * (std::min)(w, 1.0), c2 = 2.0 * s * t * (1.0 + 2.0 * t) * (1.0 + 4.0 * t);
    final2 = (std::min)(0.25 * rho * rho, kMergeTol / (1.0 + t) * std::fabs(df) / (1.11 * c2));
  };
  auto F = [&](double w, double& f, double& df, double& final2) { F_at(w, 1.0 / fast_expm1(w), f, df, final2); };
  const double lo = (std::max)(s - l, w_cap), hi = (std::max)(s - l + 2.0 * s / (s - l), w_cap);
  double w0 = std::numeric_limits<double>::quiet_NaN();
  if (free_start) {
    w0 = s - l + y;
  } else if (P > N) {  // a Halley step from w = -l, where t = N/(P - N) needs no exp
    const double t = N / (P - N);
    double f = 0.0, df = 0.0, final2 = 0.0;
    F_at(-l, t, f, df, final2);
    const double d2 = 2.0 * s * t * (1.0 + t) * (1.0 + 2.0 * t);
    w0 = -l - 2.0 * f * df / (2.0 * df * df - f * d2);
  }
  return 1.0 / fast_expm1(merge_solve_decreasing(F, lo, hi, w0));
}

/// Same-sign case A, B > 0: the maximiser of A k^{(1-h)^2} + B k^{h^2} lies in (0, 1).
/// g'(h) has the sign of ln(A/B) - logit(h) + s(2h - 1). Solved in u = logit(h), where it is
/// F(u) = c - u + s tanh(u/2), c = ln(A/B), F'(u) = -1 + (s/2) sech^2(u/2): a line plus a
/// bounded term, so Newton needs few steps from anywhere, where in h the log singularity at
/// 0 and 1 made it overshoot and fall back to bisection; most solves need no evaluation at
/// all (merge_chebyshev from the free end below). Every root lies in [c - s, c + s] (|tanh| < 1):
///  - s <= 2 (k >= e^-2): F decreases, one maximum (unimodal);
///  - s > 2: F decreases on (-inf, -u*] and [u*, inf) and increases between, u* =
///    2 acosh(sqrt(s/2)) (F'(+-u*) = 0), so g may be bimodal (one mode near each point); each
///    branch holds at most one maximum and both are solved and compared. (A golden section
///    over all of [0, 1] can stop on the lower mode here.)
inline double merge_inside(double A, double B, double s) {
  if (std::isinf(s)) return A > B ? 1.0 : 0.0;
  if (s <= 2.0 && A == B) return 0.5;  // c = 0 is the root (g is symmetric about 1/2)
  // Free start: the bracket's end u_a = c + sigma s away from 0 (sigma = sign c), where
  // e = e^{-|u_a|} = (min(A, B)/max(A, B)) k, k = k_mn = e^{-s}, and F(u_a) = -sigma 2 s e/(1+e);
  // F''' = (s/4)(2 sech^2 tanh^2 - sech^4)(u/2), so |F'''(v)| <= 2 s e^{-|v|}, which grows by
  // at most e^{0.01} towards the root.
  const double sigma = A < B ? -1.0 : 1.0;
  const double e_a = (std::min)(A, B) / (std::max)(A, B) * fast_exp(-s), inv_a = 1.0 / (1.0 + e_a);
  const double sech2_a = 4.0 * e_a * inv_a * inv_a, th_a = sigma * (1.0 - e_a) * inv_a;  // of u_a / 2
  double y = 0.0;
  const bool certain = merge_chebyshev(-sigma * 2.0 * s * e_a * inv_a, -1.0 + 0.5 * s * sech2_a,
                                       -0.5 * s * sech2_a * th_a, 2.03 * s * e_a, kMergeTol, y);
  if (certain && s <= 2.0) {  // unimodal: the only root; |u| = |u_a| + sigma y
    const double eu = e_a * fast_exp(-sigma * y);
    return sigma < 0.0 ? eu / (1.0 + eu) : 1.0 / (1.0 + eu);
  }
  const double c = merge_log_ratio(A, B);
  // F from e = exp(-|u|): tanh(u/2) = (1 - e)/(1 + e) with the sign of u (one exp, cheaper
  // than tanh's expm1). Its absolute error stays at rounding level, which is what a
  // root of F needs; sech^2(u/2) = 4e/(1 + e)^2.
  auto F_at = [&](double u, double e, double& f, double& df, double& final2) {
    const double inv = 1.0 / (1.0 + e);
    const double th = std::copysign((1.0 - e) * inv, u);
    f = c - u + s * th;
    df = -1.0 + 2.0 * s * e * inv * inv;
    // |F''(v)| = (s/2) sech^2(v/2) |tanh(v/2)| <= 2 s e^{-|v|} <= 2.02 s e for |v - u| <= 0.01.
    // Accuracy: |dh|/h = (1 - h) |du| <= kMergeTol.
    final2 = (std::min)(2.5e-5, kMergeTol * std::fabs(df) / (1.12 * s * e));
  };
  auto F = [&](double u, double& f, double& df, double& final2) { F_at(u, fast_exp(-std::fabs(u)), f, df, final2); };
  auto Fv = [&](double u) {
    double f = 0.0, df = 0.0, final2 = 0.0;
    F(u, f, df, final2);
    return f;
  };
  auto g = [&](double h) { return A * merge_kpow(s, 1.0 - h) + B * merge_kpow(s, h); };
  const double lo = c - s, hi = c + s, u0 = c + sigma * s + y;
  if (s <= 2.0) return merge_logistic(merge_solve_decreasing(F, lo, hi, u0));
  const double us = 2.0 * std::acosh(std::sqrt(0.5 * s));
  const bool left = Fv(-us) < 0.0, right = Fv(us) > 0.0;
  const double h1 = merge_logistic(-us), h2 = merge_logistic(us);
  if (!left && !right) return g(h1) >= g(h2) ? h1 : h2;  // only reachable through rounding
  const double hl = left ? merge_logistic(merge_solve_decreasing(F, lo, -us, u0)) : 0.0;
  const double hr = right ? merge_logistic(merge_solve_decreasing(F, us, hi, u0)) : 1.0;
  if (left && right) return g(hl) >= g(hr) ? hl : hr;
  return left ? hl : hr;
}

/// argmax over h in R of g(h) = A k^{(1-h)^2} + B k^{h^2} (eq. 21 with its two class sums),
/// k = exp(-s), for A + B >= 0.
///  - A, B > 0: h in (0, 1) (merge_inside).
///  - A > 0 > B (then A >= |B|): g increases on [0, 1] and the maximum lies beyond x_m, h > 1
///    (eq. 21's weight a = A/(A+B) > 1); B > 0 > A mirrors it to h < 0 (a < 0).
///  - s == 0 (identical points): any h is optimal; returns 1 (z = x_m).
/// With A + B >= 0, g(h) + g(1-h) = (A + B)(k^{h^2} + k^{(1-h)^2}) >= 0, so max g >= max(-g):
/// the maximiser of g also maximises g^2.
inline double merge_argmax(double A, double B, double s) {
  if (!(s > 0.0)) return 1.0;
  if (A > 0.0 && B > 0.0) return merge_inside(A, B, s);
  if (A > 0.0) return B == 0.0 ? 1.0 : 1.0 + merge_beyond(A, -B, s);
  if (B > 0.0) return A == 0.0 ? 0.0 : -merge_beyond(B, -A, s);
  return 1.0;  // A = B = 0: g == 0
}

/// Class weights of eq. (21): A = sum_i alpha_m^(i)/(alpha_m^(i)+alpha_n^(i)),
/// B = sum_i alpha_n^(i)/(alpha_m^(i)+alpha_n^(i)). A class with
/// |alpha_m^(i)+alpha_n^(i)| <= 1e-12 (|alpha_m^(i)| + |alpha_n^(i)|) is skipped: its M^(i)
/// (section 4.3) is undefined (this includes classes where both coefficients are 0).
/// Returns the number of classes used (then A + B equals it).
template <class RM, class RN>
int merge_eq21_weights(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double& A, double& B) {
  A = B = 0.0;
  int used = 0;
  for (Index i = 0; i < am.size(); ++i) {
    const double p = am(i), q = an(i), sum = p + q;
    if (std::fabs(sum) <= 1e-12 * (std::fabs(p) + std::fabs(q))) continue;
    A += p / sum;
    B += q / sum;
    ++used;
  }
  return used;
}

/// Optimal h of the pair (m, n) given s = -ln k_mn (see merge_h).
template <class RM, class RN>
double merge_h_s(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double s) {
  if (am.size() == 1) {
    // Binary: eq. (21) scaled by (alpha_m + alpha_n)/alpha_n > 0 (or by the mirror when
    // |alpha_m| > |alpha_n|), which keeps the maximiser and stays defined at alpha_m + alpha_n = 0,
    // where maximising alpha_z^2 = alpha_m^2 (k^{(1-h)^2} - k^{h^2})^2 is the same problem.
    // Maximising eq. (21) IS minimising the degradation here: the degradation is
    // const - alpha_z^2 with alpha_z = (alpha_m + alpha_n) g(h), and max g >= max(-g).
    const double a = am(0), b = an(0);
    if (std::fabs(a) <= std::fabs(b)) return b == 0.0 ? 1.0 : merge_argmax(a / b, 1.0, s);
    return merge_argmax(1.0, b / a, s);
  }
  double A = 0.0, B = 0.0;
  if (merge_eq21_weights(am, an, A, B) > 0) return merge_argmax(A, B, s);
  // No class defines M^(i): every alpha_n^(i) ~ -alpha_m^(i), so sum_i alpha_z^(i)^2 is
  // (to 1e-12 relative) sum_i alpha_m^(i)^2 (k^{(1-h)^2} - k^{h^2})^2, maximised at the two
  // mirror points h = 1 + t and h = -t; maximise sum_i alpha_z^(i)^2 directly between them.
  const double t = merge_beyond(1.0, 1.0, s);
  auto q = [&](double h) {
    const double k1 = merge_kpow(s, 1.0 - h), k2 = merge_kpow(s, h);
    double sum = 0.0;
    for (Index i = 0; i < am.size(); ++i) sum += (am(i) * k1 + an(i) * k2) * (am(i) * k1 + an(i) * k2);
    return sum;
  };
  return q(1.0 + t) >= q(-t) ? 1.0 + t : -t;
}

/// Optimal h of eq. (21) for merging coefficient rows alpha_m, alpha_n at kernel value k_mn
/// (binary: the exact minimiser of the degradation; multi-class: eq. (21) as in the paper).
template <class RM, class RN>
double merge_h(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double k) {
  return merge_h_s(am, an, merge_s_from_k(k));
}

/// k(x_m, z), k(x_n, z) (eq. 20) and the three pair terms of the degradation,
///   u1 = 1 - k(x_m,z)^2,  u2 = 1 - k(x_n,z)^2,  c12 = k_mn - k(x_m,z) k(x_n,z),
/// free of cancellation, from four independent scalar exps (two fast_exp_expm1, an expm1 and
/// k_mn = e^{-s}): with k(x_m,z) = e^a, a = -s (1-h)^2, u1 = -expm1(a) (2 + expm1(a)) (likewise
/// u2), and k(x_m,z) k(x_n,z) = k^{(1-h)^2 + h^2} = k_mn e^x, x = 2 s h (1-h), so
/// c12 = -k_mn expm1(x).
struct MergeTerms {
  double k_mz = 1.0, k_nz = 1.0, u1 = 0.0, u2 = 0.0, c12 = 0.0;
};
inline MergeTerms merge_terms(double s, double h) {
  MergeTerms r;
  double em = 0.0, en = 0.0;
  if (s != 0.0 && h != 1.0) fast_exp_expm1(-s * (1.0 - h) * (1.0 - h), r.k_mz, em);
  if (s != 0.0 && h != 0.0) fast_exp_expm1(-s * h * h, r.k_nz, en);
  r.u1 = -em * (2.0 + em);
  r.u2 = -en * (2.0 + en);
  const double x = 2.0 * s * h * (1.0 - h);
  const double k = merge_kpow(s, 1.0);
  r.c12 = !std::isinf(s) && std::fabs(x) < 1.0 ? -k * fast_expm1(x) : k - r.k_mz * r.k_nz;
  return r;
}

/// Degradation ||alpha_m phi(x_m) + alpha_n phi(x_n) - alpha_z phi(z)||^2 summed over classes,
/// for z = h x_m + (1-h) x_n and alpha_z from eq. (22), given the pair terms t = merge_terms(s, h),
/// s = -ln k_mn. Evaluated as sum_i alpha_m^(i)^2 u1 + alpha_n^(i)^2 u2 + 2 alpha_m^(i) alpha_n^(i) c12,
/// which equals alpha_m^2 + alpha_n^2 + 2 alpha_m alpha_n k_mn - alpha_z^2 without its cancellation.
template <class RM, class RN>
double merge_degradation(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, const MergeTerms& t) {
  double d = 0.0;
  for (Index i = 0; i < am.size(); ++i) {
    const double p = am(i), q = an(i);
    d += p * p * t.u1 + q * q * t.u2 + 2.0 * p * q * t.c12;
  }
  return (std::max)(0.0, d);
}

/// merge_degradation at (s, h).
template <class RM, class RN>
double merge_degradation_s(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double s, double h) {
  return merge_degradation(am, an, merge_terms(s, h));
}

/// merge_degradation_s with the kernel value k_mn instead of s.
template <class RM, class RN>
double merge_degradation(const Eigen::MatrixBase<RM>& am, const Eigen::MatrixBase<RN>& an, double k, double h) {
  return merge_degradation_s(am, an, merge_s_from_k(k), h);
}

}  // namespace detail
}  // namespace budgetkernel
