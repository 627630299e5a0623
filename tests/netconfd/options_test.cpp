#include "options.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

using namespace ncstore::netconfd;

namespace {

CommandLine parse(std::vector<const char*> args) {
    args.insert(args.begin(), "ncstored");
    return parseCommandLine(static_cast<int>(args.size()), args.data());
}

} // namespace

TEST(Options, Defaults) {
    const auto cmd = parse({});
    EXPECT_EQ(cmd.action, Action::Run);
    EXPECT_EQ(cmd.config.dataDir, "ncstore-data");
    EXPECT_EQ(cmd.config.listen, "127.0.0.1");
    EXPECT_EQ(cmd.config.port, 8830);
    EXPECT_TRUE(cmd.config.defaultModels);
    EXPECT_EQ(cmd.config.durability, "full");
    EXPECT_TRUE(cmd.config.yangDirs.empty());
    EXPECT_TRUE(cmd.config.portFile.empty());
    EXPECT_EQ(cmd.config.historyMaxCommits, 1000u);
    EXPECT_EQ(cmd.config.historyMaxBytes, 64u * 1024 * 1024);
    EXPECT_EQ(cmd.config.sqliteCacheMb, 16u);
}

TEST(Options, SqliteCache) {
    EXPECT_EQ(parse({"--sqlite-cache-mb", "8"}).config.sqliteCacheMb, 8u);
    EXPECT_THROW(parse({"--sqlite-cache-mb", "0"}), OptionsError);
    EXPECT_THROW(parse({"--sqlite-cache-mb", "lots"}), OptionsError);
}

TEST(Options, CommitHistoryRetention) {
    const auto cmd = parse({"--history-max-commits", "5", "--history-max-bytes", "100000"});
    EXPECT_EQ(cmd.config.historyMaxCommits, 5u);
    EXPECT_EQ(cmd.config.historyMaxBytes, 100000u);
    EXPECT_EQ(parse({"--history-max-commits", "0"}).config.historyMaxCommits, 0u); // off
    EXPECT_THROW(parse({"--history-max-bytes", "100"}), OptionsError);
    EXPECT_THROW(parse({"--history-max-commits", "many"}), OptionsError);
}

TEST(Options, CommandLineValues) {
    const auto cmd = parse({"--data-dir", "/tmp/x", "--port", "0", "--yang-dir", "a", "--yang-dir", "b",
                            "--no-default-models", "--durability", "off", "--idle-timeout", "30",
                            "--max-message-size", "100000", "--max-sessions", "7", "--print-port-file", "p"});
    EXPECT_EQ(cmd.config.dataDir, "/tmp/x");
    EXPECT_EQ(cmd.config.port, 0);
    ASSERT_EQ(cmd.config.yangDirs.size(), 2u);
    EXPECT_EQ(cmd.config.yangDirs[1], "b");
    EXPECT_FALSE(cmd.config.defaultModels);
    EXPECT_EQ(cmd.config.durability, "off");
    EXPECT_EQ(cmd.config.idleTimeout, 30u);
    EXPECT_EQ(cmd.config.maxMessageSize, 100000u);
    EXPECT_EQ(cmd.config.maxSessions, 7u);
    EXPECT_EQ(cmd.config.portFile, "p");
}

TEST(Options, ConfigFileAndCommandLinePrecedence) {
    const std::string file = ::testing::TempDir() + "/ncstored-test.conf";
    {
        std::ofstream out(file);
        out << "# comment\nport = 9999\nlisten = 127.0.0.2\nyang-dir = /y1\ndurability = normal\n";
    }
    const auto cmd = parse({"--config", file.c_str(), "--port", "1234"});
    EXPECT_EQ(cmd.config.port, 1234); // the command line wins
    EXPECT_EQ(cmd.config.listen, "127.0.0.2");
    EXPECT_EQ(cmd.config.durability, "normal");
    ASSERT_EQ(cmd.config.yangDirs.size(), 1u);
    EXPECT_EQ(cmd.config.yangDirs[0], "/y1");
}

TEST(Options, Actions) {
    EXPECT_EQ(parse({"--help"}).action, Action::Help);
    EXPECT_FALSE(parse({"--help"}).helpText.empty());
    EXPECT_EQ(parse({"--version"}).action, Action::Version);
    const auto add = parse({"--add-user", "bob", "--data-dir", "d"});
    EXPECT_EQ(add.action, Action::AddUser);
    EXPECT_EQ(add.addUser, "bob");
    EXPECT_EQ(add.config.dataDir, "d");
    EXPECT_EQ(add.group, "");
    const auto grouped = parse({"--add-user", "bob", "--group", "operators"});
    EXPECT_EQ(grouped.action, Action::AddUser);
    EXPECT_EQ(grouped.group, "operators");
    EXPECT_EQ(parse({"--reset-nacm", "--data-dir", "d"}).action, Action::ResetNacm);
    EXPECT_EQ(parse({"--nacm-recovery-user", "root"}).config.nacmRecoveryUser, "root");
    EXPECT_EQ(parse({}).config.nacmRecoveryUser, "") << "no recovery user unless one is configured";
}

TEST(Options, Errors) {
    EXPECT_THROW(parse({"--port", "70000"}), OptionsError);
    EXPECT_THROW(parse({"--port", "abc"}), OptionsError);
    EXPECT_THROW(parse({"--durability", "sometimes"}), OptionsError);
    EXPECT_THROW(parse({"--no-such-option"}), OptionsError);
    EXPECT_THROW(parse({"--max-sessions", "0"}), OptionsError);
    EXPECT_THROW(parse({"--config", "/nonexistent/ncstored.conf"}), OptionsError);
    EXPECT_THROW(parse({"--group", "admin"}), OptionsError) << "--group without --add-user";
    EXPECT_THROW(parse({"--add-user", "bob", "--reset-nacm"}), OptionsError);
}

TEST(Options, DqliteBackend) {
    const auto run = parse({"--backend", "dqlite", "--dqlite-id", "2", "--dqlite-address", "10.0.0.2:9001",
                            "--dqlite-peer", "10.0.0.1:9001", "--dqlite-peer", "10.0.0.3:9001"});
    EXPECT_EQ(run.action, Action::Run);
    EXPECT_EQ(run.config.backend, "dqlite");
    EXPECT_EQ(run.config.dqliteId, 2u);
    EXPECT_EQ(run.config.dqlitePeers, (std::vector<std::string>{"10.0.0.1:9001", "10.0.0.3:9001"}));
    const auto add = parse({"--cluster-add", "4@10.0.0.4:9001", "--dqlite-peer", "10.0.0.1:9001"});
    EXPECT_EQ(add.action, Action::ClusterAdd);
    EXPECT_EQ(add.addNode, "4@10.0.0.4:9001");
    const auto recover = parse({"--backend", "dqlite", "--dqlite-address", "10.0.0.1:9001",
                                "--cluster-recover", "1@10.0.0.1:9001,3@10.0.0.3:9001"});
    EXPECT_EQ(recover.survivors, (std::vector<std::string>{"1@10.0.0.1:9001", "3@10.0.0.3:9001"}));
    // Refused: no address; a joining node without peers; NACM changes offline; two commands;
    // cluster options without the backend; an unknown backend.
    EXPECT_THROW(parse({"--backend", "dqlite"}), OptionsError);
    EXPECT_THROW(parse({"--backend", "dqlite", "--dqlite-id", "2", "--dqlite-address", "10.0.0.2:9001"}),
                 OptionsError);
    EXPECT_THROW(parse({"--backend", "dqlite", "--dqlite-address", "10.0.0.1:9001", "--reset-nacm"}),
                 OptionsError);
    EXPECT_THROW(parse({"--cluster-status", "--cluster-remove", "3", "--dqlite-peer", "10.0.0.1:9001"}),
                 OptionsError);
    EXPECT_THROW(parse({"--dqlite-peer", "10.0.0.1:9001"}), OptionsError);
    EXPECT_THROW(parse({"--backend", "raft"}), OptionsError);
}
