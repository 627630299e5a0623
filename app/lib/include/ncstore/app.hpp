// libncstore-app: the device's own software takes part in ncstored's datastore, over the unix
// socket of its data directory (docs/app-protocol.md; the guide: docs/app-guide.md).
//
// What it promises:
//  - One Connection is one session of the server, as the user the server maps this process's
//    uid to (NACM applies as to a NETCONF session). Everything it registered (subscriptions,
//    providers, RPC handlers, operational data of lifetime Connection) ends with it, also when
//    the process is killed: nothing is left behind in the server.
//  - Requests (edit, commit, get, subscribe, push, notify, ...) may be called from any thread;
//    each waits for its reply, at most Options::timeout, and throws Error with the rpc-error
//    fields the server sent (or a Error of tag "operation-failed" when the connection is gone).
//  - Callbacks (verify, apply, abort, pull, RPC) run one at a time, in the order their events
//    arrived, on the library's callback thread, or, with Options::pollMode, inside dispatch()
//    on the application's thread when fd() is readable.
//  - No deadlock by design: inside a callback get() reads (in a verify also the datastore as the
//    change would leave it: Verification::get); an edit is editAsync(): queued by the server
//    as a new commit after the one in progress, its future set when that commit is done. A
//    blocking edit() inside a callback would wait for itself and throws std::logic_error.
//  - A callback that throws Error refuses (verify) or fails (pull, RPC) with exactly that
//    error's fields, which reach the NETCONF client's rpc-error unchanged; any other exception
//    becomes an operation-failed error with its what().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::app {

/// An rpc-error (RFC 6241 4.3): what the server answered, or what a callback refuses with.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, std::string tag = "operation-failed", std::string path = {},
                   std::string appTag = {}, std::string info = {})
        : std::runtime_error(message), tag_(std::move(tag)), path_(std::move(path)),
          appTag_(std::move(appTag)), info_(std::move(info)) {}
    const std::string& tag() const noexcept { return tag_; }       ///< error-tag
    const std::string& path() const noexcept { return path_; }     ///< error-path
    const std::string& appTag() const noexcept { return appTag_; } ///< error-app-tag
    const std::string& info() const noexcept { return info_; }     ///< error-info content (XML)

private:
    std::string tag_, path_, appTag_, info_;
};

enum class Datastore { Running, Startup, Candidate, Operational };
enum class DefaultOperation { Merge, Replace, None };
enum class WithDefaults { Explicit, Trim, ReportAll };
/// How long pushed operational data lives.
enum class Lifetime {
    Connection, ///< until this connection closes (the process ends, is killed, or closes it)
    Persistent, ///< durable in the store, across restarts of both sides, until deleted
};

struct Change {
    enum class Op { Create, Update, Replace, Delete, Move };
    Op op = Op::Create;
    std::string path;                    ///< instance identifier, every key in a predicate
    std::optional<std::string> oldValue; ///< leaves: Update, Delete
    std::optional<std::string> newValue; ///< leaves: Create, Update
    std::string xml; ///< containers and list entries: the subtree created, or deleted (XML)
    /// Ordered-by-user instances (Create, Move): first, or after `anchor` (a path).
    std::optional<std::string> anchor;
    bool first = false;
};
const char* toString(Change::Op op);

struct ChangeSet {
    std::uint64_t commitId = 0; ///< 0 in a verify: the commit has no id yet
    bool initial = false;       ///< the current configuration as creates (subscribe, resync)
    std::vector<Change> changes;
};

/// One edit as items (sysrepo's set_item/delete_item): applied in order, as one commit.
class Batch {
public:
    Batch& merge(std::string path, std::string value = {});  ///< create or set
    Batch& create(std::string path, std::string value = {}); ///< error when it exists
    Batch& replace(std::string path, std::string value = {});
    Batch& remove(std::string path); ///< no error when absent
    Batch& erase(std::string path);  ///< "delete": error when absent
    Batch& xml(std::string config);  ///< edit-config <config> content
    bool empty() const { return items_.empty() && config_.empty(); }

    struct Item {
        int op; // proto::ItemOp
        std::string path, value;
    };
    const std::vector<Item>& items() const { return items_; }
    const std::string& config() const { return config_; }

private:
    std::vector<Item> items_;
    std::string config_;
};

struct EditOptions {
    Datastore datastore = Datastore::Running;
    DefaultOperation defaultOperation = DefaultOperation::Merge;
    std::string comment; ///< kept in the commit history
};

/// What a verify callback is given besides the change set.
class Verification {
public:
    virtual ~Verification() = default;
    /// The datastore as the change would leave it (`xpath` selects; empty: all), XML.
    virtual std::string get(std::string_view xpath = {}) = 0;
    /// Running as it is now, before the change.
    virtual std::string getBefore(std::string_view xpath = {}) = 0;
    /// More time: the deadline becomes `more` from now.
    virtual void extend(std::chrono::milliseconds more) = 0;
};

/// An RPC or action being answered, possibly later, from any thread, once.
class Responder {
public:
    virtual ~Responder() = default;
    virtual void reply(std::string outputXml = {}) = 0; ///< output content (children of <rpc-reply>)
    virtual void fail(const Error& error) = 0;
    virtual void extend(std::chrono::milliseconds more) = 0;
};

struct SubscribeOptions {
    std::string xpath;      ///< a module ("/ietf-interfaces:*") or subtree ("/ietf-interfaces:interfaces")
    int priority = 0;       ///< verify callbacks run lower first; aborts in reverse
    bool apply = true;      ///< receive durable change sets
    bool initial = false;   ///< first the current configuration as one Apply of creates
    bool mandatory = false; ///< while not held, the server refuses commits touching `xpath`
    /// Resume: the last commit id applied; the change sets after it are replayed first (or, if the
    /// history no longer has them, an initial Apply of the whole subtree, initial = true).
    std::optional<std::uint64_t> since;
    std::chrono::milliseconds deadline{5000};                    ///< for verify
    std::function<void(const ChangeSet&, Verification&)> verify; ///< set: a verify subscriber
    std::function<void(const ChangeSet&)> onApply;
    std::function<void(const ChangeSet&)> onAbort; ///< a verified change that was not committed
};

/// Undoes a registration (subscription, provider, RPC handler) when released or destroyed.
class Registration {
public:
    Registration() = default;
    explicit Registration(std::function<void()> release) : release_(std::move(release)) {}
    Registration(Registration&&) noexcept = default;
    Registration& operator=(Registration&& o) noexcept {
        if (this != &o) {
            release();
            release_ = std::move(o.release_);
        }
        return *this;
    }
    ~Registration() { release(); }
    /// Ends the registration now (errors are swallowed: the connection may be gone).
    void release() noexcept;
    /// Keeps the registration until the connection closes.
    void keep() { release_ = nullptr; }

private:
    std::function<void()> release_;
};

class Connection {
public:
    struct Options {
        /// The server's socket: its data directory's app.sock, or $NCSTORE_APP_SOCKET.
        std::string socket;
        std::string appName = "app";
        std::chrono::milliseconds timeout{30000}; ///< per request
        /// Callbacks run inside dispatch() on the application's thread, when fd() is readable.
        bool pollMode = false;
    };
    explicit Connection(Options options); ///< connects and says hello; throws Error
    ~Connection();                        ///< closes: the server drops what this connection held
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    std::uint32_t session() const;
    const std::string& user() const; ///< the user the server mapped this process to

    // Local edits and reads: the edit-config semantics, one commit per call, NACM as user().
    std::uint64_t edit(std::string_view configXml, const EditOptions& options = {}); ///< the commit id
    std::uint64_t apply(const Batch& batch, const EditOptions& options = {});
    std::future<std::uint64_t> editAsync(const Batch& batch, const EditOptions& options = {});
    std::uint64_t commit(std::string_view comment = {}); ///< candidate to running
    std::string get(Datastore ds, std::string_view xpath = {}, WithDefaults wd = WithDefaults::Explicit);

    Registration subscribe(SubscribeOptions options);

    // Operational data.
    void push(std::string_view xml, Lifetime lifetime = Lifetime::Connection);
    void pushDelete(std::string_view xpath, Lifetime lifetime = Lifetime::Connection);
    /// A pull provider of the subtree `xpath`: called once per read that reaches it, with that
    /// read's filter as XPath (empty: all), returns the data (XML) within `deadline`.
    Registration provide(std::string xpath, std::function<std::string(const std::string& filter)> fn,
                         std::chrono::milliseconds deadline = std::chrono::milliseconds(5000),
                         std::chrono::milliseconds cache = std::chrono::milliseconds(0));

    // RPCs and actions ("/module:rpc", or an action's schema path).
    Registration handleRpc(std::string path, std::function<std::string(const std::string& inputXml)> fn,
                           std::chrono::milliseconds deadline = std::chrono::milliseconds(5000));
    Registration
    handleRpcAsync(std::string path,
                   std::function<void(const std::string& inputXml, std::shared_ptr<Responder>)> fn,
                   std::chrono::milliseconds deadline = std::chrono::milliseconds(5000));

    /// Raises a notification (its content element, XML); event time now unless given (RFC 3339).
    void notify(std::string_view xml, std::string_view eventTime = {});

    /// Options::pollMode: readable while events wait; dispatch() runs their callbacks.
    int fd() const;
    void dispatch();

    /// False once the server closed the connection (stopped, or refused this application).
    bool connected() const;

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace ncstore::app
