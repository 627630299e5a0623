// The store's files at rest: database, WAL, shared memory and backups are 0600 whatever the
// umask of the program using the datastore library; a store left readable is made private.
#include "scoped_umask.hpp"
#include "temp_store.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

using namespace ncstore;
using namespace ncstore::ds;
using ncstore::test::modeOf;
using ncstore::test::ScopedUmask;

namespace {

class StoreFiles : public ::testing::Test {
protected:
    void SetUp() override { ctx_ = test::interfacesContext(); }

    std::unique_ptr<Store> open() {
        StoreOptions o;
        o.file = db();
        return Store::open(ctx_.get(), o);
    }
    void addInterfaces(Store& s, int first) {
        Tree e = test::parseEdit(ctx_.get(), test::interfacesXml("eth", first, 3));
        s.edit({}, Datastore::Running, e.get());
    }
    std::filesystem::path db() const { return dir_.path() / "ncstore.db"; }
    std::string companion(const char* suffix) const { return db().string() + suffix; }

    ScopedUmask umask_{0};
    Context ctx_;
    test::TempDir dir_;
};

TEST_F(StoreFiles, DatabaseWalAndShmAre0600) {
    auto s = open();
    addInterfaces(*s, 0);
    ASSERT_TRUE(std::filesystem::exists(companion("-wal")));
    ASSERT_TRUE(std::filesystem::exists(companion("-shm")));
    EXPECT_EQ(modeOf(db().c_str()), 0600u);
    EXPECT_EQ(modeOf(companion("-wal").c_str()), 0600u);
    EXPECT_EQ(modeOf(companion("-shm").c_str()), 0600u);
}

TEST_F(StoreFiles, AStoreLeftReadableIsMadePrivateOnOpen) {
    open().reset();
    // What an older ncstore may leave: the store and the WAL and shared memory of a process that
    // did not close them, readable by everybody (empty ones: SQLite starts them afresh).
    ASSERT_EQ(::chmod(db().c_str(), 0644), 0);
    for (const std::string& f : {companion("-wal"), companion("-shm")}) {
        { std::ofstream(f) << ""; }
        ASSERT_EQ(::chmod(f.c_str(), 0644), 0) << f;
    }
    auto s = open();
    EXPECT_EQ(modeOf(db().c_str()), 0600u);
    EXPECT_EQ(modeOf(companion("-wal").c_str()), 0600u);
    EXPECT_EQ(modeOf(companion("-shm").c_str()), 0600u);
    addInterfaces(*s, 0);
    s.reset();
    s = open();
    std::vector<std::string> names;
    s->read(Datastore::Running, [&](const lyd_node* t) { names = test::interfaceNames(t); });
    EXPECT_EQ(names.size(), 3u);
}

TEST_F(StoreFiles, BackupsAre0600) {
    auto s = open();
    addInterfaces(*s, 0);
    const auto online = dir_.path() / "ncstore.db.backup-1";
    s->backup(online);
    EXPECT_EQ(modeOf(online.c_str()), 0600u);

    // Over an existing file that others could read: it is made private before the copy.
    const auto offline = dir_.path() / "ncstore.db.backup-2";
    { std::ofstream(offline) << ""; }
    ASSERT_EQ(::chmod(offline.c_str(), 0644), 0);
    s.reset();
    backupStore(db(), offline);
    EXPECT_EQ(modeOf(offline.c_str()), 0600u);

    // and the copy is a store
    StoreOptions o;
    o.file = offline;
    auto restored = Store::open(ctx_.get(), o);
    std::vector<std::string> names;
    restored->read(Datastore::Running, [&](const lyd_node* t) { names = test::interfaceNames(t); });
    EXPECT_EQ(names, (std::vector<std::string>{"eth0", "eth1", "eth2"}));
}

} // namespace
