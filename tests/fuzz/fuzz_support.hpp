// What every fuzz target shares: stopping on a broken property. Depends on nothing of the
// project, so a harness over one small library (the framing decoder) builds against it alone.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ncstore::fuzz {

/// Stops the run (libFuzzer saves the input) when a property the target checks does not hold.
[[noreturn]] inline void violated(const char* target, const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "%s: property violated: %s\n%s\n", target, what, detail.c_str());
    std::abort();
}

} // namespace ncstore::fuzz
