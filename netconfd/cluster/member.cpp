#include "member.hpp"

#include "ncstore/log.hpp"

#include <sstream>
#include <stdexcept>
#include <thread>

namespace ncstore::cluster {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

dqlite::Node::Options nodeOptions(const MemberOptions& o) {
    std::filesystem::create_directories(o.dataDir);
    dqlite::Node::Options n;
    n.id = o.id;
    n.address = o.address;
    n.dataDir = o.dataDir;
    n.networkLatency = o.latency;
    return n;
}

/// "ID@ADDRESS" as a voter; throws naming the option when it is not that.
dqlite::NodeInfo parseNode(const std::string& text, const char* option) {
    const auto at = text.find('@');
    std::uint64_t id = 0;
    try {
        id = at == std::string::npos ? 0 : std::stoull(text.substr(0, at));
    } catch (const std::exception&) {
        id = 0;
    }
    if (id == 0 || at + 1 >= text.size()) {
        throw std::runtime_error(std::string(option) + ": '" + text + "' is not ID@ADDRESS");
    }
    return {id, text.substr(at + 1), dqlite::Role::Voter};
}

} // namespace

const char* roleName(dqlite::Role role) {
    switch (role) {
    case dqlite::Role::Voter:
        return "voter";
    case dqlite::Role::Standby:
        return "standby";
    case dqlite::Role::Spare:
        return "spare";
    }
    return "?";
}

Member::Member(MemberOptions options) : options_(std::move(options)), node_(nodeOptions(options_)) {
    node_.start();
    if (options_.id != 1 || !options_.peers.empty()) {
        join();
    }
}

Member::~Member() {
    {
        const std::lock_guard lock(mutex_);
        own_.reset();
    }
    try {
        node_.stop();
    } catch (const std::exception& e) {
        NCS_LOG(warning) << "dqlite node " << options_.id << " did not stop cleanly: " << e.what();
    }
}

void Member::join() {
    std::vector<std::string> addresses = options_.peers;
    addresses.push_back(options_.address);
    dqlite::Cluster cluster(addresses);
    const auto deadline = Clock::now() + options_.joinTimeout;
    std::string last = "no leader answered";
    while (Clock::now() < deadline) {
        try {
            dqlite::Connection& leader = cluster.leader(5s);
            std::optional<dqlite::NodeInfo> me;
            for (const auto& n : leader.cluster()) {
                if (n.id == options_.id) {
                    me = n;
                }
            }
            if (me && me->address != options_.address) {
                throw std::runtime_error("node " + std::to_string(options_.id) +
                                         " is in the cluster with address " + me->address + ", not " +
                                         options_.address + ": remove it first (ncstored --cluster-remove)");
            }
            if (!me) {
                NCS_LOG(info) << "dqlite node " << options_.id << ": joining through the leader "
                              << leader.address();
                leader.add(options_.id, options_.address);
            }
            if (!me || me->role != dqlite::Role::Voter) {
                leader.assign(options_.id, dqlite::Role::Voter);
            }
            NCS_LOG(info) << "dqlite node " << options_.id << " is a voter of the cluster (leader "
                          << leader.address() << ")";
            return;
        } catch (const dqlite::Error& e) {
            last = e.what();
            cluster.invalidate();
            std::this_thread::sleep_for(200ms);
        }
    }
    throw std::runtime_error("dqlite node " + std::to_string(options_.id) +
                             " could not join the cluster within " +
                             std::to_string(options_.joinTimeout.count()) + " ms: " + last);
}

dqlite::Connection& Member::own() {
    if (!own_ || !own_->usable()) {
        dqlite::ConnectOptions o;
        o.connectTimeout = 1000ms;
        o.requestTimeout = 1000ms;
        own_.emplace(dqlite::Connection::connect(options_.address, o));
    }
    return *own_;
}

std::optional<dqlite::NodeInfo> Member::askLeader() {
    const std::lock_guard lock(mutex_);
    try {
        return own().leader();
    } catch (const dqlite::Error& e) {
        NCS_LOG(debug) << "dqlite node " << options_.id << ": cannot ask for the leader: " << e.what();
        own_.reset();
        return std::nullopt;
    }
}

Member::View Member::view() {
    const std::lock_guard lock(mutex_);
    View v;
    try {
        v.leader = own().leader();
        v.nodes = own().cluster();
    } catch (const dqlite::Error& e) {
        NCS_LOG(debug) << "dqlite node " << options_.id << ": cannot read the cluster: " << e.what();
        own_.reset();
    }
    return v;
}

bool Member::isLeader() {
    const auto l = askLeader();
    return l && l->id == options_.id;
}

std::string Member::leader() {
    const auto l = askLeader();
    return l ? l->address : std::string();
}

std::string Member::status(const std::vector<std::string>& addresses) {
    dqlite::Cluster cluster(addresses);
    dqlite::Connection& leader = cluster.leader(5s);
    std::ostringstream out;
    for (const auto& n : leader.cluster()) {
        out << "node " << n.id << " " << n.address << " " << roleName(n.role)
            << (n.address == leader.address() ? " leader" : "") << "\n";
    }
    return out.str();
}

void Member::add(const std::vector<std::string>& addresses, const std::string& node) {
    const dqlite::NodeInfo info = parseNode(node, "--cluster-add");
    dqlite::Cluster cluster(addresses);
    // As a spare only: Raft makes a node a voter once it has caught up, which a node that does not
    // run yet never does (ASSIGN would wait forever). It asks for its vote itself when it starts
    // (join()). Not retried on a lost answer: ADD of a node that is there already is refused.
    cluster.run([&](dqlite::Connection& leader) { leader.add(info.id, info.address); }, 10s, false);
}

void Member::remove(const std::vector<std::string>& addresses, std::uint64_t id) {
    dqlite::Cluster cluster(addresses);
    cluster.run([&](dqlite::Connection& leader) { leader.remove(id); }, 10s, false);
}

void Member::recover(const MemberOptions& self, const std::vector<std::string>& survivors) {
    std::vector<dqlite::NodeInfo> infos;
    bool selfListed = false;
    for (const auto& s : survivors) {
        infos.push_back(parseNode(s, "--cluster-recover"));
        selfListed = selfListed || (infos.back().id == self.id && infos.back().address == self.address);
    }
    if (!selfListed) {
        throw std::runtime_error("--cluster-recover: the survivors must include this node (" +
                                 std::to_string(self.id) + "@" + self.address + ")");
    }
    if (!std::filesystem::is_directory(self.dataDir)) {
        throw std::runtime_error("--cluster-recover: " + self.dataDir.string() + " holds no dqlite node");
    }
    dqlite::Node node(nodeOptions(self));
    node.recover(infos);
    // Started and stopped at once: libdqlite 1.11 frees a node's Raft transport and event loop
    // only when it ran (a node destroyed before it ever started leaks them, LeakSanitizer saw
    // it). A recovered cluster of one may elect it at once, which changes no data; it stops at once.
    node.start();
    node.stop();
}

} // namespace ncstore::cluster
