// A thin C++ layer over the libnetconf2 client API: one SSH session, RPCs and replies as RAII
// values, errors as exceptions with context.
//
// Thread-safety: libnetconf2 keeps client options (username, auth callbacks, schema search
// path) per thread, and nc_connect_ssh() fills the context it is given. So every thread that
// connects must call applyThreadOptions() first, and every Session owns the context libnetconf2
// created for it (we pass no shared context). A Session is used by one thread at a time.
#pragma once

#include <ncstore/yang.hpp>

#include <nc_client.h> // defines NC_ENABLED_SSH before the libnetconf2 headers

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncstore::client {

/// Connection parameters shared by every session of one invocation.
struct ConnectOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8830;
    std::string user;
    std::optional<std::string> password;
    std::optional<std::filesystem::path> privateKey; ///< public key is the same path + ".pub"
    std::filesystem::path schemaDir;                 ///< private cache for schemas fetched from the server
    int rpcTimeoutMs = 600'000;
};

/// A transport or protocol failure (not an rpc-error, which is a normal reply).
class ClientError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct RpcDeleter {
    void operator()(nc_rpc* rpc) const noexcept { nc_rpc_free(rpc); }
};
/// Owns an RPC built with one of the nc_rpc_* constructors.
using Rpc = std::unique_ptr<nc_rpc, RpcDeleter>;

/// Throws ClientError when a nc_rpc_* constructor returned NULL.
Rpc checkedRpc(nc_rpc* rpc, const char* what);

/// One rpc-error of a reply, fields as the server sent them ("" when absent).
struct RpcErrorInfo {
    std::string type, tag, severity, appTag, path, message, info;
};

/// A reply: data, ok, or rpc-errors.
struct Reply {
    Tree envelope;  ///< <rpc-reply> with <ok/> or <rpc-error>s (opaque nodes)
    Tree operation; ///< parsed output of the operation (data replies), else null
    std::vector<RpcErrorInfo> errors;
    [[nodiscard]] bool isError() const { return !errors.empty(); }
    /// The reply as a human reads it: the data (XML), "ok", or the rpc-error details.
    [[nodiscard]] std::string render(NC_WD_MODE wdMode) const;
};

/// Sets this thread's libnetconf2 client options from `options`. Call once per thread before
/// connecting; `options` must outlive every connect made by this thread (callbacks borrow it).
void applyThreadOptions(const ConnectOptions& options);

/// A notification (RFC 5277): its eventTime and its content.
struct Notification {
    std::string eventTime;
    Tree content; ///< the event (a notification node of the session's context)
};

/// One NETCONF session over SSH.
class Session {
public:
    /// Connects (with a few retries: the server accepts serially with a small backlog).
    explicit Session(const ConnectOptions& options);
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    Session(Session&&) noexcept = default;
    Session& operator=(Session&&) noexcept = default;
    ~Session() = default;

    /// Sends `rpc` and waits for its reply. Throws ClientError on a transport failure.
    Reply call(nc_rpc* rpc, int timeoutMs);

    /// The next notification, waiting at most `timeoutMs` (-1: forever): nullopt when none came.
    /// Throws ClientError when the session ended.
    std::optional<Notification> receiveNotification(int timeoutMs);

    [[nodiscard]] uint32_t id() const;
    /// The session's context: the server's modules.
    [[nodiscard]] const ly_ctx* context() const;

private:
    struct Deleter {
        void operator()(nc_session* session) const noexcept;
    };
    std::unique_ptr<nc_session, Deleter> session_;
};

/// Process-wide libnetconf2 client init/destroy.
class ClientLibrary {
public:
    ClientLibrary();
    ~ClientLibrary();
    ClientLibrary(const ClientLibrary&) = delete;
    ClientLibrary& operator=(const ClientLibrary&) = delete;
};

/// "running" | "candidate" | "startup" → NC_DATASTORE; throws std::invalid_argument otherwise.
NC_DATASTORE parseDatastore(const std::string& name);
/// "report-all" | "report-all-tagged" | "trim" | "explicit" | "" → NC_WD_MODE.
NC_WD_MODE parseWithDefaults(const std::string& name);

/// Strips an enclosing `element` (<config>, <filter>; any prefix) from a payload if there is one,
/// since libnetconf2 wraps the content in its own. Prefixed namespace declarations of the removed
/// element (xmlns:nc of nc:operation) are copied onto each top-level element of the content.
/// Leading whitespace and an XML declaration are dropped (libnetconf2 wants content to start with '<').
std::string stripWrapper(const std::string& xml, const std::string& element);
/// stripWrapper(xml, "config").
std::string stripConfigWrapper(const std::string& xml);

} // namespace ncstore::client
