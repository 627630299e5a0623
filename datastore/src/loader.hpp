// Loading the persisted datastores into memory, and the default nodes, which are not stored.
// Private to the datastore.
//
// Promises:
//  - Records are loaded in insertion order (the order libyang keeps for ordered-by-system
//    entries), then the leaf patches, oldest first.
//  - Stored data was validated when it was written. It is validated again, whole-tree, only when
//    the compiled schema of a module it has data of changed since (revision, enabled features,
//    deviations, nodes augmented into it: libyang's print of the compiled module, fingerprinted
//    for every module with configuration data), when a new module has mandatory top-level
//    configuration, or with verifyOnOpen. Otherwise only its default nodes are added: enabling a
//    protocol feature or loading the modules of other data (ietf-netconf-acm, notifications)
//    costs nothing at the next start.
//  - A record that does not parse, a patch that does not apply, or data that does not validate
//    throws Error naming the data (Backend::describe()) and what may recover it; nothing is half loaded.
#pragma once

#include "backend.hpp"

#include "ncstore/yang.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace ncstore::ds::detail {

class Loader {
public:
    Loader(const ly_ctx* ctx, bool verifyOnOpen) : ctx_(ctx), verifyOnOpen_(verifyOnOpen) {}

    struct Loaded {
        Tree running;
        Tree startup;
    };
    Loaded load(Backend& p) const;

    /// Adds the default nodes of the modules that have any (configuration only).
    void addDefaults(lyd_node** forest) const;

    /// The fingerprint of the compiled schema of every module with configuration data.
    std::map<std::string, std::string> dataModules() const;

private:
    struct StoredRecord;
    void parseInParallel(std::vector<StoredRecord>& records) const;
    /// `what`: Backend::describe(), for the error.
    void applyPatch(Tree& forest, const std::string& path, const std::string& value,
                    const std::string& what) const;
    /// Whether the `stored` modules' data needs no validation: `recorded` (meta data_modules) as
    /// written when it was last valid, `current` the fingerprints now.
    bool trusts(const std::string& recorded, const std::map<std::string, std::string>& current,
                const std::set<std::string>& stored) const;

    const ly_ctx* ctx_;
    bool verifyOnOpen_;
};

} // namespace ncstore::ds::detail
