#include "ssh.hpp"

#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <libssh/callbacks.h>
#include <libssh/server.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ncstore::netconfd::transport {

namespace {

using Clock = std::chrono::steady_clock;

int millisUntil(Clock::time_point deadline) {
    // Rounded up: rounded down, the last millisecond before the deadline is a loop of polls that
    // return at once.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

void libsshLog(int priority, const char* function, const char* buffer, void*) {
    // libssh's warnings are about one client's connection; they are debugging material.
    NCS_LOG(debug) << "libssh (" << priority << ") " << (function ? function : "") << ": "
                   << (buffer ? buffer : "");
}

/// The peer of a connected socket as text (address, port).
std::pair<std::string, std::uint16_t> peerOf(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return {"?", 0};
    }
    char host[NI_MAXHOST] = "?";
    char port[NI_MAXSERV] = "0";
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port, sizeof port,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return {"?", 0};
    }
    return {host, static_cast<std::uint16_t>(std::atoi(port))};
}

} // namespace

// ---------------------------------------------------------------------------------------------

AuthThrottle::AuthThrottle(std::chrono::milliseconds base, std::chrono::milliseconds max,
                           std::chrono::seconds window)
    : base_(base), max_(max), window_(window) {}

std::chrono::milliseconds AuthThrottle::failed(const std::string& source) {
    const auto now = Clock::now();
    std::lock_guard lock(mutex_);
    if (entries_.size() >= 10000) {
        // Bounded memory: forget sources whose failures are older than the window, and if
        // that is not enough, all of them (an attacker with that many addresses gains little).
        std::erase_if(entries_, [&](const auto& e) { return now - e.second.last > window_; });
        if (entries_.size() >= 10000) {
            entries_.clear();
        }
    }
    Entry& e = entries_[source];
    if (now - e.last > window_) {
        e.failures = 0;
    }
    e.last = now;
    ++e.failures;
    const unsigned shift = std::min(e.failures - 1, 16u);
    return std::min(max_, base_ * (1u << shift));
}

void AuthThrottle::succeeded(const std::string& source) {
    std::lock_guard lock(mutex_);
    entries_.erase(source);
}

// ---------------------------------------------------------------------------------------------

/// What a connection's SSH callbacks work on, alive as long as the session.
struct SshConnection::Handshake {
    SshConnection* conn = nullptr;
    const SshOptions* options = nullptr;
    const Authenticator* auth = nullptr;
    AuthThrottle* throttle = nullptr;
    const std::atomic<bool>* stopping = nullptr;
    std::atomic<std::uint64_t>* failedLogins = nullptr;
    bool authenticated = false;
    bool subsystem = false;
    unsigned failures = 0;
    unsigned offers = 0;
    ssh_server_callbacks_struct server{};

    /// Logs and counts a failed attempt, then waits the source's penalty (this connection's
    /// thread only).
    void failed(const char* method, const std::string& user) {
        ++failures;
        ++*failedLogins;
        const auto delay = throttle->failed(conn->host_);
        NCS_LOG(warning) << method << " authentication of " << (user.empty() ? "?" : user) << " from "
                         << conn->host_ << ":" << conn->port_ << " failed (attempt " << failures << " of "
                         << options->authAttempts << "; answered after " << delay.count() << " ms)";
        const auto until = Clock::now() + delay;
        while (Clock::now() < until && !stopping->load()) {
            std::this_thread::sleep_for(
                std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
        }
    }
    int succeeded(const char* method, const std::string& user) {
        authenticated = true;
        conn->user_ = user;
        throttle->succeeded(conn->host_);
        NCS_LOG(info) << method << " authentication of " << user << " from " << conn->host_ << ":"
                      << conn->port_ << " succeeded";
        return SSH_AUTH_SUCCESS;
    }
    bool usable(const char* user) const {
        return !authenticated && user && *user && failures < options->authAttempts;
    }

    // Channel callbacks: nested in SshConnection, they may reach its members.
    static int onData(ssh_session, ssh_channel, void* data, uint32_t len, int isStderr, void* userdata) {
        if (!isStderr) {
            static_cast<Handshake*>(userdata)->conn->receive(data, len);
        }
        return static_cast<int>(len);
    }
    static void onEnd(ssh_session, ssh_channel, void* userdata) {
        static_cast<Handshake*>(userdata)->conn->channelClosed_ = true;
    }
    static int onSubsystem(ssh_session, ssh_channel channel, const char* subsystem, void* userdata) {
        auto* h = static_cast<Handshake*>(userdata);
        if (h->subsystem || channel != h->conn->channel_ || !subsystem ||
            std::strcmp(subsystem, "netconf") != 0) {
            return -1;
        }
        h->subsystem = true;
        return 0;
    }
    static ssh_channel onChannelOpen(ssh_session session, void* userdata) {
        auto* h = static_cast<Handshake*>(userdata);
        if (!h->authenticated || h->conn->channel_) {
            return nullptr; // one NETCONF channel per connection
        }
        ssh_channel channel = ssh_channel_new(session);
        if (!channel) {
            return nullptr;
        }
        auto cb = std::make_unique<ssh_channel_callbacks_struct>();
        *cb = {};
        cb->userdata = h;
        cb->channel_data_function = onData;
        cb->channel_eof_function = onEnd;
        cb->channel_close_function = onEnd;
        cb->channel_subsystem_request_function = onSubsystem;
        ssh_callbacks_init(cb.get());
        if (ssh_set_channel_callbacks(channel, cb.get()) != SSH_OK) {
            ssh_channel_free(channel);
            return nullptr;
        }
        h->conn->channel_ = channel;
        h->conn->channelCallbacks_ = std::move(cb);
        return channel;
    }
};

namespace {

using Handshake = SshConnection::Handshake;

int onAuthPassword(ssh_session, const char* user, const char* password, void* userdata) {
    auto* h = static_cast<Handshake*>(userdata);
    if (!h->usable(user) || !password) {
        return SSH_AUTH_DENIED;
    }
    bool ok = false;
    try {
        ok = h->auth->password && h->auth->password(user, password);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "password check of " << user << " failed: " << e.what();
    }
    if (ok) {
        return h->succeeded("password", user);
    }
    h->failed("password", user);
    return SSH_AUTH_DENIED;
}

int onAuthPublicKey(ssh_session, const char* user, ssh_key key, char signatureState, void* userdata) {
    auto* h = static_cast<Handshake*>(userdata);
    if (!h->usable(user) || !key) {
        return SSH_AUTH_DENIED;
    }
    if (signatureState == SSH_PUBLICKEY_STATE_WRONG) {
        h->failed("public key", user);
        return SSH_AUTH_DENIED;
    }
    bool ok = false;
    try {
        ok = h->auth->publicKey && h->auth->publicKey(user, key);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "public key check of " << user << " failed: " << e.what();
    }
    if (signatureState == SSH_PUBLICKEY_STATE_NONE) {
        // Only an offer: a key nobody listed costs the client nothing but is bounded.
        if (!ok && ++h->offers > 32) {
            h->failures = h->options->authAttempts;
        }
        return ok ? SSH_AUTH_SUCCESS : SSH_AUTH_DENIED;
    }
    if (signatureState == SSH_PUBLICKEY_STATE_VALID && ok) {
        return h->succeeded("public key", user);
    }
    h->failed("public key", user);
    return SSH_AUTH_DENIED;
}

int onAuthNone(ssh_session, const char*, void*) {
    return SSH_AUTH_DENIED;
}

int onServiceRequest(ssh_session, const char* service, void*) {
    return service &&
                   (std::strcmp(service, "ssh-userauth") == 0 || std::strcmp(service, "ssh-connection") == 0)
               ? 0
               : -1;
}

/// Requests our callbacks did not take (shell, exec, pty, forwarding, ...): libssh refuses them.
int declineOthers(ssh_session, ssh_message, void*) {
    return 1;
}

int onWake(socket_t fd, int, void* userdata) {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(fd, &count, sizeof count);
    *static_cast<bool*>(userdata) = true;
    return 0;
}

} // namespace

SshConnection::SshConnection(ssh_session session, int fd, std::string host, std::uint16_t port,
                             std::chrono::seconds writeTimeout)
    : session_(session), fd_(fd), wakeFd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), host_(std::move(host)),
      port_(port), writeTimeout_(writeTimeout) {
    if (wakeFd_ < 0) {
        throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
    event_ = ssh_event_new();
    if (!event_ || ssh_event_add_fd(event_, wakeFd_, POLLIN, onWake, &woken_) != SSH_OK) {
        throw std::runtime_error("cannot create the connection's event loop");
    }
}

SshConnection::~SshConnection() {
    if (event_) {
        ssh_event_remove_fd(event_, wakeFd_);
        ssh_event_remove_session(event_, session_);
        ssh_event_free(event_);
    }
    ssh_free(session_); // frees the channel, closes the socket if close() did not
    if (wakeFd_ >= 0) {
        ::close(wakeFd_);
    }
}

void SshConnection::receive(const void* data, std::size_t len) {
    (sink_ ? *sink_ : stash_).append(static_cast<const char*>(data), len);
}

SshConnection::ReadResult SshConnection::read(std::string& out, std::chrono::milliseconds timeout) {
    if (!stash_.empty()) {
        if (out.empty()) {
            out.swap(stash_);
        } else {
            out += stash_;
            stash_.clear();
        }
        return ReadResult::Data;
    }
    const auto deadline = timeout.count() < 0 ? Clock::time_point::max() : Clock::now() + timeout;
    const std::size_t before = out.size();
    sink_ = &out;
    ReadResult result = ReadResult::Timeout;
    for (;;) {
        if (broken_ || channelClosed_ || !(ssh_is_connected(session_))) {
            result = ReadResult::Closed;
            break;
        }
        if (woken_) {
            woken_ = false;
            result = ReadResult::Woken;
            break;
        }
        const int wait = deadline == Clock::time_point::max() ? -1 : millisUntil(deadline);
        const int rc = ssh_event_dopoll(event_, wait);
        if (!woken_ || out.size() > before) {
            // Whatever came in (data, or a window adjust after a reply): ACK it at once. A wake-up
            // alone (an event for a subscriber) brought nothing to ACK.
            ackPromptly();
        }
        if (out.size() > before) {
            result = ReadResult::Data;
            break;
        }
        if (rc == SSH_ERROR) {
            result = ReadResult::Closed;
            break;
        }
        if (rc == SSH_AGAIN && wait >= 0 && Clock::now() >= deadline && !woken_) {
            result = ReadResult::Timeout;
            break;
        }
    }
    sink_ = nullptr;
    if (result == ReadResult::Closed && out.size() > before) {
        result = ReadResult::Data; // the end is seen on the next read
    }
    return result;
}

bool SshConnection::write(std::string_view data) {
    const auto deadline = Clock::now() + writeTimeout_;
    while (!data.empty()) {
        if (broken_ || channelClosed_ || !ssh_is_connected(session_)) {
            return false;
        }
        const auto piece = static_cast<std::uint32_t>(std::min<std::size_t>(data.size(), 1u << 20));
        const int n = ssh_channel_write(channel_, data.data(), piece);
        if (n < 0) {
            NCS_LOG(debug) << "write to " << host_ << ":" << port_ << " failed: " << ssh_get_error(session_);
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
        if (!data.empty()) {
            if (Clock::now() >= deadline) {
                NCS_LOG(warning) << "client " << user_ << " at " << host_ << ":" << port_
                                 << " did not read for " << writeTimeout_.count()
                                 << " s: giving up the reply";
                return false;
            }
            // The client's window is closed: wait for it to read (its data is kept for later).
            if (ssh_event_dopoll(event_, std::min(millisUntil(deadline), 1000)) == SSH_ERROR) {
                return false;
            }
        }
    }
    // What libssh could not hand to the kernel yet goes out in the next poll; push it now.
    while (ssh_get_poll_flags(session_) & SSH_WRITE_PENDING) {
        if (broken_ || Clock::now() >= deadline || ssh_event_dopoll(event_, 100) == SSH_ERROR) {
            return !(ssh_get_poll_flags(session_) & SSH_WRITE_PENDING);
        }
    }
    return true;
}

void SshConnection::ackPromptly() const {
    // A client that keeps Nagle's algorithm on (ncclient, paramiko) holds its last small segment
    // until its previous one is ACKed: the end of a request sent in several SSH packets, or its
    // next request after the window adjust it sent while reading a big reply. With nothing to
    // send, Linux delays that ACK by up to 40 ms in request/response traffic. ACKing at once
    // takes that stall off (measured: a 2048-interface get-config, 45-50 ms with the stall, 4 ms
    // without). Linux drops back to delayed ACKs after a few segments, so this is set again
    // whenever read() wakes up (the reply's window adjusts and the next request arrive there; an
    // ACK after each reply, or after each wait for the client's window, measured no better);
    // failing changes nothing but the latency, so its result is not checked.
    const int one = 1;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

void SshConnection::wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wakeFd_, &one, sizeof one);
}

void SshConnection::shutdown() {
    broken_ = true;
    // The socket stays open (libssh owns it) until this object is destroyed: fd_ cannot have
    // been reused for another file meanwhile.
    ::shutdown(fd_, SHUT_RDWR);
    wake();
}

bool SshConnection::peerGone() const {
    // The TCP connection's end, seen without reading: a client killed or cut off, or shutdown().
    pollfd p{fd_, POLLRDHUP, 0};
    return broken_ || (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
}

void SshConnection::close() {
    if (channel_ && !broken_ && ssh_is_connected(session_)) {
        ssh_channel_send_eof(channel_);
        ssh_channel_close(channel_);
    }
    if (ssh_is_connected(session_)) {
        ssh_disconnect(session_); // frees the session's channels
    }
    channel_ = nullptr;
}

// ---------------------------------------------------------------------------------------------

SshListener::SshListener(SshOptions options, Authenticator auth)
    : options_(std::move(options)), auth_(std::move(auth)) {
    ssh_init();
    ssh_set_log_callback(libsshLog);
    ssh_set_log_level(SSH_LOG_WARNING);
}

SshListener::~SshListener() {
    stop();
    if (bind_) {
        ssh_bind_free(bind_);
    }
    if (stopFd_ >= 0) {
        ::close(stopFd_);
    }
}

void SshListener::start(Serve serve) {
    serve_ = std::move(serve);
    bind_ = ssh_bind_new();
    if (!bind_) {
        throw std::runtime_error("cannot create the SSH server");
    }
    bool processConfig = false; // the system's libssh server config is not ours
    ssh_bind_options_set(bind_, SSH_BIND_OPTIONS_PROCESS_CONFIG, &processConfig);
    for (const auto& key : options_.hostKeys) {
        if (ssh_bind_options_set(bind_, SSH_BIND_OPTIONS_HOSTKEY, key.c_str()) != SSH_OK) {
            throw std::runtime_error("cannot use SSH host key " + key.string() + ": " + ssh_get_error(bind_));
        }
    }

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(options_.port);
    if (const int rc = ::getaddrinfo(options_.address.c_str(), port.c_str(), &hints, &found); rc != 0) {
        throw std::runtime_error("cannot listen on " + options_.address + ": " + gai_strerror(rc));
    }
    const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
    listenFd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int one = 1;
    if (listenFd_ < 0 || ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::bind(listenFd_, found->ai_addr, found->ai_addrlen) != 0 || ::listen(listenFd_, SOMAXCONN) != 0) {
        const std::string why = std::strerror(errno);
        if (listenFd_ >= 0) {
            ::close(listenFd_);
            listenFd_ = -1;
        }
        throw std::runtime_error("cannot listen on " + options_.address + ":" + port + ": " + why);
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    stopFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stopFd_ < 0) {
        throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
    acceptThread_ = std::thread([this] { acceptLoop(); });
}

void SshListener::stop() {
    if (stopping_.exchange(true)) {
        return;
    }
    if (stopFd_ >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(stopFd_, &one, sizeof one);
    }
    if (acceptThread_.joinable()) {
        acceptThread_.join();
    }
    if (listenFd_ >= 0) {
        ::close(listenFd_);
        listenFd_ = -1;
    }
    std::map<std::uint64_t, std::thread> running;
    std::vector<std::thread> finished;
    {
        std::unique_lock lock(mutex_);
        for (const int fd : handshakeFds_) {
            ::shutdown(fd, SHUT_RDWR); // handshakes in progress fail at once
        }
        cv_.wait(lock, [this] { return connections_ == 0; });
        running.swap(threads_);
        finished.swap(finished_);
    }
    for (auto& [id, t] : running) {
        t.join();
    }
    for (auto& t : finished) {
        t.join();
    }
}

SshListener::Counters SshListener::counters() const {
    std::lock_guard lock(mutex_);
    Counters c = counters_;
    c.failedLogins = failedLogins_;
    return c;
}

void SshListener::acceptLoop() {
    nameThisThread("ncs-accept");
    pollfd fds[2] = {{listenFd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
    while (!stopping_) {
        std::vector<std::thread> finished;
        {
            std::lock_guard lock(mutex_);
            finished.swap(finished_);
        }
        for (auto& t : finished) {
            t.join();
        }
        fds[0].revents = fds[1].revents = 0;
        if (::poll(fds, 2, 1000) < 0 && errno != EINTR) {
            NCS_LOG(error) << "poll on the listening socket failed: " << std::strerror(errno);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        if (stopping_ || !(fds[0].revents & POLLIN)) {
            continue;
        }
        for (;;) {
            const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    NCS_LOG(error) << "accept: " << std::strerror(errno) << " (out of resources)";
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
                break; // EAGAIN: all taken; others: the connection is gone already
            }
            const int nodelay = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
            std::unique_lock lock(mutex_);
            if (handshaking_ >= options_.maxStartups || connections_ >= options_.maxConnections) {
                ++counters_.refused;
                const auto now = Clock::now();
                ++refusalsSinceLog_;
                if (now - lastRefusalLog_ > std::chrono::seconds(5)) {
                    NCS_LOG(warning) << "refused " << refusalsSinceLog_ << " connection(s): " << connections_
                                     << " connections (--max-sessions " << options_.maxConnections << "), "
                                     << handshaking_ << " in their handshake (--max-startups "
                                     << options_.maxStartups << ")";
                    lastRefusalLog_ = now;
                    refusalsSinceLog_ = 0;
                }
                lock.unlock();
                ::close(fd);
                continue;
            }
            ++handshaking_;
            ++connections_;
            ++counters_.accepted;
            handshakeFds_.push_back(fd);
            const std::uint64_t id = nextThreadId_++;
            try {
                threads_.emplace(id, std::thread([this, fd, id] { runConnection(fd, id); }));
            } catch (const std::exception& e) {
                NCS_LOG(error) << "cannot start a connection thread: " << e.what();
                --handshaking_;
                --connections_;
                std::erase(handshakeFds_, fd);
                lock.unlock();
                ::close(fd);
            }
        }
    }
}

void SshListener::runConnection(int fd, std::uint64_t threadId) {
    nameThisThread("ncs-conn-" + std::to_string(threadId));
    const auto [host, port] = peerOf(fd);
    std::unique_ptr<SshConnection> conn;
    try {
        conn = handshake(fd, host, port);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "connection from " << host << ":" << port << ": " << e.what();
    }
    {
        std::lock_guard lock(mutex_);
        --handshaking_;
        std::erase(handshakeFds_, fd);
        if (!conn) {
            ++counters_.failedHandshakes;
        }
    }
    if (conn && !stopping_) {
        try {
            serve_(std::move(conn));
        } catch (const std::exception& e) {
            NCS_LOG(error) << "session of " << host << ":" << port << " ended on an error: " << e.what();
        } catch (...) {
            NCS_LOG(error) << "session of " << host << ":" << port << " ended on an unknown error";
        }
    }
    conn.reset();
    std::lock_guard lock(mutex_);
    --connections_;
    if (auto it = threads_.find(threadId); it != threads_.end()) {
        finished_.push_back(std::move(it->second));
        threads_.erase(it);
    }
    cv_.notify_all();
}

std::unique_ptr<SshConnection> SshListener::handshake(int fd, const std::string& host, std::uint16_t port) {
    const auto deadline = Clock::now() + options_.authTimeout;
    ssh_session session = ssh_new();
    if (!session) {
        ::close(fd);
        throw std::runtime_error("cannot create an SSH session");
    }
    std::unique_ptr<SshConnection> conn;
    try {
        conn.reset(new SshConnection(session, fd, host, port, options_.writeTimeout));
    } catch (...) {
        ssh_free(session);
        ::close(fd);
        throw;
    }
    {
        // Reads the listener's options and copies its keys: one connection at a time.
        static std::mutex bindMutex;
        std::lock_guard lock(bindMutex);
        if (ssh_bind_accept_fd(bind_, session, fd) != SSH_OK) {
            throw std::runtime_error(std::string("cannot take the connection: ") + ssh_get_error(bind_));
        }
    }
    auto h = std::make_unique<SshConnection::Handshake>();
    h->conn = conn.get();
    h->options = &options_;
    h->auth = &auth_;
    h->throttle = &throttle_;
    h->stopping = &stopping_;
    h->failedLogins = &failedLogins_;
    h->server.userdata = h.get();
    h->server.auth_password_function = onAuthPassword;
    h->server.auth_pubkey_function = onAuthPublicKey;
    h->server.auth_none_function = onAuthNone;
    h->server.service_request_function = onServiceRequest;
    h->server.channel_open_request_session_function = Handshake::onChannelOpen;
    ssh_callbacks_init(&h->server);
    ssh_set_server_callbacks(session, &h->server);
    ssh_set_message_callback(session, declineOthers, nullptr);
    ssh_set_auth_methods(session, SSH_AUTH_METHOD_PASSWORD | SSH_AUTH_METHOD_PUBLICKEY);
    ssh_set_blocking(session, 0);
    conn->handshake_ = std::move(h);
    Handshake& state = *conn->handshake_;

    auto fail = [&](const std::string& why) -> std::unique_ptr<SshConnection> {
        NCS_LOG(info) << "connection from " << host << ":" << port << " closed: " << why;
        return nullptr;
    };
    // Key exchange, driven by this thread's own poll until it is done or the time is up.
    for (;;) {
        const int rc = ssh_handle_key_exchange(session);
        if (rc == SSH_OK) {
            break;
        }
        if (rc != SSH_AGAIN) {
            return fail(std::string("key exchange failed: ") + ssh_get_error(session));
        }
        if (stopping_) {
            return fail("server stopping");
        }
        pollfd pfd{
            fd,
            static_cast<short>(POLLIN | ((ssh_get_poll_flags(session) & SSH_WRITE_PENDING) ? POLLOUT : 0)),
            0};
        const int wait = millisUntil(deadline);
        if (wait == 0 || (::poll(&pfd, 1, wait) == 0 && Clock::now() >= deadline)) {
            return fail("no key exchange within " + std::to_string(options_.authTimeout.count()) + " s");
        }
    }
    if (ssh_event_add_session(conn->event_, session) != SSH_OK) {
        return fail("cannot poll the session");
    }
    // Authentication, then the channel and its netconf subsystem.
    while (!(state.authenticated && state.subsystem)) {
        if (state.failures >= options_.authAttempts) {
            return fail("too many failed authentications");
        }
        if (stopping_) {
            return fail("server stopping");
        }
        if (!ssh_is_connected(session) || conn->channelClosed_) {
            return fail("closed by the client");
        }
        const int wait = millisUntil(deadline);
        if (wait == 0) {
            return fail(std::string(state.authenticated ? "no netconf subsystem" : "no authentication") +
                        " within " + std::to_string(options_.authTimeout.count()) + " s");
        }
        if (ssh_event_dopoll(conn->event_, wait) == SSH_ERROR) {
            return fail(std::string("SSH error: ") + ssh_get_error(session));
        }
    }
    // From now on writes wait for the client's window (write()); reads stay driven by poll.
    const long writeTimeout = static_cast<long>(options_.writeTimeout.count());
    ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &writeTimeout);
    ssh_set_blocking(session, 1);
    return conn;
}

} // namespace ncstore::netconfd::transport
