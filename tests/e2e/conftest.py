"""pytest fixtures: one ncstored per test module, a fresh ncclient session per test."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ncserver  # noqa: E402


@pytest.fixture(scope="module")
def server(request):
    extra = getattr(request.module, "SERVER_ARGS", ())
    s = ncserver.Server(extra_args=extra, name=request.module.__name__)
    s.start()
    yield s
    alive = s.alive()
    s.stop() if alive else None
    if not alive:
        print("ncstored died during %s:\n%s" % (request.module.__name__, s.log_tail()))
    s.cleanup()


@pytest.fixture
def m(server):
    if not server.alive():
        pytest.fail("ncstored is not running any more:\n" + server.log_tail())
    session = server.connect()
    ncserver.reset(session)
    yield session
    try:
        session.close_session()
    except Exception:
        pass


@pytest.fixture
def m2(server):
    session = server.connect()
    yield session
    try:
        session.close_session()
    except Exception:
        pass
