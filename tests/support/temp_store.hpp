// What every test on a real store shares: a store file in the test's own directory
// (temp_dir.hpp), not durable (the tests that need durability say so and set it), opened again
// as a restarted server opens it; what a datastore holds, as XML; an edit without a session.
#pragma once

#include "temp_dir.hpp"

#include "ncstore/datastore.hpp"

#include "ncstore/yang.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ncstore::test {

/// Opens the store of `dir` (dir/ncstore.db) with `options` (durability off unless set).
inline std::unique_ptr<ds::Store> openStore(const ly_ctx* ctx, const TempDir& dir,
                                            ds::StoreOptions options = {},
                                            ds::Durability durability = ds::Durability::Off) {
    options.file = dir.path() / "ncstore.db";
    options.durability = durability;
    return ds::Store::open(ctx, options);
}

/// What `ds` of `s` holds, as XML ("" when empty), printed with `flags` (LYD_PRINT_*).
inline std::string dump(const ds::Store& s, ds::Datastore ds, std::uint32_t flags = 0) {
    std::string out;
    s.read(ds, [&](const lyd_node* t) { out = t ? print(t, LYD_XML, flags) : ""; });
    return out;
}

/// Applies edit-config content `xml` (XML, several top-level nodes allowed) to `ds` of `s`, as a
/// write of no session (no lock stops it).
inline void edit(ds::Store& s, const std::string& xml, ds::Datastore ds = ds::Datastore::Running,
                 ds::EditOptions options = {}) {
    const Tree content =
        parseData(s.context(), xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, 0);
    s.edit({}, ds, content.get(), options);
}

} // namespace ncstore::test
