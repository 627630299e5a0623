// The application API's server side, inside: the connections (conn.hpp) and what they
// register (subscriptions, providers, RPC handlers, pushed data), the store's verifier and
// change listener. appserver.hpp holds the promises; this is how they are kept.
#pragma once

#include "appserver.hpp"
#include "interest.hpp"
#include "socket.hpp"

#include "ncstore/app/protocol.hpp"
#include "ncstore/changes.hpp"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace ncstore::netconfd::app {

namespace proto = ncstore::app::proto;
class Conn;

/// One change subscription.
struct Sub {
    Sub(std::uint32_t subId, std::weak_ptr<Conn> owner, std::string name, Interest subtree)
        : id(subId), conn(std::move(owner)), app(std::move(name)), interest(std::move(subtree)) {}
    std::uint32_t id = 0;
    std::weak_ptr<Conn> conn;
    std::string app; ///< "name (session N)", for errors and logs
    Interest interest;
    int priority = 0;
    bool verify = false;
    bool apply = false;
    bool mandatory = false;
    std::chrono::milliseconds deadline{5000};

    // Apply delivery, under `mutex`: held while the initial or resumed sync is sent.
    std::mutex mutex;
    bool live = false;
    std::uint64_t syncedThrough = 0;
    std::vector<std::shared_ptr<const ds::ChangeSet>> held;
};

/// A subtree some application declared it must verify (a mandatory subscription): remembered
/// for the server's lifetime, held while such a subscription exists.
struct Requirement {
    Interest interest;
    std::string app; ///< the application name of the subscription that declared it
    int holders = 0;
};

class Hub final : public ds::Verifier, public ds::ChangeListener {
public:
    Hub(Parts parts, Options options);
    ~Hub() override;
    Hub(const Hub&) = delete;
    Hub& operator=(const Hub&) = delete;

    const Options& options() const { return o_; }
    const Parts& parts() const { return p_; }

    // For the connections.
    std::uint32_t nextId() { return nextId_.fetch_add(1) + 1; }
    /// Adds `sub` (not live yet); false when a requirement could not be met.
    void addSub(const std::shared_ptr<Sub>& sub);
    bool removeSub(std::uint32_t id, const Conn* owner);
    /// The initial or resumed sync of `sub`, then live delivery (the subscription's Ok is out).
    void sync(const std::shared_ptr<Sub>& sub, const nacm::Access* access, std::optional<std::uint64_t> since,
              bool initial);
    /// What connection `c` pushed (lifetime connection) or everyone's persistent data: merged.
    void push(const Conn& c, Tree data, bool persistent);
    void pushDelete(const Conn& c, const std::string& xpath, bool persistent);
    /// Everything a connection held goes: subscriptions, pushed data (the rest is the Conn's).
    void connectionEnded(const Conn& c);
    /// Runs `fn` on the view of the verification in progress that event `event` of connection
    /// `c` is part of (the verification does not end meanwhile); false when there is none.
    bool withView(const Conn& c, std::uint32_t event, const std::function<void(const ds::Verification&)>& fn);

    // ds::Verifier
    bool concerns(const ds::ChangeSet& changes) const override;
    void verify(const ds::ChangeSet& changes, const ds::Verification& view) override;
    void finished(const ds::ChangeSet& changes, std::uint64_t commitId) override;

    // ds::ChangeListener, on the store's publisher thread.
    void changed(const ds::ChangeSet& changes) override;
    void published(const std::shared_ptr<const ds::ChangeSet>& changes) override;
    void publishedBatch(const std::vector<std::shared_ptr<const ds::ChangeSet>>& batch) override;
    void lost(std::uint64_t through) override;

    /// The state data pushed by applications (the "applications" state provider).
    Tree pushedState() const;
    std::vector<std::pair<std::string, std::string>> pushedTops() const;

private:
    void acceptLoop();
    void deliver(Sub& sub, const std::shared_ptr<const ds::ChangeSet>& changes);
    void loadPersistent();
    void savePersistent();

    Parts p_;
    Options o_;
    Fd listen_;
    Fd wakeRead_, wakeWrite_;
    std::thread acceptThread_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint32_t> nextId_{0};

    std::mutex connsMutex_;
    std::condition_variable connsCv_;
    std::map<const Conn*, std::shared_ptr<Conn>> conns_;

    mutable std::shared_mutex subsMutex_;
    std::vector<std::shared_ptr<Sub>> subs_;
    std::vector<Requirement> required_;

    struct Asked {
        std::weak_ptr<Conn> conn;
        std::uint32_t sub = 0;
        std::uint32_t event = 0;
        bool accepted = false;
    };
    mutable std::mutex verifyMutex_;
    std::map<const ds::ChangeSet*, std::vector<Asked>> inFlight_;
    struct View {
        const ds::Verification* view = nullptr;
        int readers = 0; ///< reads of it in progress: the verification waits for them to end
    };
    std::map<std::pair<const Conn*, std::uint32_t>, View> views_;
    std::condition_variable viewsCv_;

    mutable std::mutex pushMutex_;
    std::map<const Conn*, Tree> pushed_;
    Tree persistent_;

    std::shared_ptr<StateProvider> pushedProvider_;
};

} // namespace ncstore::netconfd::app
