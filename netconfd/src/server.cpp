#include "server.hpp"

#include "hostkeys.hpp"
#include "models.hpp"
#include "rpcparse.hpp"
#include "session.hpp"
#include "sockets.hpp"

#include "ncstore/log.hpp"

#include <nc_server.h>

#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <iostream>

namespace ncstore::netconfd {

namespace {

// libnetconf2 calls its RPC callbacks without user data: the one server of the process.
Server* theServer = nullptr;

nc_server_reply* rpcCallback(lyd_node* rpc, nc_session* ncs) {
    if (!theServer) {
        return nc_server_reply_err(nc_err(nc_session_get_ctx(ncs), NC_ERR_OP_FAILED, NC_ERR_TYPE_APP));
    }
    return theServer->dispatch(rpc, ncs);
}

int hostkeyCallback(const char* name, void*, char** privkeyPath, char** privkeyData,
                    NC_SSH_KEY_TYPE* privkeyType) {
    // Key names are their file paths. libnetconf2 takes ownership of (and frees) the string.
    *privkeyPath = strdup(name);
    *privkeyData = nullptr;
    *privkeyType = NC_SSH_KEY_UNKNOWN;
    return *privkeyPath ? 0 : 1;
}

int passwordCallback(const nc_session* ncs, const char* password, void* userData) {
    const auto* users = static_cast<const UserDb*>(userData);
    const char* user = nc_session_get_username(ncs);
    const char* host = nc_session_get_host(ncs);
    try {
        if (user && password && users->checkPassword(user, password)) {
            NCS_LOG(info) << "password authentication of " << user << " from " << (host ? host : "?")
                          << " succeeded";
            return 0;
        }
    } catch (const std::exception& e) {
        NCS_LOG(error) << "password check failed: " << e.what();
    }
    NCS_LOG(warning) << "password authentication of " << (user ? user : "?") << " from "
                     << (host ? host : "?") << " failed";
    return 1;
}

int pubkeyCallback(const nc_session* ncs, ssh_key key, void* userData) {
    const auto* users = static_cast<const UserDb*>(userData);
    const char* user = nc_session_get_username(ncs);
    const char* host = nc_session_get_host(ncs);
    try {
        if (user && users->checkPublicKey(user, key)) {
            NCS_LOG(info) << "public key authentication of " << user << " from " << (host ? host : "?")
                          << " succeeded";
            return 0;
        }
    } catch (const std::exception& e) {
        NCS_LOG(error) << "public key check failed: " << e.what();
    }
    NCS_LOG(info) << "public key of " << (user ? user : "?") << " from " << (host ? host : "?")
                  << " not accepted";
    return 1;
}

void libnetconf2Log(const nc_session* session, NC_VERB_LEVEL level, const char* msg) {
    const std::string prefix =
        session ? "libnetconf2 session " + std::to_string(nc_session_get_id(session)) + ": "
                : std::string("libnetconf2: ");
    switch (level) {
    case NC_VERB_ERROR:
        NCS_LOG(warning) << prefix << msg;
        break;
    case NC_VERB_WARNING:
        NCS_LOG(info) << prefix << msg;
        break;
    default:
        NCS_LOG(debug) << prefix << msg;
        break;
    }
}

void libyangLog(LY_LOG_LEVEL level, const char* msg, const char* path) {
    if (level == LY_LLERR || level == LY_LLWRN) {
        NCS_LOG(debug) << "libyang: " << msg << (path ? std::string(" (") + path + ")" : std::string());
    }
}

void setCallback(ly_ctx* ctx, const char* path) {
    const lysc_node* node = lys_find_path(ctx, nullptr, path, 0);
    if (!node) {
        throw std::runtime_error(std::string("RPC ") + path + " missing from the context");
    }
    // libnetconf2's nc_set_rpc_callback() macro writes the compiled node's private pointer.
    const_cast<lysc_node*>(node)->priv = reinterpret_cast<void*>(&rpcCallback);
}

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

Server::Server(const ServerConfig& config)
    : config_(config), users_(config.dataDir / "users", config.dataDir / "authorized_keys") {
    if (theServer) {
        throw std::logic_error("only one ncstore Server per process");
    }
    std::filesystem::create_directories(config_.dataDir);
    std::filesystem::create_directories(config_.dataDir / "authorized_keys");

    ly_set_log_clb(libyangLog, 1);
    ModelOptions models;
    models.defaultModels = config_.defaultModels;
    models.yangDirs = config_.yangDirs;
    models.searchDirs = config_.yangSearchDirs;
    models.ietfDir = systemIetfDir();
    models.bundledDir = bundledModelsDir();
    ctx_ = buildContext(models);
    // libnetconf2 2.0.24 answers every <rpc> it cannot parse with operation-failed and never
    // checks message-id: map those ourselves (rpcparse.hpp).
    interceptRpcParsing(ctx_.get());

    ds::StoreOptions storeOptions;
    storeOptions.file = config_.dataDir / "ncstore.db";
    storeOptions.durability = ds::parseDurability(config_.durability);
    store_ = ds::Store::open(ctx_.get(), storeOptions);

    nc_set_print_clb_session(libnetconf2Log);
    nc_verbosity(NC_VERB_WARNING);
    // Before nc_server_init: libnetconf2's own get-schema callback double-frees (DESIGN.md), and
    // close-session must go through us so that locks are released in one place.
    setCallback(ctx_.get(), "/ietf-netconf-monitoring:get-schema");
    setCallback(ctx_.get(), "/ietf-netconf:close-session");
    nc_set_global_rpc_clb(rpcCallback);
    if (nc_server_init(ctx_.get()) != 0) {
        throw std::runtime_error("nc_server_init failed");
    }
    theServer = this;
    // Client mistakes reach libyang's log too; they are answered as rpc-errors, so log them only
    // for debugging (libnetconf2 installs its own callback in nc_server_init).
    ly_set_log_clb(libyangLog, 1);
    if (nc_server_set_capab_withdefaults(NC_WD_EXPLICIT, NC_WD_ALL | NC_WD_ALL_TAG | NC_WD_TRIM) != 0) {
        throw std::runtime_error("cannot set the with-defaults capability");
    }
    // Handshakes are serial in libnetconf2: a client that authenticates and then stays silent
    // holds up every other new connection until this expires.
    nc_server_set_hello_timeout(10);
    nc_server_set_idle_timeout(static_cast<std::uint16_t>(config_.idleTimeout));
}

Server::~Server() {
    requestStop();
    if (acceptThread_.joinable() || housekeepingThread_.joinable() || !sessionThreads_.empty()) {
        run();
    }
    store_.reset();
    if (theServer == this) {
        nc_server_destroy();
        theServer = nullptr;
    }
    interceptRpcParsing(nullptr);
}

void Server::start() {
    std::string firstLogin;
    if (users_.empty()) {
        const std::string password = randomPassword();
        users_.setPassword("admin", password);
        firstLogin = "login: admin / password: " + password;
    }
    const auto hostkeys = ensureHostKeys(config_.dataDir);

    port_ = config_.port != 0 ? config_.port : pickFreePort(config_.listen);
    const char* endpt = "main";
    if (nc_server_add_endpt(endpt, NC_TI_LIBSSH) != 0 ||
        nc_server_endpt_set_address(endpt, config_.listen.c_str()) != 0 ||
        nc_server_endpt_set_port(endpt, port_) != 0) {
        throw std::runtime_error("cannot listen on " + config_.listen + ":" + std::to_string(port_));
    }
    nc_server_ssh_set_hostkey_clb(hostkeyCallback, nullptr, nullptr);
    for (const auto& key : hostkeys) {
        if (nc_server_ssh_endpt_add_hostkey(endpt, key.c_str(), -1) != 0) {
            throw std::runtime_error("cannot use SSH host key " + key.string());
        }
    }
    nc_server_ssh_set_passwd_auth_clb(passwordCallback, &users_, nullptr);
    nc_server_ssh_set_pubkey_auth_clb(pubkeyCallback, &users_, nullptr);
    if (nc_server_ssh_endpt_set_auth_methods(endpt, NC_SSH_AUTH_PUBLICKEY | NC_SSH_AUTH_PASSWORD) != 0 ||
        nc_server_ssh_endpt_set_auth_attempts(endpt, static_cast<std::uint16_t>(config_.authAttempts)) != 0 ||
        nc_server_ssh_endpt_set_auth_timeout(endpt, static_cast<std::uint16_t>(config_.authTimeout)) != 0) {
        throw std::runtime_error("cannot configure SSH authentication");
    }
    // libnetconf2 listens with a backlog of 5; simultaneous connects beyond it would time out
    // while the accept thread does one handshake after the other.
    if (const int fd = findListeningSocket(port_); fd >= 0) {
        if (::listen(fd, SOMAXCONN) != 0) {
            NCS_LOG(warning) << "cannot raise the listen backlog: " << std::strerror(errno);
        }
    } else {
        NCS_LOG(warning) << "listening socket not found; listen backlog stays at libnetconf2's 5";
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

    acceptThread_ = std::thread([this] { acceptLoop(); });
    housekeepingThread_ = std::thread([this] { housekeepingLoop(); });
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
    NCS_LOG(info) << "stopping: no new sessions; finishing RPCs in flight";
    if (acceptThread_.joinable()) {
        acceptThread_.join();
    }
    {
        std::lock_guard lock(sessionsMutex_);
        for (const auto& [id, s] : sessions_) {
            s->wake();
        }
    }
    std::map<std::uint32_t, std::thread> threads;
    std::vector<std::thread> finished;
    {
        std::unique_lock lock(sessionsMutex_);
        sessionsCv_.wait(lock, [this] { return sessions_.empty(); });
        threads.swap(sessionThreads_);
        finished.swap(finishedThreads_);
    }
    for (auto& [id, t] : threads) {
        t.join();
    }
    for (auto& t : finished) {
        t.join();
    }
    if (housekeepingThread_.joinable()) {
        housekeepingThread_.join();
    }
    NCS_LOG(info) << "statistics: " << stats_.summary();
}

void Server::acceptLoop() {
    unsigned consecutiveErrors = 0;
    while (!stopping_) {
        nc_session* ncs = nullptr;
        const NC_MSG_TYPE r = nc_accept(500, &ncs);
        if (r == NC_MSG_WOULDBLOCK) {
            continue;
        }
        if (r == NC_MSG_BAD_HELLO) {
            ++stats_.inBadHellos;
            NCS_LOG(warning) << "a client sent a bad <hello>";
            continue;
        }
        if (r != NC_MSG_HELLO || !ncs) {
            // Failed handshakes and authentications were logged by the callbacks / libnetconf2.
            // Errors that repeat at once (accept() out of descriptors) must not spin this thread.
            if (++consecutiveErrors > 10) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            continue;
        }
        consecutiveErrors = 0;
        std::shared_ptr<Session> s;
        try {
            s = std::make_shared<Session>(ncs);
        } catch (const std::exception& e) {
            NCS_LOG(error) << e.what();
            nc_session_free(ncs, nullptr);
            continue;
        }
        {
            std::lock_guard lock(sessionsMutex_);
            if (sessions_.size() >= config_.maxSessions) {
                NCS_LOG(warning) << "refusing session " << s->id << " of " << s->user << " from " << s->host
                                 << ": --max-sessions " << config_.maxSessions << " reached";
                nc_session_free(ncs, nullptr);
                ++stats_.droppedSessions;
                continue;
            }
            s->fd = findPeerSocket(s->host, s->port);
            sessions_.emplace(s->id, s);
            ++stats_.inSessions;
            sessionThreads_.emplace(s->id, std::thread([this, s] { serveSession(s); }));
        }
        NCS_LOG(info) << "session " << s->id << " started: " << s->user << " from " << s->host << ":"
                      << s->port << (s->fd < 0 ? " (socket not found: polling every 50 ms)" : "");
    }
}

void Server::serveSession(std::shared_ptr<Session> s) {
    nc_pollsession* ps = nc_ps_new();
    if (!ps || nc_ps_add_session(ps, s->nc) != 0) {
        NCS_LOG(error) << "session " << s->id << ": cannot create its poll structure";
        nc_session_set_term_reason(s->nc, NC_SESSION_TERM_OTHER);
        nc_session_set_status(s->nc, NC_STATUS_INVALID);
    }
    pollfd fds[2] = {{s->fd, POLLIN, 0}, {s->wakeFd, POLLIN, 0}};
    const int nfds = s->fd >= 0 ? 2 : 1;
    pollfd* first = s->fd >= 0 ? &fds[0] : &fds[1];
    // Without its socket, sleep briefly between polls; with an idle timeout, wake up once a
    // second so that libnetconf2 can notice idle sessions.
    const int sleepMs = s->fd < 0 ? 50 : (config_.idleTimeout > 0 ? 1000 : -1);

    bool ended = !ps || nc_session_get_status(s->nc) != NC_STATUS_RUNNING;
    unsigned consecutiveErrors = 0;
    while (!ended) {
        // libssh may hold several buffered messages after one read of the socket: poll until
        // libnetconf2 reports that nothing is left.
        for (;;) {
            s->readBaseline = bytesReceived(s->fd);
            s->reading = true;
            const int r = nc_ps_poll(ps, 0, nullptr);
            s->reading = false;
            if (r & NC_PSPOLL_BAD_RPC) {
                ++s->inBadRpcs;
                ++stats_.inBadRpcs;
                if (r & NC_PSPOLL_REPLY_ERROR) {
                    ++s->outRpcErrors;
                    ++stats_.outRpcErrors;
                }
            }
            if (r & NC_PSPOLL_SSH_CHANNEL) {
                nc_session* extra = nullptr;
                if (nc_ps_accept_ssh_channel(ps, &extra) == NC_MSG_HELLO && extra) {
                    NCS_LOG(warning) << "session " << s->id
                                     << ": a second NETCONF channel on one SSH connection is not supported";
                    nc_session_free(extra, nullptr);
                }
            }
            if ((r & NC_PSPOLL_SESSION_TERM) || nc_session_get_status(s->nc) != NC_STATUS_RUNNING) {
                ended = true;
                break;
            }
            if (r & NC_PSPOLL_ERROR) {
                // Transient (an IO lock timeout) or not: a session that keeps failing must not
                // keep this thread spinning.
                if (++consecutiveErrors > 100) {
                    NCS_LOG(error) << "session " << s->id
                                   << ": libnetconf2 keeps failing to poll it; closing it";
                    nc_session_set_term_reason(s->nc, NC_SESSION_TERM_OTHER);
                    nc_session_set_status(s->nc, NC_STATUS_INVALID);
                    ended = true;
                }
                break;
            }
            consecutiveErrors = 0;
            if (r & (NC_PSPOLL_TIMEOUT | NC_PSPOLL_NOSESSIONS)) {
                break;
            }
        }
        if (ended) {
            break;
        }
        if (s->killRequested || stopping_ || s->oversized) {
            nc_session_set_term_reason(s->nc,
                                       s->killRequested ? NC_SESSION_TERM_KILLED : NC_SESSION_TERM_OTHER);
            if (s->killRequested) {
                nc_session_set_killed_by(s->nc, s->killedBy);
            }
            nc_session_set_status(s->nc, NC_STATUS_INVALID);
            break;
        }
        fds[0].revents = fds[1].revents = 0;
        if (::poll(first, static_cast<nfds_t>(nfds), sleepMs) < 0 && errno != EINTR) {
            NCS_LOG(error) << "session " << s->id << ": poll failed: " << std::strerror(errno);
            nc_session_set_term_reason(s->nc, NC_SESSION_TERM_OTHER);
            nc_session_set_status(s->nc, NC_STATUS_INVALID);
            break;
        }
        if (fds[1].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto n = ::read(s->wakeFd, &count, sizeof count);
        }
    }
    if (ps) {
        if (nc_ps_del_session(ps, s->nc) != 0) { // only unlinks; endSession frees the session
            NCS_LOG(debug) << "session " << s->id << " was not in its poll structure";
        }
        nc_ps_free(ps);
    }
    endSession(*s);
}

void Server::endSession(Session& s) {
    const auto reason = nc_session_get_term_reason(s.nc);
    if (reason != NC_SESSION_TERM_CLOSED && reason != NC_SESSION_TERM_KILLED) {
        ++stats_.droppedSessions;
    }
    const auto released = locks_.releaseAll(s.id);
    for (auto ds : released) {
        NCS_LOG(info) << "session " << s.id << " ended holding the " << ds::toString(ds) << " lock: released";
        if (ds == ds::Datastore::Candidate) {
            // RFC 6241 8.3.5.2: changes made under the lock are discarded with it.
            try {
                store_->discardChanges();
                locks_.candidateClean();
            } catch (const std::exception& e) {
                NCS_LOG(error) << "discarding candidate changes of session " << s.id << ": " << e.what();
            }
        }
    }
    static const char* reasons[] = {"none", "closed", "killed", "dropped", "timeout", "bad-hello", "other"};
    const auto ri = static_cast<std::size_t>(reason);
    NCS_LOG(info) << "session " << s.id << " of " << s.user << " ended ("
                  << (ri < std::size(reasons) ? reasons[ri] : "?") << "), " << s.inRpcs.load() << " rpcs";
    nc_session_free(s.nc, nullptr);
    {
        std::lock_guard lock(sessionsMutex_);
        sessions_.erase(s.id);
        if (auto it = sessionThreads_.find(s.id); it != sessionThreads_.end()) {
            finishedThreads_.push_back(std::move(it->second));
            sessionThreads_.erase(it);
        }
    }
    sessionsCv_.notify_all();
}

std::shared_ptr<Session> Server::findSession(std::uint32_t id) const {
    std::lock_guard lock(sessionsMutex_);
    const auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : it->second;
}

void Server::housekeepingLoop() {
    auto nextStats = std::chrono::steady_clock::now() + std::chrono::seconds(config_.statsInterval);
    std::unique_lock lock(stopMutex_);
    while (!stopping_) {
        stopCv_.wait_for(lock, std::chrono::milliseconds(200));
        std::vector<std::thread> finished;
        std::vector<std::shared_ptr<Session>> sessions;
        {
            std::lock_guard guard(sessionsMutex_);
            finished.swap(finishedThreads_);
            for (const auto& [id, s] : sessions_) {
                sessions.push_back(s);
            }
        }
        for (auto& t : finished) {
            t.join();
        }
        // libnetconf2 collects a whole message in memory before parsing it and has no limit:
        // cut the connection of a session that keeps sending past --max-message-size.
        for (const auto& s : sessions) {
            if (s->fd < 0 || !s->reading || s->oversized) {
                continue;
            }
            const auto received = bytesReceived(s->fd);
            const auto baseline = s->readBaseline.load();
            if (received > baseline && received - baseline > config_.maxMessageSize) {
                NCS_LOG(warning) << "session " << s->id << " of " << s->user << " sent more than "
                                 << config_.maxMessageSize << " bytes in one message: closing it";
                s->oversized = true;
                ::shutdown(s->fd, SHUT_RDWR);
                s->wake();
            }
        }
        if (config_.statsInterval > 0 && std::chrono::steady_clock::now() >= nextStats) {
            NCS_LOG(info) << "statistics: " << stats_.summary();
            nextStats = std::chrono::steady_clock::now() + std::chrono::seconds(config_.statsInterval);
        }
    }
}

} // namespace ncstore::netconfd
