// The NETCONF event stream on a real store: config changes logged with their commit, server
// events in order with them, delivery once durable, replay windows, retention.
#include "service.hpp"

#include "ncstore/models.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

using namespace ncstore;
using namespace ncstore::netconfd::notify;
using Clock = std::chrono::system_clock;

namespace {

const ly_ctx* context() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

class ServiceTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("ncstore-notify-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::unique_ptr<ds::Store> open() {
        ds::StoreOptions o;
        o.file = dir_ / "ncstore.db";
        o.durability = ds::Durability::Off;
        return ds::Store::open(context(), o);
    }
    static void addInterface(ds::Store& s, const std::string& name, std::uint32_t session = 3) {
        const std::string xml =
            "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"><interface><name>" + name +
            "</name><type xmlns:ia=\"urn:ietf:params:xml:ns:yang:iana-if-type\">ia:ethernetCsmacd"
            "</type></interface></interfaces>";
        lyd_node* raw = nullptr;
        ASSERT_EQ(
            lyd_parse_data_mem(context(), xml.c_str(), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0, &raw),
            LY_SUCCESS);
        const Tree edit{raw};
        s.edit({session, "carol", nullptr, "198.51.100.4"}, ds::Datastore::Running, edit.get());
    }
    /// Waits until `sub` got `n` events; returns them.
    static std::vector<EventPtr> await(Subscription& sub, std::size_t n) {
        std::vector<EventPtr> got;
        for (int i = 0; i < 500 && got.size() < n; ++i) {
            for (auto& e : sub.take()) {
                got.push_back(e);
            }
            if (got.size() < n) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
        return got;
    }

    std::filesystem::path dir_;
};

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_F(ServiceTest, ChangesAndServerEventsAreLoggedAndDeliveredInCommitOrder) {
    std::uint64_t lastId = 0;
    {
        auto store = open();
        Service service(*store, context(), {});
        auto sub = service.bus().subscribe(100, 1 << 20, nullptr);
        service.raise(sessionStart({3, "carol", "198.51.100.4"}));
        addInterface(*store, "eth0");
        service.raise(sessionEnd({3, "carol", "198.51.100.4"}, "closed", 0));
        const auto got = await(*sub, 3);
        ASSERT_EQ(got.size(), 3u);
        EXPECT_TRUE(contains(got[0]->content, "<netconf-session-start"));
        EXPECT_TRUE(contains(got[1]->content, "<netconf-config-change"));
        EXPECT_TRUE(contains(got[1]->content, "<source-host>198.51.100.4</source-host>"));
        EXPECT_TRUE(contains(got[1]->content, "ietf-interfaces:interfaces"));
        EXPECT_TRUE(contains(got[2]->content, "<netconf-session-end"));
        EXPECT_LT(got[0]->id, got[1]->id);
        EXPECT_LT(got[1]->id, got[2]->id);
        lastId = got[2]->id;
    }
    // On disk with the commit ids they were delivered with.
    auto store = open();
    Service service(*store, context(), {});
    std::vector<std::uint64_t> ids;
    const auto through =
        service.replay(Clock::time_point{}, std::nullopt, [&](const Event& e) { ids.push_back(e.id); });
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(ids.back(), lastId);
    EXPECT_EQ(through, lastId);
}

TEST_F(ServiceTest, ReplayKeepsToItsTimeWindow) {
    auto store = open();
    Service service(*store, context(), {});
    addInterface(*store, "a");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto middle = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    addInterface(*store, "b");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto end = Clock::now();
    addInterface(*store, "c");
    // Which interfaces the replayed events name ("a" is the first: its event creates the
    // container, so it names no entry: "-").
    auto names = [&](Clock::time_point from, std::optional<Clock::time_point> to) {
        std::string out;
        service.replay(from, to, [&](const Event& e) {
            bool named = false;
            for (const char* n : {"a", "b", "c"}) {
                if (contains(e.content, std::string("&apos;") + n + "&apos;")) {
                    out += n;
                    named = true;
                }
            }
            out += named ? "" : "-";
        });
        return out;
    };
    EXPECT_EQ(names(Clock::time_point{}, std::nullopt), "-bc");
    EXPECT_EQ(names(middle, std::nullopt), "bc");
    EXPECT_EQ(names(middle, end), "b");
    EXPECT_EQ(names(Clock::now() + std::chrono::hours(1), std::nullopt), "");
}

TEST_F(ServiceTest, RetentionDropsTheOldest) {
    auto store = open();
    Service::Options o;
    o.maxEvents = 3;
    Service service(*store, context(), o);
    for (int i = 0; i < 6; ++i) {
        addInterface(*store, "eth" + std::to_string(i));
    }
    auto sub = service.bus().subscribe(100, 1 << 20, nullptr);
    addInterface(*store, "last");
    await(*sub, 1); // the listener has indexed everything before it
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the indexer thread, too
    service.trim();
    std::vector<std::string> kept;
    service.replay(Clock::time_point{}, std::nullopt, [&](const Event& e) { kept.push_back(e.content); });
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_TRUE(contains(kept.back(), "&apos;last&apos;"));
    EXPECT_TRUE(contains(kept.front(), "&apos;eth4&apos;"));
}

TEST_F(ServiceTest, RowsRoundTrip) {
    EXPECT_FALSE(Service::parseRow(1, "no newline"));
    EXPECT_FALSE(Service::parseRow(1, "not a time\n<x/>"));
    const auto e = Service::parseRow(9, "2025-12-01T08:20:00.000001Z\n<x/>");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->id, 9u);
    EXPECT_EQ(e->content, "<x/>");
}

TEST_F(ServiceTest, ConfigChangesCarryTheirChangeSetOnlyWhileSomeoneFollows) {
    auto store = open();
    Service service(*store, context(), {});
    auto sub = service.bus().subscribe(100, 1 << 20, nullptr);
    addInterface(*store, "a");
    auto got = await(*sub, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_FALSE(got[0]->changes); // nobody follows: the event is text only
    EXPECT_EQ(got[0]->bytes(), got[0]->content.size());
    {
        const auto token = service.follow();
        addInterface(*store, "b");
        service.raise(sessionStart({7, "dave", "192.0.2.1"}));
        got = await(*sub, 2);
        ASSERT_EQ(got.size(), 2u);
        ASSERT_TRUE(got[0]->changes); // the store's own change set, shared
        EXPECT_EQ(got[0]->changes->commitId, got[0]->id);
        ASSERT_EQ(got[0]->changes->changes.size(), 1u);
        EXPECT_EQ(got[0]->changes->changes[0].path, "/ietf-interfaces:interfaces/interface[name='b']");
        EXPECT_GT(got[0]->bytes(), got[0]->content.size()); // its memory counts in the queue
        EXPECT_FALSE(got[1]->changes);                      // a server event has none
    }
    addInterface(*store, "c");
    got = await(*sub, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_FALSE(got[0]->changes);
}
