// Tests of file modes run under umask 0, so that a mode that is right only because of the
// process umask shows up as wrong.
#pragma once

#include <sys/stat.h>

namespace ncstore::test {

/// Sets the process umask for its lifetime (the tests of one binary run one at a time).
class ScopedUmask {
public:
    explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
    ScopedUmask(const ScopedUmask&) = delete;
    ScopedUmask& operator=(const ScopedUmask&) = delete;
    ~ScopedUmask() { ::umask(previous_); }

private:
    mode_t previous_;
};

/// Permission bits of `path` (following symlinks), or ~0 when it cannot be read.
inline mode_t modeOf(const char* path) {
    struct stat st {};
    return ::stat(path, &st) == 0 ? (st.st_mode & 07777) : static_cast<mode_t>(~0u);
}

} // namespace ncstore::test
