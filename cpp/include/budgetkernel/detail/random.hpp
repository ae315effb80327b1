#pragma once
/// \file detail/random.hpp
/// Platform-independent draws from std::mt19937_64.
///
/// std::mt19937_64's output sequence is fixed by the C++ standard, but the distributions
/// (std::uniform_int_distribution, std::uniform_real_distribution) are not: libstdc++,
/// libc++ and MSVC turn the same engine output into different numbers. These helpers map
/// the raw 64-bit outputs to indices and doubles with a fully specified algorithm, so a
/// fixed seed reproduces a run on every platform.

#include "../common.hpp"

#include <cstdint>
#include <limits>
#include <random>

namespace budgetkernel {
namespace detail {

/// High and low 64-bit halves of the exact 128-bit product a * b (portable, no __int128).
inline void mul_64x64_128(std::uint64_t a, std::uint64_t b, std::uint64_t& hi, std::uint64_t& lo) {
  const std::uint64_t mask = 0xFFFFFFFFULL;
  const std::uint64_t a0 = a & mask, a1 = a >> 32, b0 = b & mask, b1 = b >> 32;
  const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const std::uint64_t mid = (p00 >> 32) + (p01 & mask) + (p10 & mask);  // < 3 * 2^32, no overflow
  hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  lo = (mid << 32) | (p00 & mask);
}

/// Uniform integer in [0, n) from a 64-bit engine, exactly unbiased: Lemire's
/// multiply-shift with rejection ("Fast random integer generation in an interval",
/// ACM TOMACS 2019). Takes the high 64 bits of x * n; draws again only when the low
/// half falls below 2^64 mod n (probability < n / 2^64). Deterministic given the engine's
/// output, hence identical on every platform.
/// \throws std::invalid_argument when n < 1.
template <class Engine>
Index uniform_index(Engine& rng, Index n) {
  static_assert((Engine::min)() == 0 && (Engine::max)() == (std::numeric_limits<std::uint64_t>::max)(),
                "uniform_index needs an engine with full 64-bit output, e.g. std::mt19937_64");
  require(n >= 1, "uniform_index: n must be >= 1");
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  std::uint64_t hi, lo;
  mul_64x64_128(static_cast<std::uint64_t>(rng()), range, hi, lo);
  if (lo < range) {
    const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod n
    while (lo < threshold) mul_64x64_128(static_cast<std::uint64_t>(rng()), range, hi, lo);
  }
  return static_cast<Index>(hi);
}

/// Uniform double in [0, 1) with 53 random bits: (x >> 11) * 2^-53.
template <class Engine>
double uniform01(Engine& rng) {
  static_assert((Engine::min)() == 0 && (Engine::max)() == (std::numeric_limits<std::uint64_t>::max)(),
                "uniform01 needs an engine with full 64-bit output, e.g. std::mt19937_64");
  return static_cast<double>(static_cast<std::uint64_t>(rng()) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace detail
}  // namespace budgetkernel
