// One application's connection: its session, its threads, its requests, and the events the
// server asks it (verify, pull, call) with their deadlines.
//
// Threads: the reader (run(): the hello, then every frame; answers to events are taken here at
// once), a sender (the outbox, so that no thread of the server ever blocks on this peer), a
// write worker (edits and commits, in order: they may wait for verification) and a quick worker
// (everything else: gets, pushes, notifications, subscriptions and registrations, also those
// made from inside a callback while the write worker waits for this very application). A request
// never waits behind an event answer, nor the other way round. An application that subscribed to
// nothing and registered nothing is never asked anything: the reader serves its requests itself,
// and a reply goes out from the thread that made it unless others wait before it (each thread
// hand-off, a wake-up and a context switch, costs more here than a small commit).
#pragma once

#include "hub.hpp"

#include "errors.hpp"
#include "session.hpp"

#include <condition_variable>
#include <deque>
#include <optional>

namespace ncstore::netconfd::app {

class Conn : public std::enable_shared_from_this<Conn> {
public:
    Conn(Hub& hub, Fd fd, Peer peer, std::string user);
    ~Conn();
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;

    /// The connection's life, on its own thread; returns when it has ended and let go of
    /// everything it held.
    void run();
    /// Ends the connection (any thread): its socket is shut down, its waits fail.
    void close(const std::string& why);
    bool closed() const { return closed_.load(); }

    /// Queues `m` for the peer; false when closed (or closed now: its queue is over the bound).
    bool send(const proto::Message& m);

    /// An event the application must answer (Verify, Pull, Call): sent with a new event id and
    /// `deadline`; waits for the answer, which Extend may postpone.
    struct Answer {
        /// NotSent: the connection was closed (or found dead) before the event went out.
        enum class Kind { Answered, Closed, Timeout, NotSent } kind = Kind::Closed;
        proto::Fields fields;
    };
    /// `event`: an id from newEvent() (0: a new one).
    Answer ask(proto::Type type, proto::Fields fields, std::chrono::milliseconds deadline,
               std::uint32_t event = 0);
    std::uint32_t newEvent() { return nextEvent_.fetch_add(1) + 1; }

    /// Verifications of this application in progress (a deferred edit waits for them).
    void verifying(int delta);

    std::uint32_t session() const { return sessionId_; }
    const std::string& user() const { return user_; }
    /// "name (session N)": how errors and logs name the application.
    std::string label() const;

private:
    bool hello();
    void readLoop();
    void sendLoop();
    void workLoop(bool reads);
    /// No request queued or being served (the reader may then serve the next one itself).
    bool idle();
    void handle(const proto::Message& m);
    proto::Message edit(const proto::Message& m);
    proto::Message commit(const proto::Message& m);
    proto::Message get(const proto::Message& m);
    proto::Message subscribe(const proto::Message& m, std::shared_ptr<Sub>& started,
                             std::optional<std::uint64_t>& since, bool& initial);
    proto::Message provide(const proto::Message& m);
    proto::Message registerRpc(const proto::Message& m);
    proto::Message unregister(const proto::Message& m);
    proto::Message notify(const proto::Message& m);
    proto::Message pushMessage(const proto::Message& m, bool remove);
    void end();
    std::shared_ptr<const nacm::Access> access() const;

    Hub& hub_;
    Fd fd_;
    const Peer peer_;
    const std::string user_;
    std::string app_ = "?";
    std::uint32_t sessionId_ = 0;
    std::shared_ptr<Session> session_;
    std::atomic<bool> closed_{false};
    std::string closeReason_;

    std::mutex outMutex_;
    std::condition_variable outCv_;
    std::deque<std::string> out_;
    std::uint64_t outBytes_ = 0;
    bool sending_ = false; ///< the sender is writing a frame (replies wait behind it)

    std::mutex workMutex_;
    std::condition_variable workCv_;
    std::deque<proto::Message> writes_;
    std::deque<proto::Message> reads_;
    int busy_ = 0;            ///< requests the workers are serving
    bool registered_ = false; ///< it subscribed or registered something (the reader's)

    struct Pending {
        std::chrono::steady_clock::time_point deadline;
        std::optional<proto::Fields> answer;
    };
    std::mutex eventsMutex_;
    std::condition_variable eventsCv_;
    std::map<std::uint32_t, Pending> pending_;
    std::atomic<std::uint32_t> nextEvent_{0};
    int verifying_ = 0; // under eventsMutex_

    // Registered through this connection, removed with it (write worker, then end()).
    std::vector<std::string> providers_;                        // read-path names
    std::vector<std::pair<std::string, std::string>> handlers_; // dispatcher entries
    std::map<std::uint32_t, std::string> providerIds_;
    std::map<std::uint32_t, std::pair<std::string, std::string>> handlerIds_;
};

/// The error reply of a request, from what its handling threw.
proto::Message errorReply(std::uint32_t id, const std::string& tag, const std::string& message,
                          const std::string& path = {}, const std::string& appTag = {},
                          const std::string& info = {});

/// The Change fields of the changes `which` of `changes`.
void addChanges(proto::Fields& out, const ds::ChangeSet& changes, const std::vector<std::size_t>& which);

/// XML elements an application gave as error-info, re-printed if they parse (opaque nodes
/// allowed), else "" (the caller says it dropped them).
std::string checkedInfo(const ly_ctx* ctx, std::string_view xml);
/// Data an application sent (pushed or provided state) as a tree; throws the RpcError libyang's
/// complaint maps to.
Tree parseAnswer(const ly_ctx* ctx, const std::string& xml, uint32_t parseOptions);
/// The error an answer of application `app` carries (ErrorTag, Message, Path, AppTag, Info), if
/// it is one.
std::optional<RpcError> errorOf(const proto::Fields& f, const ly_ctx* ctx, const std::string& app);

/// The ietf-netconf filter node of an XPath `select` (for the read path), with its owner.
struct XPathFilter {
    Tree owner;
    const lyd_node* node = nullptr;
};
XPathFilter xpathFilter(const ly_ctx* ctx, const std::string& select);

/// Every change set of running after `since`, through the commit `through` the read of running
/// returned, rebuilt from the commit history; nullopt when the history no longer reaches back.
std::optional<std::vector<std::shared_ptr<const ds::ChangeSet>>>
replayFromHistory(const Parts& p, std::uint64_t since, std::uint64_t& through);

} // namespace ncstore::netconfd::app
