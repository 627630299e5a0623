// The datastore locks of RFC 6241 7.5 / 7.6, kept by the store so that a write's lock check and
// the write itself are one critical section.
#include "temp_store.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::interfaceNames;
using ncstore::test::interfacesXml;
using ncstore::test::parseEdit;
using R = LockResult;
using U = UnlockResult;

namespace {

class LocksTest : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = test::interfacesContext();
        StoreOptions o;
        o.file = dir_.path() / "ncstore.db";
        store_ = Store::open(ctx_.get(), o);
    }

    void edit(std::uint32_t session, Datastore ds, const std::string& xml) {
        Tree e = parseEdit(ctx_.get(), xml);
        store_->edit({session, "user" + std::to_string(session)}, ds, e.get());
    }

    std::vector<std::string> names(Datastore ds) const {
        std::vector<std::string> out;
        store_->read(ds, [&](const lyd_node* t) { out = interfaceNames(t); });
        return out;
    }

    Context ctx_;
    test::TempDir dir_;
    std::unique_ptr<Store> store_;
};

TEST_F(LocksTest, OneHolderPerDatastore) {
    EXPECT_EQ(store_->lock(Datastore::Running, 1).result, R::Granted);
    const auto denied = store_->lock(Datastore::Running, 2);
    EXPECT_EQ(denied.result, R::HeldByOther);
    EXPECT_EQ(denied.holder, 1u);
    // RFC 6241 7.5: a second lock by the holder is denied too.
    EXPECT_EQ(store_->lock(Datastore::Running, 1).result, R::HeldByOther);
    EXPECT_EQ(store_->lock(Datastore::Startup, 2).result, R::Granted);
    const auto held = store_->locks();
    ASSERT_EQ(held.size(), 2u);
    EXPECT_EQ(held[0].ds, Datastore::Running);
    EXPECT_EQ(held[0].session, 1u);
    EXPECT_EQ(held[1].ds, Datastore::Startup);
    EXPECT_EQ(held[1].session, 2u);
}

TEST_F(LocksTest, OnlyTheHolderWritesALockedDatastore) {
    store_->lock(Datastore::Running, 1);
    try {
        edit(2, Datastore::Running, interfacesXml("other", 0, 1));
        FAIL() << "a write into a datastore locked by another session was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.tag(), ErrorTag::InUse);
        EXPECT_NE(std::string(e.what()).find("session 1"), std::string::npos) << e.what();
    }
    edit(1, Datastore::Running, interfacesXml("mine", 0, 1));
    // Other datastores stay writable; the server itself (session 0) is never blocked.
    edit(2, Datastore::Candidate, interfacesXml("cand", 0, 1));
    EXPECT_THROW(store_->commit({2, "user2"}), Error);
    EXPECT_THROW(store_->copy({2, "user2"}, Datastore::Candidate, Datastore::Running), Error);
    edit(0, Datastore::Running, interfacesXml("server", 0, 1));
    EXPECT_EQ(names(Datastore::Running), (std::vector<std::string>{"mine0", "server0"}));
    EXPECT_EQ(store_->unlock(Datastore::Running, 1), U::Released);
    store_->commit({2, "user2"}); // running := candidate, copied from running before server0
    EXPECT_EQ(names(Datastore::Running), (std::vector<std::string>{"mine0", "cand0"}));
}

TEST_F(LocksTest, Unlock) {
    EXPECT_EQ(store_->unlock(Datastore::Running, 1), U::NotLocked);
    store_->lock(Datastore::Running, 1);
    EXPECT_EQ(store_->unlock(Datastore::Running, 2), U::HeldByOther);
    EXPECT_EQ(store_->unlock(Datastore::Running, 1), U::Released);
    EXPECT_TRUE(store_->locks().empty());
    EXPECT_EQ(store_->lock(Datastore::Running, 2).result, R::Granted);
}

TEST_F(LocksTest, SessionEndReleasesItsLocksOnlyAndItsCandidateChanges) {
    store_->lock(Datastore::Running, 1);
    store_->lock(Datastore::Candidate, 1);
    store_->lock(Datastore::Startup, 2);
    edit(1, Datastore::Candidate, interfacesXml("cand", 0, 1));
    const auto released = store_->releaseSession(1);
    EXPECT_EQ(released, (std::vector<Datastore>{Datastore::Running, Datastore::Candidate}));
    EXPECT_TRUE(store_->releaseSession(1).empty());
    ASSERT_EQ(store_->locks().size(), 1u);
    EXPECT_EQ(store_->locks()[0].session, 2u);
    // RFC 6241 8.3.5.2: candidate changes made under the lock went with it.
    EXPECT_FALSE(store_->candidateModified());
    EXPECT_TRUE(names(Datastore::Candidate).empty());
}

TEST_F(LocksTest, UnlockingCandidateDiscardsItsChanges) {
    store_->lock(Datastore::Candidate, 1);
    edit(1, Datastore::Candidate, interfacesXml("cand", 0, 1));
    EXPECT_EQ(store_->unlock(Datastore::Candidate, 1), U::Released);
    EXPECT_FALSE(store_->candidateModified());
}

TEST_F(LocksTest, CandidateModifiedByAnotherSessionCannotBeLocked) {
    edit(1, Datastore::Candidate, interfacesXml("cand", 0, 1));
    EXPECT_EQ(store_->lock(Datastore::Candidate, 2).result, R::CandidateModified);
    // The session that made the changes may lock.
    EXPECT_EQ(store_->lock(Datastore::Candidate, 1).result, R::Granted);
    store_->releaseSession(1); // discards: candidate is clean again
    EXPECT_EQ(store_->lock(Datastore::Candidate, 2).result, R::Granted);
    store_->unlock(Datastore::Candidate, 2);
    // Changes of a session that went away without a lock stay someone else's until committed.
    edit(3, Datastore::Candidate, interfacesXml("left", 0, 1));
    store_->releaseSession(3);
    EXPECT_EQ(store_->lock(Datastore::Candidate, 2).result, R::CandidateModified);
    store_->commit({2, "user2"});
    EXPECT_EQ(store_->lock(Datastore::Candidate, 2).result, R::Granted);
}

} // namespace
