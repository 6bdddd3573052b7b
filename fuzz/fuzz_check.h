// FUZZ_CHECK: the fuzz targets' assertion. A property that does not hold is
// a finding: print it and abort, so libFuzzer saves the input as a crash.
#ifndef BATON_FUZZ_FUZZ_CHECK_H_
#define BATON_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                 \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

#endif  // BATON_FUZZ_FUZZ_CHECK_H_
