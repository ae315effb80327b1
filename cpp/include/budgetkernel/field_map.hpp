#pragma once
/// \file field_map.hpp
/// The model file container shared by C++ and Python (io.hpp has what learners write into it).
///
/// Layout (all little-endian):
///   magic "BKMODEL\0" (8 bytes) | u32 format version | u64 payload size | payload | u64 FNV-1a of payload
/// The payload is a sequence of named fields; each field is
///   u16 name length | name bytes | u8 type | u8 rank | u64 dims[rank] | data
/// with type 0 = f64, 1 = i64, 2 = bytes (rank 1). A learner writes every field it needs to
/// predict and to resume training; readers look fields up by name, so later learners add
/// fields without breaking the container. Everything read is checked: magic, version,
/// sizes, checksum, and each field's type and shape when a learner asks for it.

#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
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
  /// Removes a field (nothing if the map does not hold it).
  /// \param name  the field's name.
  void erase(const std::string& name) { m_fields.erase(name); }

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

}  // namespace budgetkernel
