// Our client against peers that are not dqlite or are broken: silent, slow, lying about lengths,
// sending garbage, closing mid-reply. Each must end in a typed Error within the deadline, never a
// hang, a crash or an allocation sized by the peer.
#include "ncstore/dqlite/client.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <random>

#include <sys/socket.h>

using namespace ncstore::dqlite;
using namespace ncstore::dqlite::test;
using namespace std::chrono_literals;

namespace {

struct Outcome {
    std::optional<Error> error;
    Millis elapsed{0};
};

Outcome attempt(const std::function<void()>& call) {
    const auto start = Clock::now();
    Outcome out;
    try {
        call();
    } catch (const Error& e) {
        out.error = e;
    }
    out.elapsed = std::chrono::duration_cast<Millis>(Clock::now() - start);
    return out;
}

ConnectOptions quick() {
    ConnectOptions o;
    o.connectTimeout = 300ms;
    o.requestTimeout = 300ms;
    return o;
}

std::vector<std::uint8_t> bytes(std::string_view s) {
    return {s.begin(), s.end()};
}

/// A server that completes the handshake, reads one request and answers with `reply`, then waits
/// for the client to go.
FakeServer replying(std::vector<std::uint8_t> reply) {
    return FakeServer([reply = std::move(reply)](int fd) {
        if (handshake(fd) && readRequest(fd)) {
            writeAll(fd, reply);
        }
        drain(fd);
    });
}

/// LEADER against a server answering `reply`: the error it ends in.
Outcome leaderAgainst(std::vector<std::uint8_t> reply) {
    FakeServer server = replying(std::move(reply));
    Connection conn = Connection::connect(server.address(), quick());
    Outcome out = attempt([&] { (void)conn.leader(); });
    EXPECT_FALSE(conn.usable()) << "a connection that saw a bad reply must not be reused";
    return out;
}

/// QUERY_SQL against a server answering `rowsBody` as one ROWS message.
Outcome queryAgainst(std::vector<std::uint8_t> rowsBody) {
    auto reply = header(static_cast<std::uint32_t>(rowsBody.size() / 8), 7);
    reply.insert(reply.end(), rowsBody.begin(), rowsBody.end());
    FakeServer server = replying(std::move(reply));
    Connection conn = Connection::connect(server.address(), quick());
    return attempt([&] { (void)conn.query(0, "SELECT 1"); });
}

void putText(std::vector<std::uint8_t>& out, std::string_view s) {
    out.insert(out.end(), s.begin(), s.end());
    out.push_back(0);
    out.resize((out.size() + 7) / 8 * 8, 0);
}

} // namespace

TEST(HostilePeer, SilentServerTimesOutWithinTheConnectDeadline) {
    FakeServer server([](int fd) { drain(fd); });
    const Outcome out = attempt([&] { (void)Connection::connect(server.address(), quick()); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Timeout) << out.error->what();
    EXPECT_GE(out.elapsed, 250ms);
    EXPECT_LT(out.elapsed, 1000ms);
}

TEST(HostilePeer, SilenceAfterTheHandshakeTimesOutAndPoisonsTheConnection) {
    FakeServer server([](int fd) {
        if (handshake(fd)) {
            drain(fd);
        }
    });
    Connection conn = Connection::connect(server.address(), quick());
    const Outcome out = attempt([&] { (void)conn.leader(); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Timeout) << out.error->what();
    EXPECT_GE(out.elapsed, 250ms);
    EXPECT_LT(out.elapsed, 1000ms);
    // A late reply would answer the next request: the connection refuses further use at once.
    const Outcome again = attempt([&] { (void)conn.cluster(); });
    ASSERT_TRUE(again.error.has_value());
    EXPECT_EQ(again.error->kind(), Error::Kind::ConnectionClosed) << again.error->what();
    EXPECT_LT(again.elapsed, 50ms);
}

TEST(HostilePeer, SlowDripCannotStretchTheRequestDeadline) {
    // A valid SERVER reply, one byte every 100 ms: 3.2 s in all, the deadline is 300 ms for the
    // whole reply, not per read.
    FakeServer server([](int fd) {
        if (!handshake(fd) || !readRequest(fd)) {
            return;
        }
        auto reply = header(3, 1);
        put64(reply, 1);
        putText(reply, "127.0.0.1:1");
        for (std::uint8_t b : reply) {
            if (::send(fd, &b, 1, MSG_NOSIGNAL) != 1) {
                return;
            }
            std::this_thread::sleep_for(100ms);
        }
    });
    Connection conn = Connection::connect(server.address(), quick());
    const Outcome out = attempt([&] { (void)conn.leader(); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Timeout) << out.error->what();
    EXPECT_LT(out.elapsed, 1000ms);
}

TEST(HostilePeer, HugeLengthIsAProtocolErrorBeforeAnyAllocation) {
    // 0xffffffff words: 32 GiB. Allocating it would throw bad_alloc (not an Error) or be killed.
    const Outcome out = leaderAgainst(header(0xffffffffu, 1));
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();
    EXPECT_NE(out.error->detail().find("exceeds the limit"), std::string::npos) << out.error->what();
    EXPECT_LT(out.elapsed, 250ms) << "refused from the header, not after waiting for the body";

    // Just over a configured limit is refused the same way.
    FakeServer server = replying(header(129 * 1024 / 8, 1));
    ConnectOptions small = quick();
    small.limits.maxMessageBytes = 128 * 1024;
    Connection conn = Connection::connect(server.address(), small);
    const Outcome over = attempt([&] { (void)conn.leader(); });
    ASSERT_TRUE(over.error.has_value());
    EXPECT_EQ(over.error->kind(), Error::Kind::Protocol) << over.error->what();
}

TEST(HostilePeer, GarbageInsteadOfTheProtocolIsAProtocolError) {
    // An HTTP server where a node was expected: its first bytes read as a 10 GB message.
    FakeServer http([](int fd) {
        writeAll(fd, bytes("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"));
        drain(fd);
    });
    const Outcome out = attempt([&] { (void)Connection::connect(http.address(), quick()); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();

    // A well-formed message of a type that does not answer LEADER.
    auto wrongType = header(1, 200);
    put64(wrongType, 0);
    const Outcome wrong = leaderAgainst(wrongType);
    ASSERT_TRUE(wrong.error.has_value());
    EXPECT_EQ(wrong.error->kind(), Error::Kind::Protocol) << wrong.error->what();
}

TEST(HostilePeer, ClosingMidReplyIsConnectionClosed) {
    FakeServer server([](int fd) {
        if (handshake(fd) && readRequest(fd)) {
            auto partial = header(4, 1); // promises 32 bytes of body
            partial.insert(partial.end(), 12, 0x41);
            writeAll(fd, partial);
        }
    }); // the script returns: the socket closes
    Connection conn = Connection::connect(server.address(), quick());
    const Outcome out = attempt([&] { (void)conn.leader(); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::ConnectionClosed) << out.error->what();
    EXPECT_LT(out.elapsed, 250ms);
}

TEST(HostilePeer, MalformedFieldsAreProtocolErrors) {
    { // SERVER whose text has no NUL
        auto reply = header(2, 1);
        put64(reply, 1);
        const auto text = bytes("abcdefgh");
        reply.insert(reply.end(), text.begin(), text.end());
        const Outcome out = leaderAgainst(reply);
        ASSERT_TRUE(out.error.has_value());
        EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();
    }
    { // FAILURE cut after its code
        auto reply = header(1, 0);
        put64(reply, 1);
        const Outcome out = leaderAgainst(reply);
        ASSERT_TRUE(out.error.has_value());
        EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();
    }
    { // an empty body where a SERVER needs two fields
        const Outcome out = leaderAgainst(header(0, 1));
        ASSERT_TRUE(out.error.has_value());
        EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();
    }
}

TEST(HostilePeer, MalformedResultSetsAreProtocolErrors) {
    const auto expectProtocol = [](std::vector<std::uint8_t> body, const char* what) {
        const Outcome out = queryAgainst(std::move(body));
        ASSERT_TRUE(out.error.has_value()) << what;
        EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << what << ": " << out.error->what();
    };
    { // a column count no message could hold (would reserve 10^18 names)
        std::vector<std::uint8_t> body;
        put64(body, 1'000'000'000'000'000'000ULL);
        putText(body, "c");
        put64(body, 0xffffffffffffffffULL);
        expectProtocol(body, "column count");
    }
    { // one row whose column type is 7 (no such type)
        std::vector<std::uint8_t> body;
        put64(body, 1);
        putText(body, "c");
        put64(body, 0x07);
        put64(body, 0);
        put64(body, 0xffffffffffffffffULL);
        expectProtocol(body, "value type");
    }
    { // a blob claiming 1 TiB
        std::vector<std::uint8_t> body;
        put64(body, 1);
        putText(body, "c");
        put64(body, 0x04);
        put64(body, 1ULL << 40);
        put64(body, 0xffffffffffffffffULL);
        expectProtocol(body, "blob length");
    }
    { // rows that never end (no DONE/PART marker)
        std::vector<std::uint8_t> body;
        put64(body, 1);
        putText(body, "c");
        put64(body, 0x01);
        put64(body, 42);
        expectProtocol(body, "missing marker");
    }
}

TEST(HostilePeer, WellFormedFakeRepliesAreDecoded) {
    // The control for the tests above: the same fake server with a correct ROWS reply decodes, so
    // their errors come from the faults put in, not from the fake.
    std::vector<std::uint8_t> body;
    put64(body, 2);
    putText(body, "a");
    putText(body, "b");
    put64(body, 0x31); // a: integer (1, low nibble), b: text (3)
    put64(body, static_cast<std::uint64_t>(-5));
    putText(body, "hello, world");
    put64(body, 0xffffffffffffffffULL);
    auto reply = header(static_cast<std::uint32_t>(body.size() / 8), 7);
    reply.insert(reply.end(), body.begin(), body.end());
    FakeServer server = replying(reply);
    Connection conn = Connection::connect(server.address(), quick());
    const Rows rows = conn.query(0, "SELECT 1");
    EXPECT_EQ(rows.columns, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(rows.rows, (std::vector<std::vector<Value>>{{std::int64_t{-5}, std::string("hello, world")}}));
}

TEST(HostilePeer, NoLeaderAnywhereIsATimeoutWithinTheDeadline) {
    // Nothing listens on these ports: every round is refused until the deadline.
    Cluster cluster({freeAddress(), freeAddress()});
    const Outcome out = attempt([&] { (void)cluster.leader(500ms); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Timeout) << out.error->what();
    EXPECT_GE(out.elapsed, 400ms);
    EXPECT_LT(out.elapsed, 1500ms);
    EXPECT_NE(std::string(out.error->what()).find("refused"), std::string::npos) << out.error->what();
}

TEST(HostilePeer, EndlessPartsAreCutAtTheResultLimit) {
    // Each ROWS message is well formed but ends with PART, forever.
    FakeServer server([](int fd) {
        if (!handshake(fd) || !readRequest(fd)) {
            return;
        }
        std::vector<std::uint8_t> part = header(3, 7);
        put64(part, 1);
        putText(part, "c");
        put64(part, 0xeeeeeeeeeeeeeeeeULL);
        for (int i = 0; i < 100'000; ++i) {
            if (::send(fd, part.data(), part.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(part.size())) {
                return;
            }
        }
        drain(fd);
    });
    ConnectOptions small = quick();
    small.requestTimeout = 5s;
    small.limits.maxResultBytes = 64 * 1024;
    Connection conn = Connection::connect(server.address(), small);
    const Outcome out = attempt([&] { (void)conn.query(0, "SELECT 1"); });
    ASSERT_TRUE(out.error.has_value());
    EXPECT_EQ(out.error->kind(), Error::Kind::Protocol) << out.error->what();
    EXPECT_LT(out.elapsed, 2s);
}

TEST(HostilePeer, CorruptedResultSetsEndInAResultOrATypedError) {
    // A valid two-row reply with every value type, then 400 corrupted copies (bytes flipped, body
    // cut, type byte changed; the header always tells the truth about the length sent, and the
    // fake closes after sending, so no case waits for a deadline). Each must decode to rows of the
    // right width or end in a dqlite::Error: never another exception, a crash, or a hang.
    std::vector<std::uint8_t> body;
    put64(body, 5);
    for (const char* name : {"i", "f", "t", "b", "n"}) {
        putText(body, name);
    }
    for (int row = 0; row < 2; ++row) {
        put64(body, 0x0000000000054321ULL); // types 1, 2, 3, 4, 5 (low nibble first)
        put64(body, 42);
        put64(body, 0x400921fb54442d18ULL); // pi
        putText(body, "some text");
        put64(body, 3);
        put64(body, 0x0000000000030201ULL);
        put64(body, 0);
    }
    put64(body, 0xffffffffffffffffULL);

    std::mt19937 random(20261203); // fixed: a failure reproduces
    int results = 0, errors = 0;
    for (int iteration = -1; iteration < 400; ++iteration) {
        std::vector<std::uint8_t> corrupt = body;
        std::uint8_t type = 7;
        switch (iteration < 0 ? 3 : random() % 3) { // iteration -1: the intact reply, the control
        case 3:
            break;
        case 0:
            for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
                corrupt[random() % corrupt.size()] = static_cast<std::uint8_t>(random());
            }
            break;
        case 1:
            corrupt.resize(random() % corrupt.size() / 8 * 8);
            break;
        default:
            type = static_cast<std::uint8_t>(random() % 12);
            break;
        }
        auto reply = header(static_cast<std::uint32_t>(corrupt.size() / 8), type);
        reply.insert(reply.end(), corrupt.begin(), corrupt.end());
        FakeServer server([&reply](int fd) {
            if (handshake(fd) && readRequest(fd)) {
                writeAll(fd, reply);
            }
        });
        Connection conn = Connection::connect(server.address(), quick());
        try {
            const Rows rows = conn.query(0, "SELECT 1");
            ++results;
            if (iteration < 0) {
                ASSERT_EQ(rows.rows.size(), 2u);
                EXPECT_EQ(rows.rows[1],
                          (std::vector<Value>{std::int64_t{42}, 3.141592653589793, std::string("some text"),
                                              Blob{{1, 2, 3}}, nullptr}));
            }
            for (const auto& row : rows.rows) {
                ASSERT_EQ(row.size(), rows.columns.size()) << "iteration " << iteration;
            }
        } catch (const Error& e) {
            ASSERT_GE(iteration, 0) << "the intact reply was refused: " << e.what();
            ++errors;
            EXPECT_TRUE(e.kind() == Error::Kind::Protocol || e.kind() == Error::Kind::ConnectionClosed ||
                        e.kind() == Error::Kind::Server)
                << "iteration " << iteration << ": " << e.what();
        }
    }
    std::cout << results << " corrupted replies decoded, " << errors << " refused" << std::endl;
    EXPECT_GT(errors, 100);
    EXPECT_GT(results, 10);
}
