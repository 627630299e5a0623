// The dqlite cluster (ncstore-cluster) as state data: this node, the leader, the members.
#include "providers.hpp"

#include "member.hpp"

namespace ncstore::netconfd {

namespace {

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

class ClusterState final : public StateProvider {
public:
    explicit ClusterState(cluster::Member& member) : member_(member) {}
    std::vector<Top> tops() const override { return {{"ncstore-cluster", "cluster"}}; }
    Tree state(const ly_ctx* ctx) const override {
        return clusterState(ctx, member_.options().id, member_.view());
    }

private:
    cluster::Member& member_;
};

} // namespace

std::shared_ptr<const StateProvider> makeClusterState(cluster::Member& member) {
    return std::make_shared<ClusterState>(member);
}

} // namespace ncstore::netconfd
