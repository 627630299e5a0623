#include "standby.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ncstore::cluster {

namespace {

struct AddrInfo {
    addrinfo* list = nullptr;
    ~AddrInfo() {
        if (list) {
            freeaddrinfo(list);
        }
    }
};

/// Reads and drops what the client sends until it closes, or for 100 ms at most.
void drain(int fd) {
    char buf[512];
    for (int rounds = 0; rounds < 10; ++rounds) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) {
            continue;
        }
        if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) {
            return;
        }
    }
}

} // namespace

StandbyNotice::StandbyNotice(const std::string& host, std::uint16_t port, std::function<std::string()> notice)
    : notice_(std::move(notice)) {
    const std::string where = host + " port " + std::to_string(port);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    AddrInfo found;
    if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found.list);
        rc != 0) {
        throw std::runtime_error("standby notice: cannot resolve " + where + ": " + gai_strerror(rc));
    }
    const addrinfo* a = found.list;
    listenFd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    const int one = 1;
    if (listenFd_ < 0 || ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::bind(listenFd_, a->ai_addr, a->ai_addrlen) != 0 || ::listen(listenFd_, 64) != 0) {
        const std::string why = std::strerror(errno);
        if (listenFd_ >= 0) {
            ::close(listenFd_);
        }
        throw std::runtime_error("standby notice: cannot listen on " + where + ": " + why);
    }
    stopFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stopFd_ < 0) {
        const std::string why = std::strerror(errno);
        ::close(listenFd_);
        throw std::runtime_error("standby notice: eventfd: " + why);
    }
    thread_ = std::thread([this] { loop(); });
}

StandbyNotice::~StandbyNotice() {
    const std::uint64_t one = 1;
    if (::write(stopFd_, &one, sizeof one) != sizeof one) {
        NCS_LOG(warning) << "standby notice: cannot wake its thread: " << std::strerror(errno);
    }
    thread_.join();
    ::close(listenFd_);
    ::close(stopFd_);
}

void StandbyNotice::loop() {
    nameThisThread("ncs-standby");
    for (;;) {
        pollfd fds[2] = {{listenFd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            NCS_LOG(error) << "standby notice: poll: " << std::strerror(errno);
            return;
        }
        if (fds[1].revents != 0) {
            return;
        }
        const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            continue; // the client left already, or a transient shortage: the next one is served
        }
        const std::string text = notice_();
        // Best effort and never waiting (promise 1): a short notice fits any socket buffer.
        if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            NCS_LOG(debug) << "standby notice: " << std::strerror(errno);
        }
        // Closed with the client's bytes (its own version line) unread, the socket would answer
        // with a reset that can destroy the notice before the client reads it: send our end of
        // the stream, then read theirs away for a moment.
        ::shutdown(fd, SHUT_WR);
        drain(fd);
        ::close(fd);
    }
}

} // namespace ncstore::cluster
