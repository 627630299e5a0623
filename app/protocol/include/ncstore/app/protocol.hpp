// The local application protocol (docs/app-protocol.md), version 1: what an application on the
// device and ncstored say to each other on the unix socket of the data directory. One codec for
// both ends (the server's netconfd/app and the client library libncstore-app).
//
// Promises:
//  - A frame is a 4-byte little-endian length, then a body of that many bytes: type (1 byte),
//    id (4 bytes LE), then fields, each a 2-byte LE field number, a 4-byte LE length and that many
//    bytes. Nothing else is on the wire; integers inside fields are 8 bytes LE.
//  - Decoding never trusts the peer: a length past the limit, a field that runs past its frame,
//    an integer field of the wrong size throw ProtocolError before anything is allocated for it,
//    so a hostile peer costs at most one frame of the limit's size.
//  - Unknown field numbers are kept and ignored by readers: a later version adds fields without
//    breaking this one. Unknown message types are the reader's to refuse.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ncstore::app::proto {

inline constexpr std::uint32_t kVersion = 1;
/// The default bound of one frame's body, both ways (ncstored --app-max-message).
inline constexpr std::uint32_t kDefaultMaxMessage = 16u << 20;
/// The socket's name in the data directory.
inline constexpr const char* kSocketName = "app.sock";

enum class Type : std::uint8_t {
    // application -> server: requests (answered by Ok, Error or Data with the same id)
    Hello = 1,  ///< AppName, Version -> Ok{Session, Version, User}
    Edit = 2,   ///< Datastore, DefaultOp, Config (XML) and/or Item*, Comment, Deferred -> Ok{CommitId}
    Commit = 3, ///< Comment -> Ok{CommitId}
    Get = 4,    ///< Datastore, XPath, WithDefaults, Event (a read in a verify: View) -> Data{Xml, CommitId}
    Subscribe = 5,    ///< XPath, Priority, Flags, Since, DeadlineMs -> Ok{Subscription, CommitId}
    Unsubscribe = 6,  ///< Subscription -> Ok
    Push = 7,         ///< Xml, Lifetime -> Ok (operational data the application sets)
    PushDelete = 8,   ///< XPath, Lifetime -> Ok
    Provide = 9,      ///< XPath, CacheMs, DeadlineMs -> Ok{Provider}
    RegisterRpc = 10, ///< Path, DeadlineMs -> Ok{Handler}
    Unregister = 11,  ///< Provider | Handler -> Ok
    Notify = 12,      ///< Xml, EventTime -> Ok
    // application -> server: answers to events (no reply; Id is the event's)
    VerifyDone = 32, ///< Event, Error? (a refusal) ; no Error: accepted
    Extend = 33,     ///< Event, DeadlineMs: more time for the event in progress
    PullDone = 34,   ///< Event, Xml | Error
    RpcDone = 35,    ///< Event, Xml (output) | Error
    // server -> application: replies
    Ok = 64,
    Error = 65, ///< ErrorTag, AppTag, Path, Message, Info
    Data = 66,  ///< Xml, CommitId
    // server -> application: events (Id 0)
    Verify = 80, ///< Subscription, Event, Change*, DeadlineMs: accept or refuse (VerifyDone)
    Abort = 81,  ///< Subscription, Event: the change verified in Event is not committed
    Apply = 82,  ///< Subscription, CommitId, Change*, Flags (Initial): durable, in commit order
    Pull = 83,   ///< Provider, Event, XPath, DeadlineMs: answer with PullDone
    Call = 84,   ///< Handler, Event, Xml (the RPC or action, input), DeadlineMs: answer with RpcDone
    Resync = 85, ///< Subscription, CommitId, Message: change sets were lost; Apply with Initial follows
};

enum class Field : std::uint16_t {
    AppName = 1,
    Version = 2,
    Session = 3,
    User = 4,
    Datastore = 5, ///< integer: Datastore below
    DefaultOp = 6, ///< integer: 0 merge, 1 replace, 2 none
    Config = 7,    ///< XML: the content of an edit-config <config>
    Item = 8,      ///< nested: ItemOp, Path, Value
    Comment = 9,
    CommitId = 10,
    XPath = 11,
    WithDefaults = 12, ///< integer: 0 explicit, 1 trim, 2 report-all
    Xml = 13,
    Subscription = 14,
    Priority = 15, ///< integer, lower first
    Flags = 16,    ///< integer bits: SubscribeFlag
    Since = 17,    ///< integer: the last commit id the application applied (resume)
    DeadlineMs = 18,
    Lifetime = 19, ///< integer: Lifetime below
    Provider = 20,
    CacheMs = 21,
    Path = 22,
    Handler = 23,
    EventTime = 24, ///< RFC 3339 text
    Event = 25,
    ErrorTag = 26, ///< RFC 6241 error-tag text
    AppTag = 27,
    Message = 28,
    Info = 29,     ///< XML: the content of error-info
    Change = 30,   ///< nested: ChangeOp, Path, OldValue, NewValue, Xml (the subtree), Position fields
    ChangeOp = 31, ///< integer: ds::ChangeOp
    OldValue = 32,
    NewValue = 33,
    ItemOp = 34, ///< integer: ItemOp below
    Value = 35,
    Deferred = 36, ///< integer 1: an edit sent from inside a callback, queued after the commit in progress
    View = 37,     ///< integer 1: a Get inside a verify reads the datastore as the change would leave it
    Where = 38,    ///< integer: 0 first, 1 after (an ordered-by-user instance's position)
    Anchor = 39,
};

enum class Datastore : std::uint8_t { Running = 0, Startup = 1, Candidate = 2, Operational = 3 };
enum class Lifetime : std::uint8_t { Connection = 0, Persistent = 1 };
enum class ItemOp : std::uint8_t { Merge = 0, Create = 1, Replace = 2, Delete = 3, Remove = 4 };
enum SubscribeFlag : std::uint64_t {
    Verify = 1,    ///< the subscriber verifies change sets before they are committed
    Apply = 2,     ///< the subscriber applies durable change sets
    Initial = 4,   ///< at subscribe: the current configuration as one Apply of creates
    Mandatory = 8, ///< while no application holds it, commits touching its subtree are refused
    Resume = 16,   ///< Since is set: replay the change sets after it
};

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A message's fields in order (a field may repeat: Item, Change).
struct Fields {
    std::vector<std::pair<Field, std::string>> list;

    Fields& add(Field f, std::string_view value);
    Fields& add(Field f, std::uint64_t value);
    Fields& add(Field f, const Fields& nested);
    /// The first value of `f`.
    std::optional<std::string_view> text(Field f) const;
    /// The first value of `f` as a string, "" when there is none.
    std::string textOf(Field f) const { return std::string(text(f).value_or("")); }
    /// The first value of `f` as an integer (throws ProtocolError when it is not 8 bytes).
    std::optional<std::uint64_t> integer(Field f) const;
    std::uint64_t integer(Field f, std::uint64_t fallback) const { return integer(f).value_or(fallback); }
    /// Every value of `f`, in order.
    std::vector<std::string_view> all(Field f) const;

    /// The fields as bytes (a nested value), and back (throws ProtocolError).
    std::string encode() const;
    static Fields decode(std::string_view bytes);
};

struct Message {
    Type type = Type::Ok;
    std::uint32_t id = 0;
    Fields fields;
};

/// The frame of `m`, length prefix included. Throws ProtocolError when it exceeds `max`.
std::string encode(const Message& m, std::uint32_t max = kDefaultMaxMessage);
/// The message of one frame body (without its length prefix). Throws ProtocolError.
Message decodeBody(std::string_view body);

/// Splits a byte stream into messages: feed() what arrived, then next() until it says none.
class Decoder {
public:
    explicit Decoder(std::uint32_t max = kDefaultMaxMessage) : max_(max) {}
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    /// The next complete message, or none yet. Throws ProtocolError (the stream is then unusable).
    std::optional<Message> next();
    /// Bytes held for an incomplete frame.
    std::size_t pending() const { return buffer_.size() - offset_; }

private:
    std::uint32_t max_;
    std::string buffer_;
    std::size_t offset_ = 0;
};

/// "hello", "edit", ... (for logs and errors); "unknown" for a number no type has.
const char* toString(Type t);

} // namespace ncstore::app::proto
