// The SSH side of NETCONF (RFC 6242) on libssh's server API: listening, handshakes,
// authentication, and the byte stream of one "netconf" subsystem channel.
//
// Promises:
//  - Handshakes run in parallel, each on the thread of its own connection: a client that sends
//    nothing, or stops halfway through the handshake, holds up nobody else. Each handshake
//    (key exchange, authentication, channel, subsystem) must finish within the auth timeout.
//  - Bounded: at most maxStartups connections are in their handshake at once and at most
//    maxConnections connections exist at all; a connection past either bound is closed at once
//    after accept (as OpenSSH's MaxStartups does), before any SSH byte is exchanged.
//  - Authentication: password or public key through the Authenticator; at most authAttempts
//    failures per connection; every failure is logged with its source; failures from one
//    source address slow down only that source (AuthThrottle), never the others.
//  - Only the "netconf" subsystem of one session channel is served; anything else a client
//    asks for (shell, exec, pty, a second channel, forwarding) is refused.
//  - Nothing a client sends can make these functions throw past the connection's thread or
//    end the process: a failing connection is closed and logged.
#pragma once

#include "connection.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ncstore::netconfd::transport {

/// Decides who may log in. Called on connection threads, concurrently.
struct Authenticator {
    std::function<bool(const std::string& user, const std::string& password)> password;
    /// True when `key` may log in as `user` (asked both for the offer and the signed attempt).
    std::function<bool(const std::string& user, ssh_key key)> publicKey;
};

struct SshOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 0; ///< 0: the kernel picks one
    std::vector<std::filesystem::path> hostKeys;
    std::chrono::seconds authTimeout{10};
    unsigned authAttempts = 3;
    unsigned maxStartups = 64;     ///< connections in their handshake at once
    unsigned maxConnections = 512; ///< connections in all (handshake or serving)
    /// How long a write may wait for a client that does not read (its window stays closed).
    std::chrono::seconds writeTimeout{300};
};

/// Per-source delay after failed authentications: the n-th failure within the window from one
/// address delays that connection's next answer by base * 2^(n-1), at most `max`. A success
/// from the address forgets its failures. Thread-safe; bounded memory.
class AuthThrottle {
public:
    explicit AuthThrottle(std::chrono::milliseconds base = std::chrono::milliseconds(200),
                          std::chrono::milliseconds max = std::chrono::seconds(5),
                          std::chrono::seconds window = std::chrono::minutes(10));
    /// Records a failure of `source`; returns how long to wait before answering it.
    std::chrono::milliseconds failed(const std::string& source);
    void succeeded(const std::string& source);

private:
    struct Entry {
        unsigned failures = 0;
        std::chrono::steady_clock::time_point last;
    };
    std::mutex mutex_;
    std::map<std::string, Entry> entries_;
    std::chrono::milliseconds base_;
    std::chrono::milliseconds max_;
    std::chrono::seconds window_;
};

/// One authenticated SSH connection and its "netconf" channel. Used by one thread (the
/// connection's), except wake() and shutdown(), which any thread may call.
class SshConnection final : public Connection {
public:
    ~SshConnection() override;
    SshConnection(const SshConnection&) = delete;
    SshConnection& operator=(const SshConnection&) = delete;

    const std::string& user() const override { return user_; }
    const std::string& host() const override { return host_; }
    std::uint16_t port() const override { return port_; }
    const char* monitoringTransport() const override { return "ietf-netconf-monitoring:netconf-ssh"; }

    /// Waits up to `timeout` (negative: forever) for channel data, a wake-up or the end of the
    /// connection; appends what arrived to `out`.
    ReadResult read(std::string& out, std::chrono::milliseconds timeout) override;
    /// Sends all of `data`, waiting for the client's window as needed (bounded by the write
    /// timeout). False when the connection is gone or the client does not read.
    bool write(std::string_view data) override;

    /// Makes a read() in progress (or the next one) return Woken. Any thread.
    void wake() override;
    /// Breaks the connection: reads and writes in progress fail. Any thread.
    void shutdown() override;
    /// Sends the channel's EOF and close, then disconnects (connection's thread).
    void close() override;
    bool peerGone() const override;

    /// The connection's SSH callbacks and their state (ssh.cpp).
    struct Handshake;

private:
    friend class SshListener;
    SshConnection(ssh_session session, int fd, std::string host, std::uint16_t port,
                  std::chrono::seconds writeTimeout);
    void receive(const void* data, std::size_t len);
    /// Has the kernel ACK the client's next segments at once (ssh.cpp says why).
    void ackPromptly() const;

    ssh_session session_;
    ssh_channel channel_ = nullptr;
    ssh_event event_ = nullptr;
    int fd_;
    int wakeFd_;
    std::string host_;
    std::uint16_t port_;
    std::string user_;
    std::chrono::seconds writeTimeout_;
    std::string* sink_ = nullptr; ///< where channel data goes during read()/write()
    std::string stash_;           ///< data that arrived while no read() was waiting
    bool woken_ = false;
    bool channelClosed_ = false;
    std::atomic<bool> broken_{false};
    // libssh keeps pointers to these until the session is freed (the destructor's body).
    std::unique_ptr<ssh_channel_callbacks_struct> channelCallbacks_;
    std::unique_ptr<Handshake> handshake_;
};

/// Listens, accepts and runs each connection's handshake on a thread of its own; a connection
/// that authenticated and asked for the netconf subsystem is handed to `serve` on that same
/// thread, which then owns it until it returns.
class SshListener final : public Listener {
public:
    SshListener(SshOptions options, Authenticator auth);
    ~SshListener() override; ///< stop()
    SshListener(const SshListener&) = delete;
    SshListener& operator=(const SshListener&) = delete;

    /// Binds (throws std::runtime_error when it cannot) and starts accepting.
    void start(Serve serve) override;
    std::uint16_t port() const override { return port_; }
    /// Stops accepting and aborts handshakes in progress; connections being served are left to
    /// their `serve` (the caller ends them); returns when every connection thread has ended.
    void stop() override;

    struct Counters {
        std::uint64_t accepted = 0;
        std::uint64_t refused = 0; ///< over maxStartups / maxConnections
        std::uint64_t failedHandshakes = 0;
        std::uint64_t failedLogins = 0;
    };
    Counters counters() const;

private:
    void acceptLoop();
    void runConnection(int fd, std::uint64_t threadId);
    std::unique_ptr<SshConnection> handshake(int fd, const std::string& host, std::uint16_t port);

    SshOptions options_;
    Authenticator auth_;
    AuthThrottle throttle_;
    Serve serve_;
    ssh_bind bind_ = nullptr;
    int listenFd_ = -1;
    int stopFd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread acceptThread_;

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    unsigned handshaking_ = 0;
    unsigned connections_ = 0;
    std::uint64_t nextThreadId_ = 0;
    std::map<std::uint64_t, std::thread> threads_;
    std::vector<std::thread> finished_;
    std::vector<int> handshakeFds_; ///< shut down by stop()
    Counters counters_;
    std::atomic<std::uint64_t> failedLogins_{0};
    std::chrono::steady_clock::time_point lastRefusalLog_;
    std::uint64_t refusalsSinceLog_ = 0;
};

} // namespace ncstore::netconfd::transport
