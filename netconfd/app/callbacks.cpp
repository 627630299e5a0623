// What an application registers to be called back for: pull providers of state data, RPC
// handlers, and its notifications (conn.hpp).
#include "conn.hpp"

#include "errors.hpp"
#include "events.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd::app {

using proto::Field;
using proto::Type;

namespace {

/// The Ok of a registration, with the id it is known by.
proto::Message idReply(std::uint32_t request, Field field, std::uint32_t id) {
    proto::Message r;
    r.type = Type::Ok;
    r.id = request;
    r.fields.add(field, static_cast<std::uint64_t>(id));
    return r;
}

/// A pull provider: the subtree an application provides, asked once per read that reaches it.
class PullProvider final : public StateProvider {
public:
    PullProvider(std::weak_ptr<Conn> conn, std::uint32_t id, Interest interest, std::string app,
                 std::chrono::milliseconds deadline, std::chrono::milliseconds cache)
        : conn_(std::move(conn)), id_(id), interest_(std::move(interest)), app_(std::move(app)),
          deadline_(deadline), cache_(cache) {}

    std::vector<Top> tops() const override {
        const lysc_node* top = interest_.schema();
        while (top && top->parent) {
            top = top->parent;
        }
        if (!top) {
            return {};
        }
        return {Top{top->module->name, top->name}};
    }
    Tree state(const ly_ctx* ctx) const override { return state(ctx, Query{}); }
    Tree state(const ly_ctx* ctx, const Query& query) const override {
        using Clock = std::chrono::steady_clock;
        if (cache_.count() > 0) {
            const std::lock_guard lock(cacheMutex_);
            if (cached_ && cachedQuery_ == query.xpath && Clock::now() < cachedUntil_) {
                return dupForest(cached_.get());
            }
        }
        const auto conn = conn_.lock();
        if (!conn || conn->closed()) {
            return nullptr;
        }
        proto::Fields f;
        f.add(Field::Provider, static_cast<std::uint64_t>(id_)).add(Field::XPath, query.xpath);
        const Conn::Answer a = conn->ask(Type::Pull, std::move(f), deadline_);
        if (a.kind == Conn::Answer::Kind::NotSent) {
            return nullptr; // gone before it was asked: its data went with it
        }
        if (a.kind == Conn::Answer::Kind::Timeout) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "application " + app_ + " did not provide " + interest_.xpath() + " within " +
                                std::to_string(deadline_.count()) + " ms",
                            interest_.xpath(), "ncstore-app-timeout");
        }
        if (a.kind == Conn::Answer::Kind::Closed) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "application " + app_ + " closed its connection while providing " +
                                interest_.xpath(),
                            interest_.xpath());
        }
        if (auto e = errorOf(a.fields, ctx, app_)) {
            throw ds::Error(e->tag, e->what(), e->path, e->appTag, e->info);
        }
        const std::string xml = a.fields.textOf(Field::Xml);
        Tree data;
        try {
            data = xml.empty() ? nullptr : parseAnswer(ctx, xml, LYD_PARSE_ONLY | LYD_PARSE_STRICT);
        } catch (const RpcError& e) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "application " + app_ + " provided data for " + interest_.xpath() +
                                " that the models refuse: " + e.what(),
                            e.path);
        }
        if (cache_.count() > 0 && data) {
            const std::lock_guard lock(cacheMutex_);
            try {
                cached_ = dupForest(data.get());
                cachedQuery_ = query.xpath;
                cachedUntil_ = Clock::now() + cache_;
            } catch (const YangError&) {
                // Not cached: the next read asks the provider again.
            }
        }
        return data;
    }

private:
    std::weak_ptr<Conn> conn_;
    const std::uint32_t id_;
    const Interest interest_;
    const std::string app_;
    const std::chrono::milliseconds deadline_;
    const std::chrono::milliseconds cache_;
    mutable std::mutex cacheMutex_;
    mutable Tree cached_;
    mutable std::string cachedQuery_;
    mutable std::chrono::steady_clock::time_point cachedUntil_;
};

} // namespace

proto::Message Conn::provide(const proto::Message& m) {
    auto& p = hub_.parts();
    Interest interest(p.ctx, m.fields.textOf(Field::XPath));
    if (!interest.schema()) {
        throw RpcError::invalidValue(
            "a provider provides a subtree (\"/module:node...\"), not a whole module");
    }
    const std::uint32_t id = hub_.nextId();
    const auto deadline = std::chrono::milliseconds(m.fields.integer(
        Field::DeadlineMs, static_cast<std::uint64_t>(hub_.options().defaultDeadline.count())));
    const auto cache = std::chrono::milliseconds(m.fields.integer(Field::CacheMs, 0));
    const std::string name = "app-" + std::to_string(sessionId_) + "-" + std::to_string(id);
    p.reads.addProvider(name, std::make_shared<PullProvider>(weak_from_this(), id, std::move(interest),
                                                             label(), deadline, cache));
    providers_.push_back(name);
    providerIds_[id] = name;
    return idReply(m.id, Field::Provider, id);
}

proto::Message Conn::registerRpc(const proto::Message& m) {
    auto& p = hub_.parts();
    const std::string path = m.fields.textOf(Field::Path);
    const lysc_node* schema = path.empty() ? nullptr : lys_find_path(p.ctx, nullptr, path.c_str(), 0);
    if (!schema || (schema->nodetype != LYS_RPC)) {
        throw RpcError::invalidValue("\"" + path +
                                     "\" is no RPC of the models the server has (\"/module:rpc\")");
    }
    if (p.dispatcher.find(schema)) {
        throw RpcError(ErrorTag::DataExists, ErrorType::Application,
                       path + " is answered already (by the server or another application)");
    }
    const std::uint32_t id = hub_.nextId();
    const auto deadline = std::chrono::milliseconds(m.fields.integer(
        Field::DeadlineMs, static_cast<std::uint64_t>(hub_.options().defaultDeadline.count())));
    const std::string module = schema->module->name;
    const std::string name = schema->name;
    std::weak_ptr<Conn> weak = weak_from_this();
    const std::string app = label();
    const ly_ctx* ctx = p.ctx;
    p.dispatcher.add(
        module, name, Operation{[weak, id, deadline, app, ctx, path](Request& r) -> Reply {
            const auto conn = weak.lock();
            if (!conn || conn->closed()) {
                throw RpcError::operationFailed("the application " + app + " that answers " + path +
                                                " is gone");
            }
            proto::Fields f;
            f.add(Field::Handler, static_cast<std::uint64_t>(id))
                .add(Field::Xml, print(r.op, LYD_XML, LYD_PRINT_SHRINK));
            const Conn::Answer a = conn->ask(Type::Call, std::move(f), deadline);
            if (a.kind == Conn::Answer::Kind::Timeout) {
                throw RpcError::operationFailed("the application " + app + " did not answer " + path +
                                                " within " + std::to_string(deadline.count()) + " ms");
            }
            if (a.kind == Conn::Answer::Kind::Closed || a.kind == Conn::Answer::Kind::NotSent) {
                throw RpcError::operationFailed("the application " + app +
                                                " closed its connection while answering " + path);
            }
            if (auto e = errorOf(a.fields, ctx, app)) {
                throw *e;
            }
            const std::string output = a.fields.textOf(Field::Xml);
            if (output.empty() &&
                !lysc_node_child(&reinterpret_cast<const lysc_node_action*>(r.op->schema)->output.node)) {
                return Reply::ok();
            }
            // The output is validated as the RPC's reply before the client gets it.
            const std::string wrapped = std::string("<") + r.op->schema->name + " xmlns=\"" +
                                        r.op->schema->module->ns + "\">" + output + "</" +
                                        r.op->schema->name + ">";
            ly_in* in = nullptr;
            if (ly_in_new_memory(wrapped.c_str(), &in) != LY_SUCCESS) {
                throw YangError("cannot read the output", ctx);
            }
            lyd_node* tree = nullptr;
            lyd_node* op = nullptr;
            const LY_ERR rc = lyd_parse_op(ctx, nullptr, in, LYD_XML, LYD_TYPE_REPLY_YANG, &tree, &op);
            ly_in_free(in, 0);
            const Tree owned{tree};
            if (rc != LY_SUCCESS) {
                RpcError bad = fromLibyang(ctx, ErrorTag::OperationFailed);
                throw RpcError::operationFailed("the application " + app + " answered " + path +
                                                " with output the model refuses: " + bad.what());
            }
            const lyd_node* first = op ? lyd_child(op) : nullptr;
            return first ? Reply::output(print(first, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK))
                         : Reply::ok();
        }});
    handlers_.emplace_back(module, name);
    handlerIds_[id] = {module, name};
    NCS_LOG(info) << "application " << label() << " answers " << path;
    return idReply(m.id, Field::Handler, id);
}

proto::Message Conn::unregister(const proto::Message& m) {
    auto& p = hub_.parts();
    if (const auto id = m.fields.integer(Field::Provider)) {
        const auto it = providerIds_.find(static_cast<std::uint32_t>(*id));
        if (it == providerIds_.end()) {
            throw RpcError::invalidValue("no provider " + std::to_string(*id) + " of this application");
        }
        p.reads.removeProvider(it->second);
        std::erase(providers_, it->second);
        providerIds_.erase(it);
    } else if (const auto hid = m.fields.integer(Field::Handler)) {
        const auto it = handlerIds_.find(static_cast<std::uint32_t>(*hid));
        if (it == handlerIds_.end()) {
            throw RpcError::invalidValue("no RPC handler " + std::to_string(*hid) + " of this application");
        }
        p.dispatcher.remove(it->second.first, it->second.second);
        std::erase(handlers_, it->second);
        handlerIds_.erase(it);
    } else {
        throw RpcError::missingElement("Provider", "Unregister names a Provider or a Handler");
    }
    proto::Message r;
    r.type = Type::Ok;
    r.id = m.id;
    return r;
}

proto::Message Conn::notify(const proto::Message& m) {
    auto& p = hub_.parts();
    const std::string xml = m.fields.textOf(Field::Xml);
    ly_in* in = nullptr;
    if (ly_in_new_memory(xml.c_str(), &in) != LY_SUCCESS) {
        throw YangError("cannot read the notification", p.ctx);
    }
    lyd_node* tree = nullptr;
    lyd_node* op = nullptr;
    const LY_ERR rc = lyd_parse_op(p.ctx, nullptr, in, LYD_XML, LYD_TYPE_NOTIF_YANG, &tree, &op);
    ly_in_free(in, 0);
    const Tree owned{tree};
    if (rc != LY_SUCCESS || !owned) {
        throw fromLibyang(p.ctx, ErrorTag::InvalidValue);
    }
    const std::string content = print(owned.get(), LYD_XML, LYD_PRINT_SHRINK);
    const std::string when = m.fields.textOf(Field::EventTime);
    if (when.empty()) {
        p.notifications.raise(content);
    } else {
        const auto t = notify::parseDateAndTime(when);
        if (!t) {
            throw RpcError::invalidValue("event time \"" + when + "\" is no date-and-time (RFC 3339)");
        }
        p.notifications.raise(content, *t);
    }
    ++session_->outNotifications;
    proto::Message r;
    r.type = Type::Ok;
    r.id = m.id;
    return r;
}

} // namespace ncstore::netconfd::app
