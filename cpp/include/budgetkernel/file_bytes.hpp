#pragma once
/// \file file_bytes.hpp
/// A model file's bytes from and to the disk: read whole, written atomically (a temporary
/// file renamed over the target).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace budgetkernel {

/// \param path  a file.
/// \return its whole content.
/// \throws std::runtime_error if it cannot be opened.
inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open model file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace detail {

/// The file a write to `p` lands in: p itself, or, for a symlink, the end of its chain of
/// links (relative links resolved against their own directory; a dangling link's target).
/// Gives up after 40 links (a loop), as the OS does, and then writes p itself.
inline std::filesystem::path write_target(std::filesystem::path p) {
  namespace fs = std::filesystem;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) return p;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return p;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p;
}

/// 64 bits for a temporary file's name: distinct across threads (a counter), processes and
/// runs (random_device, the clock and a stack address, in case random_device is a fixed
/// sequence on some platform), mixed by splitmix64's finaliser.
inline std::uint64_t temp_name_bits() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  int local = 0;
  std::uint64_t z = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  z ^= static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  z ^= static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&local));
  z += 0x9E3779B97F4A7C15ull * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace detail

/// Writes `bytes` to the file `path` so that it is always either what it was or all of
/// `bytes`, whatever else writes it at the same time or fails: through a new temporary file
/// of a unique name (".<name>.<16 hex digits>.tmp") in the target's directory, renamed over
/// the target with std::filesystem::rename (rename(2) on POSIX, MoveFileEx with
/// MOVEFILE_REPLACE_EXISTING with MSVC's library; atomic within one directory): written in
/// place, two writers could interleave, and a reader (or a failed write) see a truncated
/// model. A symlink at `path` is written through: its target gets the bytes. The
/// temporary file is removed on failure, leaving a file already at `path` as it was.
/// Not fsynced (standard C++ has no fsync): a crash of the machine right after the call can
/// still lose the new content, never mix old and new. (The Python save() fsyncs.)
/// \param path   the file to write (created or replaced).
/// \param bytes  its new content, e.g. FieldMap::to_bytes().
/// \throws std::runtime_error naming the path when the file cannot be written.
inline void write_file_bytes(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path target = detail::write_target(fs::path(path));
  fs::path tmp;
  for (int attempt = 0;; ++attempt) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(detail::temp_name_bits()));
    tmp = target.parent_path() / ("." + target.filename().string() + "." + hex + ".tmp");
    // 64 random bits make a clash practically impossible; the check only guards against a
    // broken random source (std::ofstream has no exclusive-create mode before C++23, and
    // fopen's "x" draws deprecation warnings from MSVC).
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(tmp, ec))) break;
    if (attempt == 100) throw std::runtime_error("cannot write model file '" + path + "': no free temporary name");
  }
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write model file '" + path + "'");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();  // flushes: a full disk shows here
    ok = !out.fail();
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, target, ec);
  if (!ok || ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("error while writing model file '" + path + "'" + (ec ? ": " + ec.message() : ""));
  }
}

}  // namespace budgetkernel
