#pragma once
/// \file io.hpp
/// The model file format shared by C++ and Python.
///
/// Layout (all little-endian):
///   magic "BKMODEL\0" (8 bytes) | u32 format version | u64 payload size | payload | u64 FNV-1a of payload
/// The payload is a sequence of named fields; each field is
///   u16 name length | name bytes | u8 type | u8 rank | u64 dims[rank] | data
/// with type 0 = f64, 1 = i64, 2 = bytes (rank 1). A learner writes every field it needs to
/// predict and to resume training; readers look fields up by name, so later learners add
/// fields without breaking the container. Everything read is checked: magic, version,
/// sizes, checksum, and each field's type and shape when a learner asks for it.
///
/// Parameter fields keep the keys of the first format version even where a Params field was
/// renamed since (files must stay byte-identical and old files must load). A key that differs
/// from its field: BOGD's "lambda" holds BOGDParams::lam. Enums are stored as their numbers
/// (the tables of detail/enum_names.hpp give their names): "kernel.type", "maintenance" (BSGD
/// and perceptron), "loss", "variant", "sampling", "tvm.merge". SPA's "force_sample" is
/// reserved: always written as 0, and a file with another value is refused (sparse_pa.hpp).

#include "common.hpp"
#include "stop_poll.hpp"
#include "sv_store.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <system_error>
#include <type_traits>  // std::is_trivially_copyable_v (put_raw); Eigen/Core includes it only optionally
#include <vector>

namespace budgetkernel {

/// The first 8 bytes of every model file.
inline constexpr char model_magic[8] = {'B', 'K', 'M', 'O', 'D', 'E', 'L', '\0'};
/// The container version this library writes, and the only one it reads.
inline constexpr std::uint32_t model_format_version = 1;

namespace detail {

inline bool little_endian() {
  const std::uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

template <class T>
void put_raw(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  if (!little_endian()) std::reverse(buf, buf + sizeof(T));
  out.append(buf, sizeof(T));
}

inline std::uint64_t fnv1a(const char* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

[[noreturn]] inline void corrupt(const std::string& what) { throw std::runtime_error("model file: " + what); }

/// The largest counter (examples, updates, steps, ...) a model file may hold: counting on from
/// it for 2^62 more steps cannot overflow (INT64_MAX loaded, then overflowed on the next step).
inline constexpr std::int64_t kMaxLoadedCount = std::int64_t{1} << 62;

}  // namespace detail

/// One named field of a model file.
struct Field {
  enum Type : std::uint8_t { F64 = 0, I64 = 1, Bytes = 2 };
  Type type = F64;
  std::vector<std::uint64_t> shape;
  std::vector<double> f64;
  std::vector<std::int64_t> i64;
  std::string bytes;

  /// Number of values; UINT64_MAX when the product of the shape overflows.
  std::uint64_t count() const {
    std::uint64_t n = 1;
    for (auto s : shape) {
      if (s != 0 && n > (std::numeric_limits<std::uint64_t>::max)() / s) return (std::numeric_limits<std::uint64_t>::max)();
      n *= s;
    }
    return n;
  }
};

/// A set of named fields: what a learner writes and reads back.
class FieldMap {
 public:
  /// Sets (or replaces) a float64 scalar field.
  /// \param name  the field's name.
  /// \param v     its value.
  void set(const std::string& name, double v) { scalar_f(name, v); }
  /// Sets (or replaces) an int64 scalar field.
  /// \param name  the field's name.
  /// \param v     its value.
  void set_int(const std::string& name, std::int64_t v) {
    Field f;
    f.type = Field::I64;
    f.i64 = {v};
    m_fields[name] = std::move(f);
  }
  /// Sets (or replaces) a bytes field.
  /// \param name  the field's name.
  /// \param v     its bytes (any content; strings need no terminator).
  void set_bytes(const std::string& name, std::string v) {
    Field f;
    f.type = Field::Bytes;
    f.shape = {v.size()};
    f.bytes = std::move(v);
    m_fields[name] = std::move(f);
  }
  /// A dense matrix, stored row-major.
  /// \param name  the field's name.
  /// \param m     the matrix (any Eigen expression).
  template <class M>
  void set_matrix(const std::string& name, const Eigen::MatrixBase<M>& m) {
    Field f;
    f.type = Field::F64;
    f.shape = {static_cast<std::uint64_t>(m.rows()), static_cast<std::uint64_t>(m.cols())};
    f.f64.resize(static_cast<std::size_t>(m.size()));
    for (Index i = 0; i < m.rows(); ++i)
      for (Index j = 0; j < m.cols(); ++j) f.f64[static_cast<std::size_t>(i * m.cols() + j)] = m(i, j);
    m_fields[name] = std::move(f);
  }
  /// Sets (or replaces) an int64 vector field.
  /// \param name  the field's name.
  /// \param v     its values.
  void set_ints(const std::string& name, const std::vector<std::int64_t>& v) {
    Field f;
    f.type = Field::I64;
    f.shape = {v.size()};
    f.i64 = v;
    m_fields[name] = std::move(f);
  }

  /// \param name  a field's name.
  /// \return whether the map holds it (optional fields: later additions, averaging, ...).
  bool has(const std::string& name) const { return m_fields.count(name) != 0; }

  /// \param name  a field's name.
  /// \param type  the type it must have.
  /// \return the field.
  /// \throws std::runtime_error ("model file: ...") if it is missing or of another type.
  const Field& get(const std::string& name, Field::Type type) const {
    auto it = m_fields.find(name);
    if (it == m_fields.end()) detail::corrupt("missing field '" + name + "'");
    if (it->second.type != type) detail::corrupt("field '" + name + "' has the wrong type");
    return it->second;
  }
  /// \param name  a float64 scalar field's name.
  /// \return its value.
  /// \throws std::runtime_error if it is missing, of another type or not a scalar.
  double get_f64(const std::string& name) const {
    const Field& f = get(name, Field::F64);
    if (!f.shape.empty() || f.f64.size() != 1) detail::corrupt("field '" + name + "' is not a scalar");
    return f.f64[0];
  }
  /// \param name  an int64 scalar field's name.
  /// \return its value.
  /// \throws std::runtime_error if it is missing, of another type or not a scalar.
  std::int64_t get_i64(const std::string& name) const {
    const Field& f = get(name, Field::I64);
    if (!f.shape.empty() || f.i64.size() != 1) detail::corrupt("field '" + name + "' is not a scalar");
    return f.i64[0];
  }
  /// \param name  a bytes field's name.
  /// \return its bytes.
  /// \throws std::runtime_error if it is missing or of another type.
  const std::string& get_bytes(const std::string& name) const { return get(name, Field::Bytes).bytes; }
  /// A matrix field; checks its shape against (rows, cols) when those are >= 0.
  /// \param name  the field's name.
  /// \param rows  the rows it must have, or -1 for any.
  /// \param cols  the columns it must have, or -1 for any.
  /// \return a copy of the matrix.
  /// \throws std::runtime_error if it is missing, not a matrix or of another shape.
  RowMatrix get_matrix(const std::string& name, Index rows = -1, Index cols = -1) const {
    const Field& f = get(name, Field::F64);
    if (f.shape.size() != 2) detail::corrupt("field '" + name + "' is not a matrix");
    const auto r = static_cast<Index>(f.shape[0]), c = static_cast<Index>(f.shape[1]);
    if ((rows >= 0 && r != rows) || (cols >= 0 && c != cols) || static_cast<std::uint64_t>(r * c) != f.f64.size())
      detail::corrupt("field '" + name + "' has an inconsistent shape");
    RowMatrix m(r, c);
    for (Index i = 0; i < r * c; ++i) m.data()[i] = f.f64[static_cast<std::size_t>(i)];
    return m;
  }
  /// \param name  an int64 vector field's name.
  /// \param n     the length it must have, or -1 for any.
  /// \return a copy of its values.
  /// \throws std::runtime_error if it is missing, not a vector or of another length.
  std::vector<std::int64_t> get_ints(const std::string& name, Index n = -1) const {
    const Field& f = get(name, Field::I64);
    if (f.shape.size() != 1 || f.shape[0] != f.i64.size() || (n >= 0 && static_cast<Index>(f.shape[0]) != n))
      detail::corrupt("field '" + name + "' has an inconsistent shape");
    return f.i64;
  }

  /// Serialises to the versioned container.
  /// \return the file's bytes (fields in name order, so one state always gives the same bytes).
  std::string to_bytes() const {
    std::string payload;
    for (const auto& [name, f] : m_fields) {
      detail::put_raw<std::uint16_t>(payload, static_cast<std::uint16_t>(name.size()));
      payload += name;
      detail::put_raw<std::uint8_t>(payload, f.type);
      detail::put_raw<std::uint8_t>(payload, static_cast<std::uint8_t>(f.shape.size()));
      for (auto s : f.shape) detail::put_raw<std::uint64_t>(payload, s);
      switch (f.type) {
        case Field::F64:
          for (double v : f.f64) detail::put_raw<double>(payload, v);
          break;
        case Field::I64:
          for (auto v : f.i64) detail::put_raw<std::int64_t>(payload, v);
          break;
        case Field::Bytes: payload += f.bytes; break;
      }
    }
    return container(payload);
  }

  /// The versioned container around a payload: magic, version, size, payload, checksum.
  /// \param payload  the serialised fields.
  /// \return the file's bytes.
  static std::string container(const std::string& payload) {
    std::string out(model_magic, 8);
    detail::put_raw<std::uint32_t>(out, model_format_version);
    detail::put_raw<std::uint64_t>(out, payload.size());
    out += payload;
    detail::put_raw<std::uint64_t>(out, detail::fnv1a(payload.data(), payload.size()));
    return out;
  }

  /// Parses and validates a container; throws std::runtime_error naming the problem.
  /// \param data  a file's bytes.
  /// \return its fields; their values are checked later, by the learner that reads them.
  /// \throws std::runtime_error ("model file: ...") on a wrong magic or version, a size that does
  ///         not match, a checksum mismatch or a malformed field.
  static FieldMap from_bytes(const std::string& data) {
    Reader r{data, 0, data.size()};
    if (data.size() < 8 || std::memcmp(data.data(), model_magic, 8) != 0)
      detail::corrupt("not a budgetkernel model (bad magic)");
    r.pos = 8;
    const auto version = r.get<std::uint32_t>();
    if (version != model_format_version)
      detail::corrupt("unsupported format version " + std::to_string(version) + " (this build reads " +
                      std::to_string(model_format_version) + ")");
    const auto size = r.get<std::uint64_t>();
    if (size > data.size() - r.pos || data.size() - r.pos - size != 8)
      detail::corrupt("truncated or oversized (payload size does not match the file)");
    const std::size_t start = r.pos, end = r.pos + size;
    Reader tail{data, end, data.size()};
    r.end = end;  // fields are read from the payload only, never from the checksum after it
    if (tail.get<std::uint64_t>() != detail::fnv1a(data.data() + start, size))
      detail::corrupt("checksum mismatch (corrupt file)");
    FieldMap fm;
    while (r.pos < end) {
      const auto len = r.get<std::uint16_t>();
      std::string name = printable(r.take(len));
      Field f;
      const auto type = r.get<std::uint8_t>();
      if (type > Field::Bytes) detail::corrupt("field '" + name + "' has an unknown type");
      f.type = static_cast<Field::Type>(type);
      const auto rank = r.get<std::uint8_t>();
      if (rank > 2) detail::corrupt("field '" + name + "' has rank > 2");
      for (int i = 0; i < rank; ++i) {
        // No dimension of a real model exceeds the payload's size in bytes (also for empty
        // matrices: their other dimension counts stored rows): this keeps every dimension a
        // valid non-negative Index however the product comes out.
        f.shape.push_back(r.get<std::uint64_t>());
        if (f.shape.back() > size) detail::corrupt("field '" + name + "' has an impossible dimension");
      }
      const std::uint64_t n = f.count();
      const std::size_t width = f.type == Field::Bytes ? 1 : 8;
      if (n > (end - r.pos) / width) detail::corrupt("field '" + name + "' runs past the end");
      if (f.type == Field::Bytes) {
        f.bytes = r.take(static_cast<std::size_t>(n));
      } else if (f.type == Field::F64) {
        f.f64.resize(static_cast<std::size_t>(n));
        for (auto& v : f.f64) v = r.get<double>();
      } else {
        f.i64.resize(static_cast<std::size_t>(n));
        for (auto& v : f.i64) v = r.get<std::int64_t>();
      }
      fm.m_fields[name] = std::move(f);
    }
    return fm;
  }

 private:
  /// Reads d[pos, end) (pos <= end <= d.size() always holds: every read checks against end).
  struct Reader {
    const std::string& d;
    std::size_t pos, end;
    template <class T>
    T get() {
      if (end - pos < sizeof(T)) detail::corrupt("truncated");
      char buf[sizeof(T)];
      std::memcpy(buf, d.data() + pos, sizeof(T));
      if (!detail::little_endian()) std::reverse(buf, buf + sizeof(T));
      pos += sizeof(T);
      T v;
      std::memcpy(&v, buf, sizeof(T));
      return v;
    }
    std::string take(std::size_t n) {
      if (n > end - pos) detail::corrupt("truncated");
      std::string s = d.substr(pos, n);
      pos += n;
      return s;
    }
  };

  /// A field name from a file as it may appear in a message: printable ASCII, others as \xNN.
  static std::string printable(const std::string& name) {
    std::string out;
    for (unsigned char ch : name) {
      if (ch >= 0x20 && ch < 0x7f) {
        out += static_cast<char>(ch);
      } else {
        static const char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[ch >> 4];
        out += hex[ch & 15];
      }
    }
    return out;
  }

  void scalar_f(const std::string& name, double v) {
    Field f;
    f.type = Field::F64;
    f.f64 = {v};
    m_fields[name] = std::move(f);
  }

  std::map<std::string, Field> m_fields;
};

/// Writes the kernel's parameters into a field map (names prefixed by `prefix`: the incremental
/// SVM writes one kernel per machine).
/// \param fm      receives the fields.
/// \param k       the kernel.
/// \param prefix  prepended to every field name.
inline void write_kernel(FieldMap& fm, const Kernel& k, const std::string& prefix = "") {
  fm.set_int(prefix + "kernel.type", static_cast<std::int64_t>(k.type()));
  fm.set(prefix + "kernel.gamma", k.gamma());
  fm.set_int(prefix + "kernel.degree", k.degree());
  fm.set(prefix + "kernel.coef0", k.coef0());
}

/// The kernel that write_kernel wrote, with its parameters validated.
/// \param fm      a model file's fields.
/// \param prefix  as given to write_kernel.
/// \return the kernel.
/// \throws std::runtime_error ("model file: ...") on a missing field or invalid parameters.
inline Kernel read_kernel(const FieldMap& fm, const std::string& prefix = "") {
  const KernelType t = detail::enum_from_code(kernel_names, fm.get_i64(prefix + "kernel.type"), "kernel");
  // range-checked before the cast: 2^32 + 3 would otherwise load as degree 3
  const auto degree = fm.get_i64(prefix + "kernel.degree");
  if (degree < (std::numeric_limits<int>::min)() || degree > (std::numeric_limits<int>::max)())
    detail::corrupt("invalid kernel degree " + std::to_string(degree));
  try {
    return Kernel(t, fm.get_f64(prefix + "kernel.gamma"), static_cast<int>(degree),
                  fm.get_f64(prefix + "kernel.coef0"));
  } catch (const std::invalid_argument& e) {
    detail::corrupt(std::string("invalid kernel parameters: ") + e.what());
  }
}

/// The store's SVs as budgetkernel::Model reads them (sv.x, sv.alpha raw coefficients) plus
/// their ids.
/// \param fm  receives the fields.
/// \param sv  the store.
inline void write_svs(FieldMap& fm, const SupportVectors& sv) {
  const Index n = sv.size();
  fm.set_matrix("sv.x", sv.X().topRows(n));
  fm.set_matrix("sv.alpha", sv.A().topRows(n));
  fm.set_ints("sv.id", std::vector<std::int64_t>(sv.ids().begin(), sv.ids().begin() + n));
}

/// write_svs' fields back into `sv` (capacity at least `capacity`), checked: dim columns,
/// n_outputs coefficient columns, at most max_size rows (0: no limit), every row usable input
/// (detail::row_problem) and finite coefficients. \throws std::runtime_error ("model file: ...").
/// \param fm         a model file's fields.
/// \param dim        the number of features the SVs must have.
/// \param n_outputs  the coefficient columns they must have.
/// \param max_size   the most SVs allowed (the budget), 0 for no limit.
/// \param capacity   the store's capacity after the read.
/// \param sv         receives the SVs.
inline void read_svs(const FieldMap& fm, Index dim, Index n_outputs, Index max_size, Index capacity,
                     SupportVectors& sv) {
  const RowMatrix X = fm.get_matrix("sv.x", -1, dim);
  const RowMatrix A = fm.get_matrix("sv.alpha", X.rows(), n_outputs);
  const auto ids = fm.get_ints("sv.id", X.rows());
  if (max_size > 0 && X.rows() > max_size) detail::corrupt("more support vectors than the budget");
  if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(A.data(), A.size()))
    detail::corrupt("non-finite (or overflowing) support vectors or non-finite coefficients");
  sv.assign(X, A, ids, capacity);
}

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
/// MOVEFILE_REPLACE_EXISTING with MSVC's library; atomic within one directory). Writing the
/// file in place let two writers interleave, and a reader (or a failed write) see a
/// truncated model. A symlink at `path` is written through: its target gets the bytes. The
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

/// A learner-independent predictor read from any model file: a kernel expansion
/// f(x) = scale * A^T k(SV, x) + bias (or, for linear learners, W^T x + bias).
/// Enough for an embedding program to predict exactly what the Python model predicts.
class Model {
 public:
  /// \param fm  the fields of a model file of any learner (FieldMap::from_bytes).
  /// \throws std::runtime_error ("model file: ...") on missing fields, impossible dimensions or
  ///         non-finite values.
  explicit Model(const FieldMap& fm) : m_fields(fm) {
    m_learner = fm.get_bytes("learner");
    m_d = fm.get_i64("n_features");
    m_outputs = fm.get_i64("n_outputs");
    // Bounded before anything is sized by them (a few-KB file asked for a 2 GB bias row).
    if (m_d < 1 || m_outputs < 1 || m_d > (std::int64_t{1} << 40) || m_outputs > (std::int64_t{1} << 24))
      detail::corrupt("invalid dimensions");
    m_bias = fm.has("bias") ? fm.get_matrix("bias", 1, m_outputs) : RowMatrix::Zero(1, m_outputs);
    if (!detail::all_finite(m_bias.data(), m_bias.size())) detail::corrupt("non-finite bias");
    bool averaged = false;
    if (fm.has("weights")) {
      m_linear = true;
      m_w = fm.get_matrix("weights", m_d, m_outputs);
      if (!detail::all_finite(m_w.data(), m_w.size())) detail::corrupt("non-finite weights");
    } else {
      m_kernel = read_kernel(fm);
      // An averaged learner predicts with its averaged coefficients (absolute units, scale 1),
      // on its own SVs (predict.x) when the average holds SVs the model no longer has.
      const RowMatrix X = fm.get_matrix(fm.has("predict.x") ? "predict.x" : "sv.x", -1, m_d);
      averaged = fm.has("predict.alpha");
      const RowMatrix A = fm.get_matrix(averaged ? "predict.alpha" : "sv.alpha", X.rows(), m_outputs);
      // as read_svs checks the learners' own fields (predict.* are read by this class only)
      if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(A.data(), A.size()))
        detail::corrupt("non-finite (or overflowing) support vectors or non-finite coefficients");
      m_sv.assign(X, A, std::vector<std::int64_t>(static_cast<std::size_t>(X.rows()), 0), X.rows());
    }
    m_scale = averaged ? 1.0 : fm.get_f64("scale");
    if (!std::isfinite(m_scale)) detail::corrupt("non-finite scale");
  }

  /// \return the name of the learner that wrote the file ("bsgd", "pa", ...).
  const std::string& learner() const { return m_learner; }
  /// \return the number of values every input row must have.
  Index n_features() const { return m_d; }
  /// \return the columns of decision_function: 1 for two classes, else the number of classes.
  Index n_outputs() const { return m_outputs; }
  /// \return the number of support vectors predictions use (0 for a linear model).
  Index n_support() const { return m_linear ? 0 : m_sv.size(); }
  /// \return every field of the file, e.g. "meta" (the Python estimator's state as JSON).
  const FieldMap& fields() const { return m_fields; }

  /// Decision values, n x n_outputs (one column for a binary model). Computed exactly as
  /// the learners compute them (same kernel row, same reduction), so values match bitwise.
  /// `stop` (may be null) can end a long call between rows (Interrupted, stop_poll.hpp).
  /// \param X     the examples, one per row, n_features() columns.
  /// \param stop  null, or the poll that can cancel the call.
  /// \return X.rows() x n_outputs() decision values.
  /// \throws std::invalid_argument if X has another number of columns.
  RowMatrix decision_function(const RowMatrix& X, StopPoll* stop = nullptr) const {
    detail::require(X.cols() == m_d, "decision_function: X has " + std::to_string(X.cols()) +
                                         " features, the model expects " + std::to_string(m_d));
    RowMatrix out(X.rows(), m_outputs);
    Vector krow(std::max<Index>(m_sv.size(), 1)), f(m_outputs);
    // Row i; `dots`: its dot products with the SVs when computed per block, as the learners'
    // decision_rows do (OnlineLearner::decision_function), else null.
    const auto score = [&](Index i, const double* dots) {
      if (m_linear) {
        f.noalias() = m_w.transpose() * X.row(i).transpose();
      } else if (m_sv.empty()) {
        f.setZero();
      } else {
        m_sv.kernel_row(m_kernel, X.row(i).transpose(), X.row(i).squaredNorm(), krow, dots);
        m_sv.scores(krow, f);
      }
      f *= m_scale;
      out.row(i) = f.transpose() + m_bias.row(0);
    };
    if (!m_linear && m_d >= detail::kDotBlockMinDim) {
      RowMatrix D;
      detail::for_row_blocks(X.rows(), m_sv.size(), stop, [&](Index i, Index b) {
        m_sv.dots_rows(X.middleRows(i, b), D);
        for (Index r = 0; r < b; ++r) score(i + r, m_sv.empty() ? nullptr : D.row(r).data());
      });
    } else {
      for (Index i = 0; i < X.rows(); ++i) {
        detail::poll_stop(stop, i);
        score(i, nullptr);
      }
    }
    return out;
  }

 private:
  FieldMap m_fields;
  std::string m_learner;
  Index m_d = 0, m_outputs = 0;
  bool m_linear = false;
  Kernel m_kernel;
  SupportVectors m_sv;
  Eigen::MatrixXd m_w;
  RowMatrix m_bias;
  double m_scale = 1.0;
};

/// Reads a model file written by any budgetkernel learner (C++ or Python).
/// \param path  the file.
/// \return the predictor.
/// \throws std::runtime_error if the file cannot be read or is not a valid model.
inline Model load_model(const std::string& path) { return Model(FieldMap::from_bytes(read_file_bytes(path))); }

}  // namespace budgetkernel
