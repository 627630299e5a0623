// The server's built-in state data, one StateProvider each (read/stateprovider.hpp), registered
// in Server's constructor (server/server.cpp, "state providers"). A new one is a file here with
// its make function declared below, and one registration line there.
#pragma once

#include "stateprovider.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ncstore::ds {
class Store;
}
namespace ncstore::cluster {
class Member;
}

namespace ncstore::netconfd {

class AccessControl;
class SessionTable;
class Stats;
namespace notify {
class Service;
}
namespace history {
class History;
}

/// ietf-netconf-monitoring (RFC 6022): capabilities (those of the <hello>), datastores and
/// their locks, schemas (what get-schema returns), sessions, statistics.
std::shared_ptr<const StateProvider> makeMonitoringState(const std::vector<std::string>& capabilities,
                                                         const ds::Store& store, const SessionTable& sessions,
                                                         const Stats& stats);
/// The NETCONF stream and its replay log, as RFC 5277 (nc-notifications) and RFC 8639
/// (ietf-subscribed-notifications) list it.
std::shared_ptr<const StateProvider> makeStreamsState(const notify::Service& notifications);
/// ietf-yang-library (RFC 8525, with RFC 7895's modules-state), with the NMDA datastores.
std::shared_ptr<const StateProvider> makeYangLibraryState();
/// The NACM counters (RFC 8341): merged with running's /nacm by the read path.
std::shared_ptr<const StateProvider> makeNacmCountersState(const AccessControl& nacm);
/// The commit history (ncstore-commits).
std::shared_ptr<const StateProvider> makeCommitsState(const history::History& history);
/// The dqlite cluster (ncstore-cluster) this server is a member of.
std::shared_ptr<const StateProvider> makeClusterState(cluster::Member& member);

} // namespace ncstore::netconfd
