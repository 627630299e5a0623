// Command line and configuration file of ncstored.
//
// Promises: every option is accepted on the command line and, without the leading dashes, as
// `key = value` in the INI file named by --config (the command line wins). Invalid input throws
// OptionsError with a message meant for the operator; nothing here touches the file system
// except reading the config file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncstore::netconfd {

class OptionsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ServerConfig {
    std::filesystem::path dataDir = "ncstore-data";
    std::string listen = "127.0.0.1";
    std::uint16_t port = 8830;                         ///< 0: the kernel picks a free port
    std::vector<std::filesystem::path> yangDirs;       ///< every module in them is loaded
    std::vector<std::filesystem::path> yangSearchDirs; ///< imports only
    bool defaultModels = true;
    std::string durability = "full";
    std::uint64_t sqliteCacheMb = 16; ///< SQLite's page cache (ds::StoreOptions::cacheBytes)
    std::string logLevel = "info";
    std::string logFile;
    unsigned idleTimeout = 0; ///< seconds; 0: never drop idle sessions
    std::uint64_t maxMessageSize = 256ull * 1024 * 1024;
    unsigned maxSessions = 512;                   ///< connections in all (sessions and handshakes)
    unsigned maxStartups = 64;                    ///< connections in their SSH handshake at once
    unsigned authTimeout = 10;                    ///< seconds for SSH authentication
    unsigned authAttempts = 3;                    ///< failed SSH authentications before the client is dropped
    unsigned statsInterval = 60;                  ///< seconds between statistics log lines; 0: only at exit
    std::uint64_t notificationLogEvents = 100000; ///< events the replay log keeps at most
    unsigned notificationLogDays = 7;             ///< days the replay log keeps an event at most
    std::uint64_t notificationQueueBytes = 64u << 20; ///< a subscriber's queue: past it, it is cut
    std::uint64_t historyMaxCommits = 1000;           ///< commits the commit history keeps at most (0: off)
    std::uint64_t historyMaxBytes = 64u << 20;        ///< bytes of undo data it keeps at most
    std::filesystem::path portFile;
    /// NACM recovery user (RFC 8341 3.3.3): their sessions are not checked; "" for none.
    std::string nacmRecoveryUser;
    /// "sqlite" (the file dataDir/ncstore.db) or "dqlite" (a database of a dqlite cluster whose
    /// node this server runs, in dataDir/dqlite: it serves while that node is the Raft leader).
    std::string backend = "sqlite";
    std::uint64_t dqliteId = 1;
    std::string dqliteAddress;            ///< "a.b.c.d:port" of the embedded node
    std::vector<std::string> dqlitePeers; ///< the other nodes' addresses
    unsigned dqliteLatencyMs = 0;         ///< one-way latency between nodes; 0: dqlite's defaults
    unsigned xpathBudgetMs = 5000;        ///< what a client's XPath filter may take (xpathworker.hpp)
    unsigned xpathWorkers = 2;            ///< XPath filters evaluated at once
    /// The program run as XPath worker: ncstored itself (main sets it). Empty: XPath filters are
    /// evaluated in the server with no budget (tests that embed the server).
    std::filesystem::path xpathWorkerProgram;
    /// The application API's unix socket (netconfd/app): "" for <data-dir>/app.sock, "none": off.
    std::string appSocket;
    std::string appGroup;                    ///< the socket's group ("": the server's)
    std::vector<std::string> appUsers;       ///< "UID=NAME": the user a peer uid acts as
    std::string appRootUser = "admin";       ///< the user of root and of the server's own uid
    unsigned appMaxConnections = 128;        ///< applications connected at once
    std::uint64_t appMaxMessage = 16u << 20; ///< bytes of one message of the application protocol
};

enum class Action {
    Run,
    Help,
    Version,
    AddUser,
    ResetNacm,
    ClusterStatus,
    ClusterAdd,
    ClusterRemove,
    ClusterRecover
};

struct CommandLine {
    Action action = Action::Run;
    ServerConfig config;
    std::string addUser;        ///< with Action::AddUser
    std::string group;          ///< with Action::AddUser: the NACM group to put the user into ("" none)
    std::string addNode;        ///< with Action::ClusterAdd: "ID@ADDRESS"
    std::uint64_t removeId = 0; ///< with Action::ClusterRemove
    std::vector<std::string> survivors; ///< with Action::ClusterRecover: "ID@ADDRESS" each
    std::string helpText;
};

/// Parses argv (and the --config file it names). Throws OptionsError.
CommandLine parseCommandLine(int argc, const char* const argv[]);

} // namespace ncstore::netconfd
