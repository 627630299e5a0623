"""ncstore on asyncio: the same connection, with requests as coroutines and callbacks run on the
event loop (plain functions or coroutine functions).

    async with ncstore.aio.connect(sock, app_name="roadm") as conn:
        async def verify(changes, v):
            running_after = await v.get("/ncstore-app-test:device")
            ...
        async with await conn.subscribe("/ncstore-app-test:device", verify=verify):
            await stop.wait()

What it promises, beside what ncstore promises:
  - Callbacks run on the loop of connect(), one at a time, in the order their events arrived: a
    coroutine callback is awaited before the next event's callback starts (so a verify that
    awaits a slow check holds later events, as the callback thread does).
  - Requests never block the loop: the connection's reader thread completes them.
  - Inside a callback, `await conn.edit()` / `apply()` / `commit()` would wait for the commit
    that waits for the callback and raise RuntimeError; conn.edit_async() there is deferred by
    the server until after the commit in progress (do not await it inside the callback).
  - Verification.get() and get_before() are coroutines here; Responder is ncstore.Responder.
"""

import asyncio

from . import _protocol as p
from ._connection import Connection, _in_callback, _millis
from ._types import Batch, Error

__all__ = ["connect", "AsyncConnection", "AsyncRegistration", "AsyncVerification"]


class AsyncVerification:
    """What a verify callback is given besides the change set, on asyncio."""

    def __init__(self, aconn, event):
        self._aconn, self._event = aconn, event

    async def get(self, xpath=""):
        """Running as the change would leave it (`xpath` selects; empty: all), XML."""
        return await self._aconn._await(self._aconn._conn._begin_get(0, xpath, 0, self._event), "Get")

    async def get_before(self, xpath=""):
        """Running as it is now, before the change."""
        return await self._aconn._await(self._aconn._conn._begin_get(0, xpath, 0, None), "Get")

    def extend(self, seconds):
        """More time: the deadline becomes `seconds` from now."""
        self._aconn._conn._extend(self._event, seconds)


class AsyncRegistration:
    """A subscription, provider or RPC handler: `await reg.release()`, or `async with`."""

    def __init__(self, aconn, registration):
        self._aconn, self._reg = aconn, registration
        self.id, self.kind = registration.id, registration.kind

    @property
    def active(self):
        return self._reg.active

    async def release(self):
        if self._reg._released:
            return
        self._reg._released = True
        fut = self._aconn._conn._unregister(self.kind, self.id)
        if fut is not None:
            try:
                await self._aconn._await(fut, "Unregister")
            except Error:
                pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.release()

    def __repr__(self):
        return repr(self._reg).replace("ncstore.Registration", "ncstore.aio.AsyncRegistration")


class AsyncConnection:
    """One session of ncstored on an asyncio loop. Made by `await ncstore.aio.connect(...)`."""

    def __init__(self, conn, loop):
        self._conn = conn
        self._loop = loop
        self._wake = asyncio.Event()
        loop.add_reader(conn.fileno(), self._readable)
        self._runner = loop.create_task(self._run_callbacks(), name="ncstore-callbacks")

    session = property(lambda self: self._conn.session)
    user = property(lambda self: self._conn.user)
    connected = property(lambda self: self._conn.connected)
    timeout = property(lambda self: self._conn.timeout)

    def _readable(self):
        self._conn._drain_wake()
        self._wake.set()

    async def _run_callbacks(self):
        _in_callback.set(True)  # this task's own context
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                e = self._conn._pop_event()
                if e is None:
                    break
                await self._handle(e)

    async def _handle(self, e):
        job = self._conn._job(e, lambda event: AsyncVerification(self, event))
        if job is None:
            return
        fn, args, finish = job
        try:
            result = fn(*args)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
        except asyncio.CancelledError:
            finish(None, Error("the application is closing"))
            raise
        except Exception as exc:
            finish(None, exc)
        else:
            finish(result, None)

    async def _await(self, fut, what):
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self._conn.timeout)
        except asyncio.TimeoutError:
            if self._conn._forget(fut._ncstore_id):
                raise Error("no reply of ncstored to %s within %d ms" % (what, _millis(self._conn.timeout))) from None
            return await asyncio.wrap_future(fut)

    def _forbid_in_callback(self, what):
        if _in_callback.get():
            raise RuntimeError("%s inside a callback would wait for the commit that waits for this callback: "
                               "use edit_async()" % what)

    async def close(self):
        """Closes the connection (see Connection.close); the callback running is cancelled unless
        close() is called from it."""
        if self._loop.is_closed():
            self._conn.close()
            return
        try:
            self._loop.remove_reader(self._conn.fileno())
        except (ValueError, OSError):
            pass
        current = asyncio.current_task()
        if self._runner is not current and not self._runner.done():
            self._runner.cancel()
            try:
                await self._runner
            except asyncio.CancelledError:
                pass
        # Joining the reader takes a moment: not on the loop.
        await self._loop.run_in_executor(None, self._conn.close)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def __repr__(self):
        return repr(self._conn).replace("ncstore.Connection", "ncstore.aio.AsyncConnection")

    # --- requests (see ncstore.Connection for what each does) -----------------------------------

    async def edit(self, config_xml, datastore="running", default_operation="merge", comment=""):
        self._forbid_in_callback("edit()")
        return await self._await(self._conn._begin(p.EDIT, self._conn._edit_fields(
            config_xml, datastore, default_operation, comment, False), self._conn._commit_id), "Edit")

    async def apply(self, batch, datastore="running", default_operation="merge", comment=""):
        self._forbid_in_callback("apply()")
        if not isinstance(batch, Batch):
            raise TypeError("apply() takes a Batch; edit() takes XML")
        return await self._await(self._conn._begin(p.EDIT, self._conn._edit_fields(
            batch, datastore, default_operation, comment, False), self._conn._commit_id), "Edit")

    def edit_async(self, edit, datastore="running", default_operation="merge", comment=""):
        """An asyncio Future of the commit id; deferred by the server inside a callback."""
        fut = self._conn._begin(p.EDIT, self._conn._edit_fields(edit, datastore, default_operation, comment,
                                                                _in_callback.get()), self._conn._commit_id)
        return asyncio.wrap_future(fut, loop=self._loop)

    async def commit(self, comment=""):
        self._forbid_in_callback("commit()")
        f = p.Fields()
        if comment:
            f.add(p.COMMENT, comment)
        return await self._await(self._conn._begin(p.COMMIT, f, self._conn._commit_id), "Commit")

    async def get(self, datastore="running", xpath="", with_defaults="explicit"):
        return await self._await(self._conn._begin_get(datastore, xpath, with_defaults, None), "Get")

    async def subscribe(self, xpath, verify=None, apply=None, abort=None, priority=0, initial=False,
                        mandatory=False, since=None, deadline=5.0):
        reg = await self._await(self._conn._begin_subscribe(xpath, verify, apply, abort, priority, initial,
                                                            mandatory, since, deadline), "Subscribe")
        return AsyncRegistration(self, reg)

    async def push(self, xml, lifetime="connection"):
        await self._await(self._conn._begin_push(xml, lifetime), "Push")

    async def push_delete(self, xpath, lifetime="connection"):
        await self._await(self._conn._begin_push_delete(xpath, lifetime), "PushDelete")

    async def provide(self, xpath, fn, deadline=5.0, cache=0.0):
        return AsyncRegistration(self, await self._await(self._conn._begin_provide(xpath, fn, deadline, cache),
                                                         "Provide"))

    async def handle_rpc(self, path, fn, deadline=5.0):
        return AsyncRegistration(self, await self._await(self._conn._begin_rpc(path, fn, False, deadline),
                                                         "RegisterRpc"))

    async def handle_rpc_async(self, path, fn, deadline=5.0):
        return AsyncRegistration(self, await self._await(self._conn._begin_rpc(path, fn, True, deadline),
                                                         "RegisterRpc"))

    async def notify(self, xml, event_time=None):
        await self._await(self._conn._begin_notify(xml, event_time), "Notify")


class _Connecting:
    """What connect() returns: await it for the AsyncConnection, or `async with` it (closed at
    the end of the block)."""

    def __init__(self, socket, app_name, timeout):
        self._args = (socket, app_name, timeout)
        self._conn = None

    async def _open(self):
        socket, app_name, timeout = self._args
        loop = asyncio.get_running_loop()
        conn = await loop.run_in_executor(
            None, lambda: Connection(socket, app_name=app_name, timeout=timeout, poll=True))
        return AsyncConnection(conn, loop)

    def __await__(self):
        return self._open().__await__()

    async def __aenter__(self):
        self._conn = await self._open()
        return self._conn

    async def __aexit__(self, *exc):
        await self._conn.close()


def connect(socket=None, app_name="app", timeout=30.0):
    """Connects (see ncstore.connect) with callbacks on the running loop:
    `conn = await ncstore.aio.connect(...)` or `async with ncstore.aio.connect(...) as conn:`.
    Raises ncstore.Error."""
    return _Connecting(socket, app_name, timeout)
