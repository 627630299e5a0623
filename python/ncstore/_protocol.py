"""The application protocol's frames (docs/app-protocol.md), version 1: what goes over the socket.

A frame is a 4-byte length (of the rest), a 1-byte type, a 4-byte id, then fields: each a 2-byte
number, a 4-byte length and that many bytes; integers are 8 bytes, everything little endian.
Fields are kept as raw bytes and read as text or integer by the one who knows what they hold.
"""

import struct

VERSION = 1
MAX_MESSAGE = 16 << 20  # the server's default --app-max-message

# Message types.
HELLO, EDIT, COMMIT, GET, SUBSCRIBE, UNSUBSCRIBE, PUSH, PUSH_DELETE = 1, 2, 3, 4, 5, 6, 7, 8
PROVIDE, REGISTER_RPC, UNREGISTER, NOTIFY = 9, 10, 11, 12
VERIFY_DONE, EXTEND, PULL_DONE, RPC_DONE = 32, 33, 34, 35
OK, ERROR, DATA = 64, 65, 66
VERIFY, ABORT, APPLY, PULL, CALL, RESYNC = 80, 81, 82, 83, 84, 85
EVENTS = frozenset((VERIFY, ABORT, APPLY, PULL, CALL, RESYNC))
REPLIES = frozenset((OK, ERROR, DATA))

TYPE_NAMES = {
    HELLO: "Hello", EDIT: "Edit", COMMIT: "Commit", GET: "Get", SUBSCRIBE: "Subscribe",
    UNSUBSCRIBE: "Unsubscribe", PUSH: "Push", PUSH_DELETE: "PushDelete", PROVIDE: "Provide",
    REGISTER_RPC: "RegisterRpc", UNREGISTER: "Unregister", NOTIFY: "Notify",
    VERIFY_DONE: "VerifyDone", EXTEND: "Extend", PULL_DONE: "PullDone", RPC_DONE: "RpcDone",
    OK: "Ok", ERROR: "Error", DATA: "Data", VERIFY: "Verify", ABORT: "Abort", APPLY: "Apply",
    PULL: "Pull", CALL: "Call", RESYNC: "Resync",
}

# Field numbers.
APP_NAME, F_VERSION, SESSION, USER, DATASTORE, DEFAULT_OP, CONFIG, ITEM = 1, 2, 3, 4, 5, 6, 7, 8
COMMENT, COMMIT_ID, XPATH, WITH_DEFAULTS, XML, SUBSCRIPTION, PRIORITY, FLAGS = 9, 10, 11, 12, 13, 14, 15, 16
SINCE, DEADLINE_MS, LIFETIME, PROVIDER, CACHE_MS, PATH, HANDLER, EVENT_TIME = 17, 18, 19, 20, 21, 22, 23, 24
EVENT, ERROR_TAG, APP_TAG, MESSAGE, INFO, CHANGE, CHANGE_OP, OLD_VALUE = 25, 26, 27, 28, 29, 30, 31, 32
NEW_VALUE, ITEM_OP, VALUE, DEFERRED, VIEW, WHERE, ANCHOR = 33, 34, 35, 36, 37, 38, 39

# Subscribe flags.
FLAG_VERIFY, FLAG_APPLY, FLAG_INITIAL, FLAG_MANDATORY, FLAG_RESUME = 1, 2, 4, 8, 16

_HEAD = struct.Struct("<IBI")    # length, type, id
_FIELD = struct.Struct("<HI")    # number, length
_U64 = struct.Struct("<Q")


class ProtocolError(Exception):
    """What the other side sent is not the protocol: the connection cannot go on."""


class Fields:
    """A message's fields in order, each (number, raw bytes); add() encodes, text()/integer()
    read the first of a number, all() every one."""

    __slots__ = ("items",)

    def __init__(self, items=None):
        self.items = items if items is not None else []

    def add(self, number, value):
        if isinstance(value, Fields):
            data = value.encode()
        elif isinstance(value, bool):
            data = _U64.pack(int(value))
        elif isinstance(value, int):
            data = _U64.pack(value & 0xFFFFFFFFFFFFFFFF)
        elif isinstance(value, str):
            data = value.encode("utf-8")
        else:
            data = bytes(value)
        self.items.append((number, data))
        return self

    def raw(self, number):
        for n, data in self.items:
            if n == number:
                return data
        return None

    def has(self, number):
        return self.raw(number) is not None

    def text(self, number, default=None):
        data = self.raw(number)
        if data is None:
            return default
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError("field %d is not UTF-8: %s" % (number, e)) from None

    def integer(self, number, default=None):
        data = self.raw(number)
        if data is None:
            return default
        if len(data) != 8:
            raise ProtocolError("field %d holds %d bytes, not an 8-byte integer" % (number, len(data)))
        return _U64.unpack(data)[0]

    def all(self, number):
        return [data for n, data in self.items if n == number]

    def encode(self):
        return b"".join(_FIELD.pack(n, len(data)) + data for n, data in self.items)

    @staticmethod
    def decode(data):
        items = []
        at, end = 0, len(data)
        while at < end:
            if end - at < _FIELD.size:
                raise ProtocolError("a field header runs past its frame")
            number, length = _FIELD.unpack_from(data, at)
            at += _FIELD.size
            if length > end - at:
                raise ProtocolError("field %d runs past its frame" % number)
            items.append((number, bytes(data[at:at + length])))
            at += length
        return Fields(items)


class Message:
    __slots__ = ("type", "id", "fields")

    def __init__(self, type_, ident=0, fields=None):
        self.type = type_
        self.id = ident
        self.fields = fields if fields is not None else Fields()

    def __repr__(self):
        return "<%s id=%d>" % (TYPE_NAMES.get(self.type, str(self.type)), self.id)


def encode(message, limit=MAX_MESSAGE):
    """The frame's bytes; ValueError when it is bigger than `limit`."""
    body = message.fields.encode()
    length = 5 + len(body)
    if length > limit:
        raise ValueError("%s of %d bytes, the limit is %d" % (TYPE_NAMES.get(message.type, "message"), length, limit))
    return _HEAD.pack(length, message.type, message.id & 0xFFFFFFFF) + body


class Decoder:
    """Frames out of a byte stream: feed() what arrived, next() a Message or None."""

    def __init__(self, limit=MAX_MESSAGE):
        self.limit = limit
        self.buffer = bytearray()

    def feed(self, data):
        self.buffer += data

    def next(self):
        if len(self.buffer) < 4:
            return None
        (length,) = struct.unpack_from("<I", self.buffer)
        if length > self.limit:
            raise ProtocolError("a frame of %d bytes, past the limit of %d" % (length, self.limit))
        if length < 5:
            raise ProtocolError("a frame of %d bytes has no type and id" % length)
        if len(self.buffer) < 4 + length:
            return None
        _, type_, ident = _HEAD.unpack_from(self.buffer)
        fields = Fields.decode(bytes(self.buffer[9:4 + length]))
        del self.buffer[:4 + length]
        return Message(type_, ident, fields)
