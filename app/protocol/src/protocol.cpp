#include "ncstore/app/protocol.hpp"

#include <cstring>

namespace ncstore::app::proto {

namespace {

void putU32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
}
void putU16(std::string& out, std::uint16_t v) {
    out.push_back(static_cast<char>(v & 0xff));
    out.push_back(static_cast<char>(v >> 8));
}
std::uint32_t getU32(std::string_view in, std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
    }
    return v;
}
std::uint16_t getU16(std::string_view in, std::size_t at) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(in[at]) |
                                      (static_cast<unsigned char>(in[at + 1]) << 8));
}

} // namespace

Fields& Fields::add(Field f, std::string_view value) {
    list.emplace_back(f, std::string(value));
    return *this;
}

Fields& Fields::add(Field f, std::uint64_t value) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) {
        bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
    }
    list.emplace_back(f, std::move(bytes));
    return *this;
}

Fields& Fields::add(Field f, const Fields& nested) {
    list.emplace_back(f, nested.encode());
    return *this;
}

std::optional<std::string_view> Fields::text(Field f) const {
    for (const auto& [field, value] : list) {
        if (field == f) {
            return std::string_view(value);
        }
    }
    return std::nullopt;
}

std::optional<std::uint64_t> Fields::integer(Field f) const {
    const auto bytes = text(f);
    if (!bytes) {
        return std::nullopt;
    }
    if (bytes->size() != 8) {
        throw ProtocolError("field " + std::to_string(static_cast<unsigned>(f)) + " is an integer of " +
                            std::to_string(bytes->size()) + " bytes, not 8");
    }
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>((*bytes)[i])) << (8 * i);
    }
    return v;
}

std::vector<std::string_view> Fields::all(Field f) const {
    std::vector<std::string_view> out;
    for (const auto& [field, value] : list) {
        if (field == f) {
            out.emplace_back(value);
        }
    }
    return out;
}

std::string Fields::encode() const {
    std::size_t size = 0;
    for (const auto& [field, value] : list) {
        size += 6 + value.size();
    }
    std::string out;
    out.reserve(size);
    for (const auto& [field, value] : list) {
        if (value.size() > UINT32_MAX) {
            throw ProtocolError("a field of more than 4 GiB");
        }
        putU16(out, static_cast<std::uint16_t>(field));
        putU32(out, static_cast<std::uint32_t>(value.size()));
        out.append(value);
    }
    return out;
}

Fields Fields::decode(std::string_view bytes) {
    Fields fields;
    std::size_t at = 0;
    while (at < bytes.size()) {
        if (bytes.size() - at < 6) {
            throw ProtocolError("a field header is cut short");
        }
        const auto field = getU16(bytes, at);
        const auto length = getU32(bytes, at + 2);
        at += 6;
        if (length > bytes.size() - at) {
            throw ProtocolError("field " + std::to_string(field) + " claims " + std::to_string(length) +
                                " bytes; " + std::to_string(bytes.size() - at) + " are left in its frame");
        }
        fields.list.emplace_back(static_cast<Field>(field), std::string(bytes.substr(at, length)));
        at += length;
    }
    return fields;
}

std::string encode(const Message& m, std::uint32_t max) {
    std::string fields = m.fields.encode();
    const std::size_t body = 5 + fields.size();
    if (body > max) {
        throw ProtocolError("a message of " + std::to_string(body) + " bytes exceeds the limit of " +
                            std::to_string(max));
    }
    std::string out;
    out.reserve(4 + body);
    putU32(out, static_cast<std::uint32_t>(body));
    out.push_back(static_cast<char>(m.type));
    putU32(out, m.id);
    out.append(fields);
    return out;
}

Message decodeBody(std::string_view body) {
    if (body.size() < 5) {
        throw ProtocolError("a frame of " + std::to_string(body.size()) +
                            " bytes is shorter than its header");
    }
    Message m;
    m.type = static_cast<Type>(static_cast<unsigned char>(body[0]));
    m.id = getU32(body, 1);
    m.fields = Fields::decode(body.substr(5));
    return m;
}

std::optional<Message> Decoder::next() {
    const std::string_view data(buffer_.data() + offset_, buffer_.size() - offset_);
    if (data.size() < 4) {
        return std::nullopt;
    }
    const auto length = getU32(data, 0);
    if (length > max_) {
        throw ProtocolError("a frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                            std::to_string(max_));
    }
    if (data.size() - 4 < length) {
        return std::nullopt;
    }
    Message m = decodeBody(data.substr(4, length));
    offset_ += 4 + length;
    if (offset_ == buffer_.size()) {
        buffer_.clear();
        offset_ = 0;
    } else if (offset_ > (1u << 16) && offset_ > buffer_.size() / 2) {
        buffer_.erase(0, offset_);
        offset_ = 0;
    }
    return m;
}

const char* toString(Type t) {
    switch (t) {
    case Type::Hello:
        return "hello";
    case Type::Edit:
        return "edit";
    case Type::Commit:
        return "commit";
    case Type::Get:
        return "get";
    case Type::Subscribe:
        return "subscribe";
    case Type::Unsubscribe:
        return "unsubscribe";
    case Type::Push:
        return "push";
    case Type::PushDelete:
        return "push-delete";
    case Type::Provide:
        return "provide";
    case Type::RegisterRpc:
        return "register-rpc";
    case Type::Unregister:
        return "unregister";
    case Type::Notify:
        return "notify";
    case Type::VerifyDone:
        return "verify-done";
    case Type::Extend:
        return "extend";
    case Type::PullDone:
        return "pull-done";
    case Type::RpcDone:
        return "rpc-done";
    case Type::Ok:
        return "ok";
    case Type::Error:
        return "error";
    case Type::Data:
        return "data";
    case Type::Verify:
        return "verify";
    case Type::Abort:
        return "abort";
    case Type::Apply:
        return "apply";
    case Type::Pull:
        return "pull";
    case Type::Call:
        return "call";
    case Type::Resync:
        return "resync";
    }
    return "unknown";
}

} // namespace ncstore::app::proto
