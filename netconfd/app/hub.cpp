#include "hub.hpp"

#include "conn.hpp"
#include "history.hpp"

#include "ncstore/log.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>

namespace ncstore::netconfd::app {

using proto::Field;
using proto::Type;

namespace {

constexpr const char* kOperJournal = "app-oper";

/// The data applications pushed, as state data of every read.
class PushedProvider final : public StateProvider {
public:
    explicit PushedProvider(const Hub& hub) : hub_(hub) {}
    std::vector<Top> tops() const override {
        std::vector<Top> out;
        for (auto& [module, name] : hub_.pushedTops()) {
            out.push_back({module, name});
        }
        return out;
    }
    Tree state(const ly_ctx*) const override { return hub_.pushedState(); }

private:
    const Hub& hub_;
};

void mergeInto(Tree& target, Tree source) {
    if (!source) {
        return;
    }
    lyd_node* t = target.release();
    const LY_ERR rc = lyd_merge_siblings(&t, source.get(), 0);
    target.reset(t);
    if (rc != LY_SUCCESS) {
        throw YangError("cannot merge the pushed data", LYD_CTX(source.get()));
    }
}

/// Removes the nodes `xpath` selects from `tree` (a private tree).
void removeSelected(Tree& tree, const std::string& xpath) {
    if (!tree) {
        return;
    }
    ly_set* raw = nullptr;
    if (lyd_find_xpath(tree.get(), xpath.c_str(), &raw) != LY_SUCCESS) {
        throw std::invalid_argument("the XPath " + xpath +
                                    " does not evaluate: " + lastError(LYD_CTX(tree.get())));
    }
    const Set set{raw};
    // Last first: a descendant goes before its ancestor.
    for (std::uint32_t i = set->count; i-- > 0;) {
        lyd_node* node = set->dnodes[i];
        if (node == tree.get()) {
            lyd_node* next = node->next;
            tree.release();
            lyd_free_tree(node);
            tree.reset(next);
        } else {
            lyd_free_tree(node);
        }
    }
}

std::string describe(const ds::ChangeSet& changes) {
    return changes.changes.empty() ? std::string("the change") : changes.changes.front().path;
}

} // namespace

void addChanges(proto::Fields& out, const ds::ChangeSet& changes, const std::vector<std::size_t>& which) {
    for (const std::size_t i : which) {
        const ds::Change& c = changes.changes[i];
        proto::Fields f;
        f.add(Field::ChangeOp, static_cast<std::uint64_t>(c.op)).add(Field::Path, c.path);
        if (c.oldValue) {
            f.add(Field::OldValue, *c.oldValue);
        }
        if (c.newValue) {
            f.add(Field::NewValue, *c.newValue);
        }
        const Tree& subtree = c.newTree ? c.newTree : c.oldTree;
        if (subtree) {
            f.add(Field::Xml, print(subtree.get(), LYD_XML, LYD_PRINT_SHRINK));
        }
        if (c.position) {
            f.add(Field::Where, static_cast<std::uint64_t>(c.position->where == ds::Position::Where::After));
            if (c.position->where == ds::Position::Where::After) {
                f.add(Field::Anchor, c.position->anchor);
            }
        }
        out.add(Field::Change, f);
    }
}

Hub::Hub(Parts parts, Options options) : p_(parts), o_(std::move(options)) {
    listen_ = listenUnix(o_.socket, o_.group);
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    wakeRead_.reset(pipeFds[0]);
    wakeWrite_.reset(pipeFds[1]);
    loadPersistent();
    pushedProvider_ = std::make_shared<PushedProvider>(*this);
    p_.reads.addProvider("applications", pushedProvider_);
    p_.store.addListener(*this);
    p_.store.addVerifier(*this, 0);
    acceptThread_ = std::thread([this] { acceptLoop(); });
    NCS_LOG(info) << "applications connect to " << o_.socket.string();
}

Hub::~Hub() {
    stopping_ = true;
    const char byte = 1;
    (void)!::write(wakeWrite_.get(), &byte, 1);
    acceptThread_.join();
    {
        std::unique_lock lock(connsMutex_);
        for (auto& [ptr, conn] : conns_) {
            conn->close("the server stops");
        }
        connsCv_.wait(lock, [&] { return conns_.empty(); });
    }
    p_.store.removeVerifier(*this);
    p_.store.removeListener(*this);
    p_.reads.removeProvider("applications");
    std::error_code ec;
    std::filesystem::remove(o_.socket, ec);
}

void Hub::acceptLoop() {
    for (;;) {
        pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {wakeRead_.get(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            NCS_LOG(error) << "application socket: poll: " << std::strerror(errno);
            return;
        }
        if (stopping_ || (fds[1].revents & POLLIN)) {
            return;
        }
        Fd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!fd) {
            continue;
        }
        Peer peer;
        try {
            peer = peerOf(fd.get());
        } catch (const std::exception& e) {
            NCS_LOG(warning) << "application connection refused: " << e.what();
            continue;
        }
        std::string user;
        if (const auto it = o_.users.find(peer.uid); it != o_.users.end()) {
            user = it->second;
        } else if (peer.uid == 0 || peer.uid == ::getuid()) {
            user = o_.adminUser;
        } else {
            user = userName(peer.uid);
        }
        if (user.empty()) {
            NCS_LOG(warning) << "application connection of uid " << peer.uid << " (pid " << peer.pid
                             << ") refused: no user for it (--app-user UID=NAME maps one)";
            continue;
        }
        auto conn = std::make_shared<Conn>(*this, std::move(fd), peer, user);
        {
            const std::lock_guard lock(connsMutex_);
            if (conns_.size() >= o_.maxConnections) {
                NCS_LOG(warning) << "application connection of uid " << peer.uid << " (pid " << peer.pid
                                 << ") refused: " << o_.maxConnections
                                 << " are connected (--app-max-connections)";
                continue;
            }
            conns_.emplace(conn.get(), conn);
        }
        std::thread([this, conn]() mutable {
            conn->run();
            const Conn* key = conn.get();
            conn.reset();
            const std::lock_guard lock(connsMutex_);
            conns_.erase(key);
            connsCv_.notify_all();
        }).detach();
    }
}

void Hub::addSub(const std::shared_ptr<Sub>& sub) {
    const std::unique_lock lock(subsMutex_);
    subs_.push_back(sub);
    if (sub->mandatory) {
        auto it = std::find_if(required_.begin(), required_.end(), [&](const Requirement& r) {
            return r.interest.xpath() == sub->interest.xpath();
        });
        if (it == required_.end()) {
            required_.push_back(Requirement{sub->interest, sub->app, 0});
            it = std::prev(required_.end());
            NCS_LOG(info) << "changes of " << sub->interest.xpath() << " need application " << sub->app
                          << " from now on (a mandatory subscription)";
        }
        ++it->holders;
    }
}

bool Hub::removeSub(std::uint32_t id, const Conn* owner) {
    const std::unique_lock lock(subsMutex_);
    const auto it = std::find_if(subs_.begin(), subs_.end(), [&](const auto& s) {
        return s->id == id && (!owner || s->conn.lock().get() == owner);
    });
    if (it == subs_.end()) {
        return false;
    }
    if ((*it)->mandatory) {
        for (auto& r : required_) {
            if (r.interest.xpath() == (*it)->interest.xpath()) {
                --r.holders;
            }
        }
    }
    subs_.erase(it);
    return true;
}

void Hub::sync(const std::shared_ptr<Sub>& sub, const nacm::Access* access,
               std::optional<std::uint64_t> since, bool initial) {
    const auto conn = sub->conn.lock();
    if (!conn) {
        return;
    }
    std::uint64_t through = 0;
    bool whole = initial;
    std::vector<std::shared_ptr<const ds::ChangeSet>> replay;
    if (since) {
        if (auto r = replayFromHistory(p_, *since, through)) {
            replay = std::move(*r);
            whole = false;
        } else {
            whole = true;
            NCS_LOG(info) << "application " << sub->app << " resumes from commit " << *since
                          << ", which the commit history no longer reaches: it gets " << sub->interest.xpath()
                          << " whole";
        }
    }
    if (whole) {
        const XPathFilter f = xpathFilter(p_.ctx, sub->interest.xpath());
        std::string xml;
        through = p_.reads.readConfigXml(access, ds::Datastore::Running, f.node, LYD_PRINT_WD_EXPLICIT, xml);
        proto::Message m;
        m.type = Type::Apply;
        proto::Fields change;
        change.add(Field::ChangeOp, static_cast<std::uint64_t>(ds::ChangeOp::Create))
            .add(Field::Path, sub->interest.xpath())
            .add(Field::Xml, xml);
        m.fields.add(Field::Subscription, static_cast<std::uint64_t>(sub->id))
            .add(Field::CommitId, through)
            .add(Field::Flags, static_cast<std::uint64_t>(proto::SubscribeFlag::Initial))
            .add(Field::Change, change);
        conn->send(m);
    } else {
        for (const auto& changes : replay) {
            deliver(*sub, changes);
        }
    }
    const std::lock_guard lock(sub->mutex);
    for (const auto& changes : sub->held) {
        if (changes->commitId > through) {
            deliver(*sub, changes);
        }
    }
    sub->held.clear();
    sub->syncedThrough = std::max(sub->syncedThrough, through);
    sub->live = true;
}

void Hub::deliver(Sub& sub, const std::shared_ptr<const ds::ChangeSet>& changes) {
    const auto which = sub.interest.within(*changes);
    if (which.empty()) {
        return;
    }
    const auto conn = sub.conn.lock();
    if (!conn) {
        return;
    }
    proto::Message m;
    m.type = Type::Apply;
    m.fields.add(Field::Subscription, static_cast<std::uint64_t>(sub.id))
        .add(Field::CommitId, changes->commitId);
    addChanges(m.fields, *changes, which);
    conn->send(m);
    sub.syncedThrough = changes->commitId;
}

void Hub::push(const Conn& c, Tree data, bool persistent) {
    const std::lock_guard lock(pushMutex_);
    mergeInto(persistent ? persistent_ : pushed_[&c], std::move(data));
    if (persistent) {
        savePersistent();
    }
}

void Hub::pushDelete(const Conn& c, const std::string& xpath, bool persistent) {
    const std::lock_guard lock(pushMutex_);
    if (persistent) {
        removeSelected(persistent_, xpath);
        savePersistent();
    } else if (const auto it = pushed_.find(&c); it != pushed_.end()) {
        removeSelected(it->second, xpath);
    }
}

void Hub::loadPersistent() {
    std::string last;
    p_.store.readJournal(kOperJournal, 0, [&](const ds::JournalRow& row) { last = row.data; });
    if (!last.empty()) {
        persistent_ = parseData(p_.ctx, last, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
    }
}

void Hub::savePersistent() {
    // The whole persistent data in one row: restarts read the last row only; older rows go at once.
    const std::string row = persistent_
                                ? print(persistent_.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK)
                                : std::string();
    const std::uint64_t id = p_.store.appendJournalDurable(kOperJournal, row);
    p_.store.trimJournal(kOperJournal, id - 1);
}

Tree Hub::pushedState() const {
    const std::lock_guard lock(pushMutex_);
    Tree all = dupForest(persistent_.get());
    for (const auto& [conn, tree] : pushed_) {
        mergeInto(all, dupForest(tree.get()));
    }
    return all;
}

std::vector<std::pair<std::string, std::string>> Hub::pushedTops() const {
    const std::lock_guard lock(pushMutex_);
    std::vector<std::pair<std::string, std::string>> out;
    auto add = [&](const lyd_node* tree) {
        for (const lyd_node* n = tree; n; n = n->next) {
            if (!n->schema) {
                continue;
            }
            std::pair<std::string, std::string> top{n->schema->module->name, n->schema->name};
            if (std::find(out.begin(), out.end(), top) == out.end()) {
                out.push_back(std::move(top));
            }
        }
    };
    add(persistent_.get());
    for (const auto& [conn, tree] : pushed_) {
        add(tree.get());
    }
    return out;
}

void Hub::connectionEnded(const Conn& c) {
    {
        const std::unique_lock lock(subsMutex_);
        std::erase_if(subs_, [&](const std::shared_ptr<Sub>& s) {
            const auto owner = s->conn.lock();
            if (owner && owner.get() != &c) {
                return false;
            }
            if (s->mandatory) {
                for (auto& r : required_) {
                    if (r.interest.xpath() == s->interest.xpath()) {
                        --r.holders;
                    }
                }
            }
            return true;
        });
    }
    const std::lock_guard lock(pushMutex_);
    pushed_.erase(&c);
}

bool Hub::withView(const Conn& c, std::uint32_t event,
                   const std::function<void(const ds::Verification&)>& fn) {
    const ds::Verification* view = nullptr;
    {
        const std::lock_guard lock(verifyMutex_);
        const auto it = views_.find({&c, event});
        if (it == views_.end()) {
            return false;
        }
        ++it->second.readers;
        view = it->second.view;
    }
    struct Done {
        Hub& hub;
        std::pair<const Conn*, std::uint32_t> key;
        ~Done() {
            const std::lock_guard lock(hub.verifyMutex_);
            --hub.views_[key].readers;
            hub.viewsCv_.notify_all();
        }
    } done{*this, {&c, event}};
    fn(*view);
    return true;
}

bool Hub::concerns(const ds::ChangeSet& changes) const {
    const std::shared_lock lock(subsMutex_);
    for (const auto& s : subs_) {
        if (s->verify && s->interest.touches(changes)) {
            return true;
        }
    }
    return std::any_of(required_.begin(), required_.end(),
                       [&](const Requirement& r) { return r.holders <= 0 && r.interest.touches(changes); });
}

void Hub::verify(const ds::ChangeSet& changes, const ds::Verification& view) {
    std::vector<std::shared_ptr<Sub>> list;
    {
        const std::shared_lock lock(subsMutex_);
        for (const auto& r : required_) {
            if (r.holders <= 0 && r.interest.touches(changes)) {
                throw ds::Error(ErrorTag::OperationFailed,
                                "the application " + r.app + " that must verify changes of " +
                                    r.interest.xpath() + " is not connected: nothing was committed",
                                describe(changes), "ncstore-app-missing");
            }
        }
        for (const auto& s : subs_) {
            if (s->verify && s->interest.touches(changes)) {
                list.push_back(s);
            }
        }
    }
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a->priority < b->priority; });
    {
        const std::lock_guard lock(verifyMutex_);
        inFlight_[&changes];
    }
    std::vector<std::pair<const Conn*, std::uint32_t>> viewKeys;
    struct ViewsGone {
        Hub& hub;
        std::vector<std::pair<const Conn*, std::uint32_t>>& keys;
        ~ViewsGone() {
            // The view dies with the verification: a read of it still in progress ends first.
            std::unique_lock lock(hub.verifyMutex_);
            for (const auto& k : keys) {
                hub.viewsCv_.wait(lock, [&] { return hub.views_[k].readers == 0; });
                hub.views_.erase(k);
            }
        }
    } gone{*this, viewKeys};
    // An application that is gone before it was asked is no verifier any more (its subscription
    // goes with its connection a moment later), unless the subtree needs it (mandatory).
    auto goneBefore = [&](const Sub& sub) {
        if (sub.mandatory) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "the application " + sub.app + " that must verify changes of " +
                                sub.interest.xpath() + " is not connected: nothing was committed",
                            describe(changes), "ncstore-app-missing");
        }
        NCS_LOG(info) << "application " << sub.app << " is gone: not asked to verify " << describe(changes);
    };
    for (const auto& sub : list) {
        const auto conn = sub->conn.lock();
        if (!conn || conn->closed()) {
            goneBefore(*sub);
            continue;
        }
        proto::Fields f;
        f.add(Field::Subscription, static_cast<std::uint64_t>(sub->id));
        addChanges(f, changes, sub->interest.within(changes));
        const std::uint32_t event = conn->newEvent();
        conn->verifying(1);
        {
            const std::lock_guard lock(verifyMutex_);
            inFlight_[&changes].push_back(Asked{conn, sub->id, event, false});
            views_[{conn.get(), event}] = View{&view, 0};
            viewKeys.emplace_back(conn.get(), event);
        }
        const Conn::Answer a = conn->ask(Type::Verify, std::move(f), sub->deadline, event);
        if (a.kind == Conn::Answer::Kind::NotSent) {
            goneBefore(*sub);
            continue;
        }
        if (a.kind == Conn::Answer::Kind::Timeout) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "the application " + sub->app + " did not verify " + describe(changes) +
                                " within " + std::to_string(sub->deadline.count()) +
                                " ms: nothing was committed",
                            describe(changes), "ncstore-app-timeout");
        }
        if (a.kind == Conn::Answer::Kind::Closed) {
            throw ds::Error(ErrorTag::OperationFailed,
                            "the application " + sub->app + " closed its connection while verifying " +
                                describe(changes) + ": nothing was committed",
                            describe(changes), "ncstore-app-gone");
        }
        if (const auto e = errorOf(a.fields, p_.ctx, sub->app)) {
            NCS_LOG(info) << "application " << sub->app << " refused " << describe(changes) << ": "
                          << e->what();
            throw ds::Error(e->tag, e->what(), e->path, e->appTag, e->info);
        }
        const std::lock_guard lock(verifyMutex_);
        inFlight_[&changes].back().accepted = true;
    }
}

void Hub::finished(const ds::ChangeSet& changes, std::uint64_t commitId) {
    std::vector<Asked> asked;
    {
        const std::lock_guard lock(verifyMutex_);
        const auto it = inFlight_.find(&changes);
        if (it == inFlight_.end()) {
            return;
        }
        asked = std::move(it->second);
        inFlight_.erase(it);
    }
    for (auto it = asked.rbegin(); it != asked.rend(); ++it) {
        const auto conn = it->conn.lock();
        if (!conn) {
            continue;
        }
        if (commitId == 0 && it->accepted) {
            proto::Message m;
            m.type = Type::Abort;
            m.fields.add(Field::Subscription, static_cast<std::uint64_t>(it->sub))
                .add(Field::Event, static_cast<std::uint64_t>(it->event));
            conn->send(m);
        }
        conn->verifying(-1);
    }
}

void Hub::changed(const ds::ChangeSet&) {
    // Never called: published() is overridden, and shares the store's copy.
}

void Hub::published(const std::shared_ptr<const ds::ChangeSet>& changes) {
    publishedBatch({changes});
}

void Hub::publishedBatch(const std::vector<std::shared_ptr<const ds::ChangeSet>>& batch) {
    const std::shared_lock lock(subsMutex_);
    if (subs_.empty()) {
        return;
    }
    for (const auto& changes : batch) {
        if (changes->datastore != ds::Datastore::Running || changes->changes.empty()) {
            continue;
        }
        for (const auto& sub : subs_) {
            if (!sub->apply || !sub->interest.touches(*changes)) {
                continue;
            }
            const std::lock_guard subLock(sub->mutex);
            if (sub->live) {
                deliver(*sub, changes);
            } else {
                sub->held.push_back(changes);
            }
        }
    }
}

void Hub::lost(std::uint64_t through) {
    const std::shared_lock lock(subsMutex_);
    for (const auto& sub : subs_) {
        if (!sub->apply) {
            continue;
        }
        if (const auto conn = sub->conn.lock()) {
            conn->close("lost the change sets through commit " + std::to_string(through) +
                        " (the server's listeners fell behind): it resumes from the last commit it applied");
        }
    }
}

AppServer::AppServer(Parts parts, Options options) : hub_(std::make_unique<Hub>(parts, std::move(options))) {}
AppServer::~AppServer() = default;
const std::filesystem::path& AppServer::socket() const {
    return hub_->options().socket;
}

} // namespace ncstore::netconfd::app
