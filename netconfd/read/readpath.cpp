#include "readpath.hpp"

#include "readview.hpp"
#include "sessionaccess.hpp"

#include "filter.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace ncstore::netconfd {

void ReadPath::addProvider(const std::string& name, std::shared_ptr<const StateProvider> provider) {
    std::unique_lock lock(mutex_);
    const auto it =
        std::find_if(providers_.begin(), providers_.end(), [&](const auto& p) { return p.first == name; });
    if (it != providers_.end()) {
        it->second = std::move(provider);
    } else {
        providers_.emplace_back(name, std::move(provider));
    }
}

bool ReadPath::removeProvider(const std::string& name) {
    std::unique_lock lock(mutex_);
    const auto it =
        std::find_if(providers_.begin(), providers_.end(), [&](const auto& p) { return p.first == name; });
    if (it == providers_.end()) {
        return false;
    }
    providers_.erase(it);
    return true;
}

Tree ReadPath::state(const lyd_node* filterNode) const {
    std::vector<std::shared_ptr<const StateProvider>> providers;
    {
        std::shared_lock lock(mutex_);
        providers.reserve(providers_.size());
        for (const auto& p : providers_) {
            providers.push_back(p.second);
        }
    }
    // Built for every read of state data, even one whose filter selects none of it (a get-data
    // of operational's /interfaces) unless the filter's scope rules a provider out: with the
    // commit history full, building it all cost such a read of 16384 interfaces 3-5 ms (of ~55).
    const auto scope = filter::topLevelScope(filterNode);
    auto wanted = [&](const StateProvider& p) {
        if (!scope) {
            return true;
        }
        for (const StateProvider::Top& top : p.tops()) {
            if (std::any_of(scope->begin(), scope->end(), [&](const filter::SelectedStep& s) {
                    return (s.module.empty() || s.module == top.module) && s.name == top.name;
                })) {
                return true;
            }
        }
        return false;
    };
    StateProvider::Query query;
    if (auto select = filterNode ? filter::xpathSelect(filterNode) : std::nullopt) {
        query.xpath = *select;
    }
    Tree state;
    for (const auto& p : providers) {
        if (!wanted(*p)) {
            continue;
        }
        Tree part = p->state(ctx_, query);
        if (!part) {
            continue;
        }
        // Two providers' data under one top-level node (pushed and pulled parts of a device's
        // state) become one node; disjoint ones are linked, which costs nothing.
        bool shared = false;
        for (const lyd_node* a = part.get(); a && !shared; a = a->next) {
            for (const lyd_node* b = state.get(); b && !shared; b = b->next) {
                shared = a->schema == b->schema;
            }
        }
        if (shared) {
            merge(state, std::move(part), "the state data of two providers");
            continue;
        }
        if (insertSiblings(state, part.get()) != LY_SUCCESS) {
            throw YangError("cannot assemble state data", ctx_);
        }
        part.release();
    }
    return state; // insertSiblings() keeps it at the first sibling
}

void ReadPath::merge(Tree& forest, Tree part, const char* what) const {
    if (!part) {
        return;
    }
    if (!forest) {
        forest = std::move(part);
        return;
    }
    lyd_node* first = forest.release();
    const LY_ERR rc = lyd_merge_siblings(&first, part.get(), LYD_MERGE_DESTRUCT);
    part.release(); // LYD_MERGE_DESTRUCT: spent, whatever the result
    forest.reset(first);
    if (rc != LY_SUCCESS) {
        throw YangError(std::string("merging ") + what, ctx_);
    }
}

ReadPath::Prepared ReadPath::prepare(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                                     const nacm::Access* access, const lyd_node* skip) const {
    Prepared p;
    p.job = xpath_ ? readableXPathJob(forest, filterNode, wd, access, skip) : std::nullopt;
    if (!p.job) {
        p.xml = readableXml(forest, filterNode, wd, access, skip);
    }
    return p;
}

std::string ReadPath::finish(Prepared prepared, const StopRequested& stop) const {
    return prepared.job ? xpath_->evaluate(*prepared.job, stop) : std::move(prepared.xml);
}

ReadPath::PreparedSelection ReadPath::prepareSelection(const lyd_node* forest,
                                                       const lyd_node* filterNode) const {
    PreparedSelection p;
    if (!forest) {
        return p;
    }
    if (!filterNode) {
        lyd_node* dup = nullptr;
        if (lyd_dup_siblings(lyd_first_sibling(forest), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS,
                             &dup) != LY_SUCCESS) {
            throw YangError("copying data for a read", ctx_);
        }
        p.copy.reset(dup);
        return p;
    }
    if (xpath_) {
        if (auto expr = filter::xpathSelect(filterNode); expr && !filter::boundedXPath(*expr)) {
            XPathJob job;
            job.expr = std::move(*expr);
            job.tree = true;
            job.lyb = print(forest, LYD_LYB, LYD_PRINT_WITHSIBLINGS);
            p.job = std::move(job);
            return p;
        }
    }
    p.copy = filter::apply(forest, filterNode);
    return p;
}

Tree ReadPath::finish(PreparedSelection prepared, const StopRequested& stop) const {
    if (!prepared.job) {
        return std::move(prepared.copy);
    }
    const std::string lyb = xpath_->evaluate(*prepared.job, stop);
    return lyb.empty() ? Tree{} : parseData(ctx_, lyb, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
}

std::uint64_t ReadPath::readConfigXml(const nacm::Access* access, ds::Datastore source,
                                      const lyd_node* filterNode, std::uint32_t wd, std::string& out,
                                      const StopRequested& stop) const {
    Prepared prepared;
    const std::uint64_t seen =
        store_.read(source, [&](const lyd_node* tree) { prepared = prepare(tree, filterNode, wd, access); });
    out = finish(std::move(prepared), stop);
    return seen;
}

namespace {

// Whether state data lies inside a configuration container of the datastore (an Open ROADM
// device's /org-openroadm-device/info/vendor beside its node-id), not counting /nacm, which
// readXml joins with its counters itself.
bool stateInsideConfiguration(const lyd_node* state) {
    for (const lyd_node* top = state; top; top = top->next) {
        if (top->schema && (top->schema->flags & LYS_CONFIG_W) &&
            std::strcmp(top->schema->module->name, "ietf-netconf-acm") != 0) {
            return true;
        }
    }
    return false;
}

} // namespace

std::string ReadPath::readXml(const nacm::Access* access, ds::Datastore source, bool withState,
                              const lyd_node* filterNode, std::uint32_t wd, const StopRequested& stop) const {
    Tree data = withState ? state(filterNode) : Tree{};
    if (stateInsideConfiguration(data.get())) {
        // One element per node: the configuration is copied and the state merged into it (the
        // copy costs what the configuration holds; only a read that meets such state pays it).
        Tree all;
        store_.read(source, [&](const lyd_node* tree) { all = dupForest(tree); });
        merge(all, std::move(data), "state data into its configuration");
        return finish(prepare(all.get(), filterNode, wd, access), stop);
    }
    Prepared config;
    Tree nacmConfig; // <get>: running's /nacm goes out with its counters, in one element
    store_.read(source, [&](const lyd_node* tree) {
        const lyd_node* nacm = withState ? nacmTop(tree) : nullptr;
        config = prepare(tree, filterNode, wd, access, nacm);
        nacmConfig.reset();
        if (nacm) {
            lyd_node* copy = nullptr;
            if (lyd_dup_single(nacm, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
                throw YangError("copying the NACM configuration for <get>", ctx_);
            }
            nacmConfig.reset(copy);
        }
    });
    std::string xml = finish(std::move(config), stop);
    if (withState) {
        merge(data, std::move(nacmConfig), "the NACM configuration and counters");
        xml += finish(prepare(data.get(), filterNode, wd, access), stop);
    }
    return xml;
}

} // namespace ncstore::netconfd
