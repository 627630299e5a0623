// The notification streams: the one stream, NETCONF, and its replay log.
#include "providers.hpp"

#include "events.hpp"
#include "service.hpp"

namespace ncstore::netconfd {

namespace {

class StreamsState final : public StateProvider {
public:
    explicit StreamsState(const notify::Service& notifications) : notifications_(notifications) {}
    std::vector<Top> tops() const override {
        return {{"nc-notifications", "netconf"}, {"ietf-subscribed-notifications", "streams"}};
    }
    Tree state(const ly_ctx* ctx) const override;

private:
    const notify::Service& notifications_;
};

Tree StreamsState::state(const ly_ctx* ctx) const {
    Tree state;
    // The one stream and its replay log, as RFC 5277 3.2 (nc-notifications) and RFC 8639
    // (ietf-subscribed-notifications) list it.
    struct StreamList {
        const char* module;
        const char* stream;
        const char* replaySupport;
        const char* replaySupportValue;
        const char* logCreationTime;
    };
    const StreamList lists[] = {
        {"nc-notifications", "/nc-notifications:netconf/streams/stream[name='NETCONF']", "replaySupport",
         "true", "replayLogCreationTime"},
        {"ietf-subscribed-notifications", "/ietf-subscribed-notifications:streams/stream[name='NETCONF']",
         "replay-support", nullptr, "replay-log-creation-time"},
    };
    const std::string created = notify::dateAndTime(notifications_.logCreationTime());
    for (const StreamList& l : lists) {
        const std::string stream = l.stream;
        if (!ly_ctx_get_module_implemented(ctx, l.module)) {
            continue;
        }
        lyd_node* first = nullptr;
        const LY_ERR rc =
            lyd_new_path(nullptr, ctx, (stream + "/description").c_str(),
                         "NETCONF events: configuration changes and sessions (RFC 6470)", 0, &first);
        Tree streams{first};
        if (rc != LY_SUCCESS ||
            lyd_new_path(streams.get(), ctx, (stream + "/" + l.replaySupport).c_str(), l.replaySupportValue,
                         0, nullptr) != LY_SUCCESS ||
            lyd_new_path(streams.get(), ctx, (stream + "/" + l.logCreationTime).c_str(), created.c_str(), 0,
                         nullptr) != LY_SUCCESS) {
            throw YangError(std::string("cannot build the notification streams of ") + l.module, ctx);
        }
        if (insertSiblings(state, streams.get()) != LY_SUCCESS) {
            throw YangError(std::string("cannot assemble the notification streams of ") + l.module, ctx);
        }
        streams.release();
    }
    return state;
}

} // namespace

std::shared_ptr<const StateProvider> makeStreamsState(const notify::Service& notifications) {
    return std::make_shared<StreamsState>(notifications);
}

} // namespace ncstore::netconfd
