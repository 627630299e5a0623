"""A client of ncstored's application protocol (docs/app-protocol.md), written from the
protocol's documentation, for the end-to-end tests: the tests' "applications" are separate
processes or threads speaking it on the data directory's app.sock.

Run as a program it is a separate application process the tests can kill -9:
    appclient.py verify-sleeper SOCKET XPATH   subscribes to verify XPATH and never answers
    appclient.py pusher SOCKET XML             pushes XML (lifetime connection) and waits
"""

import queue
import socket
import struct
import sys
import threading
import time

FIELDS = dict(AppName=1, Version=2, Session=3, User=4, Datastore=5, DefaultOp=6, Config=7, Item=8,
              Comment=9, CommitId=10, XPath=11, WithDefaults=12, Xml=13, Subscription=14,
              Priority=15, Flags=16, Since=17, DeadlineMs=18, Lifetime=19, Provider=20,
              CacheMs=21, Path=22, Handler=23, EventTime=24, Event=25, ErrorTag=26, AppTag=27,
              Message=28, Info=29, Change=30, ChangeOp=31, OldValue=32, NewValue=33, ItemOp=34,
              Value=35, Deferred=36, View=37, Where=38, Anchor=39)
NAMES = {v: k for k, v in FIELDS.items()}
INTEGERS = {"Version", "Session", "Datastore", "DefaultOp", "CommitId", "WithDefaults",
            "Subscription", "Priority", "Flags", "Since", "DeadlineMs", "Lifetime", "Provider",
            "CacheMs", "Handler", "Event", "ChangeOp", "ItemOp", "Deferred", "View", "Where"}
NESTED = {"Change", "Item"}
TYPES = dict(Hello=1, Edit=2, Commit=3, Get=4, Subscribe=5, Unsubscribe=6, Push=7, PushDelete=8,
             Provide=9, RegisterRpc=10, Unregister=11, Notify=12, VerifyDone=32, Extend=33,
             PullDone=34, RpcDone=35, Ok=64, Error=65, Data=66, Verify=80, Abort=81, Apply=82,
             Pull=83, Call=84, Resync=85)
TYPE_NAMES = {v: k for k, v in TYPES.items()}
VERIFY, APPLY, INITIAL, MANDATORY, RESUME = 1, 2, 4, 8, 16
CHANGE_OPS = ["create", "update", "replace", "delete", "move"]


def encode_fields(items):
    out = b""
    for name, value in items:
        if isinstance(value, list):
            value = encode_fields(value)
        elif isinstance(value, bool) or isinstance(value, int):
            value = struct.pack("<Q", int(value))
        elif isinstance(value, str):
            value = value.encode()
        out += struct.pack("<HI", FIELDS[name], len(value)) + value
    return out


def frame(type_name, ident, items):
    body = struct.pack("<BI", TYPES[type_name], ident) + encode_fields(items)
    return struct.pack("<I", len(body)) + body


def decode_fields(data):
    out = []
    at = 0
    while at < len(data):
        number, length = struct.unpack_from("<HI", data, at)
        at += 6
        value = data[at:at + length]
        at += length
        name = NAMES.get(number, str(number))
        if name in INTEGERS:
            value = struct.unpack("<Q", value)[0]
        elif name in NESTED:
            value = Fields(decode_fields(value))
        else:
            value = value.decode()
        out.append((name, value))
    return out


class Fields(list):
    """(name, value) pairs in order; .get(name) the first value, .all(name) every one."""

    def get(self, name, default=None):
        for n, v in self:
            if n == name:
                return v
        return default

    def all(self, name):
        return [v for n, v in self if n == name]


class Message:
    def __init__(self, type_name, ident, fields):
        self.type = type_name
        self.id = ident
        self.fields = Fields(fields)

    def changes(self):
        """The Change fields as dicts: op, path, old, new, xml."""
        return [dict(op=CHANGE_OPS[c.get("ChangeOp")], path=c.get("Path"), old=c.get("OldValue"),
                     new=c.get("NewValue"), xml=c.get("Xml")) for c in self.fields.all("Change")]

    def __repr__(self):
        return "<%s %d %r>" % (self.type, self.id, list(self.fields))


class AppError(Exception):
    def __init__(self, fields):
        super().__init__("%s: %s" % (fields.get("ErrorTag"), fields.get("Message")))
        self.tag = fields.get("ErrorTag")
        self.message = fields.get("Message")
        self.path = fields.get("Path")
        self.app_tag = fields.get("AppTag")


def item(op, path, value=None):
    """An Edit item: op is merge, create, replace, delete or remove."""
    fields = [("ItemOp", ["merge", "create", "replace", "delete", "remove"].index(op)), ("Path", path)]
    if value is not None:
        fields.append(("Value", value))
    return ("Item", fields)


class App:
    """One application connection. Replies reach request(); events go to `events` (a queue of
    Message), or to handlers set with on(type_name, fn), called on the reader thread."""

    def __init__(self, path, name="e2e-app", timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.timeout = timeout
        self.lock = threading.Lock()
        self.next_id = 0
        self.replies = {}
        self.cv = threading.Condition()
        self.events = queue.Queue()
        self.handlers = {}
        self.closed = False
        self.buffer = b""
        self.sock.sendall(frame("Hello", 1, [("AppName", name), ("Version", 1)]))
        hello = self._read_message()
        if hello.type != "Ok":
            raise AppError(hello.fields)
        self.session = hello.fields.get("Session")
        self.user = hello.fields.get("User")
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    def _read_message(self):
        while True:
            if len(self.buffer) >= 4:
                (length,) = struct.unpack_from("<I", self.buffer)
                if len(self.buffer) >= 4 + length:
                    body = self.buffer[4:4 + length]
                    self.buffer = self.buffer[4 + length:]
                    type_number, ident = struct.unpack_from("<BI", body)
                    return Message(TYPE_NAMES.get(type_number, str(type_number)), ident,
                                   decode_fields(body[5:]))
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buffer += data

    def _read_loop(self):
        try:
            while True:
                m = self._read_message()
                if m.type in ("Ok", "Error", "Data"):
                    with self.cv:
                        self.replies[m.id] = m
                        self.cv.notify_all()
                elif m.type in self.handlers:
                    self.handlers[m.type](m)
                else:
                    self.events.put(m)
        except (EOFError, OSError):
            pass
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def on(self, type_name, fn):
        self.handlers[type_name] = fn

    def send(self, type_name, items, ident=0):
        with self.lock:
            self.sock.sendall(frame(type_name, ident, items))

    def request(self, type_name, items=()):
        with self.lock:
            self.next_id += 1
            ident = self.next_id
            self.sock.sendall(frame(type_name, ident, list(items)))
        deadline = time.monotonic() + self.timeout
        with self.cv:
            while ident not in self.replies:
                if self.closed:
                    raise EOFError("the server closed the connection")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no reply to %s" % type_name)
                self.cv.wait(left)
            reply = self.replies.pop(ident)
        if reply.type == "Error":
            raise AppError(reply.fields)
        return reply

    def next_event(self, type_name=None, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no %s event" % (type_name or "any"))
            m = self.events.get(timeout=left)
            if type_name is None or m.type == type_name:
                return m

    # The requests the tests use.
    def edit(self, items=(), config=None, datastore=0, deferred=False):
        fields = [("Datastore", datastore)]
        if config:
            fields.append(("Config", config))
        fields += list(items)
        if deferred:
            fields.append(("Deferred", 1))
        return self.request("Edit", fields).fields.get("CommitId")

    def get(self, xpath="", datastore=0, view_event=None):
        fields = [("Datastore", datastore), ("XPath", xpath)]
        if view_event is not None:
            fields += [("View", 1), ("Event", view_event)]
        return self.request("Get", fields).fields.get("Xml")

    def subscribe(self, xpath, flags=APPLY, priority=0, since=None, deadline_ms=5000):
        fields = [("XPath", xpath), ("Flags", flags | (RESUME if since is not None else 0)),
                  ("Priority", priority), ("DeadlineMs", deadline_ms)]
        if since is not None:
            fields.append(("Since", since))
        return self.request("Subscribe", fields).fields.get("Subscription")

    def accept(self, event):
        self.send("VerifyDone", [("Event", event)])

    def refuse(self, event, message, path="", app_tag="", info="", tag="operation-failed"):
        self.send("VerifyDone", [("Event", event), ("ErrorTag", tag), ("Message", message),
                                 ("Path", path), ("AppTag", app_tag), ("Info", info)])

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def main(argv):
    mode, path = argv[1], argv[2]
    app = App(path, name=mode)
    if mode == "verify-sleeper":
        app.subscribe(argv[3], flags=VERIFY, deadline_ms=60000)
    elif mode == "pusher":
        app.request("Push", [("Xml", argv[3]), ("Lifetime", 0)])
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv)
