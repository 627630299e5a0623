// State data for <get>: ietf-netconf-monitoring (RFC 6022), ietf-yang-library (RFC 8525,
// with the RFC 7895 modules-state that older clients read module-set-id from), the NACM
// counters (RFC 8341) and the commit history (ncstore-commits).
#include "events.hpp"
#include "filter.hpp"
#include "member.hpp"
#include "server.hpp"
#include "session.hpp"

#include <ctime>

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

/// /ncstore-commits:commits: one entry per commit the history keeps, oldest first.
Tree commitsState(const ly_ctx* ctx, const std::vector<history::Entry>& entries) {
    const lys_module* module = ly_ctx_get_module_implemented(ctx, "ncstore-commits");
    if (!module) {
        return nullptr;
    }
    lyd_node* commits = nullptr;
    if (lyd_new_inner(nullptr, module, "commits", 0, &commits) != LY_SUCCESS) {
        throw YangError("cannot build /commits", ctx);
    }
    Tree out{commits};
    for (const history::Entry& e : entries) {
        lyd_node* entry = nullptr;
        const std::string id = std::to_string(e.id);
        if (lyd_new_list(commits, nullptr, "commit", 0, &entry, id.c_str()) != LY_SUCCESS) {
            throw YangError("cannot build commit " + id, ctx);
        }
        auto leaf = [&](const char* name, const std::string& value) {
            if (lyd_new_term(entry, nullptr, name, value.c_str(), 0, nullptr) != LY_SUCCESS) {
                throw YangError(std::string("cannot build the ") + name + " of commit " + id, ctx);
            }
        };
        leaf("time",
             notify::dateAndTime(std::chrono::system_clock::time_point(std::chrono::microseconds(e.timeUs))));
        leaf("user", e.user);
        leaf("session-id", std::to_string(e.session));
        if (!e.host.empty()) {
            leaf("source-host", e.host);
        }
        leaf("operation", ds::toString(e.origin));
        leaf("changes", std::to_string(e.changes));
        if (!e.comment.empty()) {
            leaf("comment", e.comment);
        }
    }
    return out;
}

Tree clusterState(const ly_ctx* ctx, std::uint64_t self, const cluster::Member::View& view) {
    Tree out;
    auto set = [&](const std::string& path, const std::string& value) {
        lyd_node* raw = out.release();
        const LY_ERR rc =
            lyd_new_path(raw, ctx, path.c_str(), value.c_str(), LYD_NEW_PATH_UPDATE, raw ? nullptr : &raw);
        out.reset(raw);
        if (rc != LY_SUCCESS) {
            throw YangError("cannot build the cluster state at " + path, ctx);
        }
    };
    set("/ncstore-cluster:cluster/this-node", std::to_string(self));
    if (view.leader) {
        set("/ncstore-cluster:cluster/leader", std::to_string(view.leader->id));
    }
    for (const auto& n : view.nodes) {
        const std::string node = "/ncstore-cluster:cluster/node[id='" + std::to_string(n.id) + "']";
        set(node + "/address", n.address);
        set(node + "/role", cluster::roleName(n.role));
    }
    return out;
}

std::string quoted(const std::string& v) {
    return v.find('\'') == std::string::npos ? "'" + v + "'" : "\"" + v + "\"";
}

} // namespace

Tree Server::stateData(const lyd_node* filterNode) const {
    const ly_ctx* ctx = ctx_.get();
    // Built for every read of state data, even one whose filter selects none of it (a get-data
    // of operational's /interfaces): with the commit history full, building it all cost such a
    // read of 16384 interfaces 3-5 ms (of ~55).
    const auto scope = filter::topLevelScope(filterNode);
    auto wanted = [&](std::string_view module, std::string_view name) {
        return !scope || std::any_of(scope->begin(), scope->end(), [&](const filter::SelectedStep& s) {
            return (s.module.empty() || s.module == module) && s.name == name;
        });
    };
    Tree state;
    auto adopt = [&](Tree part, const char* what) {
        if (!part) {
            return;
        }
        if (insertSiblings(state, part.get()) != LY_SUCCESS) {
            throw YangError(std::string("cannot assemble state data: ") + what, ctx);
        }
        part.release();
    };
    // ietf-netconf-monitoring (RFC 6022)
    auto monitoring = [&] {
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
        for (const auto& h : store_->locks()) {
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
        std::vector<std::shared_ptr<Session>> sessions;
        {
            std::lock_guard lock(sessionsMutex_);
            for (const auto& [id, s] : sessions_) {
                sessions.push_back(s);
            }
        }
        for (const auto& s : sessions) {
            const std::string entry = ns + "/sessions/session[session-id='" + std::to_string(s->id) + "']";
            b.set(entry + "/transport", "ietf-netconf-monitoring:netconf-ssh");
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
    };
    if (wanted("ietf-netconf-monitoring", "netconf-state")) {
        adopt(monitoring(), "netconf-state");
    }

    // The one stream and its replay log, as RFC 5277 3.2 (nc-notifications) and RFC 8639
    // (ietf-subscribed-notifications) list it.
    struct StreamList {
        const char* module;
        const char* top;
        const char* stream;
        const char* replaySupport;
        const char* replaySupportValue;
        const char* logCreationTime;
    };
    const StreamList lists[] = {
        {"nc-notifications", "netconf", "/nc-notifications:netconf/streams/stream[name='NETCONF']",
         "replaySupport", "true", "replayLogCreationTime"},
        {"ietf-subscribed-notifications", "streams",
         "/ietf-subscribed-notifications:streams/stream[name='NETCONF']", "replay-support", nullptr,
         "replay-log-creation-time"},
    };
    const std::string created = notify::dateAndTime(notifications_->logCreationTime());
    for (const StreamList& l : lists) {
        const std::string stream = l.stream;
        if (!ly_ctx_get_module_implemented(ctx, l.module) || !wanted(l.module, l.top)) {
            continue;
        }
        lyd_node* first = nullptr;
        const LY_ERR rc =
            lyd_new_path(nullptr, ctx, (stream + "/description").c_str(),
                         "NETCONF events: configuration changes and sessions (RFC 6470)", 0, &first);
        Tree streams{first};
        if (rc != LY_SUCCESS ||
            lyd_new_path(streams.get(), ctx, (stream + "/" + l.replaySupport).c_str(), l.replaySupportValue,
                         0, nullptr) != LY_SUCCESS ||
            lyd_new_path(streams.get(), ctx, (stream + "/" + l.logCreationTime).c_str(), created.c_str(), 0,
                         nullptr) != LY_SUCCESS) {
            throw YangError(std::string("cannot build the notification streams of ") + l.module, ctx);
        }
        adopt(std::move(streams), l.module);
    }

    // ietf-yang-library: the same content-id as the yang-library capability of the <hello>
    if (wanted("ietf-yang-library", "yang-library") || wanted("ietf-yang-library", "modules-state")) {
        lyd_node* yanglib = nullptr;
        if (ly_ctx_get_yanglib_data(ctx, &yanglib, "%u", ly_ctx_get_change_count(ctx)) != LY_SUCCESS) {
            throw YangError("cannot build ietf-yang-library data", ctx);
        }
        Tree lib{yanglib};
        // RFC 8525 (yang-library 1.1): the datastores, all with the one schema libyang lists (NMDA,
        // RFC 8342: intended and operational are running as applied, see ops_nmda.cpp).
        for (const char* name : {"running", "candidate", "startup", "intended", "operational"}) {
            const std::string path =
                std::string("/ietf-yang-library:yang-library/datastore[name='ietf-datastores:") + name +
                "']/schema";
            if (lyd_new_path(lib.get(), ctx, path.c_str(), "complete", 0, nullptr) != LY_SUCCESS) {
                throw YangError("cannot list the datastores in ietf-yang-library", ctx);
            }
        }
        adopt(std::move(lib), "ietf-yang-library");
    }
    // NACM counters (RFC 8341): <get> merges them with running's /nacm.
    if (wanted("ietf-netconf-acm", "nacm")) {
        adopt(nacm_->counters().state(ctx), "NACM counters");
    }
    // The commit history (ncstore-commits)
    if (wanted("ncstore-commits", "commits")) {
        adopt(commitsState(ctx, history_->entries()), "the commit history");
    }
    // The dqlite cluster (ncstore-cluster), with --backend dqlite
    if (member_ && wanted("ncstore-cluster", "cluster")) {
        adopt(clusterState(ctx, member_->options().id, member_->view()), "the cluster");
    }
    return state; // adopt() keeps it at the first sibling
}

} // namespace ncstore::netconfd
