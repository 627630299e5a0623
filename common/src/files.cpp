#include "ncstore/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

namespace ncstore::files {

namespace {

constexpr mode_t kGroupOrOthers = S_IRWXG | S_IRWXO;

std::string octal(mode_t mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

/// The failed system call's error, naming what was attempted on which path.
std::system_error failure(const std::string& what, const std::filesystem::path& path) {
    return std::system_error(errno, std::generic_category(), what + " " + path.string());
}

/// Closes the descriptor it owns.
class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const { return fd_; }
    /// Gives up ownership.
    int release() { return std::exchange(fd_, -1); }
    /// Closes now, so that a failing close (a delayed write error) is reported.
    int close() {
        const int rc = ::close(fd_);
        fd_ = -1;
        return rc;
    }

private:
    int fd_;
};

} // namespace

void checkPrivateDir(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        throw failure("cannot use the directory", dir);
    }
    if (!S_ISDIR(st.st_mode)) {
        throw UnsafePermissions("cannot use " + dir.string() + ": not a directory");
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        throw UnsafePermissions("refusing the directory " + dir.string() + " (mode " + octal(st.st_mode) +
                                "): group or others can write it, and so replace the store, the users or the "
                                "keys ncstored trusts; run `chmod go-w " +
                                dir.string() + "` (ncstore creates its directories 0700)");
    }
}

void preparePrivateDir(const std::filesystem::path& given) {
    // "data/" names the directory "data": its parent is ".", not "data".
    const std::filesystem::path dir = given.has_filename() ? given : given.parent_path();
    if (!dir.parent_path().empty()) {
        std::filesystem::create_directories(dir.parent_path());
    }
    if (::mkdir(dir.c_str(), 0700) == 0) {
        // mkdir's mode went through the umask, which may have removed owner bits too.
        if (::chmod(dir.c_str(), 0700) != 0) {
            throw failure("cannot set the mode of", dir);
        }
    } else if (errno != EEXIST) {
        throw failure("cannot create the directory", dir);
    }
    checkPrivateDir(dir);
}

const std::filesystem::path& ensurePrivateFile(const std::filesystem::path& file) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        Fd owned{fd};
        if (::fchmod(owned.get(), 0600) != 0) {
            throw failure("cannot set the mode of", file);
        }
        return file;
    }
    if (errno != EEXIST) {
        throw failure("cannot create", file);
    }
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        throw failure("cannot read the mode of", file);
    }
    // Only regular files: `-o /dev/stdout` must not change the terminal's or a device's mode.
    if (S_ISREG(st.st_mode) && (st.st_mode & kGroupOrOthers) &&
        ::chmod(file.c_str(), st.st_mode & S_IRWXU) != 0) {
        throw failure("cannot make private (mode " + octal(st.st_mode) + ")", file);
    }
    return file;
}

void writePrivateFile(const std::filesystem::path& file, std::string_view content) {
    const std::filesystem::path tmp = file.string() + ".tmp";
    {
        Fd fd{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)};
        if (fd.get() < 0) {
            throw failure("cannot create", tmp);
        }
        // A .tmp left by an earlier run keeps its mode through O_CREAT: set it.
        if (::fchmod(fd.get(), 0600) != 0) {
            throw failure("cannot set the mode of", tmp);
        }
        for (std::size_t done = 0; done < content.size();) {
            const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                throw failure("cannot write", tmp);
            }
            done += static_cast<std::size_t>(n);
        }
        if (::fsync(fd.get()) != 0 || fd.close() != 0) {
            throw failure("cannot write", tmp);
        }
    }
    if (::rename(tmp.c_str(), file.c_str()) != 0) {
        throw failure("cannot replace " + file.string() + " by", tmp);
    }
}

ProcessLock::ProcessLock(const std::filesystem::path& file) {
    Fd fd{::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)};
    if (fd.get() < 0) {
        throw failure("cannot open the lock file", file);
    }
    if (::fchmod(fd.get(), 0600) != 0) {
        throw failure("cannot set the mode of", file);
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) {
            throw failure("cannot lock", file);
        }
        char buf[32] = {};
        const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
        const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
        throw LockHeld(file.string() + " is locked by process " + (pid > 0 ? std::to_string(pid) : "?"), pid);
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
        throw failure("cannot write the lock file", file);
    }
    fd_ = fd.get();
    fd.release();
}

ProcessLock::~ProcessLock() {
    ::close(fd_); // releases the lock
}

} // namespace ncstore::files
