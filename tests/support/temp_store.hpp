// The fixture every test on a real store shares: a store file in the test's own directory
// (temp_dir.hpp), not durable (the tests that need durability say so and set it), opened again
// as a restarted server opens it.
#pragma once

#include "temp_dir.hpp"

#include "ncstore/datastore.hpp"

#include <memory>

namespace ncstore::test {

/// Opens the store of `dir` (dir/ncstore.db) with `options` (durability off unless set).
inline std::unique_ptr<ds::Store> openStore(const ly_ctx* ctx, const TempDir& dir,
                                            ds::StoreOptions options = {},
                                            ds::Durability durability = ds::Durability::Off) {
    options.file = dir.path() / "ncstore.db";
    options.durability = durability;
    return ds::Store::open(ctx, options);
}

} // namespace ncstore::test
