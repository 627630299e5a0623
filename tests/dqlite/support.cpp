#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ncstore::dqlite::test {

namespace {

[[noreturn]] void sysFail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

int listenLoopback(std::string& address) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sysFail("socket");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        sysFail("bind 127.0.0.1:0");
    }
    address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    return fd;
}

} // namespace

std::string freeAddress() {
    std::string address;
    const int fd = listenLoopback(address);
    ::close(fd);
    return address;
}

std::string findExecutable(const std::string& name) {
    if (name.find('/') != std::string::npos) {
        return name;
    }
    const char* env = std::getenv("PATH");
    std::string dirs = std::string(env ? env : "") + ":/usr/sbin:/sbin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const std::size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string candidate = dirs.substr(start, end - start) + "/" + name;
        if (end > start && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        start = end + 1;
    }
    throw std::runtime_error("no executable " + name + " in PATH, /usr/sbin or /sbin");
}

ChildNode::ChildNode(std::uint64_t id, std::string address, const std::filesystem::path& dataDir,
                     std::chrono::milliseconds latency, std::vector<std::string> launcher)
    : id_(id), address_(std::move(address)) {
    const std::string idText = std::to_string(id), dirText = dataDir.string(),
                      latencyText = std::to_string(latency.count());
    std::vector<std::string> words = std::move(launcher);
    for (const std::string& w : {std::string(kNodeRunner), idText, address_, dirText, latencyText}) {
        words.push_back(w);
    }
    const std::string program = findExecutable(words.front());
    std::vector<const char*> argv;
    for (const std::string& w : words) {
        argv.push_back(w.c_str());
    }
    argv.push_back(nullptr);

    std::array<int, 2> in{}, out{};
    if (::pipe2(in.data(), O_CLOEXEC) != 0 || ::pipe2(out.data(), O_CLOEXEC) != 0) {
        sysFail("pipe2");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    const int rc =
        ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, const_cast<char**>(argv.data()), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdinFd_ = in[1];
    if (rc != 0) {
        pid_ = -1;
        ::close(out[0]);
        throw std::system_error(rc, std::generic_category(), "posix_spawn " + program);
    }
    // Wait for "ready" (the node serves) for at most 10 s.
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got.find("ready\n") == std::string::npos) {
        pollfd p{out[0], POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            break;
        }
        char buf[64];
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    if (got.find("ready\n") == std::string::npos) {
        kill();
        ::close(stdinFd_);
        throw std::runtime_error("dqlite node " + idText + " at " + address_ + " did not start");
    }
}

void ChildNode::kill() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
}

ChildNode::~ChildNode() {
    if (pid_ > 0) {
        ::close(stdinFd_); // the runner stops its node and exits
        stdinFd_ = -1;
        for (int i = 0; i < 300; ++i) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
                pid_ = -1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        kill();
    }
    if (stdinFd_ >= 0) {
        ::close(stdinFd_);
    }
}

FakeServer::FakeServer(Script script) {
    listenFd_ = listenLoopback(address_);
    if (::listen(listenFd_, 4) != 0) {
        sysFail("listen");
    }
    thread_ = std::thread([fd = listenFd_, script = std::move(script)] {
        const int conn = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) {
            return;
        }
        // A script waiting for a client that never goes away must still end (and the test with it).
        timeval cap{10, 0};
        ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &cap, sizeof cap);
        script(conn);
        ::close(conn);
    });
}

FakeServer::~FakeServer() {
    ::shutdown(listenFd_, SHUT_RDWR); // wakes accept() when no client came
    thread_.join();
    ::close(listenFd_);
}

bool readExactly(int fd, std::size_t n) {
    std::vector<char> buf(n);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::recv(fd, buf.data() + got, n - got, 0);
        if (r <= 0) {
            return false;
        }
        got += static_cast<std::size_t>(r);
    }
    return true;
}

void writeAll(int fd, const std::vector<std::uint8_t>& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            return; // the client gave up: what the script sends next no longer matters
        }
        sent += static_cast<std::size_t>(n);
    }
}

void put64(std::vector<std::uint8_t>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
}

std::vector<std::uint8_t> header(std::uint32_t words, std::uint8_t type) {
    std::vector<std::uint8_t> h;
    for (int i = 0; i < 4; ++i) {
        h.push_back(static_cast<std::uint8_t>(words >> (8 * i)));
    }
    h.push_back(type);
    h.insert(h.end(), {0, 0, 0});
    return h;
}

bool readRequest(int fd) {
    std::vector<std::uint8_t> h(8);
    std::size_t got = 0;
    while (got < 8) {
        const ssize_t r = ::recv(fd, h.data() + got, 8 - got, 0);
        if (r <= 0) {
            return false;
        }
        got += static_cast<std::size_t>(r);
    }
    const std::uint32_t words = h[0] | (h[1] << 8) | (h[2] << 16) | (static_cast<std::uint32_t>(h[3]) << 24);
    return readExactly(fd, words * 8u);
}

void drain(int fd) {
    char buf[256];
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
}

bool handshake(int fd) {
    if (!readExactly(fd, 8) || !readRequest(fd)) {
        return false;
    }
    auto welcome = header(1, 2);
    put64(welcome, 15000);
    writeAll(fd, welcome);
    return true;
}

Error expectError(const std::function<void()>& call) {
    try {
        call();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "no dqlite::Error thrown";
    return Error(Error::Kind::Server, 0, "none", "none");
}

} // namespace ncstore::dqlite::test
