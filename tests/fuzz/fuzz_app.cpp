// Fuzz target (f): the bytes an application sends on ncstored's unix socket, through the
// application protocol's decoder (app/protocol), fed in pieces of fuzzed sizes, and what the
// server reads from a message before acting on it: nested fields (Item, Change), integers, and
// a subscription's subtree (netconfd/app/interest.hpp) on the server's context.
//
// Checks beyond "no crash, no sanitizer report":
//  - no message is larger than the limit, nor are the frames together larger than the input;
//  - the messages do not depend on how the bytes were split (fed whole: the same messages, and the
//    same error, if any);
//  - a message encoded again is the frame it was decoded from, byte for byte;
//  - a subtree that resolves is matched by a change at its own schema node's path.
#include "fuzz_support.hpp"
#include "interest.hpp"

#include "ncstore/app/protocol.hpp"
#include "ncstore/models.hpp"

#include <cstdint>
#include <string>
#include <vector>

using namespace ncstore;
namespace proto = ncstore::app::proto;

namespace {

[[noreturn]] void violated(const char* what, const std::string& detail = {}) {
    ncstore::fuzz::violated("fuzz_app", what, detail);
}

const ly_ctx* serverContext() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

struct Outcome {
    std::vector<proto::Message> messages;
    std::vector<std::size_t> sizes; ///< each message's frame size
    bool failed = false;
};

Outcome decode(std::string_view stream, std::uint32_t max, const std::vector<std::size_t>& pieces) {
    proto::Decoder decoder(max);
    Outcome out;
    std::size_t at = 0;
    std::size_t piece = 0;
    try {
        while (at < stream.size()) {
            const std::size_t n =
                pieces.empty() ? stream.size() : std::max<std::size_t>(1, pieces[piece++ % pieces.size()]);
            decoder.feed(stream.substr(at, n));
            at += std::min(n, stream.size() - at);
            while (auto m = decoder.next()) {
                out.messages.push_back(std::move(*m));
            }
        }
    } catch (const proto::ProtocolError&) {
        out.failed = true;
    }
    return out;
}

/// What the server reads of a message's fields: nested ones decoded, integers read.
void readFields(const proto::Fields& fields, int depth) {
    for (const auto& [field, value] : fields.list) {
        try {
            switch (field) {
            case proto::Field::Item:
            case proto::Field::Change:
                if (depth < 2) {
                    readFields(proto::Fields::decode(value), depth + 1);
                }
                break;
            case proto::Field::Datastore:
            case proto::Field::Flags:
            case proto::Field::Since:
            case proto::Field::Event:
            case proto::Field::DeadlineMs:
                (void)fields.integer(field);
                break;
            default:
                break;
            }
        } catch (const proto::ProtocolError&) {
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ly_log_options(LY_LOSTORE_LAST);
    serverContext();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    const std::uint32_t max = 5 + (static_cast<std::uint32_t>(data[0]) << 6);
    std::vector<std::size_t> pieces;
    for (std::size_t i = 0; i < (data[1] & 7u); ++i) {
        pieces.push_back(1 + (data[1] >> 3) * (i + 1));
    }
    const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

    const Outcome split = decode(stream, max, pieces);
    const Outcome whole = decode(stream, max, {});
    if (split.messages.size() != whole.messages.size() || split.failed != whole.failed) {
        violated("the messages depend on how the bytes were split");
    }
    std::size_t total = 0;
    for (std::size_t i = 0; i < split.messages.size(); ++i) {
        const proto::Message& m = split.messages[i];
        std::string again;
        try {
            again = proto::encode(m, max);
        } catch (const proto::ProtocolError& e) {
            violated("a decoded message does not encode within the limit", e.what());
        }
        if (again.size() - 4 > max) {
            violated("a message larger than the limit");
        }
        if (stream.substr(total, again.size()) != again) {
            violated("a message encoded again is not the frame it came from");
        }
        total += again.size();
        const std::string w = proto::encode(whole.messages[i], max);
        if (w != again) {
            violated("split and whole decoding disagree on a message");
        }
        readFields(m.fields, 0);
        if (const auto xpath = m.fields.text(proto::Field::XPath)) {
            try {
                const netconfd::app::Interest interest(serverContext(), std::string(*xpath));
                if (interest.schema() && !interest.xpath().empty()) {
                    ds::Change self;
                    self.schema = interest.schema();
                    self.path = interest.xpath();
                    self.op = ds::ChangeOp::Update;
                    if (!interest.touches(self)) {
                        violated("a subtree does not take in a change at its own path", interest.xpath());
                    }
                }
            } catch (const std::invalid_argument&) {
            }
        }
    }
    if (total > stream.size()) {
        violated("more frame bytes than input bytes");
    }
    return 0;
}
