"""ncstore: the device's own software takes part in ncstored's datastore, from Python, over the unix
socket of the server's data directory (<data-dir>/app.sock; the protocol: docs/app-protocol.md;
the guide: docs/python-api.md). The same API as the C++ library libncstore-app
(<ncstore/app.hpp>), standard library only.

    import ncstore
    with ncstore.connect("/var/lib/ncstore/app.sock", app_name="roadm") as conn:
        with conn.subscribe("/ietf-interfaces:interfaces", verify=check, apply=program):
            ...

What it promises:
  - One Connection is one session of the server, as the user the server maps this process's uid
    to (NACM applies as to a NETCONF session of that user). Everything it registered
    (subscriptions, providers, RPC handlers, operational data of lifetime "connection") ends with
    it, also when the process is killed: nothing is left behind in the server.
  - Requests (edit, apply, commit, get, subscribe, push, notify, ...) may be called from any
    thread. Each blocks until its reply, at most the connection's `timeout` (seconds), and raises
    ncstore.Error with the rpc-error fields the server sent (tag, path, app_tag, info, message);
    an Error of tag "operation-failed" when the connection is gone or the reply is late.
    Passing something of the wrong type raises TypeError or ValueError before anything is sent.
  - Callbacks (verify, apply, abort, pull, RPC) run one at a time, in the order their events
    arrived: on the connection's callback thread; with connect(poll=True) inside
    conn.dispatch() on the caller's thread when conn.fileno() is readable; with ncstore.aio on
    the asyncio loop (coroutine callbacks allowed there).
  - No deadlock by design: inside a callback get() reads at once (in a verify also the datastore
    as the change would leave it: Verification.get); push, push_delete, notify and registrations
    never wait for commits; a write is edit_async(): the server queues it after the commit in
    progress and its future completes when that commit ran. A blocking edit(), apply() or
    commit() inside a callback would wait for itself and raises RuntimeError.
  - A callback that raises ncstore.Error refuses (verify) or fails (pull, RPC) with exactly that
    error's fields, which reach the NETCONF client's rpc-error unchanged; any other exception
    becomes an "operation-failed" error with its text. An apply or abort callback that raises is
    logged (logger "ncstore") and the next event still runs: the change is durable already.
  - A Registration lasts until release(), the end of its `with` block, or close(): dropping the
    object does not end it.
"""

from ._connection import Connection, Registration, Responder, Verification, connect, in_callback
from ._types import Batch, Change, ChangeSet, Error

__all__ = ["connect", "Connection", "Registration", "Verification", "Responder", "Error", "Batch",
           "Change", "ChangeSet", "in_callback", "aio"]

__version__ = "0.1.0"


def __getattr__(name):
    # ncstore.aio is imported when first used: a program without asyncio does not pay for it.
    if name == "aio":
        from . import aio
        return aio
    raise AttributeError("module 'ncstore' has no attribute %r" % name)
