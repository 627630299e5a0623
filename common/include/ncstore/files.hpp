// Files at rest: the data directory and the files that hold configuration, credentials or keys
// are their owner's alone (directories 0700, files 0600), and a directory that group or others
// can write is refused, since whoever can write it can replace the store, the users file or the
// SSH host keys. Modes are set explicitly where files are created, never left to the process
// umask: the library may run inside programs whose umask is 0.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ncstore::files {

/// A directory refused because others could change what is in it. Failing system calls throw
/// std::system_error naming what was attempted on which path.
class UnsafePermissions : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Throws UnsafePermissions when `dir` is not a directory or group or others can write it.
void checkPrivateDir(const std::filesystem::path& dir);

/// Creates `dir` with mode 0700 when it is missing (missing parents get the usual modes), then
/// checkPrivateDir. An existing directory keeps its mode when nobody else can write it.
void preparePrivateDir(const std::filesystem::path& dir);

/// Creates `file` empty with mode 0600 when it is missing; an existing regular file loses the
/// group and other permission bits (devices and pipes are left alone). Returns `file`.
const std::filesystem::path& ensurePrivateFile(const std::filesystem::path& file);

/// Replaces `file` by `content` through `<file>.tmp`, created 0600 and flushed to disk before the
/// rename: a reader sees the old or the new content, never a part, and no other user sees either.
void writePrivateFile(const std::filesystem::path& file, std::string_view content);

/// The lock file is held by another process (pid() says which, 0 when it could not be read).
class LockHeld : public std::runtime_error {
public:
    LockHeld(const std::string& what, long pid) : std::runtime_error(what), pid_(pid) {}
    long pid() const noexcept { return pid_; }

private:
    long pid_;
};

/// An advisory lock (flock) on `file`, created 0600, held until destroyed (or the process ends,
/// however it ends): ncstored holds DIR/ncstored.lock while it serves, so that an offline
/// command that writes the store can tell that a server runs on it. The file holds the pid.
class ProcessLock {
public:
    /// Takes the lock or throws LockHeld at once (never waits).
    explicit ProcessLock(const std::filesystem::path& file);
    ~ProcessLock();
    ProcessLock(const ProcessLock&) = delete;
    ProcessLock& operator=(const ProcessLock&) = delete;

private:
    int fd_;
};

} // namespace ncstore::files
