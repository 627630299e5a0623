// The verify phase (datastore.hpp rule 10, ncstore/changes.hpp Verifier): what an application
// on the device refuses is never written; what all accept is written exactly as verified; and
// no lock of the store is held while a verifier thinks.
#include "temp_store.hpp"
#include "test_support.hpp"

#include "ncstore/changes.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::interfaceNames;
using ncstore::test::interfacesXml;
using ncstore::test::parseEdit;

namespace {

/// Concerns itself with the interfaces whose names start with `prefix`; refuses when told to.
class TestVerifier : public Verifier {
public:
    TestVerifier(std::string prefix, std::string name) : prefix_(std::move(prefix)), name_(std::move(name)) {}

    bool concerns(const ChangeSet& changes) const override {
        // A first interface creates the container /interfaces: its subtree holds the entry.
        const std::string key = "interface[name='" + prefix_;
        const std::string element = "<name>" + prefix_;
        for (const auto& c : changes.changes) {
            if (c.path.find(key) != std::string::npos) {
                return true;
            }
            for (const Tree* t : {&c.newTree, &c.oldTree}) {
                if (*t &&
                    print(t->get(), LYD_XML, LYD_PRINT_WITHSIBLINGS).find(element) != std::string::npos) {
                    return true;
                }
            }
        }
        return false;
    }
    void verify(const ChangeSet& changes, const Verification& view) override {
        {
            const std::lock_guard lock(mutex);
            log.push_back(name_ + ":verify:" + std::to_string(changes.changes.size()));
            if (inspectAfter) {
                afterNames = interfaceNames(view.after());
            }
        }
        if (during) {
            during();
        }
        if (refuse) {
            throw Error(ErrorTag::OperationFailed, name_ + " cannot carry it",
                        "/ietf-interfaces:interfaces/interface[name='" + prefix_ + "1']", "hardware-limit");
        }
    }
    void finished(const ChangeSet&, std::uint64_t commitId) override {
        const std::lock_guard lock(mutex);
        log.push_back(name_ + ":finished:" + (commitId ? "committed" : "aborted"));
        lastCommit = commitId;
    }

    std::mutex mutex;
    std::vector<std::string> log;
    std::vector<std::string> afterNames;
    bool refuse = false;
    bool inspectAfter = false;
    std::function<void()> during;
    std::uint64_t lastCommit = 0;

private:
    std::string prefix_;
    std::string name_;
};

class VerifyTest : public ::testing::Test {
protected:
    void SetUp() override { store = test::openStore(ctx.get(), dir); }
    void write(const std::string& xml) {
        Tree e = parseEdit(ctx.get(), xml);
        last = store->edit({}, Datastore::Running, e.get());
    }
    std::vector<std::string> running() const {
        std::vector<std::string> names;
        store->read(Datastore::Running, [&](const lyd_node* t) { names = interfaceNames(t); });
        return names;
    }

    Context ctx = test::interfacesContext();
    test::TempDir dir;
    std::unique_ptr<Store> store;
    WriteTiming last;
};

TEST_F(VerifyTest, ARefusalReachesTheWriterWithItsFieldsAndNothingIsWritten) {
    TestVerifier v("v", "roadm");
    v.refuse = true;
    store->addVerifier(v);
    try {
        write(interfacesXml("v", 1, 2));
        FAIL() << "the refused edit was written";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::OperationFailed);
        EXPECT_STREQ(e.what(), "roadm cannot carry it");
        EXPECT_EQ(e.path(), "/ietf-interfaces:interfaces/interface[name='v1']");
        EXPECT_EQ(e.appTag(), "hardware-limit");
    }
    EXPECT_TRUE(running().empty());
    EXPECT_EQ(v.log, (std::vector<std::string>{"roadm:verify:1", "roadm:finished:aborted"}));
    store->removeVerifier(v);
    write(interfacesXml("v", 1, 2)); // no verifier any more
    EXPECT_EQ(running(), (std::vector<std::string>{"v1", "v2"}));
}

TEST_F(VerifyTest, AcceptedChangesAreWrittenAndTheVerifiersToldTheirCommitId) {
    TestVerifier v("v", "roadm");
    v.inspectAfter = true;
    store->addVerifier(v);
    write(interfacesXml("a", 1, 1)); // not its business
    EXPECT_TRUE(v.log.empty());
    write(interfacesXml("v", 1, 1));
    EXPECT_EQ(running(), (std::vector<std::string>{"a1", "v1"}));
    EXPECT_EQ(v.log, (std::vector<std::string>{"roadm:verify:1", "roadm:finished:committed"}));
    EXPECT_EQ(v.lastCommit, last.commitId);
    EXPECT_EQ(v.afterNames, (std::vector<std::string>{"a1", "v1"})); // running as the edit leaves it
}

TEST_F(VerifyTest, VerifiersRunInPriorityOrderAndAbortInReverse) {
    TestVerifier first("v", "first");
    TestVerifier second("v", "second");
    TestVerifier third("v", "third");
    store->addVerifier(third, 30);
    store->addVerifier(first, 10);
    store->addVerifier(second, 20);
    std::vector<std::string> order;
    std::mutex orderMutex;
    for (auto* v : {&first, &second, &third}) {
        v->during = [&, v] {
            const std::lock_guard lock(orderMutex);
            order.push_back(v->log.front());
        };
    }
    second.refuse = true;
    EXPECT_THROW(write(interfacesXml("v", 1, 1)), Error);
    EXPECT_EQ(order, (std::vector<std::string>{"first:verify:1", "second:verify:1"})); // third never asked
    EXPECT_EQ(first.log.back(), "first:finished:aborted");
    EXPECT_EQ(second.log.back(), "second:finished:aborted");
    EXPECT_TRUE(third.log.empty());
    EXPECT_TRUE(running().empty());
}

TEST_F(VerifyTest, NoLockIsHeldWhileAVerifierThinksAndAMovedRunningStartsItOver) {
    TestVerifier v("v", "roadm");
    std::atomic<int> calls{0};
    v.during = [&] {
        if (calls++ == 0) {
            // Reads and a write no verifier concerns complete while this one is being verified.
            EXPECT_TRUE(running().empty());
            auto other = std::async(std::launch::async, [&] { write(interfacesXml("a", 1, 1)); });
            ASSERT_EQ(other.wait_for(std::chrono::seconds(10)), std::future_status::ready);
            other.get();
        }
    };
    store->addVerifier(v);
    Tree e = parseEdit(ctx.get(), interfacesXml("v", 1, 1));
    const WriteTiming t = store->edit({}, Datastore::Running, e.get());
    EXPECT_EQ(calls.load(), 2); // verified again on the running the other write left
    EXPECT_EQ(running(), (std::vector<std::string>{"a1", "v1"}));
    EXPECT_EQ(v.log, (std::vector<std::string>{"roadm:verify:1", "roadm:finished:aborted", "roadm:verify:1",
                                               "roadm:finished:committed"}));
    EXPECT_EQ(v.lastCommit, t.commitId);
}

TEST_F(VerifyTest, AVerifiedWriteThatKeepsBeingOvertakenFailsWithNothingWritten) {
    TestVerifier v("v", "roadm");
    int n = 0;
    v.during = [&] {
        auto other = std::async(std::launch::async, [&] { write(interfacesXml("a", ++n, 1)); });
        other.get();
    };
    store->addVerifier(v);
    try {
        write(interfacesXml("v", 1, 1));
        FAIL() << "written";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::OperationFailed);
        EXPECT_NE(std::string(e.what()).find("while applications verified"), std::string::npos) << e.what();
    }
    EXPECT_EQ(n, Store::kVerifyRounds);
    const auto names = running();
    EXPECT_EQ(std::count(names.begin(), names.end(), "v1"), 0);
}

TEST_F(VerifyTest, CommitReplaceAndClearAreVerifiedToo) {
    TestVerifier v("v", "roadm");
    store->addVerifier(v);
    Tree e = parseEdit(ctx.get(), interfacesXml("v", 1, 1));
    store->edit({}, Datastore::Candidate, e.get()); // candidate edits are not verified
    EXPECT_TRUE(v.log.empty());
    v.refuse = true;
    EXPECT_THROW(store->commit({}), Error);
    EXPECT_TRUE(running().empty());
    EXPECT_TRUE(store->candidateModified()); // the refused commit left candidate as it was
    v.refuse = false;
    store->commit({});
    EXPECT_EQ(running(), (std::vector<std::string>{"v1"}));
    v.refuse = true;
    EXPECT_THROW(store->clear({}, Datastore::Running), Error);
    EXPECT_EQ(running(), (std::vector<std::string>{"v1"}));
    Tree other = parseEdit(ctx.get(), interfacesXml("a", 1, 1));
    EXPECT_THROW(store->replace({}, Datastore::Running, other.get()), Error); // deletes v1
    v.refuse = false;
    store->replace({}, Datastore::Running, other.get());
    EXPECT_EQ(running(), (std::vector<std::string>{"a1"}));
    EXPECT_EQ(v.log.size(), 10u); // five writes, each verified and finished
}

TEST_F(VerifyTest, VerifiedWritesSurviveARestartExactlyAsVerified) {
    TestVerifier v("v", "roadm");
    store->addVerifier(v);
    write(interfacesXml("v", 1, 3));
    store->removeVerifier(v);
    store.reset();
    store = test::openStore(ctx.get(), dir);
    EXPECT_EQ(running(), (std::vector<std::string>{"v1", "v2", "v3"}));
}

} // namespace
