// This ncstored as a member of a dqlite cluster (issue 17, `--backend dqlite`): its embedded
// dqlite node, its place in the cluster's configuration, and whether it is the Raft leader.
//
// Promises:
//  1. The constructor starts the embedded node (Raft log and snapshots in `dataDir`). Node 1
//     bootstraps a one-node cluster the first time; any other node that is not yet a voter of
//     the cluster asks the leader (found among `peers`) to add it and make it vote, waiting up
//     to `joinTimeout` for a leader to answer. A restart with the same id and directory
//     rejoins as it was, and the node catches up from the leader by itself.
//  2. isLeader() asks the embedded node, never a peer: a node cut off from the others stops
//     being leader once Raft says so (it steps down when it no longer hears from a majority),
//     and nothing here decides leadership on its own.
//  3. Nothing here runs SQL: the datastore's dqlite backend does, on the embedded node only
//     (storeOptions()), so that a node that is not leader can never write through another.
//
// Thread-safety: every method may be called from any thread (they share one connection to the
// embedded node, under a mutex).
#pragma once

#include "ncstore/dqlite/client.hpp"
#include "ncstore/dqlite/node.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ncstore::cluster {

struct MemberOptions {
    std::uint64_t id = 1;
    std::string address;            ///< "a.b.c.d:port" of the embedded node
    std::vector<std::string> peers; ///< other nodes' addresses: where to find the leader
    std::filesystem::path dataDir;  ///< the node's Raft log and snapshots (created if missing)
    std::chrono::milliseconds latency{0};
    std::chrono::milliseconds joinTimeout{30000};
};

/// "voter", "standby", "spare" (as ncstore-cluster's role enumeration names them).
const char* roleName(dqlite::Role role);

class Member {
public:
    /// Starts the node and joins (promise 1). Throws std::runtime_error naming what failed.
    explicit Member(MemberOptions options);
    Member(const Member&) = delete;
    Member& operator=(const Member&) = delete;
    ~Member();

    /// Whether the embedded node is the leader now (false when it cannot tell).
    bool isLeader();
    /// The leader as the embedded node knows it ("" when it knows none).
    std::string leader();
    /// The cluster's configuration and leader as the embedded node knows them (for the state
    /// data, ncstore-cluster); the nodes are empty when it cannot tell.
    struct View {
        std::optional<dqlite::NodeInfo> leader;
        std::vector<dqlite::NodeInfo> nodes;
    };
    View view();
    const MemberOptions& options() const noexcept { return options_; }

    /// Every node of the cluster with its role, and the leader, as the leader reports them:
    /// for `ncstored --cluster-status`.
    static std::string status(const std::vector<std::string>& addresses);
    /// Adds node "ID@ADDRESS" to the cluster as a spare (through the leader among `addresses`),
    /// before it first starts; when it starts it makes itself a voter. Throws std::runtime_error.
    static void add(const std::vector<std::string>& addresses, const std::string& node);
    /// Removes node `id` from the cluster (through the leader among `addresses`).
    static void remove(const std::vector<std::string>& addresses, std::uint64_t id);
    /// Recovery from a lost majority, on the stopped node `self` (dqlite::Node::recover): its
    /// configuration becomes `survivors` ("ID@ADDRESS" each, voters). Throws std::runtime_error.
    static void recover(const MemberOptions& self, const std::vector<std::string>& survivors);

private:
    void join();
    /// The connection to the embedded node, connected if it is not (mutex_ held).
    dqlite::Connection& own();
    std::optional<dqlite::NodeInfo> askLeader();

    MemberOptions options_;
    dqlite::Node node_;
    std::mutex mutex_;
    std::optional<dqlite::Connection> own_; // to the embedded node; guarded by mutex_
};

} // namespace ncstore::cluster
