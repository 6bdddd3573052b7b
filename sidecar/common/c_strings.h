// CStrings: a list of strings in the form execve and posix_spawn take for
// argv and envp.
#ifndef BATON_SIDECAR_COMMON_C_STRINGS_H_
#define BATON_SIDECAR_COMMON_C_STRINGS_H_

#include <string>
#include <vector>

namespace baton {

// Pointers into `strings`, then a null: valid while `strings` is alive and
// unchanged.
inline std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_C_STRINGS_H_
