#include "server.hpp"

#include "datadir.hpp"
#include "events.hpp"
#include "hello.hpp"
#include "hostkeys.hpp"
#include "nacmsetup.hpp"
#include "ops.hpp"
#include "providers.hpp"
#include "ssh.hpp"

#include "ncstore/files.hpp"
#include "ncstore/log.hpp"
#include "ncstore/models.hpp"
#include "ncstore/threadname.hpp"

#include <malloc.h>

#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace ncstore::netconfd {

namespace {

void writeFileAtomically(const std::filesystem::path& file, const std::string& content) {
    const auto tmp = file.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << content;
        if (!out.flush()) {
            throw std::runtime_error("cannot write " + tmp);
        }
    }
    std::filesystem::rename(tmp, file);
}

} // namespace

Server::Server(const ServerConfig& config, cluster::Member* member)
    : config_(config), member_(member), users_(config.dataDir / "users", config.dataDir / "authorized_keys") {
    files::preparePrivateDir(config_.dataDir);
    files::preparePrivateDir(config_.dataDir / "authorized_keys");

    log::routeLibyang();
    ctx_ = buildContext(modelOptions(config_));
    capabilities_ = serverCapabilities(ctx_.get());

    store_ = ds::Store::open(ctx_.get(), storeOptions(config_));
    nacm_ = std::make_unique<AccessControl>(ctx_.get(), config_.nacmRecoveryUser);
    notify::Service::Options events;
    events.maxEvents = config_.notificationLogEvents;
    events.maxAge = std::chrono::hours(24) * config_.notificationLogDays;
    notifications_ = std::make_unique<notify::Service>(*store_, ctx_.get(), events);
    confirm_ = std::make_unique<confirm::ConfirmedCommit>(
        *store_, ctx_.get(),
        [this](const lyd_node* rollbackPoint) {
            // The server's own write: no lock blocks it, no NACM rule applies; a restored /nacm
            // goes into force like any other write's.
            WriteCheck check(*nacm_, nullptr, true);
            ds::WriteContext server = check.context(ds::WriteContext{0, "ncstored", nullptr, ""});
            server.comment = "rollback of a confirmed commit that was not confirmed";
            check.run(*store_,
                      [&] { return store_->replace(server, ds::Datastore::Running, rollbackPoint); });
        },
        [this](const confirm::Notice& n) {
            const std::optional<std::uint32_t> timeout =
                n.timeout ? std::optional<std::uint32_t>(n.timeout) : std::nullopt;
            notifications_->raise(
                notify::confirmedCommit({n.session, n.user, n.host}, confirm::toString(n.event), timeout));
        });
    // Its journal hook after the notifications' (which never refuses a write): an entry is in
    // the index only once every other hook took the write.
    history_ = std::make_unique<history::History>(
        *store_, ctx_.get(), history::Options{config_.historyMaxCommits, config_.historyMaxBytes});

    // State providers: what <get> and operational show besides the configuration, in this order.
    if (!config_.xpathWorkerProgram.empty()) {
        XPathEvaluator::Options xpath;
        xpath.models = modelOptions(config_);
        xpath.program = config_.xpathWorkerProgram;
        xpath.budget = std::chrono::milliseconds(config_.xpathBudgetMs);
        xpath.workers = config_.xpathWorkers;
        xpath_ = std::make_unique<XPathEvaluator>(std::move(xpath));
    }
    reads_ = std::make_unique<ReadPath>(ctx_.get(), *store_, xpath_.get());
    reads_->addProvider("monitoring", makeMonitoringState(capabilities_, *store_, sessions_, stats_));
    reads_->addProvider("streams", makeStreamsState(*notifications_));
    reads_->addProvider("yang-library", makeYangLibraryState());
    reads_->addProvider("nacm", makeNacmCountersState(*nacm_));
    reads_->addProvider("commits", makeCommitsState(*history_));
    if (member_) {
        reads_->addProvider("cluster", makeClusterState(*member_));
    }

    // Operations: one family per file of ops/.
    dispatcher_ = std::make_unique<Dispatcher>(*nacm_, stats_);
    const Services services{ctx_.get(), *store_, *nacm_,    *notifications_, *confirm_,
                            *history_,  *reads_, sessions_, stats_,          config_.notificationQueueBytes};
    addConfigOperations(*dispatcher_, services);
    addLockOperations(*dispatcher_, services);
    addCommitOperations(*dispatcher_, services);
    addSessionOperations(*dispatcher_, services);
    addMonitoringOperations(*dispatcher_, services);
    addNmdaOperations(*dispatcher_, services);
    addHistoryOperations(*dispatcher_, services);
    subscriptions_ = Subscriptions::add(*dispatcher_, services);

    sessionLoop_ = std::make_unique<SessionLoop>(SessionLoop::Parts{
        ctx_.get(), capabilities_, *dispatcher_, *subscriptions_, *notifications_, *store_, *confirm_,
        sessions_, *nacm_, stats_, stopping_,
        SessionLoop::Limits{config_.maxMessageSize, config_.authTimeout, config_.idleTimeout}});
}

Server::~Server() {
    requestStop();
    run();
    // The operations' entries hold the services below: they go first.
    sessionLoop_.reset();
    subscriptions_.reset();
    dispatcher_.reset();
    reads_.reset();
    xpath_.reset();
    confirm_.reset();
    history_.reset();
    notifications_.reset();
    store_.reset();
}

void Server::start() {
    std::string firstLogin;
    if (users_.empty()) {
        const std::string password = randomPassword();
        users_.setPassword("admin", password);
        firstLogin = "login: admin / password: " + password;
    }
    if (nacmsetup::initialize(*store_, *nacm_, users_.names()) && !firstLogin.empty()) {
        firstLogin += " (NACM group " + std::string(nacmsetup::kAdminGroup) + ": every operation permitted)";
    }
    nacm_->load(*store_);
    confirm_->recover(); // RFC 6241 8.4: a confirmed commit pending at the last stop is undone
    transport::SshOptions ssh;
    ssh.address = config_.listen;
    ssh.port = config_.port;
    ssh.hostKeys = ensureHostKeys(config_.dataDir);
    ssh.authTimeout = std::chrono::seconds(config_.authTimeout);
    ssh.authAttempts = config_.authAttempts;
    ssh.maxConnections = config_.maxSessions;
    ssh.maxStartups = config_.maxStartups;
    transport::Authenticator auth;
    auth.password = [this](const std::string& user, const std::string& password) {
        return users_.checkPassword(user, password);
    };
    auth.publicKey = [this](const std::string& user, ssh_key key) {
        return users_.checkPublicKey(user, key);
    };
    // Transports: one listener each (transport/connection.hpp).
    auto sshListener = std::make_unique<transport::SshListener>(std::move(ssh), std::move(auth));
    transport::Listener& primary = *sshListener;
    addListener(std::move(sshListener));
    port_ = primary.port();
    if (config_.appSocket != "none") {
        // The application API (netconfd/app): one seam of its own, beside the transports.
        app::Options apps;
        apps.socket = config_.appSocket.empty() ? config_.dataDir / ncstore::app::proto::kSocketName
                                                : std::filesystem::path(config_.appSocket);
        apps.group = config_.appGroup;
        for (const auto& u : config_.appUsers) {
            const auto eq = u.find('=');
            apps.users[static_cast<uid_t>(std::stoul(u.substr(0, eq)))] = u.substr(eq + 1);
        }
        apps.adminUser = config_.appRootUser;
        apps.maxConnections = config_.appMaxConnections;
        apps.maxMessage = static_cast<std::uint32_t>(config_.appMaxMessage);
        apps_ = std::make_unique<app::AppServer>(app::Parts{ctx_.get(), *store_, *nacm_, *notifications_,
                                                            *reads_, *dispatcher_, sessions_, *history_},
                                                 std::move(apps));
    }

    if (!firstLogin.empty()) {
        NCS_LOG(info) << "created the first user: " << firstLogin;
        std::cout << firstLogin << std::endl;
    }
    const std::string listening = "listening on " + config_.listen + ":" + std::to_string(port_);
    NCS_LOG(info) << listening << " (data in " << config_.dataDir.string() << ")";
    std::cout << listening << std::endl;
    if (!config_.portFile.empty()) {
        writeFileAtomically(config_.portFile, std::to_string(port_) + "\n");
    }
    housekeepingThread_ = std::thread([this] { housekeepingLoop(); });
}

void Server::addListener(std::unique_ptr<transport::Listener> listener) {
    if (stopping_) {
        throw std::runtime_error("the server is stopping: no new listener");
    }
    listener->start(
        [this](std::unique_ptr<transport::Connection> conn) { sessionLoop_->serve(std::move(conn)); });
    std::lock_guard lock(listenersMutex_);
    listeners_.push_back(std::move(listener));
}

void Server::leadershipInDoubt() {
    store_->revokeReadLease();
}

void Server::requestStop() {
    {
        std::lock_guard lock(stopMutex_);
        stopping_ = true;
    }
    stopCv_.notify_all();
}

void Server::run() {
    {
        std::unique_lock lock(stopMutex_);
        stopCv_.wait(lock, [this] { return stopping_.load(); });
    }
    std::vector<std::unique_ptr<transport::Listener>> listeners;
    {
        std::lock_guard lock(listenersMutex_);
        listeners.swap(listeners_);
    }
    if (listeners.empty() && !housekeepingThread_.joinable()) {
        return; // never started, or already stopped
    }
    NCS_LOG(info) << "stopping: no new sessions; finishing RPCs in flight";
    // No session starts from here on; every one there is wakes and sees the stop.
    sessions_.close();
    apps_.reset(); // NETCONF sessions waiting for an application's answer get an error
    for (auto& listener : listeners) {
        listener->stop(); // returns once every connection's thread has ended
    }
    listeners.clear();
    if (housekeepingThread_.joinable()) {
        housekeepingThread_.join();
    }
    NCS_LOG(info) << "statistics: " << statisticsLine();
}

std::string Server::statisticsLine() const {
    std::ostringstream line;
    line << stats_.summary();
    if (store_) {
        const ds::Stats d = store_->stats();
        line << "; datastore: " << d.writes << " writes in " << d.transactions << " transactions";
        if (d.transactions > 0) {
            line << " (" << std::fixed << std::setprecision(1)
                 << static_cast<double>(d.writes) / static_cast<double>(d.transactions)
                 << " per transaction, at most " << d.maxBatch << ")";
        }
        line << ", " << d.failedWrites << " failed, " << d.queueFullWaits << " waited for room in the queue, "
             << d.changeSetsLost << " change sets lost by slow listeners";
    }
    return line.str();
}

void Server::housekeepingLoop() {
    nameThisThread("ncs-housekeep");
    using SteadyClock = std::chrono::steady_clock;
    auto nextStats = SteadyClock::now() + std::chrono::seconds(config_.statsInterval);
    auto nextTrim = SteadyClock::now() + std::chrono::seconds(10);
    // glibc keeps the free pages inside its arenas resident until told otherwise: a burst of
    // sessions would set the server's RSS for good. But malloc_trim(0) walks every arena under
    // its lock, and every allocation of the threads using it waits: up to 47 ms measured after
    // B12's load (B13, the notification latency, then had p99 of 38-64 ms in two full runs, most
    // likely from it). So memory is trimmed at a quiet moment after a burst: no RPC for 2 s.
    constexpr auto kQuietBeforeMemoryTrim = std::chrono::seconds(2);
    bool memoryTrimDue = false;
    std::uint64_t rpcsSeen = stats_.inRpcs.load(std::memory_order_relaxed);
    auto quietSince = SteadyClock::now();
    std::unique_lock lock(stopMutex_);
    while (!stopping_) {
        stopCv_.wait_for(lock, std::chrono::milliseconds(500));
        lock.unlock();
        confirm_->tick();
        const auto now = SteadyClock::now();
        if (const auto rpcs = stats_.inRpcs.load(std::memory_order_relaxed); rpcs != rpcsSeen) {
            rpcsSeen = rpcs;
            quietSince = now;
        }
        if (now >= nextTrim) {
            try {
                notifications_->trim();
            } catch (const std::exception& e) {
                NCS_LOG(error) << "trimming the notification log: " << e.what();
            }
            memoryTrimDue = true;
            nextTrim = now + std::chrono::minutes(1);
        }
        if (memoryTrimDue && now - quietSince >= kQuietBeforeMemoryTrim) {
            malloc_trim(0);
            memoryTrimDue = false;
            NCS_LOG(debug) << "malloc_trim after " << (now - quietSince) / std::chrono::milliseconds(1)
                           << " ms without an RPC: "
                           << (SteadyClock::now() - now) / std::chrono::microseconds(1) << " us";
        }
        if (config_.statsInterval > 0 && now >= nextStats) {
            NCS_LOG(info) << "statistics: " << statisticsLine();
            nextStats = now + std::chrono::seconds(config_.statsInterval);
        }
        lock.lock();
    }
}

} // namespace ncstore::netconfd
