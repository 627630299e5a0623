"""The connection to ncstored: one unix socket, a reader thread that owns its receiving side, and
a callback thread (or dispatch(), or the asyncio loop of ncstore.aio) that runs the callbacks.

Why two threads: a callback may read (get(), Verification.get) and wait for the answer, so the
thread that reads the socket is never the one that runs callbacks. The reader only routes:
replies complete the future of their request (edit_async's included, so no callback has to run
for one to complete), events are queued for the callbacks.
"""

import collections
import contextvars
import errno
import inspect
import logging
import os
import socket as _socket
import threading
import time
from concurrent.futures import Future

from . import _protocol as p
from ._types import (Batch, ChangeSet, Error, datastore_number, default_operation_number,
                     error_of_exception, lifetime_number, rfc3339, with_defaults_number)

log = logging.getLogger("ncstore")

CLOSED = "connection to ncstored closed"

# True while a callback runs (on the callback thread, inside dispatch(), or in the task of
# ncstore.aio that runs callbacks): a blocking edit there would wait for the commit that waits
# for this very callback.
_in_callback = contextvars.ContextVar("ncstore_in_callback", default=False)


def in_callback():
    """True inside a callback of this package (where edit(), apply() and commit() would wait for
    themselves and raise RuntimeError; edit_async() is deferred)."""
    return _in_callback.get()


def _millis(seconds):
    return max(0, int(round(seconds * 1000))) if seconds else 0


def _connect_unix(path, timeout):
    """A connected AF_UNIX socket. A path longer than sun_path (a deep data directory) is reached
    through its directory's descriptor: /proc/self/fd/N/NAME names the same socket in few bytes."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    target, dir_fd = path, None
    try:
        if len(os.fsencode(path)) >= 108:
            parent, name = os.path.split(path)
            dir_fd = os.open(parent or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            target = "/proc/self/fd/%d/%s" % (dir_fd, name)
        sock.connect(target)
    except OSError as e:
        sock.close()
        raise Error("connect to ncstored at %s: %s" % (path, e.strerror or e)) from None
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    return sock


class Registration:
    """A subscription, pull provider or RPC handler. It lasts until release(), the end of its
    `with` block, or the connection's close (dropping the object does not end it).

    id    the server's number for it
    kind  "subscription", "provider" or "handler"
    """

    def __init__(self, conn, kind, number):
        self._conn, self.kind, self.id = conn, kind, number
        self._released = False

    def release(self):
        """Ends the registration now; its callbacks are not called again. Errors are swallowed
        (the connection may be gone)."""
        if self._released:
            return
        self._released = True
        fut = self._conn._unregister(self.kind, self.id)
        if fut is not None:
            try:
                self._conn._wait(fut, "Unregister")
            except Error:
                pass

    @property
    def active(self):
        return not self._released and self._conn.connected

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return "<ncstore.Registration %s %d%s>" % (self.kind, self.id, " released" if self._released else "")


class Verification:
    """What a verify callback is given besides the change set."""

    def __init__(self, conn, event):
        self._conn, self._event = conn, event

    def get(self, xpath=""):
        """Running as the change would leave it (`xpath` selects; empty: all), XML."""
        return self._conn._wait(self._conn._begin_get(0, xpath, 0, self._event), "Get")

    def get_before(self, xpath=""):
        """Running as it is now, before the change."""
        return self._conn._wait(self._conn._begin_get(0, xpath, 0, None), "Get")

    def extend(self, seconds):
        """More time: the deadline becomes `seconds` from now."""
        self._conn._extend(self._event, seconds)


class Responder:
    """An RPC being answered, possibly later and from any thread, once: reply() or fail(). One
    that is forgotten unanswered answers "the handler did not answer" when it is collected."""

    def __init__(self, conn, event):
        self._conn, self._event = conn, event
        self._lock = threading.Lock()
        self._answered = False

    @property
    def answered(self):
        return self._answered

    def _take(self):
        with self._lock:
            if self._answered:
                return False
            self._answered = True
            return True

    def reply(self, output_xml=""):
        """The output's content (children of <rpc-reply>, XML; "" for none)."""
        if self._take():
            self._conn._answer(p.RPC_DONE, self._event, p.Fields().add(p.XML, output_xml or ""))

    def fail(self, error):
        """Fails the RPC with `error` (an ncstore.Error; any other exception: operation-failed)."""
        if self._take():
            self._conn._answer(p.RPC_DONE, self._event, error_of_exception(error, "the RPC handler")._add_to(
                p.Fields().add(p.EVENT, self._event)))

    def extend(self, seconds):
        """More time: the deadline becomes `seconds` from now."""
        if not self._answered:
            try:
                self._conn._extend(self._event, seconds)
            except Error:
                pass  # the connection is gone, and the call with it

    def __del__(self):
        try:
            if not self._answered:
                self.fail(Error("the handler did not answer"))
        except Exception:
            pass


class _Subscription:
    __slots__ = ("verify", "apply", "abort")

    def __init__(self, verify, apply, abort):
        self.verify, self.apply, self.abort = verify, apply, abort


class _Event:
    __slots__ = ("type", "target", "event", "text", "changes")

    def __init__(self, m):
        f = m.fields
        self.type, self.event, self.text, self.changes = m.type, 0, "", None

        def required(number):
            v = f.integer(number)
            if v is None:
                raise p.ProtocolError("a %s without field %d" % (p.TYPE_NAMES[m.type], number))
            return v
        if m.type in (p.VERIFY, p.ABORT, p.APPLY, p.RESYNC):
            self.target = required(p.SUBSCRIPTION)
        elif m.type == p.PULL:
            self.target = required(p.PROVIDER)
        else:
            self.target = required(p.HANDLER)
        if m.type in (p.VERIFY, p.ABORT, p.PULL, p.CALL):
            self.event = required(p.EVENT)
        if m.type in (p.VERIFY, p.APPLY):
            self.changes = ChangeSet._decode(f)
            if m.type == p.VERIFY:
                self.changes.commit_id = 0
        if m.type == p.PULL:
            self.text = f.text(p.XPATH, "")
        elif m.type == p.CALL:
            self.text = f.text(p.XML, "")


class Connection:
    """One session of ncstored, as the user the server maps this process's uid to. Use connect()
    (or ncstore.aio.connect()) rather than this class's constructor."""

    def __init__(self, socket=None, app_name="app", timeout=30.0, poll=False):
        path = socket or os.environ.get("NCSTORE_APP_SOCKET", "")
        if not path:
            raise Error("no socket of ncstored: `socket` is empty and NCSTORE_APP_SOCKET is not set")
        self.socket_path = path
        self.app_name = app_name
        self.timeout = timeout
        self._poll = poll
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()       # everything below
        self._cv = threading.Condition(self._lock)
        self._connected = True
        self._stopping = False
        self._next_id = 1
        self._pending = {}                   # id -> (future, decode)
        self._events = collections.deque()
        self._subscriptions = {}
        self._providers = {}
        self._handlers = {}                  # id -> (fn, is_async)
        self._verified = {}                  # (subscription, event) -> ChangeSet, for abort
        self._decoder = p.Decoder()
        self._wake_r = self._wake_w = -1
        self._sock = _connect_unix(path, timeout)
        try:
            self._hello()
            if poll:
                self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        except BaseException:
            self._sock.close()
            raise
        self._sock.settimeout(None)
        self._reader = threading.Thread(target=self._read_loop, name="ncstore-reader", daemon=True)
        self._callbacks = None
        if not poll:
            self._callbacks = threading.Thread(target=self._callback_loop, name="ncstore-callbacks", daemon=True)
        self._reader.start()
        if self._callbacks:
            self._callbacks.start()

    # --- the session --------------------------------------------------------------------------

    def _hello(self):
        m = p.Message(p.HELLO, self._take_id(), p.Fields().add(p.APP_NAME, self.app_name).add(p.F_VERSION, p.VERSION))
        self._sock.sendall(p.encode(m))
        deadline = time.monotonic() + self.timeout
        reply = None
        while reply is None:
            try:
                reply = self._decoder.next()
            except p.ProtocolError as e:
                raise Error("malformed answer of ncstored to hello: %s" % e) from None
            if reply is not None:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise Error("no answer of ncstored to hello within %d ms" % _millis(self.timeout))
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(65536)
            except _socket.timeout:
                continue
            except OSError as e:
                raise Error("reading the answer of ncstored to hello: %s" % e) from None
            if not data:
                raise Error("ncstored closed the connection without answering hello")
            self._decoder.feed(data)
        if reply.type == p.ERROR:
            raise Error._of(reply.fields)
        if reply.type != p.OK or reply.id != m.id:
            raise Error("ncstored answered hello with %s (id %d)" % (p.TYPE_NAMES.get(reply.type, reply.type), reply.id))
        try:
            version = reply.fields.integer(p.F_VERSION, p.VERSION)
            if version != p.VERSION:
                raise Error("ncstored speaks version %d of the protocol, this package %d" % (version, p.VERSION))
            self.session = reply.fields.integer(p.SESSION, 0)
            self.user = reply.fields.text(p.USER, "")
        except p.ProtocolError as e:
            raise Error("malformed answer of ncstored to hello: %s" % e) from None

    @property
    def connected(self):
        """False once the connection is closed (by close(), or by the server)."""
        with self._lock:
            return self._connected

    def close(self):
        """Closes the connection: the server drops everything it held (subscriptions, providers,
        RPC handlers, operational data of lifetime "connection"). Requests still waiting fail;
        the callback running, if any, finishes first (unless close() is called from it)."""
        with self._lock:
            self._stopping = True
            self._cv.notify_all()
        try:
            self._sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass
        me = threading.current_thread()
        for t in (self._reader, self._callbacks):
            if t is not None and t is not me and t.is_alive():
                t.join()
        self._sock.close()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wake_r = self._wake_w = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<ncstore.Connection session %s as %r%s>" % (self.session, self.user, "" if self.connected else " closed")

    # --- requests -----------------------------------------------------------------------------

    def _take_id(self):
        ident = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1  # 0 is the id of events
        return ident

    def _write(self, data):
        with self._write_lock:
            try:
                self._sock.sendall(data)
            except OSError:
                # Half a frame may be on the wire: the stream is lost either way.
                try:
                    self._sock.shutdown(_socket.SHUT_RDWR)
                except OSError:
                    pass
                raise Error(CLOSED) from None

    @staticmethod
    def _frame(m):
        try:
            return p.encode(m)
        except ValueError as e:
            raise Error("the %s is too big: %s" % (p.TYPE_NAMES[m.type], e), "too-big") from None

    def _begin(self, type_, fields, decode=None):
        """Sends a request; its Future gets decode(reply fields) (run on the reader thread, before
        the next frame is read) or the Error."""
        fut = Future()
        with self._lock:
            if not self._connected:
                raise Error(CLOSED)
            ident = self._take_id()
            self._pending[ident] = (fut, decode)
        fut._ncstore_id = ident
        try:
            self._write(self._frame(p.Message(type_, ident, fields)))
        except BaseException:
            self._forget(ident)
            raise
        return fut

    def _forget(self, ident):
        with self._lock:
            return self._pending.pop(ident, None) is not None

    def _wait(self, fut, what):
        try:
            return fut.result(self.timeout)
        except TimeoutError:
            # Forgotten only if no reply took it first: a reply that came as time ran out wins.
            if self._forget(fut._ncstore_id):
                raise Error("no reply of ncstored to %s within %d ms" % (what, _millis(self.timeout))) from None
            return fut.result()

    def _forbid_in_callback(self, what):
        if _in_callback.get():
            raise RuntimeError("%s inside a callback would wait for the commit that waits for this callback: "
                               "use edit_async()" % what)

    def _edit_fields(self, what, datastore, default_operation, comment, deferred):
        f = p.Fields().add(p.DATASTORE, datastore_number(datastore)).add(p.DEFAULT_OP, default_operation_number(default_operation))
        if isinstance(what, Batch):
            what._add_to(f)
        elif isinstance(what, str):
            f.add(p.CONFIG, what)
        else:
            raise TypeError("an edit is a Batch or edit-config <config> content (str), not %s" % type(what).__name__)
        if comment:
            f.add(p.COMMENT, comment)
        if deferred:
            f.add(p.DEFERRED, 1)
        return f

    @staticmethod
    def _commit_id(f):
        return f.integer(p.COMMIT_ID, 0)

    def edit(self, config_xml, datastore="running", default_operation="merge", comment=""):
        """An edit-config of `config_xml` (the content of <config>), one commit; returns its commit
        id (0 for datastores without one). Raises Error as the server refused it."""
        self._forbid_in_callback("edit()")
        return self._wait(self._begin(p.EDIT, self._edit_fields(config_xml, datastore, default_operation, comment, False),
                                      self._commit_id), "Edit")

    def apply(self, batch, datastore="running", default_operation="merge", comment=""):
        """A Batch as one commit; returns its commit id."""
        self._forbid_in_callback("apply()")
        if not isinstance(batch, Batch):
            raise TypeError("apply() takes a Batch; edit() takes XML")
        return self._wait(self._begin(p.EDIT, self._edit_fields(batch, datastore, default_operation, comment, False),
                                      self._commit_id), "Edit")

    def edit_async(self, edit, datastore="running", default_operation="merge", comment=""):
        """A Batch or XML edit that does not wait: a concurrent.futures.Future of its commit id
        (or Error). Inside a callback it is deferred: the server runs it after the commit in
        progress, so do not wait for the future there."""
        return self._begin(p.EDIT, self._edit_fields(edit, datastore, default_operation, comment, _in_callback.get()),
                           self._commit_id)

    def commit(self, comment=""):
        """Candidate to running; returns the commit id."""
        self._forbid_in_callback("commit()")
        f = p.Fields()
        if comment:
            f.add(p.COMMENT, comment)
        return self._wait(self._begin(p.COMMIT, f, self._commit_id), "Commit")

    def _begin_get(self, datastore, xpath, with_defaults, view_event):
        f = (p.Fields().add(p.DATASTORE, datastore_number(datastore)).add(p.XPATH, xpath or "")
             .add(p.WITH_DEFAULTS, with_defaults_number(with_defaults)))
        if view_event is not None:
            f.add(p.VIEW, 1).add(p.EVENT, view_event)
        return self._begin(p.GET, f, lambda r: r.text(p.XML, ""))

    def get(self, datastore="running", xpath="", with_defaults="explicit"):
        """The data of `datastore` ("running", "startup", "candidate", "operational") that `xpath`
        selects (empty: all), as XML. Never waits for applications: allowed in callbacks."""
        return self._wait(self._begin_get(datastore, xpath, with_defaults, None), "Get")

    def _begin_subscribe(self, xpath, verify, apply, abort, priority, initial, mandatory, since, deadline):
        entry = _Subscription(verify, apply, abort)
        flags = ((p.FLAG_VERIFY if verify else 0) | (p.FLAG_APPLY if (apply or abort) else 0) |
                 (p.FLAG_INITIAL if initial else 0) | (p.FLAG_MANDATORY if mandatory else 0) |
                 (p.FLAG_RESUME if since is not None else 0))
        f = p.Fields().add(p.XPATH, xpath).add(p.PRIORITY, int(priority)).add(p.FLAGS, flags)
        if since is not None:
            f.add(p.SINCE, int(since))
        f.add(p.DEADLINE_MS, _millis(deadline))

        def registered(r):
            # On the reader thread, as it takes the reply: the initial Apply may be the very next
            # frame, and must find its subscription.
            number = r.integer(p.SUBSCRIPTION)
            if number is None:
                raise p.ProtocolError("an Ok to Subscribe without Subscription")
            with self._lock:
                self._subscriptions[number] = entry
            return Registration(self, "subscription", number)
        return self._begin(p.SUBSCRIBE, f, registered)

    def subscribe(self, xpath, verify=None, apply=None, abort=None, priority=0, initial=False,
                  mandatory=False, since=None, deadline=5.0):
        """Takes part in the commits of the subtree `xpath` (a module "/ietf-interfaces:*" or a
        subtree "/ietf-interfaces:interfaces"); returns its Registration.

        verify(changes, verification)  before the commit is durable: raise Error to refuse it;
                                       `deadline` seconds to answer (verification.extend: more)
        apply(changes)                 every durable change set, in commit order, once
        abort(changes)                 a change this verify accepted was not committed
        priority                       verifiers run lower first, aborts in reverse
        initial                        first the current configuration as one apply (initial)
        mandatory                      while no application holds it, commits of `xpath` are refused
        since                          resume: the last commit id applied; the change sets after it
                                       are replayed first (or the whole subtree, initial)
        """
        return self._wait(self._begin_subscribe(xpath, verify, apply, abort, priority, initial, mandatory,
                                                since, deadline), "Subscribe")

    def _unregister(self, kind, number):
        """Forgets a registration's callbacks; the Future of its Unregister, or None when the
        connection is gone."""
        with self._lock:
            if kind == "subscription":
                self._subscriptions.pop(number, None)
                for key in [k for k in self._verified if k[0] == number]:
                    del self._verified[key]
            elif kind == "provider":
                self._providers.pop(number, None)
            else:
                self._handlers.pop(number, None)
            if not self._connected:
                return None
        if kind == "subscription":
            type_, field = p.UNSUBSCRIBE, p.SUBSCRIPTION
        else:
            type_, field = p.UNREGISTER, (p.PROVIDER if kind == "provider" else p.HANDLER)
        try:
            return self._begin(type_, p.Fields().add(field, number))
        except Error:
            return None

    def _begin_push(self, xml, lifetime):
        return self._begin(p.PUSH, p.Fields().add(p.XML, xml).add(p.LIFETIME, lifetime_number(lifetime)))

    def push(self, xml, lifetime="connection"):
        """Sets operational data (XML, type-checked against the models). Lifetime "connection":
        gone when this connection closes (also when the process is killed); "persistent":
        durable in the store, across restarts of both sides, until push_delete()."""
        self._wait(self._begin_push(xml, lifetime), "Push")

    def _begin_push_delete(self, xpath, lifetime):
        return self._begin(p.PUSH_DELETE, p.Fields().add(p.XPATH, xpath).add(p.LIFETIME, lifetime_number(lifetime)))

    def push_delete(self, xpath, lifetime="connection"):
        """Deletes pushed operational data of that lifetime."""
        self._wait(self._begin_push_delete(xpath, lifetime), "PushDelete")

    def _begin_provide(self, xpath, fn, deadline, cache):
        f = p.Fields().add(p.XPATH, xpath).add(p.CACHE_MS, _millis(cache)).add(p.DEADLINE_MS, _millis(deadline))

        def registered(r):
            number = r.integer(p.PROVIDER)
            if number is None:
                raise p.ProtocolError("an Ok to Provide without Provider")
            with self._lock:
                self._providers[number] = fn
            return Registration(self, "provider", number)
        return self._begin(p.PROVIDE, f, registered)

    def provide(self, xpath, fn, deadline=5.0, cache=0.0):
        """A pull provider of the subtree `xpath`: fn(filter) is called once per read that reaches
        it, with that read's filter as XPath (module names as prefixes; "" for all), and returns
        the data (XML) within `deadline` seconds; raise Error to fail the read. `cache`: seconds
        the server may reuse an answer."""
        return self._wait(self._begin_provide(xpath, fn, deadline, cache), "Provide")

    def _begin_rpc(self, path, fn, is_async, deadline):
        def registered(r):
            number = r.integer(p.HANDLER)
            if number is None:
                raise p.ProtocolError("an Ok to RegisterRpc without Handler")
            with self._lock:
                self._handlers[number] = (fn, is_async)
            return Registration(self, "handler", number)
        return self._begin(p.REGISTER_RPC, p.Fields().add(p.PATH, path).add(p.DEADLINE_MS, _millis(deadline)), registered)

    def handle_rpc(self, path, fn, deadline=5.0):
        """Answers the RPC `path` ("/module:rpc"): fn(input_xml) returns the output's content
        (XML, "" or None for none) within `deadline` seconds; raise Error to fail it."""
        return self._wait(self._begin_rpc(path, fn, False, deadline), "RegisterRpc")

    def handle_rpc_async(self, path, fn, deadline=5.0):
        """Like handle_rpc, but fn(input_xml, responder) answers later, from any thread, with
        responder.reply(output_xml) or responder.fail(error) (responder.extend: more time)."""
        return self._wait(self._begin_rpc(path, fn, True, deadline), "RegisterRpc")

    def _begin_notify(self, xml, event_time):
        f = p.Fields().add(p.XML, xml)
        t = rfc3339(event_time)
        if t:
            f.add(p.EVENT_TIME, t)
        return self._begin(p.NOTIFY, f)

    def notify(self, xml, event_time=None):
        """Raises a notification (its content element, XML), validated, logged for replay and
        delivered to the subscribers NACM lets read it; event time now unless given (RFC 3339 text
        or a datetime)."""
        self._wait(self._begin_notify(xml, event_time), "Notify")

    # --- poll mode ------------------------------------------------------------------------------

    def fileno(self):
        """poll=True: readable while events wait; dispatch() runs their callbacks."""
        if not self._poll:
            raise RuntimeError("fileno() is for a connection made with poll=True")
        return self._wake_r

    fd = fileno

    def dispatch(self):
        """poll=True: runs the callbacks of the events waiting now, on this thread, in order."""
        if not self._poll:
            raise RuntimeError("dispatch() without poll=True: the callback thread runs the callbacks")
        with self._lock:
            count = len(self._events)
        # Only what waited when called: a steady stream of events must not keep the caller here.
        token = _in_callback.set(True)
        try:
            for _ in range(count):
                e = self._pop_event()
                if e is None:
                    break
                self._handle(e)
        finally:
            _in_callback.reset(token)

    def _pop_event(self):
        with self._lock:
            if not self._events:
                return None
            e = self._events.popleft()
            if not self._events:
                self._drain_wake()
            return e

    def _drain_wake(self):
        if self._wake_r < 0:
            return
        try:
            while os.read(self._wake_r, 4096):
                pass
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBADF):
                raise

    # --- the reader -----------------------------------------------------------------------------

    def _read_loop(self):
        try:
            while True:
                # First what is buffered: the frames that came with the answer to hello.
                while True:
                    m = self._decoder.next()
                    if m is None:
                        break
                    self._route(m)
                data = self._sock.recv(1 << 16)
                if not data:
                    break
                self._decoder.feed(data)
        except p.ProtocolError as e:
            # Nothing the server sends can be trusted any more: the connection ends as the
            # server ends it for a broken client.
            log.error("ncstored broke the application protocol: %s", e)
        except OSError:
            pass
        self._closed()

    def _route(self, m):
        if m.type in p.REPLIES:
            with self._lock:
                entry = self._pending.pop(m.id, None)
            if entry is None:
                return  # the reply of a request that timed out
            fut, decode = entry
            if m.type == p.ERROR:
                fut.set_exception(Error._of(m.fields))
                return
            try:
                fut.set_result(decode(m.fields) if decode else None)
            except p.ProtocolError as e:
                fut.set_exception(Error("malformed reply of ncstored: %s" % e))
                raise
            return
        if m.type in p.EVENTS:
            self._queue(_Event(m))
            return
        raise p.ProtocolError("unexpected message from ncstored: %s (%d)" % (p.TYPE_NAMES.get(m.type, "?"), m.type))

    def _closed(self):
        with self._lock:
            self._connected = False
            pending, self._pending = self._pending, {}
        try:
            self._sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass
        for fut, _ in pending.values():
            fut.set_exception(Error(CLOSED))

    def _queue(self, e):
        with self._lock:
            self._events.append(e)
            if self._wake_w >= 0 and len(self._events) == 1:
                try:
                    os.write(self._wake_w, b"\x01")
                except OSError:
                    pass  # full: it is readable already
            self._cv.notify()

    # --- callbacks ------------------------------------------------------------------------------

    def _callback_loop(self):
        _in_callback.set(True)
        while True:
            with self._lock:
                while not self._stopping and not self._events:
                    self._cv.wait()
                if self._stopping:
                    return
                e = self._events.popleft()
            self._handle(e)

    def _job(self, e, verification):
        """What an event asks for: (callback, its arguments, finish(result, exception)), or None
        when there is nothing to call. `verification(event)` makes a verify's Verification."""
        with self._lock:
            if e.type in (p.VERIFY, p.ABORT, p.APPLY, p.RESYNC):
                target = self._subscriptions.get(e.target)
            elif e.type == p.PULL:
                target = self._providers.get(e.target)
            else:
                target = self._handlers.get(e.target)
            if e.type == p.VERIFY and target is not None and target.abort:
                self._verified[(e.target, e.event)] = e.changes
            elif e.type == p.APPLY:
                # An Apply ends the commit whose verify this subscription saw: no Abort follows.
                for key in [k for k in self._verified if k[0] == e.target]:
                    del self._verified[key]
            elif e.type == p.ABORT:
                aborted = self._verified.pop((e.target, e.event), ChangeSet())

        def answer(type_, what):
            def finish(result, exc):
                f = p.Fields().add(p.EVENT, e.event)
                if exc is not None:
                    error_of_exception(exc, what)._add_to(f)
                elif type_ != p.VERIFY_DONE:
                    f.add(p.XML, result or "")
                self._answer(type_, e.event, f)
            return finish

        def logged(what):
            def finish(result, exc):
                if exc is not None:
                    # The change is durable, or already gone: there is no one to tell.
                    log.error("the %s callback raised", what, exc_info=exc)
            return finish

        if e.type == p.VERIFY:
            if target is None or not target.verify:
                return (lambda: None), (), answer(p.VERIFY_DONE, "the verify callback")
            return target.verify, (e.changes, verification(e.event)), answer(p.VERIFY_DONE, "the verify callback")
        if e.type == p.ABORT:
            return (target.abort, (aborted,), logged("abort")) if target is not None and target.abort else None
        if e.type == p.APPLY:
            return (target.apply, (e.changes,), logged("apply")) if target is not None and target.apply else None
        if e.type == p.PULL:
            if target is None:
                return self._refuse, (Error("no provider %d in this application" % e.target),), answer(p.PULL_DONE, "")
            return target, (e.text,), answer(p.PULL_DONE, "the provider")
        if e.type == p.CALL:
            if target is None:
                return self._refuse, (Error("no RPC handler %d in this application" % e.target),), answer(p.RPC_DONE, "")
            fn, is_async = target
            if is_async:
                responder = Responder(self, e.event)

                def failed(result, exc):
                    if exc is not None:
                        responder.fail(exc)
                return fn, (e.text, responder), failed
            return fn, (e.text,), answer(p.RPC_DONE, "the RPC handler")
        # Resync: the initial Apply that follows says everything.
        log.info("ncstored resynchronizes subscription %d: an initial apply follows", e.target)
        return None

    @staticmethod
    def _refuse(error):
        raise error

    def _handle(self, e):
        job = self._job(e, lambda event: Verification(self, event))
        if job is None:
            return
        fn, args, finish = job
        try:
            result = fn(*args)
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if close:
                    close()
                raise TypeError("a coroutine callback needs ncstore.aio (this connection runs callbacks on a thread)")
        except BaseException as exc:
            finish(None, exc)
            if not isinstance(exc, Exception):
                raise  # SystemExit, KeyboardInterrupt: answered, and on their way
        else:
            finish(result, None)

    def _answer(self, type_, event, fields):
        """An answer to an event (VerifyDone, PullDone, RpcDone): never raises, since the one who
        would be told is the server, and a connection that is gone has no event to answer."""
        m = p.Message(type_, event, fields)
        try:
            try:
                data = self._frame(m)
            except Error as too_big:
                # The answer does not fit a frame: the server gets its error rather than nothing.
                data = self._frame(p.Message(type_, event, too_big._add_to(p.Fields().add(p.EVENT, event))))
            self._write(data)
        except Error:
            pass

    def _extend(self, event, seconds):
        self._write(self._frame(p.Message(p.EXTEND, event, p.Fields().add(p.EVENT, event).add(p.DEADLINE_MS, _millis(seconds)))))


def connect(socket=None, app_name="app", timeout=30.0, poll=False):
    """Connects to ncstored's application socket (`socket`, else $NCSTORE_APP_SOCKET) and says
    hello; returns the Connection (a context manager that closes it). Raises Error.

    timeout  seconds each request waits for its reply
    poll     callbacks run inside conn.dispatch() when conn.fileno() is readable, on the caller's
             thread, instead of on the connection's callback thread
    """
    return Connection(socket, app_name=app_name, timeout=timeout, poll=poll)
