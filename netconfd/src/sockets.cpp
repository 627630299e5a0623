#include "sockets.hpp"

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ncstore::netconfd {

namespace {

struct Endpoint {
    std::string host;
    std::uint16_t port = 0;
};

bool toEndpoint(const sockaddr_storage& ss, Endpoint& out) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
        out.host = buf;
        out.port = ntohs(a->sin_port);
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
        inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        out.host = buf;
        if (out.host.rfind("::ffff:", 0) == 0) {
            out.host = out.host.substr(7);
        }
        out.port = ntohs(a->sin6_port);
        return true;
    }
    return false;
}

template <typename Fn> int scanSockets(Fn&& match) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        int fd = -1;
        try {
            fd = std::stoi(entry.path().filename().string());
        } catch (const std::exception&) {
            continue;
        }
        struct stat st {};
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
            continue;
        }
        if (match(fd)) {
            return fd;
        }
    }
    return -1;
}

std::string normalize(const std::string& host) {
    return host.rfind("::ffff:", 0) == 0 ? host.substr(7) : host;
}

} // namespace

std::uint16_t pickFreePort(const std::string& address) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    addrinfo* res = nullptr;
    if (getaddrinfo(address.c_str(), "0", &hints, &res) != 0 || !res) {
        throw std::runtime_error("cannot resolve listen address " + address);
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
    const int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd < 0) {
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    }
    std::uint16_t port = 0;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (bind(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
        Endpoint ep;
        if (toEndpoint(ss, ep)) {
            port = ep.port;
        }
    }
    close(fd);
    if (port == 0) {
        throw std::runtime_error("cannot find a free port on " + address);
    }
    return port;
}

int findListeningSocket(std::uint16_t port) {
    return scanSockets([&](int fd) {
        int listening = 0;
        socklen_t optlen = sizeof listening;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || !listening) {
            return false;
        }
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        Endpoint ep;
        return getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && toEndpoint(ss, ep) &&
               ep.port == port;
    });
}

int findPeerSocket(const std::string& host, std::uint16_t port) {
    const std::string wanted = normalize(host);
    return scanSockets([&](int fd) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        Endpoint ep;
        return getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && toEndpoint(ss, ep) &&
               ep.port == port && ep.host == wanted;
    });
}

std::uint64_t bytesReceived(int fd) {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
        return 0;
    }
    return info.tcpi_bytes_received;
}

} // namespace ncstore::netconfd
