#include "users.hpp"

#include "scoped_umask.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

using namespace ncstore::netconfd;

namespace {

std::filesystem::path freshDir(const std::string& name) {
    const auto dir = std::filesystem::path(::testing::TempDir()) / ("ncstored-users-" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "authorized_keys");
    return dir;
}

} // namespace

TEST(Users, HashIsSha512CryptAndVerifies) {
    const auto hash = hashPassword("s3cret");
    EXPECT_EQ(hash.rfind("$6$", 0), 0u);
    EXPECT_TRUE(verifyPassword("s3cret", hash));
    EXPECT_FALSE(verifyPassword("s3cret ", hash));
    EXPECT_FALSE(verifyPassword("", hash));
    EXPECT_NE(hashPassword("s3cret"), hash); // fresh salt every time
    EXPECT_FALSE(verifyPassword("x", ""));
    EXPECT_FALSE(verifyPassword("x", "plain"));
}

TEST(Users, RandomPassword) {
    const auto a = randomPassword();
    EXPECT_EQ(a.size(), 16u);
    EXPECT_NE(a, randomPassword());
    for (char c : a) {
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
    }
}

TEST(Users, FileRoundTripAndPermissions) {
    const ncstore::test::ScopedUmask umask{0}; // 0600 by the code, not by the umask
    const auto dir = freshDir("roundtrip");
    UserDb db(dir / "users", dir / "authorized_keys");
    EXPECT_TRUE(db.empty());
    db.setPassword("admin", "one");
    db.setPassword("oper", "two");
    db.setPassword("admin", "three"); // replaces
    EXPECT_EQ(db.names(), (std::vector<std::string>{"admin", "oper"}));
    EXPECT_TRUE(db.checkPassword("admin", "three"));
    EXPECT_FALSE(db.checkPassword("admin", "one"));
    EXPECT_TRUE(db.checkPassword("oper", "two"));
    EXPECT_FALSE(db.checkPassword("nobody", "two"));

    struct stat st {};
    ASSERT_EQ(stat((dir / "users").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    // A second instance (e.g. `ncstored --add-user` while the server runs) sees the same file.
    UserDb other(dir / "users", dir / "authorized_keys");
    EXPECT_TRUE(other.checkPassword("oper", "two"));
    std::ifstream in(dir / "users");
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content.find("three"), std::string::npos); // never in clear
}

TEST(Users, InvalidNames) {
    const auto dir = freshDir("names");
    UserDb db(dir / "users", dir / "authorized_keys");
    EXPECT_THROW(db.setPassword("", "x"), UserError);
    EXPECT_THROW(db.setPassword("a:b", "x"), UserError);
    EXPECT_THROW(db.setPassword("../etc", "x"), UserError);
    EXPECT_THROW(db.setPassword("ok", ""), UserError);
    EXPECT_TRUE(UserDb::validName("op.er-1_x"));
}

TEST(Users, AuthorizedKeys) {
    const auto dir = freshDir("keys");
    UserDb db(dir / "users", dir / "authorized_keys");
    ssh_key key = nullptr;
    ASSERT_EQ(ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key), SSH_OK);
    ssh_key other = nullptr;
    ASSERT_EQ(ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &other), SSH_OK);
    char* b64 = nullptr;
    ASSERT_EQ(ssh_pki_export_pubkey_base64(key, &b64), SSH_OK);
    {
        std::ofstream out(dir / "authorized_keys" / "alice");
        out << "# keys of alice\nssh-rsa garbage\nssh-ed25519 " << b64 << " alice@host\n";
    }
    ssh_string_free_char(b64);
    EXPECT_TRUE(db.checkPublicKey("alice", key));
    EXPECT_FALSE(db.checkPublicKey("alice", other));
    EXPECT_FALSE(db.checkPublicKey("bob", key));
    EXPECT_FALSE(db.checkPublicKey("../alice", key));
    ssh_key_free(key);
    ssh_key_free(other);
}
