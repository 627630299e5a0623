#include "loader.hpp"

#include "records.hpp"
#include "syncpoint.hpp"
#include "trees.hpp"

#include "ncstore/log.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

namespace ncstore::ds::detail {

namespace {

/// True when some configuration node of `mod` has a default value (leaf, leaf-list, choice).
bool moduleHasDefaults(const lys_module* mod) {
    std::function<bool(const lysc_node*)> has = [&](const lysc_node* node) {
        for (const lysc_node* n = node; n; n = n->next) {
            if (!(n->flags & LYS_CONFIG_W) && !(n->nodetype & (LYS_CHOICE | LYS_CASE))) {
                continue;
            }
            if ((n->nodetype == LYS_LEAF && reinterpret_cast<const lysc_node_leaf*>(n)->dflt) ||
                (n->nodetype == LYS_LEAFLIST && reinterpret_cast<const lysc_node_leaflist*>(n)->dflts) ||
                (n->nodetype == LYS_CHOICE && reinterpret_cast<const lysc_node_choice*>(n)->dflt) ||
                has(lysc_node_child(n))) {
                return true;
            }
        }
        return false;
    };
    return has(mod->compiled->data);
}

/// FNV-1a, 64 bits, as hex: stable across builds and runs, unlike std::hash.
std::string fingerprint(std::string_view text) {
    std::uint64_t h = 14695981039346656037ull;
    for (const unsigned char c : text) {
        h = (h ^ c) * 1099511628211ull;
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

/// Whether `mod` has configuration data nodes (its own or augmented into it).
bool hasConfigData(const lys_module* mod) {
    for (const lysc_node* n = mod->compiled->data; n; n = n->next) {
        if (n->flags & LYS_CONFIG_W) {
            return true;
        }
    }
    return false;
}

/// Whether configuration data must have some node among `siblings` (a mandatory configuration
/// node, here or below a non-presence container). LYS_MAND_TRUE on a container also counts
/// state nodes (NACM's counters), which stored configuration never holds.
bool requiresConfig(const lysc_node* siblings) {
    for (const lysc_node* n = siblings; n; n = n->next) {
        if (!(n->flags & LYS_CONFIG_W)) {
            continue;
        }
        if (n->nodetype == LYS_CONTAINER) {
            if (!(n->flags & LYS_PRESENCE) && requiresConfig(lysc_node_child(n))) {
                return true;
            }
        } else if (n->flags & LYS_MAND_TRUE) {
            return true;
        }
    }
    return false;
}

bool hasMandatoryTop(const lys_module* mod) {
    return requiresConfig(mod->compiled->data);
}

} // namespace

/// The implemented modules with revisions and enabled features: data written and validated
/// under the same set needs no whole-tree validation when it is loaded again.
std::map<std::string, std::string> Loader::dataModules() const {
    std::map<std::string, std::string> fingerprints;
    uint32_t idx = 0;
    const lys_module* mod = nullptr;
    while ((mod = ly_ctx_get_module_iter(ctx_, &idx))) {
        if (!mod->implemented || !mod->compiled || !hasConfigData(mod)) {
            continue;
        }
        char* printed = nullptr;
        if (lys_print_mem(&printed, mod, LYS_OUT_YANG_COMPILED, 0) != LY_SUCCESS) {
            throw YangError(std::string("cannot print the compiled module ") + mod->name, ctx_);
        }
        const CString owned{printed};
        fingerprints[mod->name] = fingerprint(printed ? printed : "");
    }
    return fingerprints;
}

bool Loader::trusts(const std::string& recordedText, const std::map<std::string, std::string>& current,
                    const std::set<std::string>& stored) const {
    if (verifyOnOpen_ || recordedText.empty()) {
        return false;
    }
    std::map<std::string, std::string> recorded;
    std::istringstream in(recordedText);
    for (std::string name, print; in >> name >> print;) {
        recorded[name] = print;
    }
    for (const std::string& name : stored) {
        const auto was = recorded.find(name);
        const auto is = current.find(name);
        if (was == recorded.end() || is == current.end() || was->second != is->second) {
            return false; // the schema of stored data changed
        }
    }
    uint32_t idx = 0;
    const lys_module* mod = nullptr;
    while ((mod = ly_ctx_get_module_iter(ctx_, &idx))) {
        if (current.count(mod->name) && !stored.count(mod->name) && !recorded.count(mod->name) &&
            hasMandatoryTop(mod)) {
            return false; // a new module whose data the stored data lacks
        }
    }
    return true;
}

struct Loader::StoredRecord {
    std::string path;
    std::string parent;
    std::string data;
    Tree parsed;
    std::string error;
};

/// Parsing dominates start-up (libyang parses LYB at ~1 us a node): records are parsed on
/// every core, then linked in order on this thread.
void Loader::parseInParallel(std::vector<StoredRecord>& records) const {
    const std::size_t threads =
        records.size() < 256 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
    auto work = [&](std::size_t first) {
        for (std::size_t i = first; i < records.size(); i += threads) {
            try {
                records[i].parsed = RecordLoader::parse(ctx_, records[i].data);
            } catch (const std::exception& e) {
                records[i].error = e.what();
            }
            std::string().swap(records[i].data);
        }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) {
        pool.emplace_back(work, t);
    }
    work(0);
    for (auto& th : pool) {
        th.join();
    }
}

/// Adds the default nodes of the modules that have any. lyd_new_implicit_all and
/// lyd_new_implicit_module walk the whole forest, so data is handled per top-level node.
void Loader::addDefaults(lyd_node** forest) const {
    uint32_t idx = 0;
    const lys_module* mod = nullptr;
    while ((mod = ly_ctx_get_module_iter(ctx_, &idx))) {
        if (!mod->implemented || !mod->compiled || !moduleHasDefaults(mod)) {
            continue;
        }
        bool hasData = false;
        for (lyd_node* top = *forest; top; top = top->next) {
            if (lyd_owner_module(top) == mod) {
                hasData = true;
                if (lyd_new_implicit_tree(top, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
                    throw Error(ErrorTag::OperationFailed, "cannot add default nodes: " + lastError(ctx_));
                }
            }
        }
        if (hasData) {
            continue;
        }
        // Top-level containers that hold only defaults.
        lyd_node* implicit = nullptr;
        if (lyd_new_implicit_module(&implicit, mod, LYD_IMPLICIT_NO_STATE, nullptr) != LY_SUCCESS) {
            lyd_free_all(implicit);
            throw Error(ErrorTag::OperationFailed,
                        std::string("cannot add default nodes of ") + mod->name + ": " + lastError(ctx_));
        }
        if (implicit) {
            if (!*forest) {
                *forest = implicit;
            } else if (lyd_insert_sibling(*forest, implicit, forest) != LY_SUCCESS) {
                lyd_free_all(implicit);
                throw Error(ErrorTag::OperationFailed, "cannot link default nodes: " + lastError(ctx_));
            }
        }
    }
}

Loader::Loaded Loader::load(Backend& p) const {
    const std::string what = p.describe();
    Loaded loaded;
    std::uint64_t records[2] = {0, 0};
    const auto start = Clock::now();
    for (Datastore ds : {Datastore::Running, Datastore::Startup}) {
        Tree& forest = ds == Datastore::Running ? loaded.running : loaded.startup;
        RecordLoader loader(ctx_);
        try {
            std::vector<StoredRecord> stored;
            p.load(ds, [&](const std::string& path, const std::string& parent, const std::string& data) {
                stored.push_back({path, parent, data, {}, {}});
            });
            records[ds == Datastore::Running ? 0 : 1] = stored.size();
            parseInParallel(stored);
            for (auto& r : stored) {
                if (!r.error.empty()) {
                    throw Error(ErrorTag::OperationFailed, "record " + r.path + ": " + r.error);
                }
                try {
                    loader.link(r.parent, std::move(r.parsed));
                } catch (const std::exception& e) {
                    throw Error(ErrorTag::OperationFailed, "record " + r.path + ": " + e.what());
                }
            }
        } catch (const Error& e) {
            const std::string hint = p.recoveryHint();
            throw Error(ErrorTag::OperationFailed, what + " cannot be loaded (" + toString(ds) + "): " +
                                                       e.what() + (hint.empty() ? "" : " (" + hint + ")"));
        }
        forest.reset(loader.release());
        p.loadPatches(ds, [&](const std::string& path, const std::string& value) {
            applyPatch(forest, path, value, what);
        });
    }
    const auto loadedUs = usSince(start);

    // Data validated when it was written needs no whole-tree validation when the compiled schema
    // of its modules did not change: enabling a protocol feature, or loading modules of other
    // data (NACM, notifications), changes nothing for it.
    std::set<std::string> stored;
    for (const Tree* forest : {&loaded.running, &loaded.startup}) {
        for (const lyd_node* top = forest->get(); top; top = top->next) {
            stored.insert(lyd_owner_module(top)->name);
        }
    }
    const std::string recordedText = p.meta("data_modules");
    const auto current = dataModules();
    const bool trusted = trusts(recordedText, current, stored);
    for (Datastore ds : {Datastore::Running, Datastore::Startup}) {
        RawTree raw(ds == Datastore::Running ? loaded.running : loaded.startup);
        if (trusted) {
            // Only the defaults, which are not stored, need to come back.
            addDefaults(raw.ptr());
        } else if (raw.get()) {
            NCS_SYNC_POINT("loader:validating");
            if (lyd_validate_all(raw.ptr(), ctx_, kValidateOpts, nullptr) != LY_SUCCESS) {
                throw Error(ErrorTag::OperationFailed,
                            "the " + std::string(toString(ds)) + " data of " + what +
                                " does not validate against the loaded YANG modules: " + lastError(ctx_) +
                                " (" + lastErrorPath(ctx_) + "); start with the modules it was written with");
            }
        }
    }
    NCS_LOG(info) << "datastore: " << records[0] << " running and " << records[1]
                  << " startup records loaded in " << loadedUs / 1000 << " ms, "
                  << (trusted ? "defaults added" : "validated") << " in "
                  << (usSince(start) - loadedUs) / 1000 << " ms";
    std::string currentText;
    for (const auto& [name, print] : current) {
        currentText += name + " " + print + "\n";
    }
    if (currentText != recordedText && p.writable()) {
        p.setMeta("data_modules", currentText); // valid under these: checked, or unchanged
    }
    return loaded;
}

void Loader::applyPatch(Tree& forest, const std::string& path, const std::string& value,
                        const std::string& what) const {
    lyd_node* leaf = nullptr;
    if (forest && lyd_find_path(forest.get(), path.c_str(), 0, &leaf) == LY_SUCCESS && leaf) {
        const LY_ERR rc = lyd_change_term(leaf, value.c_str());
        if (rc == LY_SUCCESS || rc == LY_EEXIST || rc == LY_ENOT) {
            return;
        }
    } else {
        // The leaf held its default when the patch was written: defaults are not stored.
        lyd_node* created = nullptr;
        RawTree raw(forest);
        if (lyd_new_path(raw.get(), raw.get() ? nullptr : ctx_, path.c_str(), value.c_str(),
                         LYD_NEW_PATH_UPDATE, &created) == LY_SUCCESS &&
            created) {
            if (!raw.get()) {
                while (lyd_parent(created)) {
                    created = lyd_parent(created);
                }
                *raw.ptr() = created;
            }
            return;
        }
    }
    throw Error(ErrorTag::OperationFailed, what + " holds a patch that does not apply: " + path + " = " +
                                               value + ": " + lastError(ctx_));
}

} // namespace ncstore::ds::detail
