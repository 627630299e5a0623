// The wire format, as dqlite 1.11 speaks it (protocol version 1):
//  - every message is an 8-byte header {uint32 body size in 8-byte words, uint8 type, uint8 schema,
//    uint16 unused} and a body that is a whole number of words; all integers little-endian;
//  - text is UTF-8, NUL-terminated, zero-padded to a word; a blob is {uint64 length, bytes, padding};
//  - SQL parameters are a tuple {uint8 count, one uint8 type per value, padding to a word} then
//    one or more words per value; a result row has one 4-bit type per column (low nibble first),
//    padded to a word, then the values;
//  - a result set may span several ROWS messages: each one repeats the column count and names and
//    ends with a marker word, PART (another message follows) or DONE. A marker cannot be taken
//    for a row header, since 0xe and 0xf are not value types.
#include "ncstore/dqlite/client.hpp"

#include "ncstore/log.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ncstore::dqlite {

namespace {

constexpr std::uint64_t kProtocolVersion = 1;

// Request types (dqlite's protocol.h).
constexpr std::uint8_t kReqLeader = 0;
constexpr std::uint8_t kReqClient = 1;
constexpr std::uint8_t kReqOpen = 3;
constexpr std::uint8_t kReqExecSql = 8;
constexpr std::uint8_t kReqQuerySql = 9;
constexpr std::uint8_t kReqAdd = 12;
constexpr std::uint8_t kReqAssign = 13;
constexpr std::uint8_t kReqRemove = 14;
constexpr std::uint8_t kReqCluster = 16;
constexpr std::uint8_t kReqTransfer = 17;

// Response types.
constexpr std::uint8_t kRespFailure = 0;
constexpr std::uint8_t kRespServer = 1;
constexpr std::uint8_t kRespWelcome = 2;
constexpr std::uint8_t kRespServers = 3;
constexpr std::uint8_t kRespDb = 4;
constexpr std::uint8_t kRespResult = 6;
constexpr std::uint8_t kRespRows = 7;
constexpr std::uint8_t kRespEmpty = 8;

// Value types (SQLite's fundamental types, then dqlite's own).
constexpr std::uint8_t kInteger = 1;
constexpr std::uint8_t kFloat = 2;
constexpr std::uint8_t kText = 3;
constexpr std::uint8_t kBlob = 4;
constexpr std::uint8_t kNull = 5;
constexpr std::uint8_t kUnixTime = 9;
constexpr std::uint8_t kIso8601 = 10;
constexpr std::uint8_t kBoolean = 11;

constexpr std::uint64_t kRowsPart = 0xeeeeeeeeeeeeeeeeULL;
constexpr std::uint64_t kRowsDone = 0xffffffffffffffffULL;
constexpr std::uint64_t kClusterFormatV1 = 1; // id, address and role

constexpr std::size_t padded(std::size_t n) {
    return (n + 7) / 8 * 8;
}

// Builds a request body: every field starts on the byte after the previous one, and text/blob/tuple
// helpers pad to a word themselves, so a body built only through them is whole words.
class Body {
public:
    void u8(std::uint8_t v) { bytes_.push_back(v); }
    void u32(std::uint32_t v) { little(v, 4); }
    void u64(std::uint64_t v) { little(v, 8); }
    void text(std::string_view s) {
        bytes_.insert(bytes_.end(), s.begin(), s.end());
        bytes_.push_back(0);
        pad();
    }
    void pad() { bytes_.resize(padded(bytes_.size()), 0); }
    void params(const std::vector<Value>& values) {
        // The count is one byte in schema 0; more parameters would need schema 1.
        if (values.size() > 255) {
            throw std::invalid_argument("dqlite: at most 255 SQL parameters per statement");
        }
        u8(static_cast<std::uint8_t>(values.size()));
        for (const Value& v : values) {
            u8(typeOf(v));
        }
        pad();
        for (const Value& v : values) {
            std::visit(
                [this](const auto& x) {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, std::nullptr_t>) {
                        u64(0);
                    } else if constexpr (std::is_same_v<T, std::int64_t>) {
                        u64(static_cast<std::uint64_t>(x));
                    } else if constexpr (std::is_same_v<T, double>) {
                        std::uint64_t bits;
                        std::memcpy(&bits, &x, sizeof bits);
                        u64(bits);
                    } else if constexpr (std::is_same_v<T, std::string>) {
                        if (x.find('\0') != std::string::npos) {
                            throw std::invalid_argument(
                                "dqlite: TEXT parameter with a NUL byte (use a Blob)");
                        }
                        text(x);
                    } else {
                        u64(x.bytes.size());
                        bytes_.insert(bytes_.end(), x.bytes.begin(), x.bytes.end());
                        pad();
                    }
                },
                v);
        }
    }
    const std::vector<std::uint8_t>& bytes() const { return bytes_; }

private:
    static std::uint8_t typeOf(const Value& v) {
        static constexpr std::array<std::uint8_t, 5> types{kNull, kInteger, kFloat, kText, kBlob};
        return types[v.index()];
    }
    void little(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) {
            bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        }
    }
    std::vector<std::uint8_t> bytes_;
};

std::uint64_t readLittle(const std::uint8_t* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

std::pair<std::string, std::string> splitAddress(const std::string& address) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
        throw Error(Error::Kind::Network, 0, "address is not host:port", "connect to '" + address + "'");
    }
    return {address.substr(0, colon), address.substr(colon + 1)};
}

struct FdCloser {
    int fd;
    ~FdCloser() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    int release() { return std::exchange(fd, -1); }
};

int millisLeft(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

} // namespace

Error::Error(Kind kind, std::uint64_t code, std::string detail, const std::string& context)
    : std::runtime_error(context + ": " + kindName(kind) +
                         (code != 0 ? " (code " + std::to_string(code) + ")" : "") + ": " + detail),
      kind_(kind), code_(code), detail_(std::move(detail)) {}

const char* kindName(Error::Kind kind) noexcept {
    switch (kind) {
    case Error::Kind::Server:
        return "server error";
    case Error::Kind::NotLeader:
        return "not leader";
    case Error::Kind::LeadershipLost:
        return "leadership lost";
    case Error::Kind::Timeout:
        return "timeout";
    case Error::Kind::ConnectionClosed:
        return "connection closed";
    case Error::Kind::Protocol:
        return "protocol error";
    case Error::Kind::Network:
        return "network error";
    }
    return "unknown error";
}

struct Connection::Reply {
    std::uint8_t type = 0;
    std::vector<std::uint8_t> body;
};

// Reads fields of one reply; any read past its end is a protocol error (promise 2).
class Connection::Cursor {
public:
    Cursor(Connection& conn, const Reply& reply, const char* what)
        : conn_(conn), data_(reply.body.data()), size_(reply.body.size()), what_(what) {}

    std::size_t left() const { return size_ - pos_; }
    std::uint64_t u64() { return readLittle(take(8), 8); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(readLittle(take(4), 4)); }
    std::uint64_t peek64() {
        need(8);
        return readLittle(data_ + pos_, 8);
    }
    std::string text() {
        if (left() == 0) {
            conn_.fail(Error::Kind::Protocol, "reply ends where a text was expected", what_);
        }
        const auto* start = data_ + pos_;
        const auto* nul = static_cast<const std::uint8_t*>(std::memchr(start, 0, left()));
        if (nul == nullptr) {
            conn_.fail(Error::Kind::Protocol, "text without its terminating NUL", what_);
        }
        const std::size_t length = static_cast<std::size_t>(nul - start);
        take(padded(length + 1));
        return std::string(reinterpret_cast<const char*>(start), length);
    }
    Blob blob() {
        const std::uint64_t length = u64();
        if (length > left()) {
            conn_.fail(Error::Kind::Protocol,
                       "blob of " + std::to_string(length) + " bytes in a reply with " +
                           std::to_string(left()) + " left",
                       what_);
        }
        const auto* start = take(padded(static_cast<std::size_t>(length)));
        return Blob{std::vector<std::uint8_t>(start, start + length)};
    }
    const std::uint8_t* take(std::size_t n) {
        need(n);
        const auto* p = data_ + pos_;
        pos_ += n;
        return p;
    }

private:
    void need(std::size_t n) {
        if (n > left()) {
            conn_.fail(Error::Kind::Protocol,
                       "reply ends early (" + std::to_string(left()) + " bytes left, " + std::to_string(n) +
                           " needed)",
                       what_);
        }
    }
    Connection& conn_;
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    const char* what_;
};

Connection::Connection(int fd, std::string address, const ConnectOptions& options)
    : fd_(fd), address_(std::move(address)), options_(options) {}

Connection::Connection(Connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), address_(std::move(other.address_)), options_(other.options_),
      opened_(std::move(other.opened_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
    if (this != &other) {
        closeSocket();
        fd_ = std::exchange(other.fd_, -1);
        address_ = std::move(other.address_);
        options_ = other.options_;
        opened_ = std::move(other.opened_);
    }
    return *this;
}

Connection::~Connection() {
    closeSocket();
}

void Connection::closeSocket() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::string Connection::context(const char* what) const {
    return std::string(what) + " on " + address_;
}

void Connection::fail(Error::Kind kind, const std::string& detail, const char* what) {
    NCS_LOG(debug) << "dqlite: " << context(what) << ": " << kindName(kind) << ": " << detail
                   << " (connection dropped)";
    closeSocket();
    throw Error(kind, 0, detail, context(what));
}

Connection Connection::connect(const std::string& address, const ConnectOptions& options) {
    const auto deadline = Clock::now() + options.connectTimeout;
    const std::string what = "connect to " + address;
    const auto [host, port] = splitAddress(address);

    addrinfo hints{};
    hints.ai_family = AF_INET; // dqlite 1.11 binds IPv4 only (an [IPv6] bind address is refused)
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        throw Error(Error::Kind::Network, 0, std::string("cannot resolve: ") + ::gai_strerror(rc), what);
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);

    FdCloser sock{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (sock.fd < 0) {
        throw Error(Error::Kind::Network, 0, std::string("socket: ") + std::strerror(errno), what);
    }
    if (::connect(sock.fd, addresses->ai_addr, addresses->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            throw Error(Error::Kind::Network, 0, std::strerror(errno), what);
        }
        pollfd p{sock.fd, POLLOUT, 0};
        int rc;
        do {
            rc = ::poll(&p, 1, millisLeft(deadline));
        } while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            throw Error(Error::Kind::Network, 0, std::string("poll: ") + std::strerror(errno), what);
        }
        if (rc == 0) {
            throw Error(Error::Kind::Timeout, 0, "no connection within the deadline", what);
        }
        int soError = 0;
        socklen_t len = sizeof soError;
        if (::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &soError, &len) != 0) {
            throw Error(Error::Kind::Network, 0, std::string("getsockopt: ") + std::strerror(errno), what);
        }
        if (soError != 0) {
            throw Error(Error::Kind::Network, 0, std::strerror(soError), what);
        }
    }
    // Requests are small and each waits for its reply: Nagle would only add delay.
    const int one = 1;
    if (::setsockopt(sock.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        throw Error(Error::Kind::Network, 0, std::string("TCP_NODELAY: ") + std::strerror(errno), what);
    }

    Connection conn(sock.release(), address, options);
    std::array<std::uint8_t, 8> version{};
    for (int i = 0; i < 8; ++i) {
        version[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(kProtocolVersion >> (8 * i));
    }
    conn.sendAll(version.data(), version.size(), deadline, "handshake");
    Body body;
    body.u64(0); // client id: unused by the server
    // The handshake has no reply of its own: CLIENT → WELCOME proves the node speaks version 1.
    conn.options_.requestTimeout = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    const Reply reply = conn.roundTrip(kReqClient, body.bytes(), "CLIENT");
    conn.options_.requestTimeout = options.requestTimeout;
    if (reply.type != kRespWelcome) {
        conn.failFromReply(reply, "CLIENT");
    }
    NCS_LOG(debug) << "dqlite: connected to " << address;
    return conn;
}

void Connection::waitUntilReady(short events, Clock::time_point deadline, const char* timeoutDetail,
                                const char* what) {
    pollfd p{fd_, events, 0};
    const int rc = ::poll(&p, 1, millisLeft(deadline));
    if (rc < 0 && errno != EINTR) {
        fail(Error::Kind::ConnectionClosed, std::string("poll: ") + std::strerror(errno), what);
    }
    if (rc == 0) {
        fail(Error::Kind::Timeout, timeoutDetail, what);
    }
}

void Connection::sendAll(const std::uint8_t* data, std::size_t size, Clock::time_point deadline,
                         const char* what) {
    while (size > 0) {
        const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            size -= static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            waitUntilReady(POLLOUT, deadline, "could not send within the deadline", what);
            continue;
        }
        fail(Error::Kind::ConnectionClosed, std::string("send: ") + std::strerror(errno), what);
    }
}

void Connection::recvAll(std::uint8_t* data, std::size_t size, Clock::time_point deadline, const char* what) {
    while (size > 0) {
        const ssize_t n = ::recv(fd_, data, size, 0);
        if (n > 0) {
            data += n;
            size -= static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0) {
            fail(Error::Kind::ConnectionClosed, "peer closed the connection in the middle of a reply", what);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            waitUntilReady(POLLIN, deadline, "no complete reply within the deadline", what);
            continue;
        }
        fail(Error::Kind::ConnectionClosed, std::string("recv: ") + std::strerror(errno), what);
    }
}

Connection::Reply Connection::receive(Clock::time_point deadline, const char* what) {
    std::array<std::uint8_t, 8> header{};
    recvAll(header.data(), header.size(), deadline, what);
    const std::uint64_t words = readLittle(header.data(), 4);
    // Checked before allocating: a hostile length must not cost memory (promise 2).
    if (words > options_.limits.maxMessageBytes / 8) {
        fail(Error::Kind::Protocol,
             "reply of " + std::to_string(words * 8) + " bytes exceeds the limit of " +
                 std::to_string(options_.limits.maxMessageBytes),
             what);
    }
    Reply reply;
    reply.type = header[4];
    reply.body.resize(static_cast<std::size_t>(words * 8));
    recvAll(reply.body.data(), reply.body.size(), deadline, what);
    return reply;
}

Connection::Reply Connection::roundTrip(std::uint8_t type, const std::vector<std::uint8_t>& body,
                                        const char* what) {
    if (fd_ < 0) {
        throw Error(Error::Kind::ConnectionClosed, 0, "connection already failed or closed", context(what));
    }
    const auto deadline = Clock::now() + options_.requestTimeout;
    std::vector<std::uint8_t> message(8 + body.size());
    const std::uint64_t words = body.size() / 8;
    for (int i = 0; i < 4; ++i) {
        message[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(words >> (8 * i));
    }
    message[4] = type; // schema 0, unused bytes 0
    std::copy(body.begin(), body.end(), message.begin() + 8);
    sendAll(message.data(), message.size(), deadline, what);
    return receive(deadline, what);
}

void Connection::failFromReply(const Reply& reply, const char* what) {
    if (reply.type != kRespFailure) {
        fail(Error::Kind::Protocol, "unexpected reply type " + std::to_string(reply.type), what);
    }
    Cursor in(*this, reply, what);
    const std::uint64_t code = in.u64();
    std::string message = in.text();
    const Error::Kind kind = code == kNotLeaderCode        ? Error::Kind::NotLeader
                             : code == kLeadershipLostCode ? Error::Kind::LeadershipLost
                                                           : Error::Kind::Server;
    throw Error(kind, code, std::move(message), context(what));
}

void Connection::expectEmpty(std::uint8_t type, const std::vector<std::uint8_t>& body, const char* what) {
    const Reply reply = roundTrip(type, body, what);
    if (reply.type != kRespEmpty) {
        failFromReply(reply, what);
    }
}

std::optional<NodeInfo> Connection::leader() {
    Body body;
    body.u64(0);
    const Reply reply = roundTrip(kReqLeader, body.bytes(), "LEADER");
    if (reply.type != kRespServer) {
        failFromReply(reply, "LEADER");
    }
    Cursor in(*this, reply, "LEADER");
    NodeInfo info;
    info.id = in.u64();
    info.address = in.text();
    if (info.id == 0 || info.address.empty()) {
        return std::nullopt;
    }
    return info;
}

std::uint32_t Connection::open(const std::string& name) {
    if (opened_ && opened_->first == name) {
        return opened_->second;
    }
    Body body;
    body.text(name);
    body.u64(0);   // flags
    body.text(""); // VFS name: empty, as dqlite's own gateway tests send (the node uses its replicated VFS)
    const Reply reply = roundTrip(kReqOpen, body.bytes(), "OPEN");
    if (reply.type != kRespDb) {
        failFromReply(reply, "OPEN");
    }
    Cursor in(*this, reply, "OPEN");
    const std::uint32_t id = in.u32();
    opened_.emplace(name, id);
    return id;
}

ExecResult Connection::exec(std::uint32_t db, std::string_view sql, const std::vector<Value>& params) {
    Body body;
    body.u64(db);
    body.text(sql);
    body.params(params);
    const Reply reply = roundTrip(kReqExecSql, body.bytes(), "EXEC_SQL");
    if (reply.type != kRespResult) {
        failFromReply(reply, "EXEC_SQL");
    }
    Cursor in(*this, reply, "EXEC_SQL");
    ExecResult result;
    result.lastInsertId = in.u64();
    result.rowsAffected = in.u64();
    return result;
}

Rows Connection::query(std::uint32_t db, std::string_view sql, const std::vector<Value>& params) {
    constexpr const char* what = "QUERY_SQL";
    Body body;
    body.u64(db);
    body.text(sql);
    body.params(params);
    // The whole result set, every part of it, within one request timeout.
    const auto deadline = Clock::now() + options_.requestTimeout;
    Reply reply = roundTrip(kReqQuerySql, body.bytes(), what);
    std::size_t resultBytes = 0;
    Rows rows;
    for (bool first = true;; first = false) {
        if (reply.type != kRespRows) {
            failFromReply(reply, what);
        }
        resultBytes += reply.body.size();
        if (resultBytes > options_.limits.maxResultBytes) {
            fail(Error::Kind::Protocol,
                 "result set larger than " + std::to_string(options_.limits.maxResultBytes) + " bytes", what);
        }
        Cursor in(*this, reply, what);
        const std::uint64_t columns = in.u64();
        // Each name takes at least a word: a count beyond that is a lie, caught before reserving.
        if (columns == 0 || columns > in.left() / 8) {
            fail(Error::Kind::Protocol, "bad column count " + std::to_string(columns), what);
        }
        std::vector<std::string> names;
        names.reserve(static_cast<std::size_t>(columns));
        for (std::uint64_t i = 0; i < columns; ++i) {
            names.push_back(in.text());
        }
        if (first) {
            rows.columns = std::move(names);
        } else if (names != rows.columns) {
            fail(Error::Kind::Protocol, "a later part of the result set has other columns", what);
        }
        const std::size_t n = rows.columns.size();
        std::uint64_t marker;
        while ((marker = in.peek64()) != kRowsDone && marker != kRowsPart) {
            if (rows.rows.size() >= options_.limits.maxRows) {
                fail(Error::Kind::Protocol,
                     "result set larger than " + std::to_string(options_.limits.maxRows) + " rows", what);
            }
            const std::uint8_t* types = in.take(padded((n + 1) / 2));
            std::vector<Value> row;
            row.reserve(n);
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint8_t type = (i % 2 == 0) ? (types[i / 2] & 0x0f) : (types[i / 2] >> 4);
                switch (type) {
                case kInteger:
                case kUnixTime:
                case kBoolean:
                    row.emplace_back(static_cast<std::int64_t>(in.u64()));
                    break;
                case kFloat: {
                    const std::uint64_t bits = in.u64();
                    double d;
                    std::memcpy(&d, &bits, sizeof d);
                    row.emplace_back(d);
                    break;
                }
                case kText:
                case kIso8601:
                    row.emplace_back(in.text());
                    break;
                case kBlob:
                    row.emplace_back(in.blob());
                    break;
                case kNull:
                    (void)in.u64(); // a null takes a word on the wire, its content is unused
                    row.emplace_back(nullptr);
                    break;
                default:
                    fail(Error::Kind::Protocol, "unknown value type " + std::to_string(type), what);
                }
            }
            rows.rows.push_back(std::move(row));
        }
        (void)in.u64(); // the marker just peeked
        if (marker == kRowsDone) {
            return rows;
        }
        reply = receive(deadline, what);
    }
}

std::vector<NodeInfo> Connection::cluster() {
    constexpr const char* what = "CLUSTER";
    Body body;
    body.u64(kClusterFormatV1);
    const Reply reply = roundTrip(kReqCluster, body.bytes(), what);
    if (reply.type != kRespServers) {
        failFromReply(reply, what);
    }
    Cursor in(*this, reply, what);
    const std::uint64_t count = in.u64();
    if (count > in.left() / 24) { // id, one word of address at least, role
        fail(Error::Kind::Protocol, "bad node count " + std::to_string(count), what);
    }
    std::vector<NodeInfo> nodes;
    nodes.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
        NodeInfo info;
        info.id = in.u64();
        info.address = in.text();
        const std::uint64_t role = in.u64();
        if (role > static_cast<std::uint64_t>(Role::Spare)) {
            fail(Error::Kind::Protocol, "unknown role " + std::to_string(role), what);
        }
        info.role = static_cast<Role>(role);
        nodes.push_back(std::move(info));
    }
    return nodes;
}

void Connection::add(std::uint64_t id, const std::string& address) {
    Body body;
    body.u64(id);
    body.text(address);
    expectEmpty(kReqAdd, body.bytes(), "ADD");
}

void Connection::assign(std::uint64_t id, Role role) {
    Body body;
    body.u64(id);
    body.u64(static_cast<std::uint64_t>(role));
    expectEmpty(kReqAssign, body.bytes(), "ASSIGN");
}

void Connection::remove(std::uint64_t id) {
    Body body;
    body.u64(id);
    expectEmpty(kReqRemove, body.bytes(), "REMOVE");
}

void Connection::transfer(std::uint64_t id) {
    Body body;
    body.u64(id);
    expectEmpty(kReqTransfer, body.bytes(), "TRANSFER");
}

// --- Cluster -------------------------------------------------------------------------------------

Cluster::Cluster(std::vector<std::string> addresses, ClusterOptions options)
    : addresses_(std::move(addresses)), options_(options) {
    if (addresses_.empty()) {
        throw std::invalid_argument("dqlite::Cluster: no node addresses");
    }
}

Connection& Cluster::leader(Millis within) {
    if (leader_ && leader_->usable()) {
        return *leader_;
    }
    leader_.reset();
    const auto deadline = Clock::now() + within;
    std::string lastSeen; // what each address said in the last round, for the timeout's message
    for (;;) {
        lastSeen.clear();
        for (const std::string& address : addresses_) {
            // Never wait on one node longer than the time left overall.
            ConnectOptions opts = options_.connect;
            const auto left =
                std::max(std::chrono::duration_cast<Millis>(deadline - Clock::now()), Millis{1});
            opts.connectTimeout = std::min(opts.connectTimeout, left);
            opts.requestTimeout = std::min(opts.requestTimeout, left);
            try {
                Connection conn = Connection::connect(address, opts);
                const std::optional<NodeInfo> named = conn.leader();
                if (!named) {
                    lastSeen += address + ": knows no leader; ";
                    continue;
                }
                if (named->address != address) {
                    conn = Connection::connect(named->address, opts);
                    const std::optional<NodeInfo> self = conn.leader();
                    if (!self || self->address != named->address) {
                        lastSeen += address + ": named " + named->address + ", which does not lead; ";
                        continue;
                    }
                }
                conn.setRequestTimeout(options_.connect.requestTimeout);
                NCS_LOG(debug) << "dqlite: leader is node " << named->id << " at " << named->address;
                leader_.emplace(std::move(conn));
                return *leader_;
            } catch (const Error& e) {
                lastSeen += std::string(e.what()) + "; ";
            }
            if (Clock::now() >= deadline) {
                break;
            }
        }
        if (Clock::now() + options_.retryPause >= deadline) {
            throw Error(Error::Kind::Timeout, 0,
                        "no leader found within " + std::to_string(within.count()) + " ms: " + lastSeen,
                        "find dqlite leader");
        }
        std::this_thread::sleep_for(options_.retryPause);
    }
}

} // namespace ncstore::dqlite
