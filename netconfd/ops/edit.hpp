// What the writing operations share: the <config> they carry, their NACM write check, and one
// edit applied to a datastore (edit-config, edit-data).
#pragma once

#include "services.hpp"
#include "sessionaccess.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <cstdint>

namespace ncstore::netconfd::edit {

/// The content of a `config` anyxml as a configuration (strict, no state): the tree
/// parseRpc() parsed with the message, or else parsed from the anyxml's content. Adds the time
/// it took to `parseUs`.
Tree parseConfig(const Services& svc, ParsedRpc& req, const lyd_node* anyxml, std::uint64_t& parseUs);
/// A write of `r`'s session: its NACM write check (sessionaccess.hpp). `mayChangeNacm`: the
/// write may change running's /nacm.
WriteCheck writeCheck(const Services& svc, const Request& r, bool mayChangeNacm, bool install = true);
/// Throws access-denied unless `r`'s user may read all of `source` (copy-config).
void requireReadable(const Services& svc, const Request& r, ds::Datastore source);
/// edit-config and edit-data: the RPC's <config> (an anyxml or anydata with the edit) applied
/// to `target` with `options`; missing-element without one (operation-not-supported for :url).
Reply applyEdit(const Services& svc, Request& r, ds::Datastore target, const ds::EditOptions& options);

} // namespace ncstore::netconfd::edit
