// The codec of the application protocol (ncstore/app/protocol.hpp): what goes in comes out, the
// bytes are the documented ones, and every malformed input is a ProtocolError.
#include "ncstore/app/protocol.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ncstore::app::proto;

namespace {

std::string u32(std::uint32_t v) {
    std::string out;
    for (int i = 0; i < 4; ++i) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    return out;
}
std::string u16(std::uint16_t v) {
    return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
}
std::string field(std::uint16_t f, const std::string& value) {
    return u16(f) + u32(value.size()) + value;
}
std::string frameOf(Type type, std::uint32_t id, const std::string& fields) {
    return u32(5 + fields.size()) + static_cast<char>(type) + u32(id) + fields;
}

Message sample() {
    Message m;
    m.type = Type::Edit;
    m.id = 0x01020304;
    m.fields.add(Field::Datastore, std::uint64_t{2})
        .add(Field::Comment, "a comment")
        .add(Field::Item, Fields().add(Field::ItemOp, std::uint64_t{3}).add(Field::Path, "/a:b"))
        .add(Field::Item,
             Fields().add(Field::ItemOp, std::uint64_t{0}).add(Field::Path, "/a:c").add(Field::Value, "v"))
        .add(Field::Config, std::string("<x>\0binary</x>", 14));
    return m;
}

TEST(AppProtocol, FrameBytesAreTheDocumentedOnes) {
    Message m;
    m.type = Type::Get;
    m.id = 7;
    m.fields.add(Field::XPath, "/x").add(Field::WithDefaults, std::uint64_t{0x0102});
    const std::string expected =
        frameOf(Type::Get, 7, field(11, "/x") + field(12, std::string("\x02\x01\0\0\0\0\0\0", 8)));
    EXPECT_EQ(encode(m), expected);
}

TEST(AppProtocol, RoundTripKeepsOrderRepeatsAndNesting) {
    const Message m = sample();
    const std::string frame = encode(m);
    const Message back = decodeBody(std::string_view(frame).substr(4));
    EXPECT_EQ(back.type, Type::Edit);
    EXPECT_EQ(back.id, 0x01020304u);
    ASSERT_EQ(back.fields.list.size(), m.fields.list.size());
    EXPECT_EQ(back.fields.list, m.fields.list);
    EXPECT_EQ(back.fields.integer(Field::Datastore), 2u);
    EXPECT_EQ(back.fields.text(Field::Comment), "a comment");
    EXPECT_EQ(back.fields.text(Field::Config)->size(), 14u); // an embedded NUL is data
    const auto items = back.fields.all(Field::Item);
    ASSERT_EQ(items.size(), 2u);
    const auto first = Fields::decode(items[0]);
    const auto second = Fields::decode(items[1]);
    EXPECT_EQ(first.integer(Field::ItemOp), 3u);
    EXPECT_EQ(first.text(Field::Path), "/a:b");
    EXPECT_FALSE(first.text(Field::Value));
    EXPECT_EQ(second.integer(Field::ItemOp), 0u);
    EXPECT_EQ(second.text(Field::Value), "v");
    // text() and integer() give the first of a repeated field
    EXPECT_EQ(Fields::decode(std::string(back.fields.text(Field::Item).value())).text(Field::Path), "/a:b");
}

TEST(AppProtocol, EmptyAbsentAndExtremeValues) {
    Fields f;
    f.add(Field::Message, "").add(Field::CommitId, UINT64_MAX).add(Field::Event, std::uint64_t{0});
    const Fields back = Fields::decode(f.encode());
    EXPECT_EQ(back.text(Field::Message), "");
    EXPECT_EQ(back.integer(Field::CommitId), UINT64_MAX);
    EXPECT_EQ(back.integer(Field::Event), 0u);
    EXPECT_FALSE(back.text(Field::Xml));
    EXPECT_FALSE(back.integer(Field::Xml));
    EXPECT_EQ(back.integer(Field::Xml, 42), 42u);
    EXPECT_TRUE(back.all(Field::Xml).empty());
    EXPECT_TRUE(Fields::decode("").list.empty());
}

TEST(AppProtocol, UnknownFieldsAndTypesAreKept) {
    const std::string fields = field(999, "later") + field(22, "/p");
    const Message m = decodeBody(std::string(1, static_cast<char>(200)) + u32(1) + fields);
    EXPECT_EQ(static_cast<unsigned>(m.type), 200u);
    EXPECT_STREQ(toString(m.type), "unknown");
    ASSERT_EQ(m.fields.list.size(), 2u);
    EXPECT_EQ(static_cast<unsigned>(m.fields.list[0].first), 999u);
    EXPECT_EQ(m.fields.text(Field::Path), "/p");
}

TEST(AppProtocol, TypeNames) {
    EXPECT_STREQ(toString(Type::Hello), "hello");
    EXPECT_STREQ(toString(Type::PushDelete), "push-delete");
    EXPECT_STREQ(toString(Type::VerifyDone), "verify-done");
    EXPECT_STREQ(toString(Type::Resync), "resync");
}

TEST(AppProtocol, CutHeaderThrows) {
    EXPECT_THROW(decodeBody(""), ProtocolError);
    EXPECT_THROW(decodeBody(std::string(4, '\0')), ProtocolError);
    EXPECT_NO_THROW(decodeBody(std::string(5, '\0')));
    // a field header of fewer than 6 bytes
    EXPECT_THROW(decodeBody(std::string(5, '\0') + u16(11) + "\x01"), ProtocolError);
    EXPECT_THROW(Fields::decode(u16(11)), ProtocolError);
}

TEST(AppProtocol, FieldPastItsFrameThrows) {
    EXPECT_THROW(Fields::decode(u16(11) + u32(4) + "abc"), ProtocolError);
    EXPECT_THROW(Fields::decode(u16(11) + u32(UINT32_MAX) + "abc"), ProtocolError);
    EXPECT_NO_THROW(Fields::decode(u16(11) + u32(3) + "abc"));
    // nested fields are checked when they are opened
    Fields outer;
    outer.list.emplace_back(Field::Change, u16(22) + u32(10) + "short");
    const Fields back = Fields::decode(outer.encode());
    EXPECT_THROW(Fields::decode(back.all(Field::Change).at(0)), ProtocolError);
    // and in a frame that the decoder splits
    Decoder d;
    d.feed(frameOf(Type::Ok, 1, u16(11) + u32(100) + "x"));
    EXPECT_THROW(d.next(), ProtocolError);
}

TEST(AppProtocol, IntegerOfTheWrongSizeThrows) {
    for (const std::size_t size : {0u, 1u, 4u, 7u, 9u}) {
        Fields f;
        f.add(Field::CommitId, std::string(size, '\x01'));
        EXPECT_THROW(f.integer(Field::CommitId), ProtocolError) << size;
        EXPECT_THROW(f.integer(Field::CommitId, 0), ProtocolError) << size;
        EXPECT_NO_THROW(f.text(Field::CommitId)); // as text it is just bytes
    }
}

TEST(AppProtocol, OversizeLengthThrowsBeforeTheBodyArrives) {
    Decoder d(100);
    d.feed(u32(101)); // only the length: refused without waiting for (or holding) the body
    EXPECT_THROW(d.next(), ProtocolError);

    Decoder big;
    big.feed(u32(kDefaultMaxMessage + 1));
    EXPECT_THROW(big.next(), ProtocolError);

    Decoder exact(10);
    exact.feed(frameOf(Type::Ok, 3, field(3, "x"))); // 5 + 7 = 12 > 10
    EXPECT_THROW(exact.next(), ProtocolError);
}

TEST(AppProtocol, EncodeRefusesOversize) {
    Message m;
    m.fields.add(Field::Xml, std::string(100, 'x'));
    EXPECT_THROW(encode(m, 100), ProtocolError);
    EXPECT_NO_THROW(encode(m, 5 + 6 + 100));
    EXPECT_THROW(encode(m, 5 + 6 + 99), ProtocolError);
}

TEST(AppProtocol, DecoderFedOneByteAtATime) {
    std::vector<Message> sent;
    std::string stream;
    for (std::uint32_t i = 0; i < 5; ++i) {
        Message m = sample();
        m.id = i;
        m.fields.add(Field::Event, std::uint64_t{i * 1000});
        stream += encode(m);
        sent.push_back(m);
    }
    Message empty;
    empty.type = Type::Ok;
    empty.id = 99;
    stream += encode(empty);
    sent.push_back(empty);

    Decoder d;
    std::vector<Message> got;
    for (const char c : stream) {
        d.feed(std::string_view(&c, 1));
        while (auto m = d.next()) {
            got.push_back(std::move(*m));
        }
    }
    EXPECT_EQ(d.pending(), 0u);
    ASSERT_EQ(got.size(), sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(got[i].type, sent[i].type);
        EXPECT_EQ(got[i].id, sent[i].id);
        EXPECT_EQ(got[i].fields.list, sent[i].fields.list);
    }
}

TEST(AppProtocol, DecoderSplitsManyFramesInOneFeedAndKeepsTheRest) {
    Message a;
    a.type = Type::Ok;
    a.id = 1;
    a.fields.add(Field::Session, std::uint64_t{5});
    Message b;
    b.type = Type::Data;
    b.id = 2;
    b.fields.add(Field::Xml, std::string(70000, 'x')); // past the decoder's compaction threshold
    const std::string bytes = encode(a) + encode(b) + encode(a) + encode(b);
    Decoder d;
    d.feed(bytes.substr(0, bytes.size() - 3));
    std::vector<Message> got;
    while (auto m = d.next()) {
        got.push_back(std::move(*m));
    }
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(d.pending(), encode(b).size() - 3);
    d.feed(bytes.substr(bytes.size() - 3));
    auto last = d.next();
    ASSERT_TRUE(last);
    EXPECT_EQ(last->id, 2u);
    EXPECT_EQ(last->fields.text(Field::Xml)->size(), 70000u);
    EXPECT_FALSE(d.next());
    EXPECT_EQ(d.pending(), 0u);
    EXPECT_EQ(got[0].fields.integer(Field::Session), 5u);
    EXPECT_EQ(got[1].fields.list, b.fields.list);
}

TEST(AppProtocol, DecoderWaitsForIncompleteFrames) {
    Decoder d;
    EXPECT_FALSE(d.next());
    d.feed(u32(5).substr(0, 3));
    EXPECT_FALSE(d.next());
    EXPECT_EQ(d.pending(), 3u);
    d.feed(u32(5).substr(3) + static_cast<char>(Type::Ok) + u32(9).substr(0, 2));
    EXPECT_FALSE(d.next());
    d.feed(u32(9).substr(2));
    const auto m = d.next();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type, Type::Ok);
    EXPECT_EQ(m->id, 9u);
    EXPECT_TRUE(m->fields.list.empty());
}

} // namespace
