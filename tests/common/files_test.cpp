// Files at rest (ncstore/files.hpp): what an operator finds with ls -l, whatever the umask of
// the program that created the files, and which directories are refused.
#include "ncstore/files.hpp"

#include "scoped_umask.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

using namespace ncstore;
using ncstore::test::modeOf;
using ncstore::test::ScopedUmask;

namespace {

class Files : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ =
            std::filesystem::path(::testing::TempDir()) /
            (std::string("ncstore-files-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    static std::string read(const std::filesystem::path& p) {
        std::ifstream in(p);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
    static void write(const std::filesystem::path& p, const std::string& text, mode_t mode) {
        std::ofstream(p) << text;
        ASSERT_EQ(::chmod(p.c_str(), mode), 0);
    }

    std::filesystem::path dir_;
    ScopedUmask umask_{0};
};

TEST_F(Files, DataDirectoryIsCreated0700WithItsParents) {
    const auto data = dir_ / "a" / "b" / "data";
    files::preparePrivateDir(data);
    EXPECT_EQ(modeOf(data.c_str()), 0700u);
    files::preparePrivateDir(data); // again: already there, accepted
    EXPECT_EQ(modeOf(data.c_str()), 0700u);
}

TEST_F(Files, TrailingSlashNamesTheSameDirectory) {
    const auto data = dir_ / "data";
    files::preparePrivateDir(data.string() + "/");
    EXPECT_EQ(modeOf(data.c_str()), 0700u);
}

TEST_F(Files, ExistingDirectoryOthersCannotWriteIsKeptAsItIs) {
    for (mode_t mode : {0700, 0750, 0755}) {
        const auto d = dir_ / std::to_string(mode);
        ASSERT_EQ(::mkdir(d.c_str(), mode), 0);
        EXPECT_NO_THROW(files::preparePrivateDir(d)) << std::oct << mode;
        EXPECT_EQ(modeOf(d.c_str()), mode);
    }
}

TEST_F(Files, DirectoryGroupOrOthersCanWriteIsRefusedWithTheFix) {
    for (mode_t mode : {0777, 0770, 0720, 0702, 01777}) {
        const auto d = dir_ / std::to_string(mode);
        ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
        ASSERT_EQ(::chmod(d.c_str(), mode), 0);
        try {
            files::preparePrivateDir(d);
            ADD_FAILURE() << "accepted mode " << std::oct << mode;
        } catch (const files::UnsafePermissions& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(d.string()), std::string::npos) << what;
            EXPECT_NE(what.find("chmod go-w"), std::string::npos) << what;
        }
        EXPECT_THROW(files::checkPrivateDir(d), files::UnsafePermissions);
        EXPECT_EQ(modeOf(d.c_str()), mode) << "a refused directory must not be changed";
    }
}

TEST_F(Files, AFileInPlaceOfTheDirectoryIsRefused) {
    write(dir_ / "data", "x", 0600);
    EXPECT_THROW(files::preparePrivateDir(dir_ / "data"), files::UnsafePermissions);
    EXPECT_THROW(files::checkPrivateDir(dir_ / "missing"), std::system_error);
}

TEST_F(Files, PrivateFileIsCreatedEmpty0600) {
    const auto f = dir_ / "ncstore.db";
    EXPECT_EQ(files::ensurePrivateFile(f), f);
    EXPECT_EQ(modeOf(f.c_str()), 0600u);
    EXPECT_EQ(std::filesystem::file_size(f), 0u);
}

TEST_F(Files, ExistingFileLosesGroupAndOtherBitsAndKeepsItsContent) {
    const auto f = dir_ / "ncstore.db";
    write(f, "content", 0664);
    files::ensurePrivateFile(f);
    EXPECT_EQ(modeOf(f.c_str()), 0600u);
    EXPECT_EQ(read(f), "content");
    write(f, "content", 0400); // read-only for its owner stays so
    files::ensurePrivateFile(f);
    EXPECT_EQ(modeOf(f.c_str()), 0400u);
}

TEST_F(Files, DevicesAndPipesAreLeftAlone) {
    const auto fifo = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
    files::ensurePrivateFile(fifo);
    EXPECT_EQ(modeOf(fifo.c_str()), 0666u);
}

TEST_F(Files, PrivateWriteReplacesTheContentAnd0600) {
    const auto f = dir_ / "users";
    write(f, "old content, longer than the new one", 0644);
    write(dir_ / "users.tmp", "left by a crash", 0666);
    files::writePrivateFile(f, "new");
    EXPECT_EQ(read(f), "new");
    EXPECT_EQ(modeOf(f.c_str()), 0600u);
    EXPECT_FALSE(std::filesystem::exists(dir_ / "users.tmp"));
    files::writePrivateFile(dir_ / "fresh", "");
    EXPECT_EQ(modeOf((dir_ / "fresh").c_str()), 0600u);
}

TEST_F(Files, PrivateWriteIntoAMissingDirectoryFailsNamingTheFile) {
    try {
        files::writePrivateFile(dir_ / "missing" / "users", "x");
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("missing/users.tmp"), std::string::npos) << e.what();
    }
}

TEST_F(Files, AProcessLockIsHeldUntilReleasedAndNamesItsHolder) {
    const auto file = dir_ / "ncstored.lock";
    const ScopedUmask umaskZero(0);
    {
        files::ProcessLock held(file);
        EXPECT_EQ(modeOf(file.c_str()), 0600u);
        EXPECT_EQ(read(file), std::to_string(::getpid()) + "\n");
        // flock belongs to the open file: a second open, even in this process, is refused.
        try {
            files::ProcessLock second(file);
            ADD_FAILURE() << "a held lock was taken twice";
        } catch (const files::LockHeld& e) {
            EXPECT_EQ(e.pid(), ::getpid());
            EXPECT_NE(std::string(e.what()).find(std::to_string(::getpid())), std::string::npos) << e.what();
        }
    }
    files::ProcessLock again(file); // released with the first holder
}

} // namespace
