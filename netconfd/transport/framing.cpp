#include "framing.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

namespace ncstore::netconfd::transport {

namespace {

constexpr std::string_view kEndOfMessage = "]]>]]>";
// "\n#" + at most 10 digits + "\n"
constexpr std::size_t kMaxChunkDigits = 10;

std::string tooLarge(std::size_t max) {
    return "message larger than the maximum of " + std::to_string(max) + " bytes";
}

} // namespace

void MessageReader::feed(std::string_view bytes) {
    buffer_.append(bytes);
}

std::optional<std::string> MessageReader::next() {
    auto message = framing_ == Framing::EndOfMessage ? nextEndOfMessage() : nextChunked();
    compact();
    return message;
}

void MessageReader::compact() {
    if (pos_ == buffer_.size()) {
        buffer_.clear();
        searchFrom_ = 0;
        pos_ = 0;
    } else if (pos_ > 65536 && pos_ > buffer_.size() / 2) {
        buffer_.erase(0, pos_);
        searchFrom_ -= std::min(searchFrom_, pos_);
        pos_ = 0;
    }
}

std::optional<std::string> MessageReader::nextEndOfMessage() {
    const std::size_t from = std::max(pos_, searchFrom_);
    const std::size_t at = buffer_.find(kEndOfMessage, from);
    if (at == std::string::npos) {
        if (buffer_.size() - pos_ > max_ + kEndOfMessage.size()) {
            throw FramingError(tooLarge(max_));
        }
        // The delimiter may have begun in the last bytes: look there again next time.
        searchFrom_ = std::max(pos_, buffer_.size() - std::min(buffer_.size(), kEndOfMessage.size() - 1));
        return std::nullopt;
    }
    if (at - pos_ > max_) {
        throw FramingError(tooLarge(max_));
    }
    std::string message = buffer_.substr(pos_, at - pos_);
    pos_ = at + kEndOfMessage.size();
    searchFrom_ = pos_;
    return message;
}

std::optional<std::string> MessageReader::nextChunked() {
    for (;;) {
        if (chunkLeft_ > 0) {
            const std::size_t take =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunkLeft_, buffer_.size() - pos_));
            message_.append(buffer_, pos_, take);
            pos_ += take;
            chunkLeft_ -= take;
            if (chunkLeft_ > 0) {
                return std::nullopt;
            }
        }
        // A chunk header ("\n#<size>\n") or the end of chunks ("\n##\n").
        const std::string_view rest(buffer_.data() + pos_, buffer_.size() - pos_);
        if (rest.empty()) {
            return std::nullopt;
        }
        if (rest[0] != '\n') {
            throw FramingError("expected a chunk header (\"\\n#\"), got another byte");
        }
        if (rest.size() < 2) {
            return std::nullopt;
        }
        if (rest[1] != '#') {
            throw FramingError("expected a chunk header (\"\\n#\"), got another byte after the line feed");
        }
        if (rest.size() < 3) {
            return std::nullopt;
        }
        if (rest[2] == '#') {
            if (rest.size() < 4) {
                return std::nullopt;
            }
            if (rest[3] != '\n') {
                throw FramingError("end-of-chunks marker not followed by a line feed");
            }
            if (!sawChunk_) {
                throw FramingError("end-of-chunks marker without any chunk");
            }
            pos_ += 4;
            sawChunk_ = false;
            return std::exchange(message_, std::string());
        }
        if (rest[2] < '1' || rest[2] > '9') {
            throw FramingError("chunk size must be a decimal number without leading zeros");
        }
        std::size_t end = 2;
        while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') {
            if (end - 2 == kMaxChunkDigits) {
                throw FramingError("chunk size larger than 4294967295");
            }
            ++end;
        }
        if (end == rest.size()) {
            return std::nullopt; // more digits may come
        }
        if (rest[end] != '\n') {
            throw FramingError("chunk size not followed by a line feed");
        }
        std::uint64_t size = 0;
        std::from_chars(rest.data() + 2, rest.data() + end, size);
        if (size > kMaxChunkSize) {
            throw FramingError("chunk size larger than 4294967295");
        }
        if (size > max_ - std::min<std::uint64_t>(max_, message_.size())) {
            throw FramingError(tooLarge(max_));
        }
        pos_ += end + 1;
        chunkLeft_ = size;
        sawChunk_ = true;
    }
}

std::string_view frameInPlace(std::string& buf, Framing framing) {
    if (buf.size() < kHeaderRoom) {
        throw std::logic_error("frameInPlace: no room for the header");
    }
    const std::size_t size = buf.size() - kHeaderRoom;
    if (framing == Framing::EndOfMessage) {
        buf += kEndOfMessage;
        return std::string_view(buf).substr(kHeaderRoom);
    }
    if (size > kOutChunkSize) {
        const std::string_view message = std::string_view(buf).substr(kHeaderRoom);
        std::string out;
        out.reserve(size + (size / kOutChunkSize + 1) * 10 + 4);
        for (std::size_t at = 0; at < size; at += kOutChunkSize) {
            const std::size_t n = std::min(kOutChunkSize, size - at);
            out += "\n#";
            out += std::to_string(n);
            out += '\n';
            out += message.substr(at, n);
        }
        out += "\n##\n";
        buf.swap(out);
        return buf;
    }
    const std::string header = "\n#" + std::to_string(size) + "\n";
    const std::size_t start = kHeaderRoom - header.size();
    buf.replace(start, header.size(), header);
    buf += "\n##\n";
    return std::string_view(buf).substr(start);
}

std::string frame(std::string_view message, Framing framing) {
    std::string out(kHeaderRoom, ' ');
    out += message;
    return std::string(frameInPlace(out, framing));
}

} // namespace ncstore::netconfd::transport
