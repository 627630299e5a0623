#include "netns.hpp"

#include "support.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ncstore::ha::test {

namespace {

constexpr const char* kNamespacePrefix = "ncstore-ha-";
constexpr const char* kBridgePrefix = "nhab"; // link names: at most 15 characters (IFNAMSIZ - 1)
constexpr const char* kVethPrefix = "nha";

std::string joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& w : argv) {
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
}

/// The whole content of a memfd written by a child.
std::string readBack(int fd) {
    std::string out;
    ::lseek(fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) {
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

/// A file descriptor closed on scope exit.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

bool pidAlive(const std::string& digits) {
    try {
        const pid_t pid = static_cast<pid_t>(std::stol(digits));
        return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH);
    } catch (const std::exception&) {
        return true; // not one of ours: leave it alone
    }
}

/// The pid in a name made by Network ("ncstore-ha-PID-I", "nhabPID", "nhaPIDnI"), or "".
std::string pidOf(const std::string& name) {
    std::string rest;
    if (name.rfind(kNamespacePrefix, 0) == 0) {
        rest = name.substr(std::strlen(kNamespacePrefix));
    } else if (name.rfind(kBridgePrefix, 0) == 0) {
        rest = name.substr(std::strlen(kBridgePrefix));
    } else if (name.rfind(kVethPrefix, 0) == 0) {
        rest = name.substr(std::strlen(kVethPrefix));
    }
    std::size_t n = 0;
    while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) {
        ++n;
    }
    return rest.substr(0, n);
}

std::vector<std::string> namespaceNames() {
    std::vector<std::string> out;
    std::istringstream lines(runCommand({"ip", "netns", "list"}));
    for (std::string line; std::getline(lines, line);) {
        const std::string name = line.substr(0, line.find(' ')); // "NAME (id: 3)"
        if (name.rfind(kNamespacePrefix, 0) == 0) {
            out.push_back(name);
        }
    }
    return out;
}

std::vector<std::string> linkNames() {
    std::vector<std::string> out;
    std::istringstream lines(runCommand({"ip", "-o", "link", "show"}));
    for (std::string line; std::getline(lines, line);) {
        // "7: nha123n0@if2: <BROADCAST,..."
        const auto start = line.find(": ");
        if (start == std::string::npos) {
            continue;
        }
        const std::string name = line.substr(start + 2, line.find_first_of("@:", start + 2) - start - 2);
        if (name.rfind(kVethPrefix, 0) == 0 && !pidOf(name).empty()) {
            out.push_back(name);
        }
    }
    return out;
}

} // namespace

std::string runCommand(const std::vector<std::string>& argv) {
    const std::string program = dqlite::test::findExecutable(argv.at(0));
    // Output goes to memory files read after the exit: no pipe to keep drained.
    Fd out(::memfd_create("ncstore-ha-out", MFD_CLOEXEC)), err(::memfd_create("ncstore-ha-err", MFD_CLOEXEC));
    if (out.fd < 0 || err.fd < 0) {
        throw std::system_error(errno, std::generic_category(), "memfd_create");
    }
    std::vector<const char*> args;
    for (const auto& w : argv) {
        args.push_back(w.c_str());
    }
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out.fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err.fd, STDERR_FILENO);
    pid_t pid = -1;
    const int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, const_cast<char**>(args.data()), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        throw CommandError(joined(argv) + ": " + std::strerror(rc));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string why = readBack(err.fd);
        while (!why.empty() && why.back() == '\n') {
            why.pop_back();
        }
        throw CommandError(joined(argv) + ": " +
                           (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "killed") +
                           (why.empty() ? "" : ": " + why));
    }
    return readBack(out.fd);
}

Network::Network(std::size_t nodes) : pid_(std::to_string(::getpid())) {
    if (::geteuid() != 0) {
        throw NetnsUnavailable("network namespaces need root (running as uid " + std::to_string(::geteuid()) +
                               ")");
    }
    bridge_ = kBridgePrefix + pid_;
    try {
        build(nodes);
    } catch (...) {
        teardown(); // promise 2: a half-built network is removed before the error leaves
        throw;
    }
}

Network::~Network() {
    teardown();
}

void Network::build(std::size_t nodes) {
    // Leftovers of runs that died without their destructors (SIGKILL, a debugger): deleting the
    // namespace deletes its veth and so the outer end too.
    for (const auto& ns : namespaceNames()) {
        if (!pidAlive(pidOf(ns))) {
            std::cerr << "ha: removing namespace " << ns << " left by a dead run\n";
            runCommand({"ip", "netns", "del", ns});
        }
    }
    for (const auto& link : linkNames()) {
        if (!pidAlive(pidOf(link))) {
            std::cerr << "ha: removing link " << link << " left by a dead run\n";
            try {
                runCommand({"ip", "link", "del", link});
            } catch (const CommandError& e) {
                // The kernel destroys a deleted namespace, and the veths in it, asynchronously: a
                // veth listed a moment ago may be gone already.
                std::cerr << "ha: " << e.what() << "\n";
            }
        }
    }

    // A /24 that nothing in the root namespace uses; the pid picks the first one tried so that
    // two runs started together are unlikely to race for the same one.
    const std::string used = runCommand({"ip", "-o", "-4", "addr", "show"}) +
                             runCommand({"ip", "-4", "route", "show", "table", "all"});
    const int first = static_cast<int>(::getpid() % 200);
    for (int i = 0; i < 250 && subnet_ == 0; ++i) {
        const int s = 1 + (first + i) % 250;
        if (used.find("10.213." + std::to_string(s) + ".") == std::string::npos) {
            subnet_ = s;
        }
    }
    if (subnet_ == 0) {
        throw CommandError("no free 10.213.S.0/24 in the root namespace");
    }
    const std::string prefix = "10.213." + std::to_string(subnet_) + ".";

    for (std::size_t i = 0; i < nodes; ++i) {
        const std::string ns = kNamespacePrefix + pid_ + "-" + std::to_string(i + 1);
        try {
            runCommand({"ip", "netns", "add", ns});
        } catch (const CommandError& e) {
            if (i == 0) {
                throw NetnsUnavailable(std::string("cannot create a network namespace: ") + e.what());
            }
            throw;
        }
        undo_.push_back({"ip", "netns", "del", ns});
        namespaces_.push_back(ns);
    }

    runCommand({"ip", "link", "add", bridge_, "type", "bridge"});
    undo_.push_back({"ip", "link", "del", bridge_});
    runCommand({"ip", "addr", "add", prefix + "254/24", "dev", bridge_});
    runCommand({"ip", "link", "set", bridge_, "up"});

    for (std::size_t i = 0; i < nodes; ++i) {
        const std::string& ns = namespaces_[i];
        const std::string veth = vethName(i);
        runCommand({"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns});
        undo_.push_back({"ip", "link", "del", veth});
        runCommand({"ip", "link", "set", veth, "master", bridge_, "up"});
        runCommand({"ip", "-n", ns, "addr", "add", ip(i) + "/24", "dev", "eth0"});
        runCommand({"ip", "-n", ns, "link", "set", "eth0", "up"});
        runCommand({"ip", "-n", ns, "link", "set", "lo", "up"});
    }
}

void Network::teardown() noexcept {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
        try {
            runCommand(*it);
        } catch (const std::exception& e) {
            std::cerr << "ha: cleanup failed: " << e.what() << "\n";
        }
    }
    undo_.clear();
}

std::string Network::vethName(std::size_t node) const {
    return kVethPrefix + pid_ + "n" + std::to_string(node + 1);
}

std::string Network::ip(std::size_t node) const {
    return "10.213." + std::to_string(subnet_) + "." + std::to_string(node + 1);
}

std::vector<std::string> Network::launcher(std::size_t node) const {
    return {"ip", "netns", "exec", namespaceName(node)};
}

void Network::cut(std::size_t node) {
    runCommand({"ip", "link", "set", vethName(node), "down"});
}

void Network::restore(std::size_t node) {
    runCommand({"ip", "link", "set", vethName(node), "up"});
}

void Network::inNamespace(std::size_t node, const std::function<void()>& work) const {
    const std::string path = "/run/netns/" + namespaceName(node);
    std::exception_ptr failure;
    std::thread thread([&] {
        try {
            Fd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
            if (ns.fd < 0 || ::setns(ns.fd, CLONE_NEWNET) != 0) {
                throw std::system_error(errno, std::generic_category(), "setns " + path);
            }
            work();
        } catch (...) {
            failure = std::current_exception();
        }
    });
    thread.join();
    if (failure) {
        std::rethrow_exception(failure);
    }
}

std::vector<std::string> Network::leftovers() {
    std::vector<std::string> out = namespaceNames();
    for (auto& link : linkNames()) {
        out.push_back(std::move(link));
    }
    return out;
}

std::string makeNetwork(std::optional<Network>& net, std::size_t nodes) {
    try {
        net.emplace(nodes);
        return "";
    } catch (const NetnsUnavailable& e) {
        return e.what();
    }
}

bool haRequired() {
    const char* required = std::getenv("NCSTORE_HA_REQUIRED");
    return required && std::string_view(required) == "1";
}

} // namespace ncstore::ha::test
