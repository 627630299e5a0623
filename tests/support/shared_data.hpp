// Where the C++ tests find the reference data that is not part of the repository (the official
// Open ROADM models): $NCSTORE_SHARED_DIR, else the directory `shared` beside the repository;
// the same rule as tests/shared_data.py for the python tests and tools.
//
// A test that needs a missing part is skipped with a one-line reason naming what it needs and how
// to point at it; with CI=true in the environment it fails instead (a CI machine must have the
// data). ctest reports GTEST_SKIP as "Skipped" (gtest_discover_tests sets the skip regex).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#ifndef NCSTORE_SOURCE_DIR
#error "NCSTORE_SOURCE_DIR must name the repository (target ncstore_test_support sets it)"
#endif

namespace ncstore::test {

/// The shared data directory.
inline std::filesystem::path sharedDir() {
    const char* env = std::getenv("NCSTORE_SHARED_DIR");
    return env && *env ? std::filesystem::path(env)
                       : std::filesystem::path(NCSTORE_SOURCE_DIR).parent_path() / "shared";
}

/// `relative` inside the shared data directory (whether it exists or not).
inline std::filesystem::path sharedPath(std::string_view relative) {
    return sharedDir() / relative;
}

/// True when missing data must fail the test rather than skip it (CI=true).
inline bool sharedDataRequired() {
    const char* ci = std::getenv("CI");
    std::string v = ci ? ci : "";
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    return v == "true" || v == "1" || v == "yes";
}

/// Why a test that needs `relative` (described as `what`) cannot run, or nothing when it can.
inline std::optional<std::string> missingShared(std::string_view relative, std::string_view what) {
    const auto path = sharedPath(relative);
    if (std::filesystem::exists(path)) {
        return std::nullopt;
    }
    return "needs " + std::string(what) + " (" + path.string() +
           "): set NCSTORE_SHARED_DIR to the shared data directory (default: ../shared beside the "
           "repository)";
}

} // namespace ncstore::test

/// In a test body or SetUp(): skips the test (fails it under CI=true) and returns when the shared
/// data `relative` is missing.
#define NCSTORE_REQUIRE_SHARED(relative, what)                                                               \
    do {                                                                                                     \
        if (const auto ncstoreMissing_ = ::ncstore::test::missingShared(relative, what)) {                   \
            if (::ncstore::test::sharedDataRequired()) {                                                     \
                FAIL() << "CI=true, nothing may be skipped: " << *ncstoreMissing_;                           \
            }                                                                                                \
            GTEST_SKIP() << *ncstoreMissing_;                                                                \
        }                                                                                                    \
    } while (false)
