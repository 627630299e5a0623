"""pytest fixtures of the Python API's tests: the package from this source checkout (python/), and
the end-to-end tests' server and ncclient sessions (tests/e2e/conftest.py, ncserver.py), loaded
from there rather than copied."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
E2E = os.path.join(REPO, "tests", "e2e")
for path in (os.path.join(REPO, "python"), E2E):
    if path not in sys.path:
        sys.path.insert(0, path)


def _load_e2e_conftest():
    spec = importlib.util.spec_from_file_location("ncstore_e2e_conftest", os.path.join(E2E, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_e2e = _load_e2e_conftest()
# One ncstored per test module (its SERVER_ARGS), a fresh ncclient session per test, and the
# sanitizer-report check of each test.
server = _e2e.server
m = _e2e.m
m2 = _e2e.m2
no_sanitizer_report = _e2e.no_sanitizer_report
