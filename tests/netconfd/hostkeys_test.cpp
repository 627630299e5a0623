// SSH host keys: generated once, 0600 whatever the umask, loadable, never overwritten.
#include "hostkeys.hpp"

#include "scoped_umask.hpp"

#include <gtest/gtest.h>

#include <libssh/libssh.h>

#include <fstream>
#include <sstream>

using namespace ncstore::netconfd;
using ncstore::test::modeOf;

namespace {

std::string content(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(HostKeys, Generated0600LoadableAndKept) {
    const ncstore::test::ScopedUmask umask{0};
    const auto dir = std::filesystem::path(::testing::TempDir()) / "ncstored-hostkeys";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);

    const auto keys = ensureHostKeys(dir);
    ASSERT_EQ(keys.size(), 2u);
    std::vector<std::string> first;
    for (const auto& k : keys) {
        EXPECT_EQ(modeOf(k.c_str()), 0600u) << k;
        ssh_key key = nullptr;
        EXPECT_EQ(ssh_pki_import_privkey_file(k.c_str(), nullptr, nullptr, nullptr, &key), SSH_OK) << k;
        ssh_key_free(key);
        first.push_back(content(k));
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "ssh_host_rsa_key.tmp"));

    // Clients pin host keys: a second start keeps them, made private again if they were not.
    ASSERT_EQ(::chmod(keys[0].c_str(), 0644), 0);
    const auto again = ensureHostKeys(dir);
    for (std::size_t i = 0; i < again.size(); ++i) {
        EXPECT_EQ(content(again[i]), first[i]);
        EXPECT_EQ(modeOf(again[i].c_str()), 0600u) << again[i];
    }
    std::filesystem::remove_all(dir);
}

} // namespace
