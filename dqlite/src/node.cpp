#include "ncstore/dqlite/node.hpp"

#include "ncstore/log.hpp"

// dqlite.h has no extern "C" of its own (1.11).
extern "C" {
#include <dqlite.h>
}

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ncstore::dqlite {

namespace {

/// Raft's connections to the other nodes, made here rather than by libdqlite, whose own leave
/// Nagle's algorithm on: a follower's small replies then waited for the leader's delayed ACK
/// (the leader never writes on that connection), and about one commit in ten took ~45 ms
/// instead of ~2 (seen with strace on a 3-node cluster). Blocking, as libdqlite wants it,
/// bounded by a 2 s connect timeout. Returns 0 with the connected socket in *fd, or 1.
int connectWithoutNagle(void* /*arg*/, const char* address, int* fd) {
    const std::string a = address ? address : "";
    const auto colon = a.rfind(':');
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    if (colon == std::string::npos || ::inet_pton(AF_INET, a.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
        return 1;
    }
    unsigned long port = 0;
    try {
        port = std::stoul(a.substr(colon + 1));
    } catch (const std::exception&) {
        return 1;
    }
    if (port == 0 || port > 65535) {
        return 1;
    }
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        return 1;
    }
    const int one = 1;
    bool ok = ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
    if (ok && ::connect(s, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
        ok = errno == EINPROGRESS;
        pollfd p{s, POLLOUT, 0};
        int error = 0;
        socklen_t len = sizeof error;
        ok = ok && ::poll(&p, 1, 2000) == 1 && ::getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &len) == 0 &&
             error == 0;
    }
    ok = ok && ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) & ~O_NONBLOCK) == 0;
    if (!ok) {
        ::close(s);
        return 1;
    }
    *fd = s;
    return 0;
}

} // namespace

void Node::Destroy::operator()(::dqlite_node* node) const noexcept {
    ::dqlite_node_destroy(node);
}

Node::Node(Options options) : options_(std::move(options)) {
    if (options_.id == 0) {
        throw NodeError("dqlite node: id 0 is reserved (ids start at 1, node 1 bootstraps)");
    }
    // dqlite 1.11 leaks what it had set up when a node fails before it ever ran (LeakSanitizer:
    // raft_init, raft_uv_init, uv_loop_init, fsm__init, after a failed create or a failed bind),
    // and says less than we can: check the directory and the address first.
    checkAddress();
    std::error_code ec;
    if (!std::filesystem::is_directory(options_.dataDir, ec)) {
        throw NodeError("dqlite node " + std::to_string(options_.id) + ": data directory " +
                        options_.dataDir.string() + " is not a directory" +
                        (ec ? ": " + ec.message() : std::string()));
    }
    ::dqlite_node* raw = nullptr;
    const int rc =
        ::dqlite_node_create(options_.id, options_.address.c_str(), options_.dataDir.c_str(), &raw);
    // dqlite allocates the node even when its initialisation fails; the holder frees it either way.
    node_.reset(raw);
    if (rc != 0) {
        fail("dqlite_node_create", rc);
    }
    if (const int bound = ::dqlite_node_set_bind_address(node_.get(), options_.address.c_str()); bound != 0) {
        fail("dqlite_node_set_bind_address", bound);
    }
    if (const int set = ::dqlite_node_set_connect_func(node_.get(), connectWithoutNagle, nullptr); set != 0) {
        fail("dqlite_node_set_connect_func", set);
    }
    if (options_.networkLatency.count() > 0) {
        const auto ms = static_cast<unsigned>(options_.networkLatency.count());
        if (const int set = ::dqlite_node_set_network_latency_ms(node_.get(), ms); set != 0) {
            fail("dqlite_node_set_network_latency_ms", set);
        }
    }
}

void Node::checkAddress() const {
    // What dqlite 1.11's dqlite_node_set_bind_address accepts for TCP: a numeric IPv4 address and a
    // port ("[::1]:9001" is refused with DQLITE_MISUSE: tried).
    const std::string& a = options_.address;
    const auto colon = a.rfind(':');
    const std::string host = colon == std::string::npos ? "" : a.substr(0, colon);
    const std::string port = colon == std::string::npos ? "" : a.substr(colon + 1);
    in_addr v4{};
    const bool hostOk = ::inet_pton(AF_INET, host.c_str(), &v4) == 1;
    const bool portOk = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string::npos && std::stoul(port) >= 1 &&
                        std::stoul(port) <= 65535;
    if (!hostOk || !portOk) {
        throw NodeError("dqlite node " + std::to_string(options_.id) + ": address '" + a +
                        "' is not a numeric IPv4 address with a port (what dqlite 1.11 can bind)");
    }
}

Node::~Node() {
    try {
        stop();
    } catch (const std::exception& e) {
        // Destroying a node whose thread still runs would be undefined: keep it (a leak) instead.
        NCS_LOG(error) << e.what() << " (node leaked, not destroyed while it may still run)";
        (void)node_.release();
    }
}

void Node::start() {
    if (running_) {
        return;
    }
    static std::once_flag sigpipe;
    std::call_once(sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
    if (const int rc = ::dqlite_node_start(node_.get()); rc != 0) {
        fail("dqlite_node_start", rc);
    }
    running_ = true;
    NCS_LOG(info) << "dqlite node " << options_.id << " serving on " << options_.address << " (data "
                  << options_.dataDir.string() << ")";
}

void Node::stop() {
    if (!running_) {
        return;
    }
    if (const int rc = ::dqlite_node_stop(node_.get()); rc != 0) {
        fail("dqlite_node_stop", rc);
    }
    running_ = false;
    NCS_LOG(info) << "dqlite node " << options_.id << " stopped";
}

void Node::recover(const std::vector<NodeInfo>& survivors) {
    if (running_) {
        throw NodeError("dqlite node " + std::to_string(options_.id) + ": recovery needs a stopped node");
    }
    std::vector<::dqlite_node_info_ext> infos;
    for (const auto& n : survivors) {
        ::dqlite_node_info_ext info{};
        info.size = sizeof info;
        info.id = n.id;
        info.address = reinterpret_cast<std::uint64_t>(n.address.c_str()); // the header's own way
        info.dqlite_role = static_cast<std::uint64_t>(n.role);
        infos.push_back(info);
    }
    if (const int rc = ::dqlite_node_recover_ext(node_.get(), infos.data(), static_cast<int>(infos.size()));
        rc != 0) {
        fail("dqlite_node_recover_ext", rc);
    }
    NCS_LOG(warning) << "dqlite node " << options_.id << ": configuration rewritten to " << survivors.size()
                     << " node(s)";
}

void Node::fail(const char* what, int rc) const {
    const char* message = node_ ? ::dqlite_node_errmsg(node_.get()) : nullptr;
    throw NodeError(std::string(what) + " for node " + std::to_string(options_.id) + " at " +
                    options_.address + ": rc " + std::to_string(rc) +
                    (message && *message ? std::string(": ") + message : ""));
}

} // namespace ncstore::dqlite
