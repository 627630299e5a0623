// NETCONF message framing over SSH (RFC 6242): end-of-message framing (section 4.3, base:1.0,
// and every <hello>) and chunked framing (section 4.2, base:1.1).
//
// Promises:
//  - MessageReader takes bytes as they arrive, in pieces of any size, and hands out whole
//    messages. It never allocates more than the configured maximum message size (plus what was
//    fed and not yet decoded): a chunk header that announces more is refused before any of its
//    data arrives, and an end-of-message stream that grows past the maximum is refused at once.
//  - Any violation of the framing grammar is a FramingError; the reader cannot resynchronize
//    after one (the byte stream has no recovery point), so the caller ends the session.
//  - Pure code: no I/O, no global state; safe to fuzz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ncstore::netconfd::transport {

enum class Framing {
    EndOfMessage, ///< message followed by "]]>]]>"
    Chunked,      ///< "\n#<size>\n" chunks, ended by "\n##\n"
};

class FramingError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The largest chunk-size RFC 6242 allows.
inline constexpr std::uint64_t kMaxChunkSize = 4294967295u;

class MessageReader {
public:
    explicit MessageReader(std::size_t maxMessageSize, Framing framing = Framing::EndOfMessage)
        : max_(maxMessageSize), framing_(framing) {}

    /// Appends received bytes. Decoding happens in next().
    void feed(std::string_view bytes);

    /// The next complete message, with the framing in effect when it is decoded; nullopt when
    /// more bytes are needed. Throws FramingError.
    std::optional<std::string> next();

    /// Applies to the messages after the last one next() returned (the hello exchange decides
    /// it: RFC 6242 section 4.1).
    void setFraming(Framing framing) { framing_ = framing; }
    Framing framing() const { return framing_; }

    /// Bytes fed and not yet returned as (part of) a message.
    std::size_t pending() const { return buffer_.size() - pos_; }
    /// True when a message has begun and not ended (bytes of it were received).
    bool inMessage() const { return pending() > 0 || !message_.empty() || chunkLeft_ > 0; }

private:
    std::optional<std::string> nextEndOfMessage();
    std::optional<std::string> nextChunked();
    void compact();

    std::size_t max_;
    Framing framing_;
    std::string buffer_;
    std::size_t pos_ = 0; ///< first byte of buffer_ not decoded yet
    // End-of-message framing: where the search for the delimiter resumes.
    std::size_t searchFrom_ = 0;
    // Chunked framing: the message so far and the bytes still due in the current chunk.
    std::string message_;
    std::uint64_t chunkLeft_ = 0;
    bool sawChunk_ = false;
};

/// Room that a message built in place keeps in front for its chunk header ("\n#" + up to 20
/// digits + "\n").
inline constexpr std::size_t kHeaderRoom = 23;

/// The largest chunk the server sends. A message of more goes out as several chunks: clients
/// that gather a chunk by decoding everything they hold of it on every read (ncclient 0.6's
/// base:1.1 parser, once per 4 KiB read) pay for a chunk quadratically in its size.
inline constexpr std::size_t kOutChunkSize = 16 * 1024;

/// `buf` holds kHeaderRoom bytes of room followed by one message: writes the framing around the
/// message and returns the bytes to send, which live in `buf`. In place (no copy of the message)
/// unless it needs several chunks (kOutChunkSize); then `buf` is rebuilt.
std::string_view frameInPlace(std::string& buf, Framing framing);

/// `message` framed for sending.
std::string frame(std::string_view message, Framing framing);

} // namespace ncstore::netconfd::transport
