// An embedded dqlite node (libdqlite's C API) owned by one C++ object: created and configured in
// the constructor, started and stopped explicitly, stopped (if running) and destroyed in the
// destructor, so that a node cannot outlive its owner or be destroyed while its thread runs.
//
// Promises:
//  1. Node 1 with an empty data directory bootstraps a one-node cluster on start(); any other id
//     starts with no configuration and waits to be added (ADD, then ASSIGN, sent to the leader
//     through a dqlite::Connection). Restarting a node needs the same id and data directory.
//  2. A started node accepts connections on its bind address when start() returns. SQL and
//     membership go over the wire protocol (client.hpp), even to this process's own node.
//  3. start() ignores SIGPIPE for the whole process, once: libdqlite writes to peers' sockets
//     without MSG_NOSIGNAL, and a peer that died would otherwise kill this process (seen with
//     followers of a killed leader).
//  4. Failures throw NodeError with the node id and dqlite's own message (dqlite_node_errmsg).
//     A missing data directory or an address dqlite cannot bind is refused before libdqlite sees
//     it: dqlite 1.11 leaks a few KiB when a node fails or is destroyed before it ever started.
//
// Thread-safety: one thread at a time per Node; libdqlite runs the node on a thread of its own.
#pragma once

#include "ncstore/dqlite/client.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct dqlite_node;

namespace ncstore::dqlite {

class NodeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Node {
public:
    struct Options {
        std::uint64_t id = 1;
        /// "a.b.c.d:port" (IPv4: dqlite 1.11 binds nothing else) that clients and the other nodes use; also
        /// the address bound.
        std::string address;
        /// Raft log and snapshots; must exist.
        std::filesystem::path dataDir;
        /// One-way latency between nodes: Raft's election timeout becomes 15 times this and the
        /// heartbeat 1.5 times (zero keeps dqlite's defaults, a 3 s election timeout).
        std::chrono::milliseconds networkLatency{0};

        /// Raft's election timeout that networkLatency gives (dqlite 1.11: 15 times it, 3 s when
        /// zero). A follower starts an election no sooner than this after it last heard from
        /// its leader (libraft draws each timeout between this and twice it).
        std::chrono::milliseconds electionTimeout() const {
            return networkLatency.count() > 0 ? networkLatency * 15 : std::chrono::milliseconds{3000};
        }
    };

    explicit Node(Options options);
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    ~Node();

    void start();
    /// Stops the node (idempotent): in-flight requests complete, connections are closed.
    void stop();
    /// Recovery of a cluster that lost its majority for good (dqlite_node_recover_ext): rewrites
    /// this node's Raft configuration to `survivors` (this node included, with their roles). Only
    /// on a node that is not running, once, on the survivor with the newest log; its data
    /// directory then replaces the other survivors' before they all start again. Throws NodeError.
    void recover(const std::vector<NodeInfo>& survivors);

    bool running() const noexcept { return running_; }
    const Options& options() const noexcept { return options_; }

private:
    struct Destroy {
        void operator()(::dqlite_node* node) const noexcept;
    };
    void checkAddress() const;
    [[noreturn]] void fail(const char* what, int rc) const;

    Options options_;
    std::unique_ptr<::dqlite_node, Destroy> node_;
    bool running_ = false;
};

} // namespace ncstore::dqlite
