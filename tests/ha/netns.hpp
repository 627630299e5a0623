// Network namespaces for the high-availability tests (issue 17): each dqlite node gets a namespace
// of its own, joined to the others by a veth pair whose outer end sits on a bridge in the root
// namespace. The test process reaches every node through that bridge; a partition is the outer
// end of a node's veth taken down.
//
//    root namespace                       namespace ncstore-ha-PID-I (one per node)
//    bridge nhabPID  10.213.S.254/24 ---- veth nhaPIDnI <====> eth0 10.213.S.I/24, lo up
//
// Promises:
//  1. Unique names: namespaces, bridge and veths carry the test process's pid, and the /24 (S) is
//     one that no address or route of the root namespace uses, so parallel runs do not collide.
//  2. No leftovers: the destructor removes everything the constructor made, and a constructor that
//     fails half-way removes what it made before throwing. Leftovers of a run that was SIGKILLed
//     (its pid no longer alive) are removed by the next Network.
//  3. Errors name the command and carry its stderr (CommandError). A process that cannot create a
//     namespace at all (not root, no CAP_SYS_ADMIN / CAP_NET_ADMIN) gets NetnsUnavailable, so
//     that tests can skip with the reason.
//
// Thread-safety: one thread at a time, except inNamespace(), which runs its work on a thread of
// its own and may be called from several threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncstore::ha::test {

class CommandError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The process cannot create network namespaces: the reason, for a skip.
class NetnsUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Runs `argv` (argv[0] looked up in PATH, /usr/sbin, /sbin), waits, and returns its stdout.
/// Throws CommandError with the command line, exit status and stderr when it does not exit 0.
std::string runCommand(const std::vector<std::string>& argv);

class Network {
public:
    /// Builds `nodes` namespaces on one bridge. Throws NetnsUnavailable when not root or when the
    /// first namespace cannot be created, CommandError for any later failure.
    explicit Network(std::size_t nodes);
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;
    ~Network();

    std::size_t size() const noexcept { return namespaces_.size(); }
    const std::string& namespaceName(std::size_t node) const { return namespaces_.at(node); }
    /// Node `node`'s IPv4 address in its namespace, reachable from the root namespace.
    std::string ip(std::size_t node) const;
    /// The command prefix that runs a program in node `node`'s namespace (ip netns exec execs in
    /// place, so the pid seen by the test is the program's).
    std::vector<std::string> launcher(std::size_t node) const;

    /// Takes node `node`'s link down (its veth's outer end): the node keeps its address and can
    /// still talk to itself, but nothing passes between it and the others or the test process.
    void cut(std::size_t node);
    /// Brings the link back.
    void restore(std::size_t node);

    /// Runs `work` on a new thread that entered node `node`'s namespace with setns(CLONE_NEWNET)
    /// (a network namespace is per thread: the test's other threads stay in the root namespace),
    /// and joins it. An exception from `work` is rethrown here.
    void inNamespace(std::size_t node, const std::function<void()>& work) const;

    /// Names of every namespace and link that any Network made (for the leftover check).
    static std::vector<std::string> leftovers();

private:
    void build(std::size_t nodes);
    void teardown() noexcept;
    std::string vethName(std::size_t node) const;

    std::string pid_;
    std::string bridge_;
    int subnet_ = 0; ///< S in 10.213.S.0/24
    std::vector<std::string> namespaces_;
    /// Commands that undo what was made, run in reverse order by teardown().
    std::vector<std::vector<std::string>> undo_;
};

/// Makes `net` a Network of `nodes`; returns "" then, or the reason this process cannot make
/// namespaces (NetnsUnavailable), leaving `net` empty: tests then skip saying why, or fail when
/// NCSTORE_HA_REQUIRED=1 (haRequired()), for the recorded `ctest -L ha` runs.
std::string makeNetwork(std::optional<Network>& net, std::size_t nodes);
bool haRequired();

} // namespace ncstore::ha::test
