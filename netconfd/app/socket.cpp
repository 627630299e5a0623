#include "socket.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace ncstore::netconfd::app {

void Fd::reset(int fd) {
    if (fd_ >= 0) {
        ::close(fd_);
    }
    fd_ = fd;
}

Fd listenUnix(const std::filesystem::path& path, const std::string& group) {
    const std::string p = path.string();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    // A path longer than sun_path (a deep data directory) is bound through the directory's open
    // descriptor: /proc/self/fd/N/NAME names the same place in a few bytes.
    Fd dir;
    std::string bindPath = p;
    if (p.size() >= sizeof(addr.sun_path)) {
        dir.reset(::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!dir) {
            throw std::runtime_error("cannot open the directory of the application socket " + p + ": " +
                                     std::strerror(errno));
        }
        bindPath = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + path.filename().string();
        if (bindPath.size() >= sizeof(addr.sun_path)) {
            throw std::runtime_error("the application socket's name " + path.filename().string() +
                                     " is too long");
        }
    }
    std::memcpy(addr.sun_path, bindPath.c_str(), bindPath.size() + 1);
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        throw std::runtime_error(std::string("socket(AF_UNIX): ") + std::strerror(errno));
    }
    std::error_code ec;
    std::filesystem::remove(path, ec); // a socket a killed server left behind
    // Created with no access for others, then opened to the group: no moment where anyone else
    // could connect.
    const mode_t old = ::umask(0177);
    const int rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    const int bindErrno = errno;
    ::umask(old);
    if (rc != 0) {
        throw std::runtime_error("cannot bind the application socket " + p + ": " + std::strerror(bindErrno));
    }
    if (!group.empty()) {
        std::vector<char> buf(16384);
        struct group g {};
        struct group* found = nullptr;
        if (::getgrnam_r(group.c_str(), &g, buf.data(), buf.size(), &found) != 0 || !found) {
            throw std::runtime_error("no group \"" + group + "\" for the application socket " + p);
        }
        if (::chown(p.c_str(), static_cast<uid_t>(-1), found->gr_gid) != 0) {
            throw std::runtime_error("cannot give the application socket " + p + " to group " + group + ": " +
                                     std::strerror(errno));
        }
    }
    if (::chmod(p.c_str(), 0660) != 0) {
        throw std::runtime_error("cannot set the mode of " + p + ": " + std::strerror(errno));
    }
    if (::listen(fd.get(), 128) != 0) {
        throw std::runtime_error("cannot listen on " + p + ": " + std::strerror(errno));
    }
    return fd;
}

Peer peerOf(int fd) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        throw std::runtime_error(std::string("SO_PEERCRED: ") + std::strerror(errno));
    }
    return {cred.pid, cred.uid, cred.gid};
}

bool writeAll(int fd, std::string_view data, std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                return false;
            }
            pollfd p{fd, POLLOUT, 0};
            const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
            if (rc < 0 && errno != EINTR) {
                return false;
            }
            if (rc > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
                return false;
            }
            continue;
        }
        return false;
    }
    return true;
}

std::string userName(uid_t uid) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) {
        return {};
    }
    return found->pw_name;
}

} // namespace ncstore::netconfd::app
