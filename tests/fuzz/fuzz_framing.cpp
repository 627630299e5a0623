// Fuzz target (d): the bytes of a NETCONF session as a client sends them, through the framing
// decoder (netconfd/transport/framing.*), fed in pieces of fuzzed sizes.
//
// Checks beyond "no crash, no sanitizer report":
//  - no message is longer than the maximum, nor are the messages together longer than the input;
//  - the messages do not depend on how the bytes were split: fed whole, the same messages (and the
//    same error, if any) come out;
//  - a message framed again and decoded gives itself back.
#include "framing.hpp"
#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <vector>

using namespace ncstore::netconfd::transport;

namespace {

[[noreturn]] void violated(const char* what) {
    ncstore::fuzz::violated("fuzz_framing", what);
}

struct Outcome {
    std::vector<std::string> messages;
    bool failed = false;
};

/// Decodes `stream`: the first message end-of-message framed (the hello), then `framing`.
Outcome decode(std::string_view stream, Framing framing, std::size_t max,
               const std::vector<std::size_t>& pieces) {
    MessageReader reader(max);
    Outcome out;
    std::size_t at = 0;
    std::size_t piece = 0;
    try {
        while (at < stream.size()) {
            const std::size_t n =
                pieces.empty() ? stream.size() : std::max<std::size_t>(1, pieces[piece++ % pieces.size()]);
            reader.feed(stream.substr(at, n));
            at += std::min(n, stream.size() - at);
            while (auto m = reader.next()) {
                out.messages.push_back(std::move(*m));
                reader.setFraming(framing);
            }
        }
    } catch (const FramingError&) {
        out.failed = true;
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) {
        return 0;
    }
    const Framing framing = (data[0] & 1) ? Framing::Chunked : Framing::EndOfMessage;
    const std::size_t max = 16 + (data[1] << 4);
    std::vector<std::size_t> pieces;
    for (std::size_t i = 0; i < (data[2] & 7u); ++i) {
        pieces.push_back(1 + (data[2] >> 3) * (i + 1));
    }
    const std::string_view stream(reinterpret_cast<const char*>(data) + 3, size - 3);

    const Outcome split = decode(stream, framing, max, pieces);
    const Outcome whole = decode(stream, framing, max, {});
    std::size_t total = 0;
    for (const auto& m : split.messages) {
        if (m.size() > max) {
            violated("a message longer than the maximum");
        }
        total += m.size();
    }
    if (total > stream.size()) {
        violated("more message bytes than input bytes");
    }
    // Fed whole, the decoder stops at the first error as well; until then it agrees.
    const std::size_t common = std::min(split.messages.size(), whole.messages.size());
    for (std::size_t i = 0; i < common; ++i) {
        if (split.messages[i] != whole.messages[i]) {
            violated("the messages depend on how the bytes were split");
        }
    }
    if (!split.failed && !whole.failed && split.messages.size() != whole.messages.size()) {
        violated("a different number of messages depending on the split");
    }
    for (const auto& m : split.messages) {
        if (m.empty() || m.size() > max) {
            continue; // an empty message cannot be chunk framed
        }
        MessageReader again(max, framing);
        again.feed(frame(m, framing));
        try {
            const auto back = again.next();
            if (framing == Framing::Chunked && (!back || *back != m)) {
                violated("a framed message does not decode to itself");
            }
        } catch (const FramingError&) {
            if (framing == Framing::Chunked) {
                violated("a framed message is a framing error");
            }
        }
    }
    return 0;
}
