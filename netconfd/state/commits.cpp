// The commit history (ncstore-commits) as state data: one entry per commit it keeps.
#include "providers.hpp"

#include "events.hpp"
#include "history.hpp"

namespace ncstore::netconfd {

namespace {

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

class CommitsState final : public StateProvider {
public:
    explicit CommitsState(const history::History& history) : history_(history) {}
    std::vector<Top> tops() const override { return {{"ncstore-commits", "commits"}}; }
    Tree state(const ly_ctx* ctx) const override { return commitsState(ctx, history_.entries()); }

private:
    const history::History& history_;
};

} // namespace

std::shared_ptr<const StateProvider> makeCommitsState(const history::History& history) {
    return std::make_shared<CommitsState>(history);
}

} // namespace ncstore::netconfd
