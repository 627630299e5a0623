#include "locks.hpp"

#include <gtest/gtest.h>

using namespace ncstore::netconfd;
using ncstore::ds::Datastore;
using R = LockTable::LockResult;
using U = LockTable::UnlockResult;

TEST(Locks, OneHolderPerDatastore) {
    LockTable t;
    EXPECT_EQ(t.lock(Datastore::Running, 1, false).result, R::Granted);
    const auto denied = t.lock(Datastore::Running, 2, false);
    EXPECT_EQ(denied.result, R::HeldByOther);
    EXPECT_EQ(denied.holder, 1u);
    // RFC 6241 7.5: a second lock by the holder is denied too.
    EXPECT_EQ(t.lock(Datastore::Running, 1, false).result, R::HeldByOther);
    EXPECT_EQ(t.lock(Datastore::Startup, 2, false).result, R::Granted);
    EXPECT_EQ(t.holder(Datastore::Running), 1u);
    EXPECT_EQ(t.holder(Datastore::Startup), 2u);
    EXPECT_EQ(t.holder(Datastore::Candidate), 0u);
}

TEST(Locks, WriteAccess) {
    LockTable t;
    EXPECT_TRUE(t.mayWrite(Datastore::Running, 5));
    t.lock(Datastore::Running, 1, false);
    EXPECT_TRUE(t.mayWrite(Datastore::Running, 1));
    EXPECT_FALSE(t.mayWrite(Datastore::Running, 5));
    EXPECT_TRUE(t.mayWrite(Datastore::Candidate, 5));
}

TEST(Locks, Unlock) {
    LockTable t;
    EXPECT_EQ(t.unlock(Datastore::Running, 1), U::NotLocked);
    t.lock(Datastore::Running, 1, false);
    EXPECT_EQ(t.unlock(Datastore::Running, 2), U::HeldByOther);
    EXPECT_EQ(t.unlock(Datastore::Running, 1), U::Released);
    EXPECT_EQ(t.holder(Datastore::Running), 0u);
    EXPECT_EQ(t.lock(Datastore::Running, 2, false).result, R::Granted);
}

TEST(Locks, SessionEndReleasesItsLocksOnly) {
    LockTable t;
    t.lock(Datastore::Running, 1, false);
    t.lock(Datastore::Candidate, 1, false);
    t.lock(Datastore::Startup, 2, false);
    const auto released = t.releaseAll(1);
    EXPECT_EQ(released.size(), 2u);
    EXPECT_EQ(t.holder(Datastore::Running), 0u);
    EXPECT_EQ(t.holder(Datastore::Candidate), 0u);
    EXPECT_EQ(t.holder(Datastore::Startup), 2u);
    EXPECT_TRUE(t.releaseAll(1).empty());
    EXPECT_EQ(t.held().size(), 1u);
}

TEST(Locks, CandidateModifiedByAnotherSessionCannotBeLocked) {
    LockTable t;
    t.candidateEditedBy(1);
    EXPECT_TRUE(t.candidateEditedByOther(2));
    EXPECT_FALSE(t.candidateEditedByOther(1));
    EXPECT_EQ(t.lock(Datastore::Candidate, 2, true).result, R::CandidateModified);
    // The session that made the changes may lock.
    EXPECT_EQ(t.lock(Datastore::Candidate, 1, true).result, R::Granted);
    t.unlock(Datastore::Candidate, 1);
    // A dirty candidate nobody is known to have modified (e.g. the editor left) is not lockable.
    t.candidateClean();
    EXPECT_EQ(t.lock(Datastore::Candidate, 2, true).result, R::CandidateModified);
    // After commit / discard-changes it is clean again.
    EXPECT_EQ(t.lock(Datastore::Candidate, 2, false).result, R::Granted);
}
