#pragma once
/// \file version.hpp
/// The library version, defined once here and parsed by CMake.

#define BUDGETKERNEL_VERSION_MAJOR 0
#define BUDGETKERNEL_VERSION_MINOR 1
#define BUDGETKERNEL_VERSION_PATCH 0

namespace budgetkernel {
inline constexpr const char* version_string = "0.1.0";
}  // namespace budgetkernel
