// The unix socket of the application API: the listening socket in the data directory, the
// peer's credentials, and whole-frame I/O on a connection. POSIX only; no protocol here.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace ncstore::netconfd::app {

/// An owned file descriptor, closed once.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            reset(o.release());
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void reset(int fd = -1);
    explicit operator bool() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

/// Binds and listens on `path` (an old socket file there is replaced), mode 0660, group `group`
/// when not empty. Throws std::runtime_error naming the path and the reason.
Fd listenUnix(const std::filesystem::path& path, const std::string& group);

struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
};
/// The credentials of the process at the other end (SO_PEERCRED). Throws std::runtime_error.
Peer peerOf(int fd);

/// Writes all of `data`, waiting at most `timeout` in total for the peer to read; false when the
/// peer is gone or does not read.
bool writeAll(int fd, std::string_view data, std::chrono::milliseconds timeout);

/// The name of `uid`'s passwd entry, or "" when it has none.
std::string userName(uid_t uid);

} // namespace ncstore::netconfd::app
