"""pytest fixtures: one ncstored per test module, a fresh ncclient session per test; the hostile
tests' fixtures (a server per module while it stays healthy, bystander sessions) come from
hostile.py."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ncserver  # noqa: E402
from hostile import bystanders, hostile_server, shared_hostile_server  # noqa: E402,F401  (test_hostile_*.py)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """item.rep_setup / rep_call / rep_teardown: fixtures see how the test went (hostile.py)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


def pytest_configure(config):
    config.addinivalue_line("markers", "server_args(*args): extra ncstored arguments for the "
                            "hostile_server fixture (hostile.py)")


@pytest.fixture(scope="module")
def server(request):
    extra = getattr(request.module, "SERVER_ARGS", ())
    s = ncserver.Server(extra_args=extra, name=request.module.__name__)
    s.start()
    yield s
    alive = s.alive()
    status = s.stop() if alive else None
    if not alive:
        print("ncstored died during %s:\n%s" % (request.module.__name__, s.log_tail()))
    reports = s.sanitizer_reports()
    s.cleanup()
    if reports:
        pytest.fail("sanitizer report from ncstored at the end of %s:\n%s"
                    % (request.module.__name__, reports))
    if status:
        pytest.fail("ncstored exited with status %s on SIGTERM" % status)


@pytest.fixture(autouse=True)
def no_sanitizer_report(request):
    """Fails the test during which the module's ncstored wrote a sanitizer report."""
    yield
    if "server" in request.fixturenames:
        reports = request.getfixturevalue("server").sanitizer_reports()
        if reports:
            pytest.fail("sanitizer report from ncstored:\n" + reports)


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
