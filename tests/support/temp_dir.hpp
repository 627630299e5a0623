// A fresh directory for the running test, removed with it: <tmp>/ncstore-<suite>-<test>-XXXXXX
// (mkdtemp: unique even for several in one test or one name in parallel processes). The one
// temporary directory of every test binary (datastore, dqlite, ha, netconfd, common).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace ncstore::test {

class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = "ncstore-" + std::string(info ? info->test_suite_name() : "test") + "-" +
                           std::string(info ? info->name() : "any") + "-";
        std::replace(name.begin(), name.end(), '/', '_'); // parameterized tests: Suite/Name/param
        std::string pattern = (std::filesystem::temp_directory_path() / (name + "XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
        }
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored; // a test that failed halfway may leave anything behind
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace ncstore::test
