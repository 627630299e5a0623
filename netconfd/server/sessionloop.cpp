#include "sessionloop.hpp"

#include "events.hpp"
#include "framing.hpp"
#include "hello.hpp"
#include "reply.hpp"
#include "rpcparse.hpp"

#include "ncstore/log.hpp"

#include <chrono>
#include <optional>

namespace ncstore::netconfd {

void SessionLoop::serve(std::unique_ptr<transport::Connection> conn) const {
    const std::shared_ptr<Session> s = p_.stopping ? nullptr : p_.sessions.add([&](std::uint32_t id) {
        return std::make_shared<Session>(std::move(conn), id, p_.nacm);
    });
    if (!s) {
        if (conn) {
            conn->close();
        }
        return;
    }
    ++p_.stats.inSessions;
    NCS_LOG(info) << "session " << s->id << " started: " << s->user << " from " << s->host << ":" << s->port
                  << (s->access.recovery() ? " (NACM recovery session: not checked)" : "");
    TermReason reason = TermReason::Other;
    try {
        reason = run(*s);
    } catch (const std::exception& e) {
        NCS_LOG(error) << "session " << s->id << ": " << e.what();
    }
    end(*s, reason);
}

TermReason SessionLoop::run(Session& s) const {
    using transport::Framing;
    using Clock = std::chrono::steady_clock;
    auto& conn = s.connection();
    transport::MessageReader reader(p_.limits.maxMessageSize);
    if (!conn.write(transport::frame(serverHello(p_.capabilities, s.id), Framing::EndOfMessage))) {
        return TermReason::Dropped;
    }
    std::string received;
    // The client's <hello>, within the auth timeout.
    const auto helloDeadline = Clock::now() + std::chrono::seconds(p_.limits.authTimeout);
    std::optional<std::string> hello;
    for (;;) {
        try {
            hello = reader.next();
        } catch (const transport::FramingError& e) {
            ++p_.stats.inBadHellos;
            NCS_LOG(warning) << "session " << s.id << ": bad <hello>: " << e.what();
            return TermReason::BadHello;
        }
        if (hello) {
            break;
        }
        if (p_.stopping || s.killRequested) {
            return s.killRequested ? TermReason::Killed : TermReason::Other;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(helloDeadline - Clock::now());
        const auto r =
            left.count() > 0 ? conn.read(received, left) : transport::Connection::ReadResult::Timeout;
        if (r == transport::Connection::ReadResult::Closed) {
            return TermReason::Dropped;
        }
        if (r == transport::Connection::ReadResult::Timeout) {
            ++p_.stats.inBadHellos;
            NCS_LOG(warning) << "session " << s.id << ": no <hello> within " << p_.limits.authTimeout << " s";
            return TermReason::BadHello;
        }
        reader.feed(received);
        received.clear();
    }
    try {
        s.base11 = parseClientHello(p_.ctx, *hello).base11;
    } catch (const HelloError& e) {
        ++p_.stats.inBadHellos;
        NCS_LOG(warning) << "session " << s.id << " of " << s.user << ": " << e.what();
        return TermReason::BadHello;
    }
    reader.setFraming(s.base11 ? Framing::Chunked : Framing::EndOfMessage);
    s.started = true;
    p_.notifications.raise(notify::sessionStart({s.id, s.user, s.host}));

    auto lastMessage = Clock::now();
    for (;;) {
        std::optional<std::string> message;
        try {
            message = reader.next();
        } catch (const transport::FramingError& e) {
            // The byte stream cannot be resynchronized: say why (base:1.1 has the tag for it) and
            // end the session (RFC 6242 section 4.2).
            ++s.inBadRpcs;
            ++p_.stats.inBadRpcs;
            NCS_LOG(warning) << "session " << s.id << " of " << s.user << ": framing error: " << e.what()
                             << "; closing the session";
            if (s.base11) {
                std::string out(transport::kHeaderRoom, ' ');
                renderReply(out, nullptr,
                            Reply::error(RpcError(ErrorTag::MalformedMessage, ErrorType::Rpc, e.what())),
                            p_.ctx);
                conn.write(transport::frameInPlace(out, Framing::Chunked));
                ++s.outRpcErrors;
                ++p_.stats.outRpcErrors;
            }
            return TermReason::Other;
        }
        if (message) {
            if (s.killRequested) {
                return TermReason::Killed; // nothing received after a kill-session runs
            }
            if (!handleMessage(s, *message)) {
                return s.killRequested ? TermReason::Killed : TermReason::Closed;
            }
            if (!p_.subscriptions.deliver(s)) {
                return TermReason::Other;
            }
            lastMessage = Clock::now();
            continue;
        }
        if (s.killRequested) {
            return TermReason::Killed;
        }
        if (p_.stopping) {
            return TermReason::Other;
        }
        auto wait = std::chrono::milliseconds(-1);
        if (p_.limits.idleTimeout > 0 && !s.subscription && s.dynamic.empty()) {
            // A subscribed session is not idle: it is waiting for events (RFC 5277 section 6).
            wait = std::chrono::duration_cast<std::chrono::milliseconds>(
                lastMessage + std::chrono::seconds(p_.limits.idleTimeout) - Clock::now());
            if (wait.count() <= 0) {
                NCS_LOG(info) << "session " << s.id << " of " << s.user << " idle for "
                              << p_.limits.idleTimeout << " s: closing it";
                return TermReason::Timeout;
            }
        }
        if (const auto deadline = p_.subscriptions.deadline(s)) {
            const auto untilStop = std::chrono::duration_cast<std::chrono::milliseconds>(
                *deadline - std::chrono::system_clock::now() + std::chrono::milliseconds(1));
            wait = wait.count() < 0 ? untilStop : std::min(wait, untilStop);
            wait = std::max(wait, std::chrono::milliseconds(0));
        }
        const auto result = conn.read(received, wait);
        if (result == transport::Connection::ReadResult::Data) {
            reader.feed(received);
            received.clear();
        }
        if (!p_.subscriptions.deliver(s)) {
            return TermReason::Other;
        }
        if (result == transport::Connection::ReadResult::Closed) {
            return s.killRequested ? TermReason::Killed : TermReason::Dropped;
        }
    }
}

bool SessionLoop::handleMessage(Session& s, const std::string& message) const {
    ParsedRpc request = parseRpc(p_.ctx, message);
    Reply reply;
    if (request.error) {
        ++s.inBadRpcs;
        ++p_.stats.inBadRpcs;
        RpcError& e = *request.error;
        if (e.tag == ErrorTag::MalformedMessage && !s.base11) {
            // RFC 6241 Appendix A: malformed-message "MUST NOT be sent to old clients" (base:1.0).
            e.tag = ErrorTag::OperationFailed;
        }
        NCS_LOG(debug) << "session " << s.id << " bad rpc: " << e.tag << ": " << e.what();
        reply = Reply::error(std::move(e));
    } else {
        reply = p_.dispatcher.dispatch(request, s);
    }
    if (reply.kind == Reply::Kind::Error) {
        ++s.outRpcErrors;
        ++p_.stats.outRpcErrors;
    }
    std::string out(transport::kHeaderRoom, ' ');
    renderReply(out, request.envelope.get(), reply, p_.ctx);
    // The parsed request can go before the (possibly large) reply is written.
    request = ParsedRpc{};
    const bool sent = s.connection().write(transport::frameInPlace(
        out, s.base11 ? transport::Framing::Chunked : transport::Framing::EndOfMessage));
    return sent && !reply.endSession;
}

void SessionLoop::end(Session& s, TermReason reason) const {
    if (reason != TermReason::Closed && reason != TermReason::Killed) {
        ++p_.stats.droppedSessions;
    }
    p_.subscriptions.sessionEnded(s);
    if (s.started) {
        p_.notifications.raise(
            notify::sessionEnd({s.id, s.user, s.host}, toString(reason), s.killedBy.load()));
    }
    // RFC 6241 8.3.5.2: candidate changes made under its lock are discarded with it.
    for (auto ds : p_.store.releaseSession(s.id)) {
        NCS_LOG(info) << "session " << s.id << " ended holding the " << ds::toString(ds) << " lock: released";
    }
    p_.confirm.sessionEnded(s.id); // its confirmed commit without persist is rolled back
    NCS_LOG(info) << "session " << s.id << " of " << s.user << " ended (" << toString(reason) << "), "
                  << s.inRpcs.load() << " rpcs";
    s.connection().close();
    p_.sessions.remove(s.id);
}

} // namespace ncstore::netconfd
