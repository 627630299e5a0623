#include "conn.hpp"

#include "editcontent.hpp"
#include "errors.hpp"
#include "events.hpp"
#include "filter.hpp"
#include "readpath.hpp"

#include "ncstore/log.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncstore::netconfd::app {

using Clock = std::chrono::steady_clock;
using proto::Field;
using proto::Type;

namespace {

/// Stands for an application's connection in the session table: kill-session shuts its socket
/// down, and ietf-netconf-monitoring lists it with the application's transport identity. The
/// connection's I/O is the Conn's own, never through this.
class LocalLink final : public transport::Connection {
public:
    LocalLink(std::string user, int fd) : user_(std::move(user)), fd_(fd) {}
    const std::string& user() const override { return user_; }
    const std::string& host() const override { return host_; }
    std::uint16_t port() const override { return 0; }
    const char* monitoringTransport() const override { return "ncstore-app:local-app"; }
    ReadResult read(std::string&, std::chrono::milliseconds) override { return ReadResult::Closed; }
    bool write(std::string_view) override { return false; }
    void wake() override {}
    void shutdown() override { ::shutdown(fd_, SHUT_RDWR); }
    void close() override {}
    bool peerGone() const override { return false; }

private:
    const std::string user_;
    const std::string host_ = "localhost";
    const int fd_;
};

constexpr std::size_t kMaxQueuedRequests = 1024;
constexpr auto kSendTimeout = std::chrono::seconds(10);

ds::Datastore datastoreOf(std::uint64_t v) {
    switch (static_cast<proto::Datastore>(v)) {
    case proto::Datastore::Running:
        return ds::Datastore::Running;
    case proto::Datastore::Startup:
        return ds::Datastore::Startup;
    case proto::Datastore::Candidate:
        return ds::Datastore::Candidate;
    default:
        break;
    }
    throw RpcError::invalidValue("datastore " + std::to_string(v) +
                                 " is none of running (0), startup (1), "
                                 "candidate (2), operational (3)");
}

std::uint32_t wdFlag(std::uint64_t v) {
    switch (v) {
    case 0:
        return LYD_PRINT_WD_EXPLICIT;
    case 1:
        return LYD_PRINT_WD_TRIM;
    case 2:
        return LYD_PRINT_WD_ALL;
    default:
        break;
    }
    throw RpcError::invalidValue("with-defaults " + std::to_string(v) +
                                 " is none of explicit (0), trim (1), "
                                 "report-all (2)");
}

const char* itemOperation(std::uint64_t op) {
    switch (static_cast<proto::ItemOp>(op)) {
    case proto::ItemOp::Merge:
        return nullptr;
    case proto::ItemOp::Create:
        return "create";
    case proto::ItemOp::Replace:
        return "replace";
    case proto::ItemOp::Delete:
        return "delete";
    case proto::ItemOp::Remove:
        return "remove";
    }
    throw RpcError::invalidValue("item operation " + std::to_string(op) +
                                 " is none of merge (0), create (1), "
                                 "replace (2), delete (3), remove (4)");
}

/// The items of an Edit as one edit tree (into `edit`, which may hold the Config already).
void addItems(const ly_ctx* ctx, Tree& edit, const proto::Fields& fields) {
    const lys_module* nc = ly_ctx_get_module_implemented(ctx, "ietf-netconf");
    for (const auto item : fields.all(Field::Item)) {
        const proto::Fields f = proto::Fields::decode(item);
        const std::string path = f.textOf(Field::Path);
        const auto value = f.text(Field::Value);
        const char* op = itemOperation(f.integer(Field::ItemOp, 0));
        const bool removing = op && (std::strcmp(op, "delete") == 0 || std::strcmp(op, "remove") == 0);
        lyd_node* created = nullptr;
        lyd_node* node = nullptr;
        const std::string v = value ? std::string(*value) : std::string();
        // A leaf named for deletion needs no value (an opaque leaf, as the edit engine reads it).
        const uint32_t opts = LYD_NEW_PATH_UPDATE | (removing ? LYD_NEW_PATH_OPAQ : 0);
        const LY_ERR rc =
            lyd_new_path2(edit.get(), ctx, path.c_str(), value || !removing ? v.c_str() : nullptr, v.size(),
                          LYD_ANYDATA_STRING, opts, &created, &node);
        if (rc != LY_SUCCESS && rc != LY_EEXIST) {
            RpcError e = fromLibyang(ctx, ErrorTag::InvalidValue);
            e.path = path;
            throw e;
        }
        if (!edit && created) {
            edit.reset(created);
        }
        while (edit && edit->parent) {
            edit.release();
        }
        if (edit) {
            edit.reset(lyd_first_sibling(edit.release()));
        }
        if (!node) {
            throw RpcError::invalidValue("the item path " + path + " names no data node");
        }
        if (op && nc && lyd_new_meta(ctx, node, nc, "operation", op, 0, nullptr) != LY_SUCCESS) {
            throw YangError("cannot mark " + path + " with operation " + op, ctx);
        }
    }
}

proto::Message okReply(std::uint32_t id) {
    proto::Message r;
    r.type = Type::Ok;
    r.id = id;
    return r;
}

} // namespace

proto::Message errorReply(std::uint32_t id, const std::string& tag, const std::string& message,
                          const std::string& path, const std::string& appTag, const std::string& info) {
    proto::Message r;
    r.type = Type::Error;
    r.id = id;
    r.fields.add(Field::ErrorTag, tag).add(Field::Message, message);
    if (!path.empty()) {
        r.fields.add(Field::Path, path);
    }
    if (!appTag.empty()) {
        r.fields.add(Field::AppTag, appTag);
    }
    if (!info.empty()) {
        r.fields.add(Field::Info, info);
    }
    return r;
}

std::string checkedInfo(const ly_ctx* ctx, std::string_view xml) {
    if (xml.empty()) {
        return {};
    }
    try {
        const Tree tree = parseData(ctx, std::string(xml), LYD_XML, LYD_PARSE_OPAQ | LYD_PARSE_ONLY, 0);
        return tree ? print(tree.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK) : std::string();
    } catch (const YangError&) {
        return {};
    }
}

Tree parseAnswer(const ly_ctx* ctx, const std::string& xml, uint32_t parseOptions) {
    try {
        return parseData(ctx, xml, LYD_XML, parseOptions, 0);
    } catch (const YangError&) {
        throw fromLibyang(ctx, ErrorTag::InvalidValue);
    }
}

std::optional<RpcError> errorOf(const proto::Fields& f, const ly_ctx* ctx, const std::string& app) {
    const auto tagText = f.text(Field::ErrorTag);
    if (!tagText) {
        return std::nullopt;
    }
    RpcError e(parseErrorTag(*tagText).value_or(ErrorTag::OperationFailed), ErrorType::Application,
               f.textOf(Field::Message));
    e.path = f.textOf(Field::Path);
    e.appTag = f.textOf(Field::AppTag);
    const std::string info = f.textOf(Field::Info);
    e.info = checkedInfo(ctx, info);
    if (!info.empty() && e.info.empty()) {
        NCS_LOG(warning) << "application " << app << ": its error-info is not XML; left out";
    }
    return e;
}

XPathFilter xpathFilter(const ly_ctx* ctx, const std::string& select) {
    XPathFilter f;
    const lys_module* nc = ly_ctx_get_module_implemented(ctx, "ietf-netconf");
    lyd_node* rpc = nullptr;
    lyd_node* node = nullptr;
    if (!nc || lyd_new_inner(nullptr, nc, "get", 0, &rpc) != LY_SUCCESS) {
        throw YangError("cannot build an XPath filter", ctx);
    }
    f.owner.reset(rpc);
    if (lyd_new_any(rpc, nullptr, "filter", nullptr, 0, LYD_ANYDATA_STRING, 0, &node) != LY_SUCCESS ||
        lyd_new_meta(ctx, node, nc, "type", "xpath", 0, nullptr) != LY_SUCCESS ||
        lyd_new_meta(ctx, node, nc, "select", select.c_str(), 0, nullptr) != LY_SUCCESS) {
        throw YangError("cannot build an XPath filter for " + select, ctx);
    }
    f.node = node;
    return f;
}

Conn::Conn(Hub& hub, Fd fd, Peer peer, std::string user)
    : hub_(hub), fd_(std::move(fd)), peer_(peer), user_(std::move(user)) {}

Conn::~Conn() = default;

std::string Conn::label() const {
    return "'" + app_ + "' (session " + std::to_string(sessionId_) + ")";
}

std::shared_ptr<const nacm::Access> Conn::access() const {
    return session_ ? session_->access.current() : hub_.parts().nacm.forUser(user_);
}

void Conn::close(const std::string& why) {
    bool expected = false;
    if (closed_.compare_exchange_strong(expected, true)) {
        {
            const std::lock_guard lock(outMutex_);
            closeReason_ = why;
        }
        NCS_LOG(info) << "application " << label() << " of " << user_ << ": " << why;
        ::shutdown(fd_.get(), SHUT_RDWR);
    }
    outCv_.notify_all();
    workCv_.notify_all();
    eventsCv_.notify_all();
}

bool Conn::send(const proto::Message& m) {
    std::string frame;
    try {
        frame = proto::encode(m, hub_.options().maxMessage);
    } catch (const proto::ProtocolError& e) {
        NCS_LOG(warning) << "application " << label() << ": " << proto::toString(m.type)
                         << " not sent: " << e.what();
        return false;
    }
    bool dead = false;
    {
        const std::lock_guard lock(outMutex_);
        if (closed_) {
            return false;
        }
        if (out_.empty() && !sending_) {
            // Nothing waits before it: written at once if the socket takes it, without waking the
            // sender (a thread hand-off costs more than the request on a busy machine).
            const ssize_t n = ::send(fd_.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n == static_cast<ssize_t>(frame.size())) {
                return true;
            }
            if (n > 0) {
                frame.erase(0, static_cast<std::size_t>(n));
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                dead = true; // the peer is gone (EPIPE, ECONNRESET): nothing of this reaches it
            }
        }
        if (dead || outBytes_ + frame.size() > hub_.options().maxQueueBytes) {
            // Unlock before close(): it takes the same mutex.
        } else {
            outBytes_ += frame.size();
            out_.push_back(std::move(frame));
            outCv_.notify_one();
            return true;
        }
    }
    if (dead) {
        close("closed its socket");
        return false;
    }
    close("does not read what it is sent fast enough: more than " +
          std::to_string(hub_.options().maxQueueBytes) +
          " bytes queued; disconnected (a subscriber resumes from the last commit it applied)");
    return false;
}

Conn::Answer Conn::ask(proto::Type type, proto::Fields fields, std::chrono::milliseconds deadline,
                       std::uint32_t event) {
    if (event == 0) {
        event = newEvent();
    }
    fields.add(Field::Event, static_cast<std::uint64_t>(event));
    fields.add(Field::DeadlineMs, static_cast<std::uint64_t>(deadline.count()));
    {
        const std::lock_guard lock(eventsMutex_);
        pending_[event].deadline = Clock::now() + deadline;
    }
    Answer a;
    proto::Message m;
    m.type = type;
    m.fields = std::move(fields);
    if (!send(m)) {
        const std::lock_guard lock(eventsMutex_);
        pending_.erase(event);
        a.kind = Answer::Kind::NotSent;
        return a;
    }
    std::unique_lock lock(eventsMutex_);
    for (;;) {
        auto& p = pending_[event];
        if (p.answer) {
            a.kind = Answer::Kind::Answered;
            a.fields = std::move(*p.answer);
            break;
        }
        if (closed_) {
            a.kind = Answer::Kind::Closed;
            break;
        }
        if (Clock::now() >= p.deadline) {
            a.kind = Answer::Kind::Timeout;
            break;
        }
        eventsCv_.wait_until(lock, p.deadline);
    }
    pending_.erase(event);
    return a;
}

void Conn::verifying(int delta) {
    {
        const std::lock_guard lock(eventsMutex_);
        verifying_ += delta;
    }
    eventsCv_.notify_all();
}

void Conn::run() {
    try {
        if (hello()) {
            std::thread sender([this] { sendLoop(); });
            std::thread writer([this] { workLoop(false); });
            std::thread reader([this] { workLoop(true); });
            readLoop();
            close(closeReason_.empty() ? "closed" : closeReason_);
            writer.join();
            reader.join();
            sender.join();
        }
    } catch (const std::exception& e) {
        NCS_LOG(error) << "application connection: " << e.what();
        close(e.what());
    }
    end();
}

bool Conn::hello() {
    // The hello, within the server's wait for it; nothing else is read before.
    proto::Decoder decoder(hub_.options().maxMessage);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    char buf[4096];
    std::optional<proto::Message> m;
    while (!m) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{fd_.get(), POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            NCS_LOG(warning) << "application connection of uid " << peer_.uid << ": no hello within 10 s";
            return false;
        }
        const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
        if (n <= 0) {
            return false;
        }
        decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
        try {
            m = decoder.next();
        } catch (const proto::ProtocolError& e) {
            NCS_LOG(warning) << "application connection of uid " << peer_.uid << ": " << e.what();
            return false;
        }
    }
    if (m->type != Type::Hello || m->fields.integer(Field::Version, 0) != proto::kVersion) {
        proto::Message refusal =
            errorReply(m->id, "operation-not-supported",
                       "the first message is Hello with Version " + std::to_string(proto::kVersion));
        (void)writeAll(fd_.get(), proto::encode(refusal), std::chrono::seconds(1));
        return false;
    }
    app_ = m->fields.textOf(Field::AppName);
    if (app_.empty()) {
        app_ = "pid " + std::to_string(peer_.pid);
    }
    auto& p = hub_.parts();
    session_ = p.sessions.add([&](std::uint32_t id) {
        return std::make_shared<Session>(std::make_unique<LocalLink>(user_, fd_.get()), id, p.nacm);
    });
    if (!session_) {
        return false; // the server is stopping
    }
    sessionId_ = session_->id;
    session_->started = true;
    p.notifications.raise(notify::sessionStart({sessionId_, user_, "localhost"}));
    NCS_LOG(info) << "application " << label() << " connected: pid " << peer_.pid << ", uid " << peer_.uid
                  << " as user " << user_;
    proto::Message ok = okReply(m->id);
    ok.fields.add(Field::Session, static_cast<std::uint64_t>(sessionId_))
        .add(Field::Version, static_cast<std::uint64_t>(proto::kVersion))
        .add(Field::User, user_);
    return writeAll(fd_.get(), proto::encode(ok), kSendTimeout);
}

void Conn::readLoop() {
    proto::Decoder decoder(hub_.options().maxMessage);
    std::string buf(64 * 1024, '\0');
    while (!closed_) {
        const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            close(session_ && session_->killRequested
                      ? "killed by session " + std::to_string(session_->killedBy)
                      : "closed its socket");
            return;
        }
        decoder.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        for (;;) {
            std::optional<proto::Message> m;
            try {
                m = decoder.next();
            } catch (const proto::ProtocolError& e) {
                close(std::string("protocol error: ") + e.what());
                return;
            }
            if (!m) {
                break;
            }
            switch (m->type) {
            case Type::VerifyDone:
            case Type::PullDone:
            case Type::RpcDone:
            case Type::Extend: {
                const auto event = static_cast<std::uint32_t>(m->fields.integer(Field::Event, m->id));
                {
                    const std::lock_guard lock(eventsMutex_);
                    const auto it = pending_.find(event);
                    if (it != pending_.end()) {
                        if (m->type == Type::Extend) {
                            it->second.deadline = Clock::now() + std::chrono::milliseconds(
                                                                     m->fields.integer(Field::DeadlineMs, 0));
                        } else {
                            it->second.answer = std::move(m->fields);
                        }
                    }
                }
                eventsCv_.notify_all();
                break;
            }
            case Type::Subscribe:
            case Type::Provide:
            case Type::RegisterRpc:
                registered_ = true; // from now on it may be asked: its requests leave this thread
                [[fallthrough]];
            case Type::Get:
            case Type::Edit:
            case Type::Commit:
            case Type::Unsubscribe:
            case Type::Push:
            case Type::PushDelete:
            case Type::Unregister:
            case Type::Notify: {
                // Only edits and commits may wait for applications (their verification): the rest
                // is served beside them, so that a callback's own request is never stuck behind
                // the commit it is part of.
                const bool read = m->type != Type::Edit && m->type != Type::Commit;
                if (!registered_ && idle()) {
                    // An application that registered nothing is never asked anything: nothing
                    // for this thread to read while it serves the request itself.
                    handle(*m);
                    break;
                }
                {
                    const std::lock_guard lock(workMutex_);
                    auto& queue = read ? reads_ : writes_;
                    if (queue.size() >= kMaxQueuedRequests) {
                        // Unlocked below; close() notifies this mutex's condition.
                    } else {
                        queue.push_back(std::move(*m));
                        workCv_.notify_all();
                        break;
                    }
                }
                close("more than " + std::to_string(kMaxQueuedRequests) +
                      " requests waiting for their replies");
                return;
            }
            default:
                close("sent a message of type " + std::to_string(static_cast<unsigned>(m->type)) +
                      ", which applications do not send");
                return;
            }
        }
    }
}

bool Conn::idle() {
    const std::lock_guard lock(workMutex_);
    return writes_.empty() && reads_.empty() && busy_ == 0;
}

void Conn::sendLoop() {
    for (;;) {
        std::string frame;
        {
            std::unique_lock lock(outMutex_);
            outCv_.wait(lock, [&] { return closed_ || !out_.empty(); });
            if (closed_) {
                return;
            }
            frame = std::move(out_.front());
            out_.pop_front();
            outBytes_ -= frame.size();
            sending_ = true;
        }
        if (!writeAll(fd_.get(), frame, kSendTimeout)) {
            close("does not read: a message waited more than " + std::to_string(kSendTimeout.count()) + " s");
            return;
        }
        const std::lock_guard lock(outMutex_);
        sending_ = false;
    }
}

void Conn::workLoop(bool reads) {
    for (;;) {
        proto::Message m;
        {
            std::unique_lock lock(workMutex_);
            auto& queue = reads ? reads_ : writes_;
            workCv_.wait(lock, [&] { return closed_ || !queue.empty(); });
            if (closed_) {
                return;
            }
            m = std::move(queue.front());
            queue.pop_front();
            ++busy_;
        }
        handle(m);
        const std::lock_guard lock(workMutex_);
        --busy_;
    }
}

void Conn::handle(const proto::Message& m) {
    ++session_->inRpcs;
    proto::Message reply;
    std::shared_ptr<Sub> started;
    std::optional<std::uint64_t> since;
    bool initial = false;
    try {
        switch (m.type) {
        case Type::Edit:
            reply = edit(m);
            break;
        case Type::Commit:
            reply = commit(m);
            break;
        case Type::Get:
            reply = get(m);
            break;
        case Type::Subscribe:
            reply = subscribe(m, started, since, initial);
            break;
        case Type::Unsubscribe:
            if (!hub_.removeSub(static_cast<std::uint32_t>(m.fields.integer(Field::Subscription, 0)), this)) {
                throw RpcError::invalidValue("no subscription " +
                                             std::to_string(m.fields.integer(Field::Subscription, 0)) +
                                             " of this application");
            }
            reply = okReply(m.id);
            break;
        case Type::Push:
            reply = pushMessage(m, false);
            break;
        case Type::PushDelete:
            reply = pushMessage(m, true);
            break;
        case Type::Provide:
            reply = provide(m);
            break;
        case Type::RegisterRpc:
            reply = registerRpc(m);
            break;
        case Type::Unregister:
            reply = unregister(m);
            break;
        case Type::Notify:
            reply = notify(m);
            break;
        default:
            reply = errorReply(m.id, "operation-not-supported", "not a request");
            break;
        }
    } catch (const RpcError& e) {
        reply = errorReply(m.id, toString(e.tag), e.what(), e.path, e.appTag, e.info);
    } catch (const ds::Error& e) {
        reply = errorReply(m.id, toString(e.tag()), e.what(), e.path(), e.appTag(), e.info());
    } catch (const filter::Error& e) {
        reply = errorReply(m.id, "invalid-value", e.what());
    } catch (const filter::Stopped& e) {
        reply = errorReply(m.id, toString(e.tag), e.what());
    } catch (const proto::ProtocolError& e) {
        reply = errorReply(m.id, "malformed-message", e.what());
    } catch (const std::invalid_argument& e) {
        reply = errorReply(m.id, "invalid-value", e.what());
    } catch (const std::exception& e) {
        reply = errorReply(m.id, "operation-failed", e.what());
    }
    if (reply.type == Type::Error) {
        ++session_->outRpcErrors;
    }
    send(reply);
    if (started) {
        // After its Ok: the application knows the subscription before its first Apply.
        try {
            const auto a = access();
            hub_.sync(started, a->permitsAllReads() ? nullptr : a.get(), since, initial);
        } catch (const std::exception& e) {
            close("the first sync of subscription " + std::to_string(started->id) + " failed: " + e.what());
        }
    }
}

proto::Message Conn::edit(const proto::Message& m) {
    const auto& p = hub_.parts();
    const auto& f = m.fields;
    const auto a = access();
    const nacm::Access* limited = a->permitsAll() ? nullptr : a.get();
    if (limited && !limited->exec("ietf-netconf", "edit-config")) {
        ++p.nacm.counters().deniedOperations;
        throw RpcError::accessDenied("access denied: user '" + user_ +
                                     "' may not execute ietf-netconf:edit-config");
    }
    const std::uint64_t dsValue = f.integer(Field::Datastore, 0);
    Tree edit;
    if (const auto config = f.text(Field::Config); config && !config->empty()) {
        edit = parseEditContent(p.ctx, std::string(*config));
    }
    addItems(p.ctx, edit, f);
    if (dsValue == static_cast<std::uint64_t>(proto::Datastore::Operational)) {
        throw RpcError::operationNotSupported(
            "edits of operational go through Push and PushDelete (operational data of this application)");
    }
    const ds::Datastore target = datastoreOf(dsValue);
    ds::EditOptions options;
    switch (f.integer(Field::DefaultOp, 0)) {
    case 0:
        options.defaultOperation = ds::DefaultOperation::Merge;
        break;
    case 1:
        options.defaultOperation = ds::DefaultOperation::Replace;
        break;
    case 2:
        options.defaultOperation = ds::DefaultOperation::None;
        break;
    default:
        throw RpcError::invalidValue("default operation is merge (0), replace (1) or none (2)");
    }
    if (f.integer(Field::Deferred, 0) == 1) {
        // Sent from inside a callback: after the commit that callback is part of.
        std::unique_lock lock(eventsMutex_);
        eventsCv_.wait_for(lock, std::chrono::seconds(60), [&] { return verifying_ == 0 || closed_.load(); });
    }
    const bool mayChangeNacm =
        target == ds::Datastore::Running &&
        (options.defaultOperation == ds::DefaultOperation::Replace || nacmTop(edit.get()));
    WriteCheck check(p.nacm, a->permitsAllWrites() ? nullptr : a.get(), mayChangeNacm);
    ds::WriteContext who = check.context({sessionId_, user_, nullptr, "localhost"});
    who.comment = f.textOf(Field::Comment);
    ds::WriteTiming timing;
    if (edit) {
        timing = check.run(p.store, [&] { return p.store.edit(who, target, edit.get(), options); });
    } else if (options.defaultOperation == ds::DefaultOperation::Replace) {
        timing = check.run(p.store, [&] { return p.store.replace(who, target, nullptr); });
    }
    proto::Message r = okReply(m.id);
    r.fields.add(Field::CommitId, timing.commitId);
    return r;
}

proto::Message Conn::commit(const proto::Message& m) {
    const auto& p = hub_.parts();
    const auto a = access();
    if (!a->permitsAll() && !a->exec("ietf-netconf", "commit")) {
        ++p.nacm.counters().deniedOperations;
        throw RpcError::accessDenied("access denied: user '" + user_ +
                                     "' may not execute ietf-netconf:commit");
    }
    // Candidate may change /nacm of running: validated and compiled like any commit's.
    WriteCheck check(p.nacm, a->permitsAllWrites() ? nullptr : a.get(), true);
    ds::WriteContext who = check.context({sessionId_, user_, nullptr, "localhost"});
    who.comment = m.fields.textOf(Field::Comment);
    const ds::WriteTiming timing = check.run(p.store, [&] { return p.store.commit(who); });
    proto::Message r = okReply(m.id);
    r.fields.add(Field::CommitId, timing.commitId);
    return r;
}

proto::Message Conn::get(const proto::Message& m) {
    const auto& p = hub_.parts();
    const auto& f = m.fields;
    const auto a = access();
    const nacm::Access* limited = a->permitsAll() ? nullptr : a.get();
    const std::string select = f.textOf(Field::XPath);
    const std::uint32_t wd = wdFlag(f.integer(Field::WithDefaults, 0));
    XPathFilter filter;
    if (!select.empty()) {
        filter = xpathFilter(p.ctx, select);
    }
    proto::Message r;
    r.type = Type::Data;
    r.id = m.id;
    if (f.integer(Field::View, 0) == 1) {
        const auto event = static_cast<std::uint32_t>(f.integer(Field::Event, 0));
        const bool found = hub_.withView(*this, event, [&](const ds::Verification& view) {
            auto prepared = p.reads.prepare(view.after(), filter.node, wd, limited);
            r.fields.add(Field::Xml, p.reads.finish(std::move(prepared), [this] { return closed(); }));
        });
        if (!found) {
            throw RpcError::invalidValue("event " + std::to_string(event) +
                                         " is no verification of this application in progress");
        }
        return r;
    }
    const std::uint64_t dsValue = f.integer(Field::Datastore, 0);
    const bool operational = dsValue == static_cast<std::uint64_t>(proto::Datastore::Operational);
    const ds::Datastore source = operational ? ds::Datastore::Running : datastoreOf(dsValue);
    if (limited && !limited->exec("ietf-netconf", operational ? "get" : "get-config")) {
        ++p.nacm.counters().deniedOperations;
        throw RpcError::accessDenied("access denied: user '" + user_ + "' may not read " +
                                     (operational ? "operational" : ds::toString(source)));
    }
    std::string xml;
    if (operational) {
        xml = p.reads.readXml(limited, source, true, filter.node, wd, [this] { return closed(); });
    } else {
        r.fields.add(Field::CommitId, p.reads.readConfigXml(limited, source, filter.node, wd, xml,
                                                            [this] { return closed(); }));
    }
    r.fields.add(Field::Xml, xml);
    return r;
}

proto::Message Conn::subscribe(const proto::Message& m, std::shared_ptr<Sub>& started,
                               std::optional<std::uint64_t>& since, bool& initial) {
    const auto& p = hub_.parts();
    const auto& f = m.fields;
    const std::uint64_t flags = f.integer(Field::Flags, proto::SubscribeFlag::Apply);
    auto sub = std::make_shared<Sub>(hub_.nextId(), weak_from_this(), label(),
                                     Interest(p.ctx, f.textOf(Field::XPath)));
    sub->priority = static_cast<int>(static_cast<std::int64_t>(f.integer(Field::Priority, 0)));
    sub->verify = (flags & proto::SubscribeFlag::Verify) != 0;
    sub->apply = (flags & proto::SubscribeFlag::Apply) != 0;
    sub->mandatory = (flags & proto::SubscribeFlag::Mandatory) != 0;
    sub->deadline = std::chrono::milliseconds(
        f.integer(Field::DeadlineMs, static_cast<std::uint64_t>(hub_.options().defaultDeadline.count())));
    const auto a = access();
    if (!a->permitsAllReads() && !a->readablePath(p.ctx, sub->interest.xpath())) {
        ++p.nacm.counters().deniedOperations;
        throw RpcError::accessDenied("access denied: user '" + user_ + "' may not read " +
                                         sub->interest.xpath(),
                                     sub->interest.xpath());
    }
    hub_.addSub(sub);
    if (sub->apply) {
        if (flags & proto::SubscribeFlag::Resume) {
            since = f.integer(Field::Since, 0);
        }
        initial = (flags & proto::SubscribeFlag::Initial) != 0;
        started = sub;
    }
    proto::Message r = okReply(m.id);
    r.fields.add(Field::Subscription, static_cast<std::uint64_t>(sub->id));
    return r;
}

proto::Message Conn::pushMessage(const proto::Message& m, bool remove) {
    const auto& p = hub_.parts();
    const bool persistent =
        m.fields.integer(Field::Lifetime, 0) == static_cast<std::uint64_t>(proto::Lifetime::Persistent);
    if (remove) {
        hub_.pushDelete(*this, m.fields.textOf(Field::XPath), persistent);
        return okReply(m.id);
    }
    const std::string xml = m.fields.textOf(Field::Xml);
    // Types, keys and structure are checked; operational data is not validated as a whole (it
    // depends on configuration and on other applications' data).
    Tree data = parseAnswer(p.ctx, xml, LYD_PARSE_ONLY | LYD_PARSE_STRICT);
    if (data) {
        hub_.push(*this, std::move(data), persistent);
    }
    return okReply(m.id);
}

void Conn::end() {
    auto& p = hub_.parts();
    for (const auto& name : providers_) {
        p.reads.removeProvider(name);
    }
    for (const auto& [module, name] : handlers_) {
        p.dispatcher.remove(module, name);
    }
    hub_.connectionEnded(*this);
    if (session_) {
        for (auto ds : p.store.releaseSession(sessionId_)) {
            NCS_LOG(info) << "application " << label() << " ended holding the " << ds::toString(ds)
                          << " lock: released";
        }
        p.notifications.raise(notify::sessionEnd({sessionId_, user_, "localhost"},
                                                 session_->killRequested ? "killed" : "dropped",
                                                 session_->killedBy.load()));
        p.sessions.remove(sessionId_);
    }
}

} // namespace ncstore::netconfd::app
