// Helpers of the dqlite tests: free loopback ports, temporary data directories, dqlite nodes in
// child processes (killable with SIGKILL), and a scripted fake server for the hostile-peer tests.
#pragma once

#include "ncstore/dqlite/client.hpp"
#include "temp_dir.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace ncstore::dqlite::test {

/// The node runner (ncstore-dqlite-node) built with these tests.
inline constexpr const char* kNodeRunner = NCSTORE_DQLITE_NODE;

/// An executable's full path: `name` itself when it has a '/', else the first match in PATH, then
/// /usr/sbin and /sbin (where Debian puts ip(8), often outside a user's PATH). Throws when none.
std::string findExecutable(const std::string& name);

/// The dqlite::Error `call` throws; a test failure (and a placeholder error) when it throws none.
Error expectError(const std::function<void()>& call);

/// "127.0.0.1:PORT" with a port the kernel just handed out (bound, then released).
std::string freeAddress();

/// The tests' one temporary directory (tests/support/temp_dir.hpp).
using TempDir = ncstore::test::TempDir;

/// A dqlite node in a child process (ncstore-dqlite-node). The constructor returns once the node
/// serves; kill() sends SIGKILL; the destructor stops it cleanly (closing its stdin), or kills it.
/// `launcher`, when given, is a command that runs the node's command line in place (it must exec,
/// not fork, so that kill() reaches the node): {"ip", "netns", "exec", NAME} starts the node in a
/// network namespace (tests/ha). Its first word is looked up in PATH, then /usr/sbin and /sbin.
class ChildNode {
public:
    ChildNode(std::uint64_t id, std::string address, const std::filesystem::path& dataDir,
              std::chrono::milliseconds latency, std::vector<std::string> launcher = {});
    ChildNode(const ChildNode&) = delete;
    ChildNode& operator=(const ChildNode&) = delete;
    ~ChildNode();

    void kill();
    bool alive() const { return pid_ > 0; }
    std::uint64_t id() const { return id_; }
    const std::string& address() const { return address_; }

private:
    std::uint64_t id_;
    std::string address_;
    pid_t pid_ = -1;
    int stdinFd_ = -1;
};

/// A TCP server on 127.0.0.1 that accepts one connection and runs `script` on its socket in a
/// thread of its own; the destructor closes the listening socket and joins.
class FakeServer {
public:
    using Script = std::function<void(int fd)>;
    explicit FakeServer(Script script);
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;
    ~FakeServer();
    const std::string& address() const { return address_; }

private:
    int listenFd_ = -1;
    std::string address_;
    std::thread thread_;
};

// Pieces for the fake server's scripts.
/// Reads exactly n bytes (false when the peer closed first).
bool readExactly(int fd, std::size_t n);
void writeAll(int fd, const std::vector<std::uint8_t>& bytes);
/// A message header {words, type, schema 0}.
std::vector<std::uint8_t> header(std::uint32_t words, std::uint8_t type);
void put64(std::vector<std::uint8_t>& out, std::uint64_t v);
/// Reads the client's version word and CLIENT request, answers WELCOME.
bool handshake(int fd);
/// Reads until the client closes (or 10 s pass).
void drain(int fd);
/// Reads one request (header and body); false when the peer closed.
bool readRequest(int fd);

} // namespace ncstore::dqlite::test
