// ncstored: command line, logging, signals; the server itself is in server.cpp.
#include "datadir.hpp"
#include "member.hpp"
#include "nacmsetup.hpp"
#include "options.hpp"
#include "server.hpp"
#include "standby.hpp"
#include "users.hpp"
#include "xpathworker.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/files.hpp"
#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#ifndef NCSTORE_VERSION
#define NCSTORE_VERSION "unknown"
#endif

using namespace ncstore::netconfd;

namespace {

int addUser(const ServerConfig& config, const std::string& name, const std::string& group) {
    std::string password;
    if (isatty(STDIN_FILENO)) {
        std::cerr << "password for " << name << ": " << std::flush;
    }
    if (!std::getline(std::cin, password) || password.empty()) {
        std::cerr << "ncstored: no password on stdin\n";
        return 2;
    }
    ncstore::files::preparePrivateDir(config.dataDir);
    UserDb users(config.dataDir / "users", config.dataDir / "authorized_keys");
    if (!group.empty()) {
        // The group first: a password without its group would log in with the NACM defaults.
        try {
            nacmsetup::addToGroup(config, users.names(), name, group, std::cout);
        } catch (const ncstore::files::LockHeld& e) {
            std::cerr
                << "ncstored: a server is running on " << config.dataDir.string() << " (" << e.what()
                << "): it holds the NACM groups in its datastore, which only it may change.\n"
                << "Nothing was changed. Add the user without --group (that takes effect at once), then "
                   "put it into the group over NETCONF as an administrator, e.g. an edit-config of\n"
                << "  <nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\"><groups><group><name>"
                << group << "</name><user-name>" << name << "</user-name></group></groups></nacm>\n"
                << "or stop the server and run this command again.\n";
            return 1;
        }
    }
    users.setPassword(name, password);
    NCS_LOG(info) << "user " << name << " set in " << (config.dataDir / "users").string();
    return 0;
}

int resetNacm(const ServerConfig& config) {
    try {
        ncstore::files::preparePrivateDir(config.dataDir);
        const UserDb users(config.dataDir / "users", config.dataDir / "authorized_keys");
        nacmsetup::reset(config, users.names(), std::cout);
        return 0;
    } catch (const ncstore::files::LockHeld& e) {
        std::cerr << "ncstored: a server is running on " << config.dataDir.string() << " (" << e.what()
                  << "): stop it first; --reset-nacm changes the store offline. Nothing was changed.\n";
        return 1;
    }
}

/// glibc's malloc as a server with multi-MB messages needs it, each setting unless the operator
/// chose it (its MALLOC_*_ variable or glibc.malloc tunable wins):
/// - arenas: glibc gives a thread that finds its arena locked an arena of its own, up to 8 per
///   core: with one thread per session, each of those arenas ends up holding the high-water mark
///   of the multi-MB replies that passed through it, spread over fragments no trim can return
///   (the soak saw 15 arenas of 10-18 MB each for a live heap of about 50 MB). Two per core keep
///   threads from queueing on one lock while the server's memory stays that of its data.
/// - freed memory is kept up to 64 MiB per arena (large buffers from the heap, trimmed above
///   64 MiB, grown 16 MiB at a time): by default a 2.6 MB reply got fresh pages from the kernel
///   each time, ~2,500 page faults per 16384-interface get-config, and the faults were half of
///   its server CPU (60 -> 30 ms, median 98 -> 67 ms with nctime.py; RSS 114 -> 129 MB).
/// False when a setting could not be made (the caller says so once logging is set up: logged
/// before, it would go to stdout, into what a command such as --cluster-status prints).
bool tuneMalloc() {
    const char* tunablesEnv = std::getenv("GLIBC_TUNABLES");
    const std::string_view tunables = tunablesEnv ? tunablesEnv : "";
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    struct Setting {
        int param;
        const char* env;
        std::string_view tunable;
        int value;
    };
    const Setting settings[] = {
        {M_ARENA_MAX, "MALLOC_ARENA_MAX", "glibc.malloc.arena_max", 2 * cores},
        {M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold", 32 << 20},
        {M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold", 64 << 20},
        {M_TOP_PAD, "MALLOC_TOP_PAD_", "glibc.malloc.top_pad", 16 << 20},
    };
    bool ok = true;
    for (const Setting& s : settings) {
        if (!std::getenv(s.env) && tunables.find(s.tunable) == std::string_view::npos) {
            ok = mallopt(s.param, s.value) == 1 && ok;
        }
    }
    return ok;
}

/// The nodes a cluster command asks: this node's address and its peers.
std::vector<std::string> clusterAddresses(const ServerConfig& config) {
    std::vector<std::string> addresses = config.dqlitePeers;
    if (!config.dqliteAddress.empty()) {
        addresses.insert(addresses.begin(), config.dqliteAddress);
    }
    return addresses;
}

ncstore::cluster::MemberOptions memberOptions(const ServerConfig& config) {
    ncstore::cluster::MemberOptions o;
    o.id = config.dqliteId;
    o.address = config.dqliteAddress;
    o.peers = config.dqlitePeers;
    o.dataDir = config.dataDir / "dqlite";
    o.latency = std::chrono::milliseconds(config.dqliteLatencyMs);
    return o;
}

/// Exit status of a server that stopped serving because its dqlite node lost the leadership:
/// EX_TEMPFAIL, which the systemd unit restarts (as a standby until it leads again).
constexpr int kLostLeadership = 75;

/// What the signal thread tells the rest: a stop was asked for, and the server to stop.
struct StopState {
    std::mutex mutex;
    std::condition_variable changed;
    bool requested = false;
    Server* server = nullptr;

    void request() {
        std::lock_guard lock(mutex);
        requested = true;
        if (server) {
            server->requestStop();
        }
        changed.notify_all();
    }
    /// Waits `d` or until a stop is asked for; true when it was.
    bool waitFor(std::chrono::milliseconds d) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, d, [this] { return requested; });
    }
    void serving(Server* s) {
        std::lock_guard lock(mutex);
        server = s;
        if (s && requested) {
            s->requestStop();
        }
    }
};

/// Runs an offline command (no server): its exit status, or 1 with the error on stderr.
int offline(const std::function<int()>& command) {
    try {
        return command();
    } catch (const std::exception& e) {
        std::cerr << "ncstored: " << e.what() << "\n";
        return 1;
    }
}

/// A standby waits for its dqlite node to lead, and on a fixed port tells clients where the
/// leader is meanwhile (standby.hpp). False when a stop was asked for first.
bool standbyUntilLeader(ncstore::cluster::Member& member, const ServerConfig& config, StopState& stop) {
    std::mutex leaderMutex;
    std::string leader = member.leader();
    std::optional<ncstore::cluster::StandbyNotice> notice;
    bool announced = false;
    while (!member.isLeader()) {
        {
            std::lock_guard l(leaderMutex);
            leader = member.leader();
        }
        if (!notice && config.port != 0) {
            notice.emplace(config.listen, config.port, [&] {
                std::lock_guard l(leaderMutex);
                return "ncstored standby: dqlite node " + std::to_string(config.dqliteId) +
                       " here is not the leader of its cluster, whose server alone serves NETCONF.\r\n"
                       "The leader now: " +
                       (leader.empty() ? std::string("none known (an election is going on)")
                                       : "the server of dqlite node " + leader) +
                       ".\r\n";
            });
        }
        if (!announced) {
            NCS_LOG(info) << "standby: this server serves NETCONF once its dqlite node " << config.dqliteId
                          << " is the leader (leader now: " << (leader.empty() ? "none known" : leader)
                          << ")";
            announced = true;
        }
        if (stop.waitFor(std::chrono::milliseconds(200))) {
            return false;
        }
    }
    return true;
}

/// While the server serves, asks its dqlite node every 200 ms whether it still leads; at the
/// first no, reads stop trusting the read lease (a transfer elects a new leader at once); after
/// two noes in a row it stops the server (the node stepped down: another server serves now).
class LeadershipWatch {
public:
    LeadershipWatch(ncstore::cluster::Member& member, Server& server)
        : thread_([this, &member, &server] { watch(member, server); }) {}
    LeadershipWatch(const LeadershipWatch&) = delete;
    LeadershipWatch& operator=(const LeadershipWatch&) = delete;
    ~LeadershipWatch() {
        watching_ = false;
        thread_.join();
    }
    bool lost() const { return lost_; }

private:
    void watch(ncstore::cluster::Member& member, Server& server) {
        ncstore::nameThisThread("ncs-leadership");
        for (int misses = 0; watching_;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            misses = member.isLeader() ? 0 : misses + 1;
            if (misses == 1) {
                server.leadershipInDoubt();
            }
            if (misses == 2) {
                NCS_LOG(error) << "dqlite node " << member.options().id
                               << " is no longer the leader (leader now: " << member.leader()
                               << "): this server stops serving";
                lost_ = true;
                server.requestStop();
                return;
            }
        }
    }

    std::atomic<bool> watching_{true};
    std::atomic<bool> lost_{false};
    std::thread thread_; // last: started once the flags exist
};

} // namespace

int main(int argc, char* argv[]) {
    if (argc == 2 && std::string_view(argv[1]) == "--xpath-worker") {
        return ncstore::netconfd::runXPathWorker(3); // the server started it (xpathworker.hpp)
    }
    const bool mallocTuned = tuneMalloc(); // before any thread exists
    CommandLine cmd;
    try {
        cmd = parseCommandLine(argc, argv);
        ncstore::log::setup(cmd.config.logLevel, cmd.config.logFile);
    } catch (const std::exception& e) {
        std::cerr << "ncstored: " << e.what() << "\nTry 'ncstored --help'.\n";
        return 2;
    }
    // The XPath workers are this program; /proc/self/exe stays it after an upgrade replaced the file.
    cmd.config.xpathWorkerProgram = "/proc/self/exe";
    switch (cmd.action) {
    case Action::Help:
        std::cout << cmd.helpText;
        return 0;
    case Action::Version:
        std::cout << "ncstored " << NCSTORE_VERSION << "\n";
        return 0;
    case Action::AddUser:
        return offline([&] { return addUser(cmd.config, cmd.addUser, cmd.group); });
    case Action::ResetNacm:
        return offline([&] { return resetNacm(cmd.config); });
    case Action::ClusterStatus:
        return offline([&] {
            std::cout << ncstore::cluster::Member::status(clusterAddresses(cmd.config));
            return 0;
        });
    case Action::ClusterAdd:
        return offline([&] {
            ncstore::cluster::Member::add(clusterAddresses(cmd.config), cmd.addNode);
            std::cout << "node " << cmd.addNode << " added as a spare: it becomes a voter when it starts\n";
            return 0;
        });
    case Action::ClusterRemove:
        return offline([&] {
            ncstore::cluster::Member::remove(clusterAddresses(cmd.config), cmd.removeId);
            std::cout << "node " << cmd.removeId << " removed\n";
            return 0;
        });
    case Action::ClusterRecover:
        return offline([&] {
            // Only with the server stopped: its lock says whether it runs.
            const ncstore::files::ProcessLock lock(lockFile(cmd.config));
            ncstore::cluster::Member::recover(memberOptions(cmd.config), cmd.survivors);
            std::cout << "node " << cmd.config.dqliteId << ": the cluster is now";
            for (const auto& s : cmd.survivors) {
                std::cout << " " << s;
            }
            std::cout << "\ncopy " << (cmd.config.dataDir / "dqlite").string()
                      << " over the dqlite directory of every other survivor, then start them all\n";
            return 0;
        });
    case Action::Run:
        break;
    }
    if (!mallocTuned) {
        NCS_LOG(warning) << "cannot tune malloc (arenas, freed memory kept): the server's memory may grow "
                            "with its sessions, or large replies cost page faults";
    }
    // Signals are taken by one thread with sigwait; every other thread inherits the mask.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    try {
        // Held while serving: offline commands that write the store refuse to run beside it,
        // and so does a second server on the same data directory.
        ncstore::files::preparePrivateDir(cmd.config.dataDir);
        std::optional<ncstore::files::ProcessLock> lock;
        try {
            lock.emplace(lockFile(cmd.config));
        } catch (const ncstore::files::LockHeld& e) {
            throw std::runtime_error("another ncstored is running on " + cmd.config.dataDir.string() + " (" +
                                     e.what() + ")");
        }
        StopState stop;
        std::thread signalThread([&stop, stopSignals] {
            ncstore::nameThisThread("ncs-signals");
            int sig = 0;
            sigwait(&stopSignals, &sig);
            NCS_LOG(info) << "signal " << sig << " received";
            stop.request();
        });
        struct ReleaseSignalThread {
            std::thread& t;
            ~ReleaseSignalThread() {
                // Whether a signal came or the server stopped by itself.
                pthread_kill(t.native_handle(), SIGTERM);
                t.join();
            }
        } release{signalThread};

        std::optional<ncstore::cluster::Member> member;
        if (cmd.config.backend == "dqlite") {
            member.emplace(memberOptions(cmd.config));
            if (!standbyUntilLeader(*member, cmd.config, stop)) {
                NCS_LOG(info) << "ncstored stopped (standby)";
                return 0;
            }
            NCS_LOG(info) << "dqlite node " << cmd.config.dqliteId << " is the leader: loading the datastore";
        }
        std::optional<Server> started;
        try {
            started.emplace(cmd.config, member ? &*member : nullptr);
            started->start();
        } catch (const ncstore::ds::Error& e) {
            // On a cluster the store fails to start once it loaded only when it cannot show that
            // its node leads (leadership moved while it loaded, or moved and came back): the
            // same event as losing the leadership while serving, not a broken server.
            if (!member) {
                throw;
            }
            NCS_LOG(error) << "dqlite node " << cmd.config.dqliteId
                           << " could not show that it leads while this server started (" << e.what()
                           << "): it does not serve";
            return kLostLeadership;
        }
        Server& server = *started;
        stop.serving(&server);
        std::optional<LeadershipWatch> watch;
        if (member) {
            watch.emplace(*member, server);
        }
        server.run();
        const bool lostLeadership = watch && watch->lost();
        watch.reset();
        stop.serving(nullptr);
        if (lostLeadership) {
            return kLostLeadership;
        }
    } catch (const std::exception& e) {
        NCS_LOG(fatal) << e.what();
        std::cerr << "ncstored: " << e.what() << "\n";
        return 1;
    }
    NCS_LOG(info) << "ncstored stopped";
    return 0;
}
