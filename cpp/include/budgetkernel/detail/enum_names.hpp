#pragma once
/// \file detail/enum_names.hpp
/// The names of an option enum (KernelType, Maintenance, ...), written once next to the enum
/// as a table of {value, name}. Everything else reads that table: the enum's name function,
/// the range check of its Params::validate(), the model loaders (files store the number), and
/// the Python binding, which takes and gives the names. A new option is one table row.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace budgetkernel::detail {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

/// The name of v; "?" for a value outside the table (a cast from an unchecked number).
template <class E, std::size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E v) {
  for (const auto& e : table)
    if (e.value == v) return e.name;
  return "?";
}

template <class E, std::size_t N>
bool enum_valid(const EnumName<E> (&table)[N], E v) {
  for (const auto& e : table)
    if (e.value == v) return true;
  return false;
}

/// "'a', 'b' or 'c'": the valid names, for messages.
template <class E, std::size_t N>
std::string enum_choices(const EnumName<E> (&table)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i)
    s += (i == 0 ? "'" : i + 1 == N ? " or '" : ", '") + std::string(table[i].name) + "'";
  return s;
}

/// "<what> must be one of <choices>": the message of a value outside the table.
template <class E, std::size_t N>
std::string enum_message(const EnumName<E> (&table)[N], const char* what) {
  return std::string(what) + " must be " + (N == 1 ? "" : "one of ") + enum_choices(table);
}

/// \throws std::invalid_argument "<what> must be one of ..." for a value outside the table
/// (an enum cast from an unchecked number): what Params::validate() checks of each enum field.
template <class E, std::size_t N>
void require_enum(const EnumName<E> (&table)[N], E v, const char* what) {
  if (!enum_valid(table, v)) throw std::invalid_argument(enum_message(table, what));
}

/// The value called `name`. \throws std::invalid_argument naming `what` and the choices.
template <class E, std::size_t N>
E enum_from_name(const EnumName<E> (&table)[N], const std::string& name, const char* what) {
  for (const auto& e : table)
    if (name == e.name) return e.value;
  throw std::invalid_argument(enum_message(table, what) + "; got '" + name + "'");
}

/// The value whose number (as a model file stores it) is `code`.
/// \throws std::runtime_error ("model file: ...") for a number no value has.
template <class E, std::size_t N>
E enum_from_code(const EnumName<E> (&table)[N], std::int64_t code, const char* what) {
  for (const auto& e : table)
    if (static_cast<std::int64_t>(e.value) == code) return e.value;
  throw std::runtime_error("model file: unknown " + std::string(what) + " " + std::to_string(code) + " (" +
                           enum_message(table, what) + ")");
}

}  // namespace budgetkernel::detail
