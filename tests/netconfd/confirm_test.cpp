// The confirmed-commit state machine (netconfd/changes/confirm) on a real store: the deadline, a failed
// commit, and what a restart finds in the journal. The NETCONF side is in
// tests/e2e/test_confirmed_commit.py.
#include "confirm.hpp"
#include "server_context.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

#include "temp_store.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace ncstore::netconfd::test {
namespace {

using confirm::CommitParams;
using confirm::ConfirmedCommit;
using confirm::Event;

Tree parse(const std::string& names) {
    std::string xml = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">";
    for (char c : names) {
        xml += std::string("<interface><name>") + c +
               "</name><type xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
               "ianaift:ethernetCsmacd</type></interface>";
    }
    xml += "</interfaces>";
    return parseData(serverContext(), xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE,
                     0);
}

class Confirm : public ::testing::Test {
protected:
    void SetUp() override { open(); }
    void TearDown() override {
        confirm_.reset();
        store_.reset();
    }
    /// Opens the store and a ConfirmedCommit on it, as a (re)started server does.
    void open() {
        confirm_.reset();
        store_.reset();
        store_ = ncstore::test::openStore(serverContext(), dir_);
        confirm_ = std::make_unique<ConfirmedCommit>(
            *store_, serverContext(),
            [this](const lyd_node* config) { store_->replace({}, ds::Datastore::Running, config); },
            [this](const confirm::Notice& n) { events_.push_back(n.event); });
    }
    void edit(ds::Datastore ds, const std::string& names) { store_->edit({}, ds, parse(names).get()); }
    /// The interface names in running.
    std::set<std::string> running() const {
        std::set<std::string> out;
        store_->read(ds::Datastore::Running, [&](const lyd_node* tree) {
            out.clear();
            ly_set* set = nullptr;
            if (tree &&
                lyd_find_xpath(tree, "/ietf-interfaces:interfaces/interface/name", &set) == LY_SUCCESS) {
                for (std::uint32_t i = 0; i < set->count; ++i) {
                    out.insert(lyd_get_value(set->dnodes[i]));
                }
                ly_set_free(set, nullptr);
            }
        });
        return out;
    }
    ds::WriteTiming commitCandidate() { return store_->commit(who_); }

    ncstore::test::TempDir dir_;
    std::unique_ptr<ds::Store> store_;
    std::unique_ptr<ConfirmedCommit> confirm_;
    std::vector<Event> events_;
    const ds::WriteContext who_{7, "alice", nullptr, "127.0.0.1"};
};

TEST_F(Confirm, RolledBackAtTheDeadlineAndNotBefore) {
    edit(ds::Datastore::Running, "a");
    edit(ds::Datastore::Candidate, "b");
    CommitParams p;
    p.confirmed = true;
    p.timeout = 10;
    const auto start = ConfirmedCommit::Clock::now();
    confirm_->commit(who_, p, [this] { return commitCandidate(); });
    EXPECT_EQ(running(), (std::set<std::string>{"a", "b"}));
    confirm_->tick(start + std::chrono::seconds(5));
    EXPECT_TRUE(confirm_->pending());
    EXPECT_EQ(running(), (std::set<std::string>{"a", "b"}));
    confirm_->tick(start + std::chrono::seconds(11));
    EXPECT_FALSE(confirm_->pending());
    EXPECT_EQ(running(), (std::set<std::string>{"a"}));
    EXPECT_EQ(events_, (std::vector<Event>{Event::Start, Event::Timeout}));
}

TEST_F(Confirm, AFailedConfirmedCommitLeavesNothingPendingNotEvenForARestart) {
    edit(ds::Datastore::Running, "a");
    CommitParams p;
    p.confirmed = true;
    EXPECT_THROW(
        confirm_->commit(who_, p,
                         []() -> ds::WriteTiming { throw ds::Error(ds::ErrorTag::InvalidValue, "refused"); }),
        ds::Error);
    EXPECT_FALSE(confirm_->pending());
    EXPECT_TRUE(events_.empty());
    edit(ds::Datastore::Running, "c"); // after the failed commit: a restart must keep it
    open();
    confirm_->recover();
    EXPECT_EQ(running(), (std::set<std::string>{"a", "c"}));
}

TEST_F(Confirm, PendingAtARestartIsRolledBackOnceAndConfirmedIsNot) {
    edit(ds::Datastore::Running, "a");
    edit(ds::Datastore::Candidate, "b");
    CommitParams p;
    p.confirmed = true;
    p.persist = "x";
    confirm_->commit(who_, p, [this] { return commitCandidate(); });
    open(); // the server stopped with the confirmed commit pending
    confirm_->recover();
    EXPECT_EQ(running(), (std::set<std::string>{"a"}));
    edit(ds::Datastore::Running, "d");
    open();
    confirm_->recover(); // nothing pending any more: nothing undone
    EXPECT_EQ(running(), (std::set<std::string>{"a", "d"}));

    // Confirmed, then restarted: kept.
    edit(ds::Datastore::Candidate, "e");
    confirm_->commit(who_, p, [this] { return commitCandidate(); });
    CommitParams confirming;
    confirming.persistId = "x";
    confirm_->commit({9, "bob", nullptr, ""}, confirming, [this] { return commitCandidate(); });
    open();
    confirm_->recover();
    EXPECT_EQ(running(), (std::set<std::string>{"a", "d", "e"}));
}

TEST_F(Confirm, FollowUpsKeepOneRollbackPointOnDiskAndTheFirstOneCounts) {
    edit(ds::Datastore::Running, "a");
    CommitParams p;
    p.confirmed = true;
    for (char c : std::string("bcdef")) {
        edit(ds::Datastore::Candidate, std::string(1, c));
        confirm_->commit(who_, p, [this] { return commitCandidate(); });
    }
    std::size_t rows = 0;
    store_->readJournal(confirm::kJournal, 0, [&](const ds::JournalRow&) { ++rows; });
    EXPECT_EQ(rows, 1u);
    EXPECT_EQ(running(), (std::set<std::string>{"a", "b", "c", "d", "e", "f"}));
    confirm_->cancel(who_, std::nullopt);
    EXPECT_EQ(running(), (std::set<std::string>{"a"}));
    rows = 0;
    store_->readJournal(confirm::kJournal, 0, [&](const ds::JournalRow&) { ++rows; });
    EXPECT_EQ(rows, 0u);
    EXPECT_EQ(events_, (std::vector<Event>{Event::Start, Event::Extend, Event::Extend, Event::Extend,
                                           Event::Extend, Event::Cancel}));
}

TEST_F(Confirm, OnlyTheIssuerOrTheTokenMayFollowUp) {
    edit(ds::Datastore::Candidate, "b");
    CommitParams p;
    p.confirmed = true;
    confirm_->commit(who_, p, [this] { return commitCandidate(); });
    const ds::WriteContext other{8, "bob", nullptr, ""};
    try {
        confirm_->commit(other, {}, [this] { return commitCandidate(); });
        FAIL() << "another session confirmed a commit without persist";
    } catch (const ds::Error& e) {
        EXPECT_EQ(e.tag(), ds::ErrorTag::InUse);
    }
    CommitParams byToken;
    byToken.persistId = "nope";
    try {
        confirm_->cancel(other, byToken.persistId);
        FAIL() << "a persist-id that matches nothing cancelled";
    } catch (const ds::Error& e) {
        EXPECT_EQ(e.tag(), ds::ErrorTag::InvalidValue);
    }
    EXPECT_TRUE(confirm_->pending());
    confirm_->sessionEnded(other.session); // not the issuer: nothing happens
    EXPECT_TRUE(confirm_->pending());
    confirm_->sessionEnded(who_.session);
    EXPECT_FALSE(confirm_->pending());
    EXPECT_TRUE(running().empty());
}

} // namespace
} // namespace ncstore::netconfd::test
