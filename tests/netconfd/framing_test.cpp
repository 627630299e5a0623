// RFC 6242 framing: what a client's byte stream becomes, piece by piece, and what is refused.
#include "framing.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ncstore::netconfd::transport;

namespace {

/// Every message `stream` holds, fed `step` bytes at a time.
std::vector<std::string> decode(const std::string& stream, Framing framing, std::size_t step = 1,
                                std::size_t max = 1 << 20) {
    MessageReader reader(max, framing);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < stream.size(); i += step) {
        reader.feed(std::string_view(stream).substr(i, step));
        while (auto m = reader.next()) {
            out.push_back(*m);
        }
    }
    return out;
}

std::string errorOf(const std::string& stream, Framing framing = Framing::Chunked,
                    std::size_t max = 1 << 20) {
    try {
        decode(stream, framing, stream.size() ? stream.size() : 1, max);
    } catch (const FramingError& e) {
        return e.what();
    }
    return {};
}

} // namespace

TEST(Framing, EndOfMessageInAnyPieces) {
    const std::string stream = "<a/>]]>]]><b>x</b>]]>]]>";
    for (std::size_t step : {1u, 2u, 5u, 7u, 100u}) {
        SCOPED_TRACE(step);
        EXPECT_EQ(decode(stream, Framing::EndOfMessage, step),
                  (std::vector<std::string>{"<a/>", "<b>x</b>"}));
    }
}

TEST(Framing, ChunkedInAnyPieces) {
    const std::string stream = "\n#4\n<a/>\n##\n\n#3\n<b>\n#4\nx</b\n#1\n>\n##\n";
    for (std::size_t step : {1u, 2u, 3u, 11u, 100u}) {
        SCOPED_TRACE(step);
        EXPECT_EQ(decode(stream, Framing::Chunked, step), (std::vector<std::string>{"<a/>", "<b>x</b>"}));
    }
}

TEST(Framing, EndOfMarkerInsideA10MessageEndsIt) {
    // RFC 6242 4.3: base:1.0 cannot carry the delimiter; what follows is the next message.
    EXPECT_EQ(decode("<a>]]>]]></a>]]>]]>", Framing::EndOfMessage, 3),
              (std::vector<std::string>{"<a>", "</a>"}));
}

TEST(Framing, FramingSwitchesAfterTheHello) {
    MessageReader reader(1024);
    reader.feed("<hello/>]]>]]>\n#2\nhi\n##\n");
    EXPECT_EQ(reader.next(), "<hello/>");
    reader.setFraming(Framing::Chunked);
    EXPECT_EQ(reader.next(), "hi");
    EXPECT_EQ(reader.next(), std::nullopt);
    EXPECT_FALSE(reader.inMessage());
}

TEST(Framing, BadChunkHeadersAreRefused) {
    for (const char* bad : {"\n#abc\n", "\n#0\n", "\n#01\n<a/>\n##\n", "\n##\n", "x\n#1\na\n##\n",
                            "\n$1\na\n##\n", "\n#1 \na\n##\n", "\n#1\na\nxx", "\n#1\na\n#x", "\n#1\na\n##x",
                            "\n#-1\n", "\n#4294967296\n", "\n#99999999999999999999\n", "\n#12345678901\n"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(errorOf(bad).empty());
    }
}

TEST(Framing, IncompleteInputIsNotAnError) {
    for (const char* partial : {"\n", "\n#", "\n#12", "\n#12\nabc", "\n#1\na\n#", "\n#1\na\n##"}) {
        SCOPED_TRACE(partial);
        MessageReader reader(1024, Framing::Chunked);
        reader.feed(partial);
        EXPECT_EQ(reader.next(), std::nullopt);
        EXPECT_TRUE(reader.inMessage());
    }
}

TEST(Framing, AnnouncedSizeBeyondTheMaximumIsRefusedBeforeItsData) {
    // 4 GB announced, nothing sent: refused at the header, nothing allocated for it.
    EXPECT_NE(errorOf("\n#4294967295\n", Framing::Chunked, 1 << 20).find("larger than the maximum"),
              std::string::npos);
    // Chunks adding up past the maximum.
    EXPECT_FALSE(errorOf("\n#600\n" + std::string(600, 'a') + "\n#600\n", Framing::Chunked, 1000).empty());
    // Exactly the maximum passes.
    EXPECT_EQ(decode("\n#1000\n" + std::string(1000, 'a') + "\n##\n", Framing::Chunked, 64, 1000).size(), 1u);
}

TEST(Framing, EndOfMessageStreamBeyondTheMaximumIsRefused) {
    EXPECT_FALSE(errorOf(std::string(2000, 'a'), Framing::EndOfMessage, 1000).empty());
    EXPECT_EQ(decode(std::string(1000, 'a') + "]]>]]>", Framing::EndOfMessage, 7, 1000).size(), 1u);
}

TEST(Framing, FramedMessagesDecodeToThemselves) {
    for (Framing f : {Framing::EndOfMessage, Framing::Chunked}) {
        const std::string big(100000, 'x');
        EXPECT_EQ(decode(frame("<rpc/>", f) + frame(big, f), f, 4096),
                  (std::vector<std::string>{"<rpc/>", big}));
    }
    EXPECT_EQ(frame("abc", Framing::Chunked), "\n#3\nabc\n##\n");
    EXPECT_EQ(frame("abc", Framing::EndOfMessage), "abc]]>]]>");
}

TEST(Framing, ALargeMessageGoesOutInChunksOfAtMostTheOutgoingChunkSize) {
    // ncclient re-decodes the chunk it is gathering on every 4 KiB read: one chunk of a 2.6 MB
    // reply cost it ~150 ms of CPU.
    std::string message;
    for (int i = 0; message.size() < 2 * kOutChunkSize + 100; ++i) {
        message += "<a>" + std::to_string(i) + "</a>";
    }
    const std::string framed = frame(message, Framing::Chunked);
    const std::string head = "\n#" + std::to_string(kOutChunkSize) + "\n";
    EXPECT_EQ(framed.substr(0, head.size()), head);
    EXPECT_EQ(framed.substr(head.size() + kOutChunkSize, head.size()), head);
    const std::size_t last = message.size() - 2 * kOutChunkSize;
    EXPECT_EQ(framed.substr(2 * (head.size() + kOutChunkSize), 3 + std::to_string(last).size()),
              "\n#" + std::to_string(last) + "\n");
    EXPECT_EQ(decode(framed, Framing::Chunked, 1000), (std::vector<std::string>{message}));
    // At the size itself: one chunk, framed in place.
    const std::string exact(kOutChunkSize, 'x');
    EXPECT_EQ(frame(exact, Framing::Chunked),
              "\n#" + std::to_string(kOutChunkSize) + "\n" + exact + "\n##\n");
}
