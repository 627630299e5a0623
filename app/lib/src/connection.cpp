// The connection to ncstored (docs/app-protocol.md): one socket, a reader thread that owns its
// receiving side, a callback thread (or dispatch()) that runs the application's callbacks.
//
// Why two threads: a callback may read (get(), Verification::get) and wait for the answer, so
// whatever reads the socket must never be the thread that runs callbacks. The reader only
// routes: replies complete the promise of their request (editAsync's future included, so a
// callback never has to run for one to complete), events are queued for the callbacks.
// The library is built with hidden visibility: what the public header declares is its ABI, and
// nothing else (the codec, the internals, templates instantiated on them) is exported.
#pragma GCC visibility push(default)
#include "ncstore/app.hpp"
#pragma GCC visibility pop

#include "ncstore/app/protocol.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace ncstore::app {

namespace {

using proto::Field;
using proto::Type;

constexpr const char* kClosed = "connection to ncstored closed";

/// Set on the callback thread, and inside dispatch(): a blocking edit there would wait for the
/// commit that is waiting for this very callback.
thread_local bool tlsInCallback = false;

class CallbackScope {
public:
    CallbackScope() : previous_(std::exchange(tlsInCallback, true)) {}
    ~CallbackScope() { tlsInCallback = previous_; }
    CallbackScope(const CallbackScope&) = delete;
    CallbackScope& operator=(const CallbackScope&) = delete;

private:
    bool previous_;
};

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    void reset() noexcept {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

std::string systemError(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

std::uint64_t millis(std::chrono::milliseconds d) {
    return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0;
}

/// An Error reply's rpc-error.
Error errorOf(const proto::Fields& f) {
    std::string tag(f.text(Field::ErrorTag).value_or(""));
    if (tag.empty()) {
        tag = "operation-failed";
    }
    std::string message(f.text(Field::Message).value_or(""));
    if (message.empty()) {
        message = "ncstored answered " + tag;
    }
    return Error(message, tag, std::string(f.text(Field::Path).value_or("")),
                 std::string(f.text(Field::AppTag).value_or("")),
                 std::string(f.text(Field::Info).value_or("")));
}

/// An rpc-error as the fields of an answer (VerifyDone, PullDone, RpcDone).
void addError(proto::Fields& f, const Error& e) {
    f.add(Field::ErrorTag,
          e.tag().empty() ? std::string_view("operation-failed") : std::string_view(e.tag()));
    if (!e.appTag().empty()) {
        f.add(Field::AppTag, e.appTag());
    }
    if (!e.path().empty()) {
        f.add(Field::Path, e.path());
    }
    f.add(Field::Message, std::string_view(e.what()));
    if (!e.info().empty()) {
        f.add(Field::Info, e.info());
    }
}

std::uint64_t required(const proto::Fields& f, Field field, Type in) {
    const auto v = f.integer(field);
    if (!v) {
        throw proto::ProtocolError(std::string("a ") + proto::toString(in) + " without field " +
                                   std::to_string(static_cast<unsigned>(field)));
    }
    return *v;
}

ChangeSet decodeChanges(const proto::Fields& f) {
    ChangeSet set;
    for (const auto bytes : f.all(Field::Change)) {
        const auto c = proto::Fields::decode(bytes);
        Change change;
        const auto op = c.integer(Field::ChangeOp);
        if (!op || *op > static_cast<std::uint64_t>(Change::Op::Move)) {
            throw proto::ProtocolError("a change without a valid ChangeOp");
        }
        change.op = static_cast<Change::Op>(*op);
        change.path = std::string(c.text(Field::Path).value_or(""));
        if (const auto v = c.text(Field::OldValue)) {
            change.oldValue = std::string(*v);
        }
        if (const auto v = c.text(Field::NewValue)) {
            change.newValue = std::string(*v);
        }
        change.xml = std::string(c.text(Field::Xml).value_or(""));
        if (const auto where = c.integer(Field::Where)) {
            if (*where == 0) {
                change.first = true;
            } else if (*where == 1) {
                change.anchor = std::string(c.text(Field::Anchor).value_or(""));
            } else {
                throw proto::ProtocolError("a change's Where is " + std::to_string(*where) + ", not 0 or 1");
            }
        }
        set.changes.push_back(std::move(change));
    }
    return set;
}

/// An event as the reader decoded it: a malformed event is the server's protocol error, found
/// (and the connection ended) before any callback sees it.
struct Event {
    Type type = Type::Apply;
    std::uint64_t target = 0; ///< Subscription, Provider or Handler
    std::uint64_t event = 0;
    std::string text; ///< Pull: XPath; Call: Xml
    ChangeSet changes;
};

Event decodeEvent(proto::Message& m) {
    Event e;
    e.type = m.type;
    auto& f = m.fields;
    switch (m.type) {
    case Type::Verify:
        e.target = required(f, Field::Subscription, m.type);
        e.event = required(f, Field::Event, m.type);
        e.changes = decodeChanges(f);
        break;
    case Type::Abort:
        e.target = required(f, Field::Subscription, m.type);
        e.event = required(f, Field::Event, m.type);
        break;
    case Type::Apply:
        e.target = required(f, Field::Subscription, m.type);
        e.changes = decodeChanges(f);
        e.changes.commitId = f.integer(Field::CommitId, 0);
        e.changes.initial = (f.integer(Field::Flags, 0) & proto::SubscribeFlag::Initial) != 0;
        break;
    case Type::Pull:
        e.target = required(f, Field::Provider, m.type);
        e.event = required(f, Field::Event, m.type);
        e.text = std::string(f.text(Field::XPath).value_or(""));
        break;
    case Type::Call:
        e.target = required(f, Field::Handler, m.type);
        e.event = required(f, Field::Event, m.type);
        e.text = std::string(f.text(Field::Xml).value_or(""));
        break;
    case Type::Resync:
        e.target = required(f, Field::Subscription, m.type);
        break;
    default:
        throw proto::ProtocolError(std::string("not an event: ") + proto::toString(m.type));
    }
    return e;
}

struct Subscription {
    std::function<void(const ChangeSet&, Verification&)> verify;
    std::function<void(const ChangeSet&)> onApply;
    std::function<void(const ChangeSet&)> onAbort;
};

struct RpcHandler {
    std::function<std::string(const std::string&)> sync;
    std::function<void(const std::string&, std::shared_ptr<Responder>)> async;
};

/// A request waiting for its reply. Both run on the reader thread, so that what a reply sets up
/// (a subscription's callbacks) is in place before the next frame is read; onReply may throw
/// ProtocolError for a malformed reply.
struct Pending {
    std::function<void(const proto::Message&)> onReply;
    std::function<void(std::exception_ptr)> onFail;
};

class Session : public std::enable_shared_from_this<Session> {
public:
    explicit Session(Connection::Options options);
    ~Session() { close(); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void start();
    void close() noexcept;

    std::uint32_t session() const { return session_; }
    const std::string& user() const { return user_; }
    bool connected() const {
        std::lock_guard lock(mutex_);
        return connected_;
    }
    int fd() const { return eventFd_.get(); }

    std::uint64_t edit(std::string_view configXml, const EditOptions& options);
    std::uint64_t apply(const Batch& batch, const EditOptions& options);
    std::future<std::uint64_t> editAsync(const Batch& batch, const EditOptions& options);
    std::uint64_t commit(std::string_view comment);
    std::string read(Datastore ds, std::string_view xpath, WithDefaults wd,
                     std::optional<std::uint64_t> view);
    Registration subscribe(SubscribeOptions options);
    void push(std::string_view xml, Lifetime lifetime);
    void pushDelete(std::string_view xpath, Lifetime lifetime);
    Registration provide(std::string xpath, std::function<std::string(const std::string&)> fn,
                         std::chrono::milliseconds deadline, std::chrono::milliseconds cache);
    Registration handleRpc(std::string path, RpcHandler handler, std::chrono::milliseconds deadline);
    void notify(std::string_view xml, std::string_view eventTime);
    void dispatch();

    /// Extend{Event, DeadlineMs}; throws Error when the connection is gone.
    void extend(std::uint64_t event, std::chrono::milliseconds more);
    /// An answer to an event (VerifyDone, PullDone, RpcDone): never throws, since the one who
    /// would be told is the server, and a connection that is gone has no event to answer.
    void answer(Type type, std::uint64_t event, proto::Fields fields) noexcept;

private:
    template <class T>
    std::future<T> begin(proto::Message m, std::function<T(const proto::Fields&)> decode, std::uint32_t& id);
    template <class T> T call(proto::Message m, std::function<T(const proto::Fields&)> decode);
    void callOk(Type type, proto::Fields fields);
    bool forget(std::uint32_t id);
    std::string frame(const proto::Message& m) const;
    void write(const std::string& bytes);
    void hello();
    void readLoop();
    void route(proto::Message m);
    void closed();
    void queue(Event e);
    void callbackLoop();
    void handle(Event& e);
    void handleVerify(Event& e);
    void handleAbort(Event& e);
    void handleApply(Event& e);
    void handlePull(Event& e);
    void handleCall(Event& e);
    void drainEventFd();
    void forbidInCallback(const char* what) const;
    proto::Message editMessage(const Batch* batch, std::string_view configXml, const EditOptions& options,
                               bool deferred) const;

    Connection::Options options_;
    Fd sock_;
    Fd eventFd_;                                        // pollMode only
    proto::Decoder decoder_{proto::kDefaultMaxMessage}; // the constructor's, then the reader's
    std::uint32_t session_ = 0;
    std::string user_;
    std::atomic<std::uint32_t> nextId_{1};

    std::mutex writeMutex_;

    mutable std::mutex mutex_; // everything below
    bool connected_ = true;
    bool stopping_ = false;
    std::map<std::uint32_t, Pending> pending_;
    std::deque<Event> events_;
    std::condition_variable eventsCv_;
    std::map<std::uint64_t, std::shared_ptr<Subscription>> subscriptions_;
    std::map<std::uint64_t, std::shared_ptr<std::function<std::string(const std::string&)>>> providers_;
    std::map<std::uint64_t, std::shared_ptr<RpcHandler>> handlers_;
    /// The change set of each verify event (subscription, event), for its onAbort.
    std::map<std::pair<std::uint64_t, std::uint64_t>, ChangeSet> verified_;

    std::thread reader_;
    std::thread callbacks_;
};

class VerificationImpl final : public Verification {
public:
    VerificationImpl(Session& session, std::uint64_t event) : session_(session), event_(event) {}
    std::string get(std::string_view xpath) override {
        return session_.read(Datastore::Running, xpath, WithDefaults::Explicit, event_);
    }
    std::string getBefore(std::string_view xpath) override {
        return session_.read(Datastore::Running, xpath, WithDefaults::Explicit, std::nullopt);
    }
    void extend(std::chrono::milliseconds more) override { session_.extend(event_, more); }

private:
    Session& session_;
    std::uint64_t event_;
};

/// Holds the session weakly: a handler may keep its Responder past the Connection.
class ResponderImpl final : public Responder {
public:
    ResponderImpl(std::weak_ptr<Session> session, std::uint64_t event)
        : session_(std::move(session)), event_(event) {}
    ~ResponderImpl() override {
        if (!answered_.exchange(true)) {
            send(Error("the handler did not answer"));
        }
    }
    ResponderImpl(const ResponderImpl&) = delete;
    ResponderImpl& operator=(const ResponderImpl&) = delete;

    void reply(std::string outputXml) override {
        if (answered_.exchange(true)) {
            return;
        }
        proto::Fields f;
        f.add(Field::Event, event_).add(Field::Xml, outputXml);
        if (const auto s = session_.lock()) {
            s->answer(Type::RpcDone, event_, std::move(f));
        }
    }
    void fail(const Error& error) override {
        if (!answered_.exchange(true)) {
            send(error);
        }
    }
    void extend(std::chrono::milliseconds more) override {
        if (answered_) {
            return;
        }
        if (const auto s = session_.lock()) {
            try {
                s->extend(event_, more);
            } catch (const Error&) {
                // The connection is gone: the call it would extend is gone with it.
            }
        }
    }

private:
    void send(const Error& error) noexcept {
        try {
            proto::Fields f;
            f.add(Field::Event, event_);
            addError(f, error);
            if (const auto s = session_.lock()) {
                s->answer(Type::RpcDone, event_, std::move(f));
            }
        } catch (...) {
            // Out of memory building the answer: the server's deadline answers for us.
        }
    }

    std::weak_ptr<Session> session_;
    std::uint64_t event_;
    std::atomic<bool> answered_{false};
};

Session::Session(Connection::Options options) : options_(std::move(options)) {
    std::string path = options_.socket;
    if (path.empty()) {
        if (const char* env = std::getenv("NCSTORE_APP_SOCKET")) {
            path = env;
        }
    }
    if (path.empty()) {
        throw Error("no socket of ncstored: Options::socket is empty and NCSTORE_APP_SOCKET is not set");
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    // A path longer than sun_path (a deep data directory) is reached through its directory's open
    // descriptor: /proc/self/fd/N/NAME names the same socket in a few bytes.
    Fd dir;
    std::string target = path;
    if (path.size() >= sizeof(addr.sun_path)) {
        const auto slash = path.rfind('/');
        const std::string parent = slash == std::string::npos ? "."
                                   : slash == 0               ? "/"
                                                              : path.substr(0, slash);
        dir = Fd(::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (dir.get() < 0) {
            throw Error(systemError("open the directory of " + path));
        }
        target = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + path.substr(slash + 1);
        if (target.size() >= sizeof(addr.sun_path)) {
            throw Error("socket name of " + path + " is longer than a unix socket's " +
                        std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
        }
    }
    std::memcpy(addr.sun_path, target.c_str(), target.size() + 1);
    sock_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (sock_.get() < 0) {
        throw Error(systemError("socket"));
    }
    for (;;) {
        if (::connect(sock_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
            break;
        }
        if (errno != EINTR) {
            throw Error(systemError("connect to ncstored at " + path));
        }
    }
    if (options_.pollMode) {
        eventFd_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (eventFd_.get() < 0) {
            throw Error(systemError("eventfd"));
        }
    }
    hello();
}

void Session::hello() {
    proto::Message m;
    m.type = Type::Hello;
    m.id = nextId_++;
    m.fields.add(Field::AppName, options_.appName).add(Field::Version, std::uint64_t{proto::kVersion});
    write(frame(m));

    // Before the reader exists the reply is read here, within the request timeout: a server that
    // accepts and never answers must not hang the constructor.
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    std::vector<char> buffer(4096);
    std::optional<proto::Message> reply;
    while (!reply) {
        try {
            reply = decoder_.next();
        } catch (const proto::ProtocolError& e) {
            throw Error(std::string("malformed answer of ncstored to hello: ") + e.what());
        }
        if (reply) {
            break;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            throw Error("no answer of ncstored to hello within " + std::to_string(options_.timeout.count()) +
                        " ms");
        }
        pollfd p{sock_.get(), POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT32_MAX)));
        if (r < 0 && errno != EINTR) {
            throw Error(systemError("poll"));
        }
        if (r <= 0) {
            continue;
        }
        const ssize_t n = ::recv(sock_.get(), buffer.data(), buffer.size(), 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw Error(systemError("reading the answer of ncstored to hello"));
        }
        if (n == 0) {
            throw Error("ncstored closed the connection without answering hello");
        }
        decoder_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    }
    if (reply->type == Type::Error) {
        throw errorOf(reply->fields);
    }
    if (reply->type != Type::Ok || reply->id != m.id) {
        throw Error(std::string("ncstored answered hello with ") + proto::toString(reply->type) + " (id " +
                    std::to_string(reply->id) + ")");
    }
    try {
        const auto version = reply->fields.integer(Field::Version, proto::kVersion);
        if (version != proto::kVersion) {
            throw Error("ncstored speaks version " + std::to_string(version) +
                        " of the protocol, this library " + std::to_string(proto::kVersion));
        }
        session_ = static_cast<std::uint32_t>(reply->fields.integer(Field::Session, 0));
    } catch (const proto::ProtocolError& e) {
        throw Error(std::string("malformed answer of ncstored to hello: ") + e.what());
    }
    user_ = std::string(reply->fields.text(Field::User).value_or(""));
}

void Session::start() {
    reader_ = std::thread([this] { readLoop(); });
    if (!options_.pollMode) {
        // The thread holds the session: a callback that destroys the Connection (close() then
        // detaches this thread rather than join itself) returns into a session still alive.
        callbacks_ = std::thread([self = shared_from_this()] { self->callbackLoop(); });
    }
}

void Session::close() noexcept {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    eventsCv_.notify_all();
    // Wakes the reader (its recv returns 0, it fails what waits) and any writer blocked on a
    // full socket; the callback thread ends after the callback it is running, if any.
    ::shutdown(sock_.get(), SHUT_RDWR);
    for (auto* t : {&reader_, &callbacks_}) {
        if (!t->joinable()) {
            continue;
        }
        if (t->get_id() == std::this_thread::get_id()) {
            t->detach(); // destroyed from inside a callback: it cannot join itself
        } else {
            t->join();
        }
    }
}

std::string Session::frame(const proto::Message& m) const {
    try {
        return proto::encode(m, proto::kDefaultMaxMessage);
    } catch (const proto::ProtocolError& e) {
        throw Error(std::string("the ") + proto::toString(m.type) + " is too big: " + e.what(), "too-big");
    }
}

void Session::write(const std::string& bytes) {
    std::lock_guard lock(writeMutex_);
    std::size_t at = 0;
    while (at < bytes.size()) {
        const ssize_t n = ::send(sock_.get(), bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            // Half a frame may be on the wire: the stream is lost either way.
            ::shutdown(sock_.get(), SHUT_RDWR);
            throw Error(kClosed);
        }
        at += static_cast<std::size_t>(n);
    }
}

template <class T>
std::future<T> Session::begin(proto::Message m, std::function<T(const proto::Fields&)> decode,
                              std::uint32_t& id) {
    id = nextId_++;
    if (id == 0) {
        id = nextId_++; // 0 is the id of events
    }
    m.id = id;
    const std::string bytes = frame(m);
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    Pending p;
    p.onReply = [promise, decode = std::move(decode)](const proto::Message& reply) {
        if (reply.type == Type::Error) {
            promise->set_exception(std::make_exception_ptr(errorOf(reply.fields)));
            return;
        }
        promise->set_value(decode(reply.fields));
    };
    p.onFail = [promise](std::exception_ptr e) { promise->set_exception(std::move(e)); };
    {
        std::lock_guard lock(mutex_);
        if (!connected_) {
            throw Error(kClosed);
        }
        pending_.emplace(id, std::move(p));
    }
    try {
        write(bytes);
    } catch (...) {
        forget(id);
        throw;
    }
    return future;
}

template <class T> T Session::call(proto::Message m, std::function<T(const proto::Fields&)> decode) {
    const Type type = m.type;
    std::uint32_t id = 0;
    auto future = begin<T>(std::move(m), std::move(decode), id);
    // Forgotten only if no reply took it first: a reply that arrived as the time ran out wins.
    if (future.wait_for(options_.timeout) == std::future_status::timeout && forget(id)) {
        throw Error(std::string("no reply of ncstored to ") + proto::toString(type) + " within " +
                    std::to_string(options_.timeout.count()) + " ms");
    }
    return future.get();
}

void Session::callOk(Type type, proto::Fields fields) {
    proto::Message m;
    m.type = type;
    m.fields = std::move(fields);
    call<bool>(std::move(m), [](const proto::Fields&) { return true; });
}

bool Session::forget(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    return pending_.erase(id) > 0;
}

void Session::readLoop() {
    std::vector<char> buffer(1 << 16);
    try {
        for (;;) {
            // First what is buffered: the frames that came with the answer to hello.
            while (auto m = decoder_.next()) {
                route(std::move(*m));
            }
            ssize_t n = 0;
            do {
                n = ::recv(sock_.get(), buffer.data(), buffer.size(), 0);
            } while (n < 0 && errno == EINTR);
            if (n <= 0) {
                break;
            }
            decoder_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        }
    } catch (...) {
        // A protocol error of the server (or no memory for its frame): nothing it sends can be
        // trusted any more, so the connection ends as the server ends it for a broken client.
    }
    closed();
}

void Session::route(proto::Message m) {
    switch (m.type) {
    case Type::Ok:
    case Type::Error:
    case Type::Data: {
        Pending p;
        {
            std::lock_guard lock(mutex_);
            const auto it = pending_.find(m.id);
            if (it == pending_.end()) {
                return; // the reply of a request that timed out
            }
            p = std::move(it->second);
            pending_.erase(it);
        }
        try {
            p.onReply(m);
        } catch (const proto::ProtocolError& e) {
            p.onFail(std::make_exception_ptr(Error(std::string("malformed reply of ncstored: ") + e.what())));
            throw;
        }
        return;
    }
    case Type::Verify:
    case Type::Abort:
    case Type::Apply:
    case Type::Pull:
    case Type::Call:
    case Type::Resync:
        queue(decodeEvent(m));
        return;
    default:
        throw proto::ProtocolError(std::string("unexpected message from ncstored: ") +
                                   proto::toString(m.type) + " (" +
                                   std::to_string(static_cast<unsigned>(m.type)) + ")");
    }
}

void Session::closed() {
    std::map<std::uint32_t, Pending> pending;
    {
        std::lock_guard lock(mutex_);
        connected_ = false;
        pending.swap(pending_);
    }
    ::shutdown(sock_.get(), SHUT_RDWR);
    const auto error = std::make_exception_ptr(Error(kClosed));
    for (auto& [id, p] : pending) {
        p.onFail(error);
    }
}

void Session::queue(Event e) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(e));
        if (eventFd_.get() >= 0 && events_.size() == 1) {
            const std::uint64_t one = 1;
            [[maybe_unused]] const auto n =
                ::write(eventFd_.get(), &one, sizeof(one)); // fails only on overflow
        }
    }
    eventsCv_.notify_one();
}

void Session::drainEventFd() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(eventFd_.get(), &count, sizeof(count)); // EAGAIN: already 0
}

void Session::callbackLoop() {
    tlsInCallback = true;
    for (;;) {
        Event e;
        {
            std::unique_lock lock(mutex_);
            eventsCv_.wait(lock, [this] { return stopping_ || !events_.empty(); });
            if (stopping_) {
                return;
            }
            e = std::move(events_.front());
            events_.pop_front();
        }
        handle(e);
    }
}

void Session::dispatch() {
    if (!options_.pollMode) {
        throw std::logic_error(
            "Connection::dispatch() without Options::pollMode: the callback thread runs them");
    }
    const CallbackScope scope;
    std::size_t count = 0;
    {
        std::lock_guard lock(mutex_);
        count = events_.size();
    }
    // Only what waited when called: a steady stream of events must not keep the caller here
    // forever (fd() stays readable for the rest).
    for (; count > 0; --count) {
        Event e;
        {
            std::lock_guard lock(mutex_);
            if (events_.empty()) {
                break;
            }
            e = std::move(events_.front());
            events_.pop_front();
            if (events_.empty()) {
                drainEventFd();
            }
        }
        handle(e);
    }
}

void Session::handle(Event& e) {
    try {
        switch (e.type) {
        case Type::Verify:
            handleVerify(e);
            break;
        case Type::Abort:
            handleAbort(e);
            break;
        case Type::Apply:
            handleApply(e);
            break;
        case Type::Pull:
            handlePull(e);
            break;
        case Type::Call:
            handleCall(e);
            break;
        default:
            break; // Resync: the initial Apply that follows says everything
        }
    } catch (...) {
        // An apply or abort callback that threw: there is no one to tell (the change is
        // durable, or already gone), and the next event must still run.
    }
}

template <class M>
std::shared_ptr<typename M::mapped_type::element_type> lookup(std::mutex& m, M& map, std::uint64_t id) {
    std::lock_guard lock(m);
    const auto it = map.find(id);
    return it == map.end() ? nullptr : it->second;
}

void Session::handleVerify(Event& e) {
    const auto sub = lookup(mutex_, subscriptions_, e.target);
    if (sub && sub->onAbort) {
        std::lock_guard lock(mutex_);
        verified_[{e.target, e.event}] = e.changes;
    }
    proto::Fields f;
    f.add(Field::Event, e.event);
    if (sub && sub->verify) {
        VerificationImpl verification(*this, e.event);
        try {
            sub->verify(e.changes, verification);
        } catch (const Error& error) {
            addError(f, error);
        } catch (const std::exception& error) {
            addError(f, Error(error.what()));
        } catch (...) {
            addError(f, Error("the verify callback threw something that is not a std::exception"));
        }
    }
    answer(Type::VerifyDone, e.event, std::move(f));
}

void Session::handleAbort(Event& e) {
    ChangeSet changes;
    {
        std::lock_guard lock(mutex_);
        const auto it = verified_.find({e.target, e.event});
        if (it != verified_.end()) {
            changes = std::move(it->second);
            verified_.erase(it);
        }
    }
    const auto sub = lookup(mutex_, subscriptions_, e.target);
    if (sub && sub->onAbort) {
        sub->onAbort(changes);
    }
}

void Session::handleApply(Event& e) {
    {
        // An Apply ends the commit whose verify this subscription saw: no Abort follows for it.
        std::lock_guard lock(mutex_);
        verified_.erase(verified_.lower_bound({e.target, 0}), verified_.upper_bound({e.target, UINT64_MAX}));
    }
    const auto sub = lookup(mutex_, subscriptions_, e.target);
    if (sub && sub->onApply) {
        sub->onApply(e.changes);
    }
}

void Session::handlePull(Event& e) {
    const auto provider = lookup(mutex_, providers_, e.target);
    proto::Fields f;
    f.add(Field::Event, e.event);
    try {
        if (!provider) {
            throw Error("no provider " + std::to_string(e.target) + " in this application");
        }
        const std::string xml = (*provider)(e.text);
        f.add(Field::Xml, xml);
    } catch (const Error& error) {
        addError(f, error);
    } catch (const std::exception& error) {
        addError(f, Error(error.what()));
    } catch (...) {
        addError(f, Error("the provider threw something that is not a std::exception"));
    }
    answer(Type::PullDone, e.event, std::move(f));
}

void Session::handleCall(Event& e) {
    const auto handler = lookup(mutex_, handlers_, e.target);
    if (handler && handler->async) {
        auto responder = std::make_shared<ResponderImpl>(weak_from_this(), e.event);
        try {
            handler->async(e.text, responder);
        } catch (const Error& error) {
            responder->fail(error);
        } catch (const std::exception& error) {
            responder->fail(Error(error.what()));
        } catch (...) {
            responder->fail(Error("the RPC handler threw something that is not a std::exception"));
        }
        return; // the last reference answers "did not answer" if nobody did
    }
    proto::Fields f;
    f.add(Field::Event, e.event);
    try {
        if (!handler || !handler->sync) {
            throw Error("no RPC handler " + std::to_string(e.target) + " in this application");
        }
        const std::string output = handler->sync(e.text);
        f.add(Field::Xml, output);
    } catch (const Error& error) {
        addError(f, error);
    } catch (const std::exception& error) {
        addError(f, Error(error.what()));
    } catch (...) {
        addError(f, Error("the RPC handler threw something that is not a std::exception"));
    }
    answer(Type::RpcDone, e.event, std::move(f));
}

void Session::answer(Type type, std::uint64_t event, proto::Fields fields) noexcept {
    try {
        proto::Message m;
        m.type = type;
        m.id = static_cast<std::uint32_t>(event);
        m.fields = std::move(fields);
        std::string bytes;
        try {
            bytes = frame(m);
        } catch (const Error& tooBig) {
            // The answer does not fit a frame: the server gets its error rather than nothing.
            m.fields = proto::Fields();
            m.fields.add(Field::Event, event);
            addError(m.fields, tooBig);
            bytes = frame(m);
        }
        write(bytes);
    } catch (...) {
        // The connection is gone: the server has dropped the event with it.
    }
}

void Session::extend(std::uint64_t event, std::chrono::milliseconds more) {
    proto::Message m;
    m.type = Type::Extend;
    m.id = static_cast<std::uint32_t>(event);
    m.fields.add(Field::Event, event).add(Field::DeadlineMs, millis(more));
    write(frame(m));
}

void Session::forbidInCallback(const char* what) const {
    if (tlsInCallback) {
        throw std::logic_error(std::string(what) +
                               " inside a callback would wait for the commit that waits for this callback: "
                               "use editAsync()");
    }
}

proto::Message Session::editMessage(const Batch* batch, std::string_view configXml,
                                    const EditOptions& options, bool deferred) const {
    proto::Message m;
    m.type = Type::Edit;
    auto& f = m.fields;
    f.add(Field::Datastore, static_cast<std::uint64_t>(options.datastore))
        .add(Field::DefaultOp, static_cast<std::uint64_t>(options.defaultOperation));
    if (!batch || !batch->config().empty()) {
        f.add(Field::Config, batch ? std::string_view(batch->config()) : configXml);
    }
    if (batch) {
        for (const auto& item : batch->items()) {
            proto::Fields nested;
            nested.add(Field::ItemOp, static_cast<std::uint64_t>(item.op)).add(Field::Path, item.path);
            if (item.op != static_cast<int>(proto::ItemOp::Delete) &&
                item.op != static_cast<int>(proto::ItemOp::Remove)) {
                nested.add(Field::Value, item.value);
            }
            f.add(Field::Item, nested);
        }
    }
    if (!options.comment.empty()) {
        f.add(Field::Comment, options.comment);
    }
    if (deferred) {
        f.add(Field::Deferred, std::uint64_t{1});
    }
    return m;
}

std::uint64_t commitIdOf(const proto::Fields& f) {
    return f.integer(Field::CommitId, 0);
}

std::uint64_t Session::edit(std::string_view configXml, const EditOptions& options) {
    forbidInCallback("edit()");
    return call<std::uint64_t>(editMessage(nullptr, configXml, options, false), commitIdOf);
}

std::uint64_t Session::apply(const Batch& batch, const EditOptions& options) {
    forbidInCallback("apply()");
    return call<std::uint64_t>(editMessage(&batch, {}, options, false), commitIdOf);
}

std::future<std::uint64_t> Session::editAsync(const Batch& batch, const EditOptions& options) {
    std::uint32_t id = 0;
    return begin<std::uint64_t>(editMessage(&batch, {}, options, tlsInCallback), commitIdOf, id);
}

std::uint64_t Session::commit(std::string_view comment) {
    forbidInCallback("commit()");
    proto::Message m;
    m.type = Type::Commit;
    if (!comment.empty()) {
        m.fields.add(Field::Comment, comment);
    }
    return call<std::uint64_t>(std::move(m), commitIdOf);
}

std::string Session::read(Datastore ds, std::string_view xpath, WithDefaults wd,
                          std::optional<std::uint64_t> view) {
    proto::Message m;
    m.type = Type::Get;
    m.fields.add(Field::Datastore, static_cast<std::uint64_t>(ds))
        .add(Field::XPath, xpath)
        .add(Field::WithDefaults, static_cast<std::uint64_t>(wd));
    if (view) {
        m.fields.add(Field::View, std::uint64_t{1}).add(Field::Event, *view);
    }
    return call<std::string>(
        std::move(m), [](const proto::Fields& f) { return std::string(f.text(Field::Xml).value_or("")); });
}

Registration Session::subscribe(SubscribeOptions options) {
    auto entry = std::make_shared<Subscription>();
    entry->verify = std::move(options.verify);
    entry->onApply = std::move(options.onApply);
    entry->onAbort = std::move(options.onAbort);
    std::uint64_t flags = 0;
    const auto set = [&flags](bool on, proto::SubscribeFlag flag) {
        if (on) {
            flags |= flag;
        }
    };
    set(static_cast<bool>(entry->verify), proto::SubscribeFlag::Verify);
    set(options.apply, proto::SubscribeFlag::Apply);
    set(options.initial, proto::SubscribeFlag::Initial);
    set(options.mandatory, proto::SubscribeFlag::Mandatory);
    set(options.since.has_value(), proto::SubscribeFlag::Resume);
    proto::Message m;
    m.type = Type::Subscribe;
    m.fields.add(Field::XPath, options.xpath)
        .add(Field::Priority, static_cast<std::uint64_t>(static_cast<std::int64_t>(options.priority)))
        .add(Field::Flags, flags);
    if (options.since) {
        m.fields.add(Field::Since, *options.since);
    }
    m.fields.add(Field::DeadlineMs, millis(options.deadline));
    // Registered by the reader as it takes the reply: the initial Apply may be the very next
    // frame, and must find its subscription.
    const auto id = call<std::uint64_t>(std::move(m), [this, entry](const proto::Fields& f) {
        const auto sub = required(f, Field::Subscription, Type::Ok);
        std::lock_guard lock(mutex_);
        subscriptions_[sub] = entry;
        return sub;
    });
    return Registration([weak = weak_from_this(), id] {
        const auto s = weak.lock();
        if (!s) {
            return;
        }
        {
            std::lock_guard lock(s->mutex_);
            s->subscriptions_.erase(id);
            s->verified_.erase(s->verified_.lower_bound({id, 0}), s->verified_.upper_bound({id, UINT64_MAX}));
        }
        if (s->connected()) {
            s->callOk(Type::Unsubscribe, proto::Fields().add(Field::Subscription, id));
        }
    });
}

void Session::push(std::string_view xml, Lifetime lifetime) {
    callOk(Type::Push,
           proto::Fields().add(Field::Xml, xml).add(Field::Lifetime, static_cast<std::uint64_t>(lifetime)));
}

void Session::pushDelete(std::string_view xpath, Lifetime lifetime) {
    callOk(
        Type::PushDelete,
        proto::Fields().add(Field::XPath, xpath).add(Field::Lifetime, static_cast<std::uint64_t>(lifetime)));
}

Registration Session::provide(std::string xpath, std::function<std::string(const std::string&)> fn,
                              std::chrono::milliseconds deadline, std::chrono::milliseconds cache) {
    auto entry = std::make_shared<std::function<std::string(const std::string&)>>(std::move(fn));
    proto::Message m;
    m.type = Type::Provide;
    m.fields.add(Field::XPath, xpath)
        .add(Field::CacheMs, millis(cache))
        .add(Field::DeadlineMs, millis(deadline));
    const auto id = call<std::uint64_t>(std::move(m), [this, entry](const proto::Fields& f) {
        const auto provider = required(f, Field::Provider, Type::Ok);
        std::lock_guard lock(mutex_);
        providers_[provider] = entry;
        return provider;
    });
    return Registration([weak = weak_from_this(), id] {
        const auto s = weak.lock();
        if (!s) {
            return;
        }
        {
            std::lock_guard lock(s->mutex_);
            s->providers_.erase(id);
        }
        if (s->connected()) {
            s->callOk(Type::Unregister, proto::Fields().add(Field::Provider, id));
        }
    });
}

Registration Session::handleRpc(std::string path, RpcHandler handler, std::chrono::milliseconds deadline) {
    auto entry = std::make_shared<RpcHandler>(std::move(handler));
    proto::Message m;
    m.type = Type::RegisterRpc;
    m.fields.add(Field::Path, path).add(Field::DeadlineMs, millis(deadline));
    const auto id = call<std::uint64_t>(std::move(m), [this, entry](const proto::Fields& f) {
        const auto h = required(f, Field::Handler, Type::Ok);
        std::lock_guard lock(mutex_);
        handlers_[h] = entry;
        return h;
    });
    return Registration([weak = weak_from_this(), id] {
        const auto s = weak.lock();
        if (!s) {
            return;
        }
        {
            std::lock_guard lock(s->mutex_);
            s->handlers_.erase(id);
        }
        if (s->connected()) {
            s->callOk(Type::Unregister, proto::Fields().add(Field::Handler, id));
        }
    });
}

void Session::notify(std::string_view xml, std::string_view eventTime) {
    proto::Fields f;
    f.add(Field::Xml, xml);
    if (!eventTime.empty()) {
        f.add(Field::EventTime, eventTime);
    }
    callOk(Type::Notify, std::move(f));
}

} // namespace

class Connection::Impl {
public:
    explicit Impl(Options options) : session(std::make_shared<Session>(std::move(options))) {
        session->start();
    }
    ~Impl() { session->close(); }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    // Each call holds the session: a request still waiting as the Connection is destroyed on
    // another thread fails (connection closed) instead of touching freed memory.
    std::shared_ptr<Session> session;
};

Connection::Connection(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Connection::~Connection() = default;

std::uint32_t Connection::session() const {
    return impl_->session->session();
}
const std::string& Connection::user() const {
    return impl_->session->user();
}

std::uint64_t Connection::edit(std::string_view configXml, const EditOptions& options) {
    return std::shared_ptr(impl_->session)->edit(configXml, options);
}
std::uint64_t Connection::apply(const Batch& batch, const EditOptions& options) {
    return std::shared_ptr(impl_->session)->apply(batch, options);
}
std::future<std::uint64_t> Connection::editAsync(const Batch& batch, const EditOptions& options) {
    return std::shared_ptr(impl_->session)->editAsync(batch, options);
}
std::uint64_t Connection::commit(std::string_view comment) {
    return std::shared_ptr(impl_->session)->commit(comment);
}
std::string Connection::get(Datastore ds, std::string_view xpath, WithDefaults wd) {
    return std::shared_ptr(impl_->session)->read(ds, xpath, wd, std::nullopt);
}
Registration Connection::subscribe(SubscribeOptions options) {
    return std::shared_ptr(impl_->session)->subscribe(std::move(options));
}
void Connection::push(std::string_view xml, Lifetime lifetime) {
    std::shared_ptr(impl_->session)->push(xml, lifetime);
}
void Connection::pushDelete(std::string_view xpath, Lifetime lifetime) {
    std::shared_ptr(impl_->session)->pushDelete(xpath, lifetime);
}
Registration Connection::provide(std::string xpath, std::function<std::string(const std::string& filter)> fn,
                                 std::chrono::milliseconds deadline, std::chrono::milliseconds cache) {
    return std::shared_ptr(impl_->session)->provide(std::move(xpath), std::move(fn), deadline, cache);
}
Registration Connection::handleRpc(std::string path,
                                   std::function<std::string(const std::string& inputXml)> fn,
                                   std::chrono::milliseconds deadline) {
    return std::shared_ptr(impl_->session)
        ->handleRpc(std::move(path), RpcHandler{std::move(fn), {}}, deadline);
}
Registration
Connection::handleRpcAsync(std::string path,
                           std::function<void(const std::string& inputXml, std::shared_ptr<Responder>)> fn,
                           std::chrono::milliseconds deadline) {
    return std::shared_ptr(impl_->session)
        ->handleRpc(std::move(path), RpcHandler{{}, std::move(fn)}, deadline);
}
void Connection::notify(std::string_view xml, std::string_view eventTime) {
    std::shared_ptr(impl_->session)->notify(xml, eventTime);
}
int Connection::fd() const {
    return impl_->session->fd();
}
void Connection::dispatch() {
    std::shared_ptr(impl_->session)->dispatch();
}
bool Connection::connected() const {
    return impl_->session->connected();
}

} // namespace ncstore::app
