// Session operations (RFC 6241 7.8, 7.9): close-session, kill-session.
#include "ops.hpp"

#include "rpcargs.hpp"
#include "sessiontable.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class SessionOps {
public:
    explicit SessionOps(const Services& svc) : svc_(svc) {}
    Reply closeSession(Request& r);
    Reply killSession(Request& r);

private:
    Services svc_;
};

using namespace rpcargs;

Reply SessionOps::closeSession(Request&) {
    Reply reply = Reply::ok();
    reply.endSession = true;
    return reply;
}

Reply SessionOps::killSession(Request& r) {
    const lyd_node* rpc = r.op;
    const std::string idText = valueOf(child(rpc, "session-id"));
    std::uint32_t id = 0;
    try {
        id = static_cast<std::uint32_t>(std::stoul(idText));
    } catch (const std::exception&) {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol, "bad session-id " + idText)
            .withBadElement("session-id");
    }
    if (id == r.session.id) {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol,
                       "a session cannot kill itself; use <close-session>")
            .withBadElement("session-id");
    }
    auto target = svc_.sessions.find(id);
    if (!target) {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol, "no session " + std::to_string(id))
            .withBadElement("session-id");
    }
    NCS_LOG(info) << "session " << r.session.id << " kills session " << id;
    // The session stops first (no further RPC of it runs, its transport is cut), then its locks
    // go: released before, they would let an RPC it was still running act on a candidate and
    // locks it no longer owns. An RPC in flight finishes (unanswered); its end releases the
    // locks, and the reply waits for that, so the killer can take them right after it.
    target->kill(r.session.id);
    svc_.sessions.waitGone(id, std::chrono::seconds(5));
    // A session still busy after that (a long RPC) keeps running it, unanswered; its locks go now.
    svc_.store.releaseSession(id);
    return Reply::ok();
}

void addSessionOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<SessionOps>(svc);
    d.add("ietf-netconf", "close-session", handler(ops, &SessionOps::closeSession));
    d.add("ietf-netconf", "kill-session", handler(ops, &SessionOps::killSession));
}

} // namespace ncstore::netconfd
