// ietf-netconf-monitoring (RFC 6022) state data.
#include "providers.hpp"

#include "session.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"

#include "ncstore/datastore.hpp"

#include <ctime>
#include <map>

namespace ncstore::netconfd {

namespace {

std::string isoTime(std::chrono::system_clock::time_point t) {
    const std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

class Builder {
public:
    explicit Builder(const ly_ctx* ctx) : ctx_(ctx) {
        lyd_node* root = nullptr;
        if (lyd_new_path(nullptr, ctx_, "/ietf-netconf-monitoring:netconf-state", nullptr, 0, &root) !=
            LY_SUCCESS) {
            throw YangError("cannot build netconf-state", ctx_);
        }
        root_.reset(root);
    }
    lyd_node* root() const { return root_.get(); }
    Tree release() { return std::move(root_); }

    /// Creates `path` (absolute) with `value`, returns the last created (or found) node.
    lyd_node* set(const std::string& path, const std::string& value = {}) {
        lyd_node* node = nullptr;
        if (lyd_new_path2(root_.get(), nullptr, path.c_str(), value.empty() ? nullptr : value.c_str(), 0,
                          LYD_ANYDATA_STRING, LYD_NEW_PATH_UPDATE, nullptr, &node) != LY_SUCCESS) {
            throw YangError("cannot create " + path, ctx_);
        }
        return node;
    }
    /// A leaf-list entry or a leaf under an existing `parent`.
    void term(lyd_node* parent, const char* name, const std::string& value) {
        if (lyd_new_term(parent, nullptr, name, value.c_str(), 0, nullptr) != LY_SUCCESS) {
            throw YangError(std::string("cannot create ") + name, ctx_);
        }
    }
    lyd_node* find(const std::string& path) const {
        lyd_node* node = nullptr;
        if (lyd_find_path(root_.get(), path.c_str(), 0, &node) != LY_SUCCESS) {
            return nullptr;
        }
        return node;
    }

private:
    const ly_ctx* ctx_;
    Tree root_;
};

std::string quoted(const std::string& v) {
    return v.find('\'') == std::string::npos ? "'" + v + "'" : "\"" + v + "\"";
}

class MonitoringState final : public StateProvider {
public:
    MonitoringState(const std::vector<std::string>& capabilities, const ds::Store& store,
                    const SessionTable& sessions, const Stats& stats)
        : capabilities_(capabilities), store_(store), sessions_(sessions), stats_(stats) {}
    std::vector<Top> tops() const override { return {{"ietf-netconf-monitoring", "netconf-state"}}; }
    Tree state(const ly_ctx* ctx) const override;

private:
    const std::vector<std::string>& capabilities_;
    const ds::Store& store_;
    const SessionTable& sessions_;
    const Stats& stats_;
};

Tree MonitoringState::state(const ly_ctx* ctx) const {
    Builder b(ctx);
    const std::string ns = "/ietf-netconf-monitoring:netconf-state";

    // capabilities: exactly what the <hello> carries
    b.set(ns + "/capabilities");
    lyd_node* caps = b.find(ns + "/capabilities");
    for (const auto& c : capabilities_) {
        b.term(caps, "capability", c);
    }

    // datastores and their global locks
    std::map<ds::Datastore, ds::LockInfo> held;
    for (const auto& h : store_.locks()) {
        held.emplace(h.ds, h);
    }
    for (auto d : {ds::Datastore::Running, ds::Datastore::Candidate, ds::Datastore::Startup}) {
        const std::string entry = ns + "/datastores/datastore[name='" + ds::toString(d) + "']";
        b.set(entry);
        if (auto it = held.find(d); it != held.end()) {
            b.set(entry + "/locks/global-lock/locked-by-session", std::to_string(it->second.session));
            b.set(entry + "/locks/global-lock/locked-time", isoTime(it->second.since));
        }
    }

    // schemas: every module and submodule get-schema can return
    std::uint32_t idx = 0;
    while (const lys_module* m = ly_ctx_get_module_iter(ctx, &idx)) {
        auto add = [&](const char* name, const char* revision, const char* nsUri) {
            const std::string entry = ns + "/schemas/schema[identifier=" + quoted(name) +
                                      "][version=" + quoted(revision ? revision : "") +
                                      "][format='ietf-netconf-monitoring:yang']";
            b.set(entry + "/namespace", nsUri);
            b.set(entry + "/location", "NETCONF");
        };
        add(m->name, m->revision, m->ns);
        if (m->parsed && m->parsed->includes) {
            LY_ARRAY_COUNT_TYPE i;
            LY_ARRAY_FOR(m->parsed->includes, i) {
                const lysp_submodule* sub = m->parsed->includes[i].submodule;
                if (sub) {
                    add(sub->name, sub->revs ? sub->revs[0].date : nullptr, m->ns);
                }
            }
        }
    }

    // sessions
    const std::vector<std::shared_ptr<Session>> sessions = sessions_.all();
    for (const auto& s : sessions) {
        const std::string entry = ns + "/sessions/session[session-id='" + std::to_string(s->id) + "']";
        b.set(entry + "/transport", s->connection().monitoringTransport());
        b.set(entry + "/username", s->user);
        if (!s->host.empty()) {
            b.set(entry + "/source-host", s->host);
        }
        b.set(entry + "/login-time", isoTime(s->login));
        b.set(entry + "/in-rpcs", std::to_string(s->inRpcs.load()));
        b.set(entry + "/in-bad-rpcs", std::to_string(s->inBadRpcs.load()));
        b.set(entry + "/out-rpc-errors", std::to_string(s->outRpcErrors.load()));
        b.set(entry + "/out-notifications", std::to_string(s->outNotifications.load()));
    }

    // statistics
    const std::string st = ns + "/statistics";
    b.set(st + "/netconf-start-time", isoTime(stats_.startTime));
    b.set(st + "/in-bad-hellos", std::to_string(stats_.inBadHellos.load()));
    b.set(st + "/in-sessions", std::to_string(stats_.inSessions.load()));
    b.set(st + "/dropped-sessions", std::to_string(stats_.droppedSessions.load()));
    b.set(st + "/in-rpcs", std::to_string(stats_.inRpcs.load()));
    b.set(st + "/in-bad-rpcs", std::to_string(stats_.inBadRpcs.load()));
    b.set(st + "/out-rpc-errors", std::to_string(stats_.outRpcErrors.load()));
    b.set(st + "/out-notifications", std::to_string(stats_.outNotifications.load()));
    return b.release();
}

} // namespace

std::shared_ptr<const StateProvider> makeMonitoringState(const std::vector<std::string>& capabilities,
                                                         const ds::Store& store, const SessionTable& sessions,
                                                         const Stats& stats) {
    return std::make_shared<MonitoringState>(capabilities, store, sessions, stats);
}

} // namespace ncstore::netconfd
