// The one read path of the server: every read reply (get, get-config, get-data and the reads
// of notifications and YANG-Push) selects its configuration from the store, adds the state data
// of the registered providers, and prints what the user may read through the filter
// (readview.hpp: subtree or XPath filter, with-defaults, NACM).
//
// Promises:
//  - One place where configuration and state data meet: the providers registered here
//    (StateProvider) are the only state there is, and merge() is the only way a configuration
//    tree and a provider's state become one tree (the NACM configuration and its counters become
//    one /nacm).
//  - Providers can be added and removed while the server runs, from any thread; a read in
//    progress uses the providers there were when it asked for state.
//  - A read asks only the providers whose top-level nodes its filter can select.
//  - Given an XPathEvaluator, a read through an XPath filter holds the store's lock only to print
//    what it reads (LYB); the filter runs in a worker, within the evaluator's budget, and ends
//    when `stop` says the client no longer waits (xpathworker.hpp). Without one (tests that
//    embed the server), XPath filters are evaluated here, under the lock, with no budget.
#pragma once

#include "nacm.hpp"
#include "stateprovider.hpp"
#include "xpathworker.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace ncstore::netconfd {

class ReadPath {
public:
    /// `xpath` (nullptr: none) outlives the read path.
    ReadPath(const ly_ctx* ctx, ds::Store& store, const XPathEvaluator* xpath = nullptr)
        : ctx_(ctx), store_(store), xpath_(xpath) {}

    /// Adds (or replaces) provider `name`; providers are asked in the order they were first added.
    void addProvider(const std::string& name, std::shared_ptr<const StateProvider> provider);
    /// Removes provider `name`; false when there was none.
    bool removeProvider(const std::string& name);

    /// The state data of the providers a read through `filterNode` (nullptr: all) can select
    /// from; the filter still has to be applied.
    Tree state(const lyd_node* filterNode = nullptr) const;

    /// What a read of `source` shows a user with `access` (nullptr: may read everything), with
    /// the state data when `withState` (<get>, operational), through `filterNode` (the
    /// ietf-netconf filter node; nullptr: all), printed with the with-defaults flag `wd`.
    /// `stop` is asked while an XPath filter runs (the client's session ended, ...). An XPath
    /// filter is evaluated on the configuration and on the state data, each within the budget.
    std::string readXml(const nacm::Access* access, ds::Datastore source, bool withState,
                        const lyd_node* filterNode, std::uint32_t wd, const StopRequested& stop = {}) const;

    /// The configuration of `source` alone as `readXml` shows it (YANG-Push's updates), into
    /// `out`; returns the commit the read saw (ds::Store::read).
    std::uint64_t readConfigXml(const nacm::Access* access, ds::Datastore source, const lyd_node* filterNode,
                                std::uint32_t wd, std::string& out, const StopRequested& stop = {}) const;

    /// A read in two steps, for callers that read the store themselves: prepare() under its lock
    /// (readableXml() of readview.hpp, or for an XPath filter the worker's job: the readable
    /// forest as LYB), finish() once the lock is released (the XPath evaluated within the budget,
    /// until `stop`).
    struct Prepared {
        std::string xml;
        std::optional<XPathJob> job;
    };
    Prepared prepare(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                     const nacm::Access* access, const lyd_node* skip = nullptr) const;
    std::string finish(Prepared prepared, const StopRequested& stop) const;

    /// The same for a selection of copies that the caller goes on to change (get-data's
    /// max-depth, origins, NACM pruning): filter::apply(), or with no filter a copy of all.
    struct PreparedSelection {
        Tree copy;
        std::optional<XPathJob> job;
    };
    PreparedSelection prepareSelection(const lyd_node* forest, const lyd_node* filterNode) const;
    Tree finish(PreparedSelection prepared, const StopRequested& stop) const;

    /// Merges `part` into `forest` (both forests of top-level nodes; `part` is spent): nodes of
    /// both, such as /nacm's configuration and its counters, become one. `what` names the
    /// merge in the error.
    void merge(Tree& forest, Tree part, const char* what) const;

private:
    const ly_ctx* ctx_;
    ds::Store& store_;
    const XPathEvaluator* xpath_;
    mutable std::shared_mutex mutex_;
    std::vector<std::pair<std::string, std::shared_ptr<const StateProvider>>> providers_;
};

} // namespace ncstore::netconfd
