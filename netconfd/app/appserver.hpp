// The application API's server side (issue 37): the device's own software takes part in the
// datastore over a unix socket in the data directory (docs/app-protocol.md). Reached only
// through the server's seams: the store's verify phase and change listeners, the read path's
// state providers, the run-time dispatcher, the notification service and the session table.
//
// Promises:
//  - Who: a connection's peer uid (SO_PEERCRED) is mapped to a user (Options::users, else the
//    administrator for root and the server's own uid, else the uid's passwd name); that user's
//    NACM rights apply to everything it does, exactly as to a NETCONF session of that user, and
//    it is a session of the session table (ietf-netconf-monitoring lists it with transport
//    ncstore-app:local-app; kill-session ends it).
//  - Verify: a commit of running that a verify subscription's subtree concerns is checked by
//    the subscribers, in priority order, before it is durable, with no lock of the store held
//    while they think (datastore rule 10); one refusal and nothing is committed, its error-tag,
//    message, error-path, error-app-tag and error-info reach the writer unchanged, and the
//    subscribers that accepted get Abort in reverse order. A subscriber that misses its deadline
//    (extensible with Extend) or whose socket closes refuses the commit with an error that names
//    the application. While a mandatory subscription's subtree has no subscriber, commits
//    touching it are refused, naming the application that is missing.
//  - Apply: durable change sets, in commit order, each once, to every apply subscription whose
//    subtree they touch (only the changes within it). Resume: a subscription "since N" first
//    gets every change set of running after N, rebuilt from the commit history, or, when the
//    history no longer reaches back to N, the whole subtree as creates (initial); then live ones,
//    none twice, none missed. A subscriber whose queue passes Options::maxQueueBytes is
//    disconnected with the commit id to resume from in the server's log.
//  - Operational data: pushed data of lifetime connection is gone the moment its connection
//    closes (also after kill -9 of the application); persistent data is kept in the store's
//    journal and survives restarts. A pull provider is called once per read and subtree, with
//    the read's filter as XPath, within its deadline; a provider that misses it fails that read
//    with an rpc-error naming it, and no other read waits for it.
//  - RPCs and actions: a registered handler answers its operation through the dispatcher (NACM
//    exec first); input is validated before it is called, output after; its rpc-error reaches
//    the client unchanged; a handler that misses its deadline or disconnects fails the RPC.
//  - Notifications from applications are validated, then raised like the server's own: logged
//    for replay and delivered through each subscriber's NACM check.
//  - Hostile peers: a frame past Options::maxMessage, garbage, or a peer that never reads ends
//    only its own connection; at most Options::maxConnections connections are served at once.
#pragma once

#include "dispatcher.hpp"
#include "readpath.hpp"
#include "service.hpp"
#include "sessionaccess.hpp"
#include "sessiontable.hpp"
#include "stats.hpp"

#include "ncstore/app/protocol.hpp"
#include "ncstore/datastore.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace ncstore::netconfd::history {
class History;
}

namespace ncstore::netconfd::app {

class Hub;

struct Options {
    std::filesystem::path socket;       ///< the unix socket (created; an old one is replaced)
    std::string group;                  ///< the socket's group ("" : the server's)
    std::map<uid_t, std::string> users; ///< uid -> user (--app-user UID=NAME)
    std::string adminUser;              ///< root and the server's own uid map to this user by default
    std::uint32_t maxMessage = 16u << 20;
    unsigned maxConnections = 128;
    std::uint64_t maxQueueBytes = 64u << 20; ///< events waiting for one application
    std::chrono::milliseconds defaultDeadline{5000};
};

/// What the API works with; all of it outlives the AppServer.
struct Parts {
    const ly_ctx* ctx;
    ds::Store& store;
    AccessControl& nacm;
    notify::Service& notifications;
    ReadPath& reads;
    Dispatcher& dispatcher;
    SessionTable& sessions;
    history::History& history;
};

class AppServer {
public:
    /// Registers the verifier, the change listener and the state providers; listens on the socket.
    AppServer(Parts parts, Options options);
    /// Stops listening, ends every connection (what they held goes), unregisters everything.
    ~AppServer();
    AppServer(const AppServer&) = delete;
    AppServer& operator=(const AppServer&) = delete;

    const std::filesystem::path& socket() const;

private:
    std::unique_ptr<Hub> hub_;
};

} // namespace ncstore::netconfd::app
