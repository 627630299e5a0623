// The OVSDB backend of ncstore-localload: RFC 7047 JSON-RPC over ovsdb-server's unix socket, one
// "transact" per row of database "Bench", table "Row" (bench.schema):
//   {"method":"transact","params":["Bench",{"op":"insert","table":"Row","row":{...}}],"id":N}
// and with --durable a second operation {"op":"commit","durable":true}, with which ovsdb-server
// answers only once the transaction is on disk (fsync). JSON is written and scanned by hand: the
// requests have a fixed shape and of a reply only the id, "error" and each operation's "error"
// matter.
#pragma once

#include "backend.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncstore::bench {

/// Splits a byte stream into the JSON texts it carries one after the other (OVSDB's JSON-RPC
/// framing): counts braces and brackets outside strings.
class JsonStream {
public:
    void append(const char* data, std::size_t size) { buffer_.append(data, size); }
    /// The next complete JSON object, valid until the next call; nullopt: more bytes needed.
    /// Throws std::runtime_error on bytes that cannot start a JSON object or array.
    std::optional<std::string_view> next();
    std::size_t buffered() const { return buffer_.size() - start_; }

private:
    std::string buffer_;
    std::size_t start_ = 0; // first byte of the message being framed
    std::size_t scan_ = 0;  // next byte to look at
    int depth_ = 0;
    bool inString_ = false, escape_ = false;
};

/// The members of one JSON-RPC message that the backend looks at: raw JSON text of each value.
struct JsonRpcMessage {
    std::string_view id, method, params, result, error;
};
/// Throws std::runtime_error when `text` is not a JSON object.
JsonRpcMessage parseJsonRpc(std::string_view text);
/// The first failed operation of a transact result (RFC 7047 5.2: an object with "error", or a
/// null element for an operation not executed), as its raw JSON text; nullopt: all succeeded.
/// `operations`: how many operations the request had (a shorter result is a failure too).
std::optional<std::string> transactFailure(std::string_view result, std::size_t operations);

class OvsdbBackend final : public Backend {
public:
    explicit OvsdbBackend(BackendConfig config);
    ~OvsdbBackend() override;
    OvsdbBackend(const OvsdbBackend&) = delete;
    OvsdbBackend& operator=(const OvsdbBackend&) = delete;

    void connect() override;
    bool transact(int client, int seq, std::string& error) override;

private:
    void sendAll(std::string_view data);
    /// Reads until the reply of id `id` (answering the server's "echo" requests meanwhile).
    JsonRpcMessage awaitReply(std::uint64_t id);

    BackendConfig config_;
    std::string database_ = "Bench", table_ = "Row";
    int fd_ = -1;
    std::uint64_t nextId_ = 1;
    std::string request_, echoReply_, idText_;
    JsonStream stream_;
};

} // namespace ncstore::bench
