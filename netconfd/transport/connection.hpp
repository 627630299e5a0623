// What the server needs of a transport (RFC 6241 section 2): an authenticated, reliable byte
// stream per session and a listener that hands each one over. SSH (ssh.hpp) is one; TLS, call
// home and a local socket are others. Framing (framing.hpp), the <hello> exchange and idle
// handling sit above this interface and are the same for every transport.
//
// Promises every implementation makes:
//  - A Connection is used by one thread (its session's), except wake() and shutdown(), which any
//    thread may call.
//  - read() waits no longer than asked; wake() makes a read in progress (or the next) return
//    Woken; shutdown() makes reads and writes in progress fail at once.
//  - Nothing a peer sends makes these functions throw: a broken connection reads Closed and
//    writes false.
//  - A Listener runs `serve` on a thread of the connection's own, once the peer is
//    authenticated; stop() returns once every such thread has ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ncstore::netconfd::transport {

class Connection {
public:
    enum class ReadResult { Data, Timeout, Woken, Closed };

    virtual ~Connection() = default;

    /// Who authenticated (the NETCONF username), and from where.
    virtual const std::string& user() const = 0;
    virtual const std::string& host() const = 0;
    virtual std::uint16_t port() const = 0;
    /// The transport identity ietf-netconf-monitoring lists for the session
    /// ("ietf-netconf-monitoring:netconf-ssh", ...).
    virtual const char* monitoringTransport() const = 0;

    /// Waits up to `timeout` (negative: forever) for data, a wake-up or the end of the
    /// connection; appends what arrived to `out`.
    virtual ReadResult read(std::string& out, std::chrono::milliseconds timeout) = 0;
    /// Sends all of `data`; false when the connection is gone or the peer does not read.
    virtual bool write(std::string_view data) = 0;
    /// Makes a read() in progress (or the next one) return Woken. Any thread.
    virtual void wake() = 0;
    /// Breaks the connection: reads and writes in progress fail. Any thread.
    virtual void shutdown() = 0;
    /// Ends the connection orderly (session's thread).
    virtual void close() = 0;
    /// Whether the peer has hung up, asked without reading (session's thread, while it works on
    /// a request: a long read stops when nobody waits for its answer).
    virtual bool peerGone() const = 0;
};

class Listener {
public:
    using Serve = std::function<void(std::unique_ptr<Connection>)>;

    virtual ~Listener() = default;
    /// Binds (throws std::runtime_error when it cannot) and starts accepting.
    virtual void start(Serve serve) = 0;
    /// Stops accepting; returns when every connection thread has ended (the connections being
    /// served are ended by their `serve`, after being woken).
    virtual void stop() = 0;
    /// The port it listens on (the kernel's choice when asked for 0).
    virtual std::uint16_t port() const = 0;
};

} // namespace ncstore::netconfd::transport
