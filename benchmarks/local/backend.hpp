// The interface between ncstore-localload (localload.cpp) and one store it loads: a Backend is one
// client connection of one client process, created in that process after the fork. Every backend
// inserts the same rows (rowFor), one row per transaction, each transaction waiting for its reply.
//
// Adding a backend: a file NAME_backend.cpp defining a Backend subclass and its factory (declared
// here), that file in CMakeLists.txt, and one line in kBackends in localload.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace ncstore::bench {

struct BackendConfig {
    std::string socket;   ///< --socket: the server's unix socket
    bool durable = false; ///< --durable: each transaction is durable when its reply arrives
    std::chrono::milliseconds timeout{30000};   ///< per transaction (--timeout)
    std::map<std::string, std::string> options; ///< --opt KEY=VALUE, backend specific
};

/// The row of transaction `seq` of client `client`: unique across clients and transactions.
struct Row {
    std::string name;        ///< "c<client>-s<seq>"
    std::string description; ///< "row <seq> of client <client>"
    bool enabled = false;    ///< seq is even
    std::int64_t count = 0;  ///< client * 10^9 + seq
};
Row rowFor(int client, int seq);

class Backend {
public:
    virtual ~Backend() = default;
    /// Opens this client's connection. Throws std::exception (the client then fails all its
    /// transactions and the run reports the message).
    virtual void connect() = 0;
    /// One transaction inserting rowFor(client, seq); returns when its reply was read completely.
    /// false with `error` set: the store answered with an error (the connection stays usable).
    /// Throws std::exception when the connection is unusable (the client stops there).
    virtual bool transact(int client, int seq, std::string& error) = 0;
};

using BackendFactory = std::unique_ptr<Backend> (*)(const BackendConfig&);

// The factories, one per backend file.
std::unique_ptr<Backend> makeOvsdbBackend(const BackendConfig& config);
std::unique_ptr<Backend> makeNcstoreBackend(const BackendConfig& config);

} // namespace ncstore::bench
