// A source of state data (config false) for reads: <get>, get-data of operational, and the
// filters of notifications and YANG-Push that read it.
//
// Promises a provider makes: state() is called on readers' threads, concurrently, and holds no
// lock of the datastore's while it runs; it returns its top-level nodes as they are now (a
// forest in the server's context, or nullptr for none). The read path calls it only when the
// read's filter can select one of tops() (filter::topLevelScope), so a provider whose data is
// costly to build costs nothing to the reads that do not want it.
#pragma once

#include "ncstore/yang.hpp"

#include <string>
#include <vector>

namespace ncstore::netconfd {

class StateProvider {
public:
    struct Top {
        std::string module;
        std::string name;
    };
    virtual ~StateProvider() = default;
    /// The top-level nodes it provides (module and node name).
    virtual std::vector<Top> tops() const = 0;
    /// Its state data now (nullptr: none). Throws on failure (the read fails with it).
    virtual Tree state(const ly_ctx* ctx) const = 0;

    /// What the read asks for: a provider whose data is costly (an application's, app/) builds
    /// only what `xpath` selects; the read path applies the filter afterwards all the same.
    struct Query {
        std::string xpath; ///< the read's XPath filter; "": a subtree filter or none (everything)
    };
    /// The read path calls this one, once per read.
    virtual Tree state(const ly_ctx* ctx, const Query& query) const {
        (void)query;
        return state(ctx);
    }
};

} // namespace ncstore::netconfd
