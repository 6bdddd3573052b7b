// Conversions between the string views of Abseil, Boost (Beast, JSON) and
// the standard library. They are three distinct types with this toolchain:
// Debian's Abseil 20220623 does not alias absl::string_view to
// std::string_view, and Boost 1.81 has its own core::string_view.
#ifndef BATON_SIDECAR_KUBE_STRING_VIEWS_H_
#define BATON_SIDECAR_KUBE_STRING_VIEWS_H_

#include <string_view>

#include "absl/strings/string_view.h"
#include "boost/core/detail/string_view.hpp"
#include "boost/json/string.hpp"

namespace baton::kube {

inline absl::string_view ToAbsl(boost::core::string_view s) { return {s.data(), s.size()}; }
inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }
inline absl::string_view ToAbsl(const boost::json::string& s) { return {s.data(), s.size()}; }
inline boost::core::string_view ToBoost(absl::string_view s) { return {s.data(), s.size()}; }
inline std::string_view ToStd(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_STRING_VIEWS_H_
