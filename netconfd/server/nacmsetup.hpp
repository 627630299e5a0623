// The NACM configuration ncstored writes itself: at the first start, for `--reset-nacm`, and
// for `--add-user NAME --group G`. Everything else about NACM is configured over NETCONF.
//
// Promises:
//  - First start: a store that was never written (a new data directory) gets the first-start
//    configuration in running: group `admin` with the users the users file holds at that moment
//    (the generated `admin`, or the users added with --add-user before the first start), and
//    rule-list `admin` whose one rule permits every operation to group admin. Every other user
//    gets the RFC 8341 defaults until a rule-list says otherwise. Never written again by itself:
//    removing it later is the operator's choice, which a restart does not undo.
//  - --reset-nacm (server stopped) replaces running's /nacm by the first-start configuration for
//    the users in the users file then, and keeps the configuration it replaces in a 0600 file
//    beside the store.
//  - --add-user NAME --group G (server stopped) adds NAME to group G in running (the group is
//    created when missing). While a server runs on the data directory, the offline commands are
//    refused and change nothing: the server holds running in memory, and a second writer
//    would diverge from it silently. The user can then be added without --group and put into
//    the group over NETCONF.
//  - Each of these writes goes through the same validation as an edit-config of /nacm.
#pragma once

#include "options.hpp"
#include "sessionaccess.hpp"

#include "ncstore/datastore.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace ncstore::netconfd::nacmsetup {

inline constexpr const char* kAdminGroup = "admin";

/// The first-start configuration (XML of the top-level nacm element) for group admin = `admins`.
std::string firstStartXml(const std::vector<std::string>& admins);

/// Writes the first-start configuration when the store was never written. True when it did.
bool initialize(ds::Store& store, AccessControl& control, const std::vector<std::string>& admins);

/// Offline --add-user NAME --group G, before the password is stored: opens the data directory
/// of `config` (refused with files::LockHeld while a server runs on it), runs the first start
/// when the store is new (admins: `usersBefore`, the users file before this user), and adds
/// `user` to `group`. Says what it did on `out`.
void addToGroup(const ServerConfig& config, const std::vector<std::string>& usersBefore,
                const std::string& user, const std::string& group, std::ostream& out);

/// Offline --reset-nacm for the users in `users`. Says what it did on `out`.
void reset(const ServerConfig& config, const std::vector<std::string>& users, std::ostream& out);

} // namespace ncstore::netconfd::nacmsetup
