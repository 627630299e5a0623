// Our own client of dqlite's wire protocol (https://dqlite.io/docs/protocol), the piece of issue 17
// through which ncstore runs SQL on a Raft-replicated SQLite: libdqlite's public C API only runs a
// node, so every statement, and every membership change, goes over a socket to a node, our own
// embedded one included.
//
// Promises:
//  1. Bounded waiting: every call takes a deadline (the connection's request timeout, or the
//     `within` given to Cluster); no read, write or connect waits past it. A call that runs out
//     throws Error(Kind::Timeout).
//  2. Bounded memory against a broken or hostile peer: a reply's length is checked against
//     Limits::maxMessageBytes before anything is allocated for it, every field is bounds-checked
//     against the message it sits in, and a result set has at most Limits::maxRows rows and
//     Limits::maxResultBytes over all its parts. Anything
//     malformed throws Error(Kind::Protocol); nothing a peer sends can crash the process.
//  3. One failure, one poisoned connection: after a timeout, a protocol error or a lost peer the
//     request/response stream can no longer be trusted (a late reply would answer the next
//     request), so the Connection refuses every later call with Error(Kind::ConnectionClosed).
//     A failure *answered* by the node (FAILURE response: bad SQL, constraint, not leader) leaves
//     the connection usable.
//  4. Not leader is a kind of its own: only the Raft leader executes; a follower answers
//     SQLITE_IOERR_NOT_LEADER (Kind::NotLeader: nothing was executed, safe to retry elsewhere).
//     SQLITE_IOERR_LEADERSHIP_LOST is Kind::LeadershipLost: the leader lost its role while the
//     write was in flight, so the write may or may not be committed.
//  5. No signals: writes use MSG_NOSIGNAL, a peer that went away is an Error, never a SIGPIPE.
//
// Thread-safety: a Connection is one socket with one request in flight; use it from one thread at
// a time. Cluster likewise. Distinct objects are independent.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ncstore::dqlite {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

/// SQLite's extended codes with which dqlite reports leadership (dqlite's own range of
/// SQLITE_IOERR sub-codes).
inline constexpr std::uint64_t kNotLeaderCode = 10 | (40 << 8);      // SQLITE_IOERR_NOT_LEADER = 10250
inline constexpr std::uint64_t kLeadershipLostCode = 10 | (41 << 8); // SQLITE_IOERR_LEADERSHIP_LOST = 10506

class Error : public std::runtime_error {
public:
    enum class Kind {
        Server,           ///< the node answered FAILURE: code() is the SQLite/dqlite code
        NotLeader,        ///< the node is not the leader; nothing was executed
        LeadershipLost,   ///< leadership lost during the request: outcome unknown
        Timeout,          ///< the deadline passed (connect, send or reply)
        ConnectionClosed, ///< the peer closed, reset, or this connection was poisoned earlier
        Protocol,         ///< a malformed or unexpected reply
        Network,          ///< connect failed (refused, unreachable, bad address)
    };

    /// `context` says what was attempted and where ("EXEC_SQL on 127.0.0.1:9001"); `detail` is the
    /// node's message or our own diagnosis.
    Error(Kind kind, std::uint64_t code, std::string detail, const std::string& context);

    Kind kind() const noexcept { return kind_; }
    /// The code of a FAILURE response (0 for errors found on this side).
    std::uint64_t code() const noexcept { return code_; }
    /// The node's message (or ours), without the context.
    const std::string& detail() const noexcept { return detail_; }

private:
    Kind kind_;
    std::uint64_t code_;
    std::string detail_;
};

const char* kindName(Error::Kind kind) noexcept;

/// A BLOB value, kept apart from TEXT so that a round trip keeps SQLite's type.
struct Blob {
    std::vector<std::uint8_t> bytes;
    bool operator==(const Blob&) const = default;
};

/// A parameter or column value. Columns declared DATETIME/DATE/TIMESTAMP come back as int64
/// (unix time) or text (ISO 8601), BOOLEAN as int64: dqlite's extra wire types map onto these.
using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string, Blob>;

struct ExecResult {
    std::uint64_t lastInsertId = 0;
    std::uint64_t rowsAffected = 0;
};

struct Rows {
    std::vector<std::string> columns;
    std::vector<std::vector<Value>> rows;
};

enum class Role : std::uint64_t { Voter = 0, Standby = 1, Spare = 2 };

struct NodeInfo {
    std::uint64_t id = 0;
    std::string address;
    Role role = Role::Voter;
    bool operator==(const NodeInfo&) const = default;
};

struct Limits {
    /// Largest reply accepted, checked from its header before allocating.
    std::size_t maxMessageBytes = 64u << 20;
    /// Most rows, and most bytes of messages, accepted in one result set (over all its parts):
    /// a peer that keeps sending parts is stopped by these, not only by the deadline.
    std::size_t maxRows = 10'000'000;
    std::size_t maxResultBytes = 256u << 20;
};

struct ConnectOptions {
    Millis connectTimeout{2000}; ///< TCP connect plus the handshake
    Millis requestTimeout{5000}; ///< each request, from sending to the last byte of its reply
    Limits limits;
};

/// One TCP connection to one node, handshake done. Move-only; the destructor closes the socket.
class Connection {
public:
    /// Connects to "host:port" (IPv4, as dqlite 1.11 serves), sends the protocol version, and registers as a
    /// client (CLIENT → WELCOME). Throws Error (Network, Timeout, Protocol, ...). A host name is resolved by
    /// getaddrinfo, which the deadline does not bound: give numeric addresses where it matters.
    static Connection connect(const std::string& address, const ConnectOptions& options = {});

    Connection(Connection&& other) noexcept;
    Connection& operator=(Connection&& other) noexcept;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection();

    const std::string& address() const noexcept { return address_; }
    /// False once a failure poisoned the connection (promise 3).
    bool usable() const noexcept { return fd_ >= 0; }
    void setRequestTimeout(Millis timeout) noexcept { options_.requestTimeout = timeout; }

    /// LEADER: the leader as this node knows it; nullopt when it knows none.
    [[nodiscard]] std::optional<NodeInfo> leader();
    /// OPEN: opens (creating) the database `name`; returns its id for exec/query. dqlite allows one
    /// database per connection: opening the same name again returns its id without a round trip
    /// (so that work retried by Cluster::run can open unconditionally), another name is refused by
    /// the node (Kind::Server, code 5, SQLITE_BUSY).
    [[nodiscard]] std::uint32_t open(const std::string& name);
    /// EXEC_SQL: runs `sql`, a statement that returns no row (a SELECT that yields one fails with
    /// code 100, SQLITE_ROW). Several statements separated by ';' run in order as one request, but
    /// dqlite 1.11 binds the parameters to the first one only: later '?' are NULL, and more
    /// parameters than the first takes fail with code 25, SQLITE_RANGE. Leader only.
    ExecResult exec(std::uint32_t db, std::string_view sql, const std::vector<Value>& params = {});
    /// QUERY_SQL: all rows of `sql`, every part of a multi-part result read, all within one request
    /// timeout. Only the first statement of several is run; a statement without result columns
    /// (INSERT) is refused unexecuted with code 1. Leader only.
    [[nodiscard]] Rows query(std::uint32_t db, std::string_view sql, const std::vector<Value>& params = {});
    /// CLUSTER (format 1): every node with its id, address and role.
    [[nodiscard]] std::vector<NodeInfo> cluster();
    /// ADD: adds a node as a spare (leader only); make it vote with assign().
    void add(std::uint64_t id, const std::string& address);
    /// ASSIGN: gives node `id` a role (leader only).
    void assign(std::uint64_t id, Role role);
    /// REMOVE: removes node `id` from the configuration (leader only).
    void remove(std::uint64_t id);
    /// TRANSFER: hands leadership to node `id` (leader only).
    void transfer(std::uint64_t id);

private:
    struct Reply;
    class Cursor;
    Connection(int fd, std::string address, const ConnectOptions& options);

    Reply roundTrip(std::uint8_t type, const std::vector<std::uint8_t>& body, const char* what);
    Reply receive(Clock::time_point deadline, const char* what);
    /// Waits for `events` (POLLIN/POLLOUT) on the socket; Timeout past `deadline` (EINTR: returns,
    /// the caller tries again).
    void waitUntilReady(short events, Clock::time_point deadline, const char* timeoutDetail,
                        const char* what);
    void sendAll(const std::uint8_t* data, std::size_t size, Clock::time_point deadline, const char* what);
    void recvAll(std::uint8_t* data, std::size_t size, Clock::time_point deadline, const char* what);
    [[noreturn]] void fail(Error::Kind kind, const std::string& detail, const char* what);
    [[noreturn]] void failFromReply(const Reply& reply, const char* what);
    void expectEmpty(std::uint8_t type, const std::vector<std::uint8_t>& body, const char* what);
    std::string context(const char* what) const;
    void closeSocket() noexcept;

    int fd_ = -1;
    std::string address_;
    ConnectOptions options_;
    std::optional<std::pair<std::string, std::uint32_t>> opened_;
};

struct ClusterOptions {
    ConnectOptions connect;
    Millis retryPause{50}; ///< between two rounds over the addresses
};

/// Finds the leader among known nodes and keeps a connection to it.
///
/// A node's LEADER answer can be stale right after the leader died (it names the dead node until
/// an election completes), so a candidate is only accepted when it names itself as leader.
class Cluster {
public:
    explicit Cluster(std::vector<std::string> addresses, ClusterOptions options = {});

    /// A connection to the current leader, found within `within` (cached between calls).
    /// Throws Error(Kind::Timeout) naming what each address answered when none is found.
    Connection& leader(Millis within);
    /// Forget the cached connection: the next leader() asks again.
    void invalidate() noexcept { leader_.reset(); }

    /// Runs `work(leaderConnection)`; on NotLeader, or (when `idempotent`) on a lost connection or
    /// a timeout, finds the leader again and retries until `within` has passed. Non-idempotent
    /// work is retried only when the node proved it did not execute it (NotLeader): after a lost
    /// connection a write's outcome is unknown, and the caller must decide.
    template <class Work>
    auto run(Work&& work, Millis within, bool idempotent) -> decltype(work(std::declval<Connection&>()));

    const std::vector<std::string>& addresses() const noexcept { return addresses_; }

private:
    std::vector<std::string> addresses_;
    ClusterOptions options_;
    std::optional<Connection> leader_;
};

template <class Work>
auto Cluster::run(Work&& work, Millis within, bool idempotent)
    -> decltype(work(std::declval<Connection&>())) {
    const auto deadline = Clock::now() + within;
    for (;;) {
        const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
        Connection& conn = leader(std::max(left, Millis{1}));
        try {
            return work(conn);
        } catch (const Error& e) {
            const bool retry = e.kind() == Error::Kind::NotLeader ||
                               (idempotent && (e.kind() == Error::Kind::ConnectionClosed ||
                                               e.kind() == Error::Kind::Timeout));
            if (!retry || Clock::now() >= deadline) {
                throw;
            }
            invalidate();
        }
    }
}

} // namespace ncstore::dqlite
