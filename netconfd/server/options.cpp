#include "options.hpp"

#include <boost/program_options.hpp>

#include <fstream>
#include <limits>
#include <sstream>

namespace po = boost::program_options;

namespace ncstore::netconfd {

namespace {

po::options_description fileOptions(ServerConfig& c) {
    po::options_description d("Server options (also accepted as `key = value` in --config FILE)");
    // clang-format off
    d.add_options()
        ("data-dir", po::value<std::string>()->default_value(c.dataDir.string()),
            "directory of ncstore.db, host keys, users file and authorized_keys/<user>")
        ("listen", po::value<std::string>(&c.listen)->default_value(c.listen), "address to listen on")
        ("port", po::value<unsigned>()->default_value(c.port), "TCP port; 0 picks a free port")
        ("yang-dir", po::value<std::vector<std::string>>()->composing(),
            "load every YANG module in this directory (repeatable)")
        ("yang-search-dir", po::value<std::vector<std::string>>()->composing(),
            "search this directory for imported modules only (repeatable)")
        ("no-default-models", po::bool_switch(), "do not load ietf-interfaces, iana-if-type and the bundled Open ROADM models")
        ("sqlite-cache-mb", po::value<std::uint64_t>(&c.sqliteCacheMb)->default_value(c.sqliteCacheMb),
            "MiB of SQLite page cache for the writer (reads never use it); it fills up to this as the file grows")
        ("durability", po::value<std::string>(&c.durability)->default_value(c.durability),
            "full | normal | off: what an acknowledged write survives")
        ("log-level", po::value<std::string>(&c.logLevel)->default_value(c.logLevel),
            "trace | debug | info | warning | error")
        ("log-file", po::value<std::string>(&c.logFile), "log to this file instead of stderr")
        ("idle-timeout", po::value<unsigned>(&c.idleTimeout)->default_value(c.idleTimeout),
            "seconds after which an idle session is closed; 0 = never")
        ("max-message-size", po::value<std::uint64_t>(&c.maxMessageSize)->default_value(c.maxMessageSize),
            "close a session that sends a message larger than this many bytes")
        ("max-sessions", po::value<unsigned>(&c.maxSessions)->default_value(c.maxSessions),
            "concurrent connections (sessions and handshakes); more are refused")
        ("max-startups", po::value<unsigned>(&c.maxStartups)->default_value(c.maxStartups),
            "connections in their SSH handshake at once; more are refused")
        ("auth-timeout", po::value<unsigned>(&c.authTimeout)->default_value(c.authTimeout),
            "seconds a client has to authenticate")
        ("auth-attempts", po::value<unsigned>(&c.authAttempts)->default_value(c.authAttempts),
            "failed authentications before a client is dropped")
        ("stats-interval", po::value<unsigned>(&c.statsInterval)->default_value(c.statsInterval),
            "seconds between statistics log lines; 0 = only at exit")
        ("notification-log-events", po::value<std::uint64_t>(&c.notificationLogEvents)->default_value(c.notificationLogEvents),
            "events the notification replay log keeps at most")
        ("notification-log-days", po::value<unsigned>(&c.notificationLogDays)->default_value(c.notificationLogDays),
            "days the notification replay log keeps an event at most")
        ("notification-queue-bytes", po::value<std::uint64_t>(&c.notificationQueueBytes)->default_value(c.notificationQueueBytes),
            "a subscriber whose unsent notifications exceed this is disconnected (it can replay what it missed)")
        ("history-max-commits", po::value<std::uint64_t>(&c.historyMaxCommits)->default_value(c.historyMaxCommits),
            "commits of running the commit history keeps at most (the oldest go first); 0 turns the history off "
            "and drops the one kept so far")
        ("history-max-bytes", po::value<std::uint64_t>(&c.historyMaxBytes)->default_value(c.historyMaxBytes),
            "bytes of undo data the commit history keeps at most (the oldest commits go first; the newest always stays)")
        ("print-port-file", po::value<std::string>(), "write the bound port to this file once listening")
        ("nacm-recovery-user", po::value<std::string>(&c.nacmRecoveryUser),
            "NACM recovery user: their sessions bypass access control (RFC 8341 3.3.3); default none")
        ("backend", po::value<std::string>(&c.backend)->default_value(c.backend),
            "sqlite: the file <data-dir>/ncstore.db | dqlite: a database replicated by Raft over the nodes of a "
            "dqlite cluster; this server runs one node (in <data-dir>/dqlite) and serves while it is the leader")
        ("dqlite-id", po::value<std::uint64_t>(&c.dqliteId)->default_value(c.dqliteId),
            "with --backend dqlite: this node's id (node 1 bootstraps the cluster; ids never change)")
        ("dqlite-address", po::value<std::string>(&c.dqliteAddress),
            "with --backend dqlite: IPv4:port of this node, where the other nodes reach it")
        ("dqlite-peer", po::value<std::vector<std::string>>(&c.dqlitePeers)->composing(),
            "with --backend dqlite: IPv4:port of another node (repeatable): a new node joins through them")
        ("dqlite-latency-ms", po::value<unsigned>(&c.dqliteLatencyMs)->default_value(c.dqliteLatencyMs),
            "with --backend dqlite: one-way network latency between nodes; the election timeout is 15 times "
            "this (0: dqlite's defaults, a 3 s election timeout); it must exceed the longest transaction, which the "
            "leader executes between its heartbeats")
        ("xpath-budget-ms", po::value<unsigned>(&c.xpathBudgetMs)->default_value(c.xpathBudgetMs),
            "milliseconds a client's XPath filter may take (evaluated in a worker process, with the "
            "store unlocked); past it the worker is stopped and the client gets resource-denied")
        ("xpath-workers", po::value<unsigned>(&c.xpathWorkers)->default_value(c.xpathWorkers),
            "XPath filters evaluated at once, each in a worker process that holds the YANG context; "
            "more wait for a free worker")
        ("app-socket", po::value<std::string>(&c.appSocket),
            "the unix socket of the application API (docs/app-guide.md); default <data-dir>/app.sock, "
            "'none' turns the API off")
        ("app-group", po::value<std::string>(&c.appGroup),
            "the group that may connect to the application socket (mode 0660); default the server's")
        ("app-user", po::value<std::vector<std::string>>(&c.appUsers)->composing(),
            "UID=NAME: an application of that uid acts as user NAME (repeatable); otherwise root and the "
            "server's own uid act as --app-root-user, others as their passwd name")
        ("app-root-user", po::value<std::string>(&c.appRootUser)->default_value(c.appRootUser),
            "the user that applications running as root or as the server's uid act as")
        ("app-max-connections", po::value<unsigned>(&c.appMaxConnections)->default_value(c.appMaxConnections),
            "applications connected at once; more are refused")
        ("app-max-message", po::value<std::uint64_t>(&c.appMaxMessage)->default_value(c.appMaxMessage),
            "bytes of one message of the application protocol, either way; a larger one ends its connection");
    // clang-format on
    return d;
}

} // namespace

CommandLine parseCommandLine(int argc, const char* const argv[]) {
    CommandLine out;
    ServerConfig& c = out.config;

    po::options_description generic("General");
    // clang-format off
    generic.add_options()
        ("help,h", "print this help and exit")
        ("version", "print the version and exit")
        ("config", po::value<std::string>(), "read options from this INI file (`key = value`)")
        ("add-user", po::value<std::string>(),
            "add (or change) user NAME: the password is read from stdin; then exit")
        ("group", po::value<std::string>(),
            "with --add-user: also put the user into this NACM group (server stopped)")
        ("reset-nacm", "replace the NACM configuration by the first-start rules (server stopped); then exit")
        ("cluster-status", "with --backend dqlite: print the cluster's nodes, roles and leader (asked through "
            "--dqlite-address and --dqlite-peer); then exit")
        ("cluster-add", po::value<std::string>(),
            "with --backend dqlite: add node ID@ADDRESS to the cluster (through its leader) before that node "
            "first starts, as a spare: it becomes a voter when it starts; then exit")
        ("cluster-remove", po::value<std::uint64_t>(),
            "with --backend dqlite: remove node ID from the cluster (through its leader); then exit")
        ("cluster-recover", po::value<std::string>(),
            "with --backend dqlite, server stopped: after the cluster lost its majority for good, make this "
            "node's cluster the comma-separated survivors ID@ADDRESS (this node included); then exit "
            "(README: High availability)");
    // clang-format on
    po::options_description server = fileOptions(c);
    po::options_description all(
        "ncstored - NETCONF server with an SQLite datastore\n\nUsage: ncstored [options]");
    all.add(generic).add(server);

    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
        if (vm.count("config")) {
            const auto file = vm["config"].as<std::string>();
            std::ifstream in(file);
            if (!in) {
                throw OptionsError("cannot read config file " + file);
            }
            po::store(po::parse_config_file(in, server), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw OptionsError(e.what());
    }

    std::ostringstream help;
    help << all;
    out.helpText = help.str();

    if (vm.count("help")) {
        out.action = Action::Help;
        return out;
    }
    if (vm.count("version")) {
        out.action = Action::Version;
        return out;
    }
    int commands = 0;
    for (const char* command :
         {"add-user", "reset-nacm", "cluster-status", "cluster-add", "cluster-remove", "cluster-recover"}) {
        commands += vm.count(command) ? 1 : 0;
    }
    if (commands > 1) {
        throw OptionsError(
            "--add-user, --reset-nacm and the --cluster-* commands are separate commands: one at a time");
    }
    if (vm.count("group") && !vm.count("add-user")) {
        throw OptionsError("--group goes with --add-user NAME");
    }
    if (vm.count("add-user")) {
        out.action = Action::AddUser;
        out.addUser = vm["add-user"].as<std::string>();
        if (vm.count("group")) {
            out.group = vm["group"].as<std::string>();
        }
    }
    if (vm.count("reset-nacm")) {
        out.action = Action::ResetNacm;
    }
    if (vm.count("cluster-status")) {
        out.action = Action::ClusterStatus;
    }
    if (vm.count("cluster-recover")) {
        out.action = Action::ClusterRecover;
        std::stringstream list(vm["cluster-recover"].as<std::string>());
        for (std::string item; std::getline(list, item, ',');) {
            if (!item.empty()) {
                out.survivors.push_back(item);
            }
        }
        if (out.survivors.empty()) {
            throw OptionsError("--cluster-recover needs ID@ADDRESS,... of the surviving nodes");
        }
    }
    if (vm.count("cluster-add")) {
        out.action = Action::ClusterAdd;
        out.addNode = vm["cluster-add"].as<std::string>();
    }
    if (vm.count("cluster-remove")) {
        out.action = Action::ClusterRemove;
        out.removeId = vm["cluster-remove"].as<std::uint64_t>();
    }

    c.dataDir = vm["data-dir"].as<std::string>();
    const unsigned port = vm["port"].as<unsigned>();
    if (port > std::numeric_limits<std::uint16_t>::max()) {
        throw OptionsError("--port " + std::to_string(port) + " is not a TCP port");
    }
    c.port = static_cast<std::uint16_t>(port);
    if (vm.count("yang-dir")) {
        for (const auto& d : vm["yang-dir"].as<std::vector<std::string>>()) {
            c.yangDirs.emplace_back(d);
        }
    }
    if (vm.count("yang-search-dir")) {
        for (const auto& d : vm["yang-search-dir"].as<std::vector<std::string>>()) {
            c.yangSearchDirs.emplace_back(d);
        }
    }
    c.defaultModels = !vm["no-default-models"].as<bool>();
    if (vm.count("print-port-file")) {
        c.portFile = vm["print-port-file"].as<std::string>();
    }
    if (c.durability != "full" && c.durability != "normal" && c.durability != "off") {
        throw OptionsError("--durability must be full, normal or off, not '" + c.durability + "'");
    }
    if (c.idleTimeout > std::numeric_limits<std::uint16_t>::max()) {
        throw OptionsError("--idle-timeout is at most 65535 seconds");
    }
    if (c.authTimeout == 0 || c.authTimeout > std::numeric_limits<std::uint16_t>::max()) {
        throw OptionsError("--auth-timeout must be 1..65535 seconds");
    }
    if (c.authAttempts == 0 || c.authAttempts > std::numeric_limits<std::uint16_t>::max()) {
        throw OptionsError("--auth-attempts must be 1..65535");
    }
    if (c.maxSessions == 0) {
        throw OptionsError("--max-sessions must be at least 1");
    }
    if (c.notificationLogEvents == 0 || c.notificationLogDays == 0 || c.notificationQueueBytes < 4096) {
        throw OptionsError("--notification-log-events and --notification-log-days must be at least 1, "
                           "--notification-queue-bytes at least 4096");
    }
    if (c.historyMaxBytes < 4096) {
        throw OptionsError("--history-max-bytes must be at least 4096");
    }
    if (c.sqliteCacheMb == 0 || c.sqliteCacheMb > (1u << 20)) {
        throw OptionsError("--sqlite-cache-mb must be 1..1048576");
    }
    if (c.xpathBudgetMs == 0 || c.xpathWorkers == 0 || c.xpathWorkers > 64) {
        throw OptionsError("--xpath-budget-ms must be at least 1, --xpath-workers 1..64");
    }
    if (c.maxStartups == 0) {
        throw OptionsError("--max-startups must be at least 1");
    }
    if (c.appMaxConnections == 0 || c.appMaxMessage < 4096 || c.appMaxMessage > (1ull << 31)) {
        throw OptionsError("--app-max-connections must be at least 1, --app-max-message 4096..2147483648");
    }
    for (const auto& u : c.appUsers) {
        const auto eq = u.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == u.size() ||
            u.find_first_not_of("0123456789") != eq) {
            throw OptionsError("--app-user takes UID=NAME, not '" + u + "'");
        }
    }
    if (c.maxMessageSize < 4096) {
        throw OptionsError("--max-message-size must be at least 4096 bytes");
    }
    if (c.backend != "sqlite" && c.backend != "dqlite") {
        throw OptionsError("--backend must be sqlite or dqlite, not '" + c.backend + "'");
    }
    const bool clusterCommand = out.action == Action::ClusterStatus || out.action == Action::ClusterAdd ||
                                out.action == Action::ClusterRemove || out.action == Action::ClusterRecover;
    if (c.backend == "dqlite" || clusterCommand) {
        if (c.dqliteAddress.empty() && !(clusterCommand && !c.dqlitePeers.empty())) {
            throw OptionsError("--backend dqlite needs --dqlite-address IPv4:PORT");
        }
        if (c.dqliteId == 0) {
            throw OptionsError("--dqlite-id must be at least 1");
        }
        if (out.action == Action::ClusterRecover && c.dqliteAddress.empty()) {
            throw OptionsError("--cluster-recover needs this node's --dqlite-id and --dqlite-address");
        }
        if (c.dqliteId != 1 && c.dqlitePeers.empty() && !clusterCommand) {
            throw OptionsError("--dqlite-id " + std::to_string(c.dqliteId) +
                               " joins a cluster: give the address of a node of it with --dqlite-peer");
        }
        if (out.action == Action::ResetNacm || !out.group.empty()) {
            throw OptionsError("with --backend dqlite the NACM rules live in the cluster: change them over "
                               "NETCONF on the leader (or as its recovery user)");
        }
    } else if (!c.dqliteAddress.empty() || !c.dqlitePeers.empty()) {
        throw OptionsError("--dqlite-address and --dqlite-peer go with --backend dqlite");
    }
    return out;
}

} // namespace ncstore::netconfd
