"""Where tests and tools find the reference data that is not part of the repository (the
official Open ROADM models, the ONAP CPS schema and data): $NCSTORE_SHARED_DIR, else the
directory `shared` beside the repository.

A test that needs a part of it that is missing is skipped with a one-line reason naming what it
needs and how to point at it; with CI=true in the environment it fails instead (a CI machine
must have the data: a skip there would hide a test that did not run). ctest shows the skip as
"Skipped" through the exit status SKIP_EXIT (the tests' SKIP_RETURN_CODE).
"""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIP_EXIT = 77



def shared_dir(override=None):
    """The shared data directory: `override`, else $NCSTORE_SHARED_DIR, else <repo>/../shared."""
    return Path(override or os.environ.get("NCSTORE_SHARED_DIR") or REPO.parent / "shared")


def ci():
    """True when missing data must fail rather than skip (CI=true, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def openroadm(version):
    """What a test on the official Open ROADM models of `version` needs."""
    return [("yang/openroadm/%s" % version, "the official Open ROADM %s models" % version),
            ("yang/ietf", "the IETF modules the Open ROADM models import")]


def missing(needs, override=None):
    """The reason a test cannot run, or None. `needs`: [(path relative to the shared data
    directory, what it is)]."""
    root = shared_dir(override)
    for rel, what in needs:
        p = root / rel
        if not p.exists():
            return ("needs %s (%s): set NCSTORE_SHARED_DIR to the shared data directory "
                    "(default: ../shared beside the repository)" % (what, p))
    return None


def require_or_exit(needs, override=None):
    """For a test run as a script: returns when the data is there; otherwise prints the reason
    and exits, SKIP_EXIT (skipped) or 1 under CI=true (failed)."""
    reason = missing(needs, override)
    if reason is None:
        return
    if ci():
        print("FAILED (CI=true, nothing may be skipped): " + reason, flush=True)
        sys.exit(1)
    print("SKIPPED: " + reason, flush=True)
    sys.exit(SKIP_EXIT)
