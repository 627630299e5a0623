"""The values the API speaks in: Error, Change, ChangeSet, Batch and the names of datastores,
default operations, with-defaults modes and lifetimes."""

import datetime

from . import _protocol as p


class Error(Exception):
    """An rpc-error (RFC 6241 4.3): what ncstored answered a failed call with, or what a callback
    raises to refuse a change or fail a read or an RPC. Its fields reach the NETCONF client's
    rpc-error as they are.

    message  error-message        tag     error-tag (default "operation-failed")
    path     error-path           app_tag error-app-tag
    info     the content of error-info (XML)
    """

    def __init__(self, message, tag="operation-failed", path="", app_tag="", info=""):
        super().__init__(message)
        self.message = message
        self.tag = tag or "operation-failed"
        self.path = path or ""
        self.app_tag = app_tag or ""
        self.info = info or ""

    def __str__(self):
        return self.message

    def __repr__(self):
        extra = "".join(", %s=%r" % (k, getattr(self, k)) for k in ("path", "app_tag", "info") if getattr(self, k))
        return "ncstore.Error(%r, tag=%r%s)" % (self.message, self.tag, extra)

    @classmethod
    def _of(cls, fields):
        """The Error of an Error reply's fields."""
        tag = fields.text(p.ERROR_TAG) or "operation-failed"
        message = fields.text(p.MESSAGE) or "ncstored answered " + tag
        return cls(message, tag, fields.text(p.PATH, ""), fields.text(p.APP_TAG, ""), fields.text(p.INFO, ""))

    def _add_to(self, fields):
        """As the error fields of an answer (VerifyDone, PullDone, RpcDone)."""
        fields.add(p.ERROR_TAG, self.tag or "operation-failed")
        if self.app_tag:
            fields.add(p.APP_TAG, self.app_tag)
        if self.path:
            fields.add(p.PATH, self.path)
        fields.add(p.MESSAGE, self.message)
        if self.info:
            fields.add(p.INFO, self.info)
        return fields


def error_of_exception(e, what):
    """What a callback's exception refuses or fails with: an Error as it is, anything else as
    operation-failed with its text."""
    if isinstance(e, Error):
        return e
    text = str(e)
    return Error(text if text else "%s raised %s" % (what, type(e).__name__))


def _name(kind, names, value):
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return value
    try:
        return names.index(str(value).lower().replace("_", "-"))
    except ValueError:
        raise ValueError("%s %r: one of %s" % (kind, value, ", ".join(names))) from None


DATASTORES = ("running", "startup", "candidate", "operational")
DEFAULT_OPERATIONS = ("merge", "replace", "none")
WITH_DEFAULTS = ("explicit", "trim", "report-all")
LIFETIMES = ("connection", "persistent")
CHANGE_OPS = ("create", "update", "replace", "delete", "move")
_ITEM_OPS = {"merge": 0, "create": 1, "replace": 2, "delete": 3, "remove": 4}


def datastore_number(value):
    return _name("datastore", DATASTORES, value)


def default_operation_number(value):
    return _name("default operation", DEFAULT_OPERATIONS, value)


def with_defaults_number(value):
    return _name("with-defaults mode", WITH_DEFAULTS, value)


def lifetime_number(value):
    return _name("lifetime", LIFETIMES, value)


def rfc3339(value):
    """An event time: a str as it is, a datetime in RFC 3339 (naive: UTC)."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()
    raise TypeError("event_time: a str (RFC 3339) or a datetime, not %s" % type(value).__name__)


class Change:
    """One change of a change set, as the datastore records it (datastore/include/ncstore/changes.hpp).

    op         "create", "update", "replace", "delete" or "move"
    path       instance identifier, every key in a predicate
    old_value  leaves: update, delete (else None)
    new_value  leaves: create, update (else None)
    xml        containers and list entries: the subtree created or deleted ("" for leaves)
    first      ordered-by-user instances (create, move): placed first
    anchor     ... or after this instance (a path), else None
    """

    __slots__ = ("op", "path", "old_value", "new_value", "xml", "first", "anchor")

    def __init__(self, op, path, old_value=None, new_value=None, xml="", first=False, anchor=None):
        self.op, self.path, self.old_value, self.new_value = op, path, old_value, new_value
        self.xml, self.first, self.anchor = xml, first, anchor

    def __eq__(self, other):
        return isinstance(other, Change) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        parts = [repr(self.op), repr(self.path)]
        for k in ("old_value", "new_value", "xml", "anchor"):
            if getattr(self, k):
                parts.append("%s=%r" % (k, getattr(self, k)))
        if self.first:
            parts.append("first=True")
        return "Change(%s)" % ", ".join(parts)

    @classmethod
    def _decode(cls, data):
        f = p.Fields.decode(data)
        op = f.integer(p.CHANGE_OP)
        if op is None or op >= len(CHANGE_OPS):
            raise p.ProtocolError("a change without a valid ChangeOp")
        where = f.integer(p.WHERE)
        if where not in (None, 0, 1):
            raise p.ProtocolError("a change's Where is %d, not 0 or 1" % where)
        return cls(CHANGE_OPS[op], f.text(p.PATH, ""), f.text(p.OLD_VALUE), f.text(p.NEW_VALUE),
                   f.text(p.XML, ""), where == 0, f.text(p.ANCHOR, "") if where == 1 else None)


class ChangeSet:
    """What a verify, apply or abort callback is given: iterate it (or .changes) for the Changes.

    commit_id  the commit's id (0 in a verify and an abort: the commit has none yet)
    initial    the current configuration as creates (initial=True at subscribe, or after a resync)
    """

    __slots__ = ("commit_id", "initial", "changes")

    def __init__(self, changes=(), commit_id=0, initial=False):
        self.changes = list(changes)
        self.commit_id = commit_id
        self.initial = initial

    def __iter__(self):
        return iter(self.changes)

    def __len__(self):
        return len(self.changes)

    def __getitem__(self, i):
        return self.changes[i]

    def __repr__(self):
        return "ChangeSet(commit_id=%d, initial=%s, %r)" % (self.commit_id, self.initial, self.changes)

    @classmethod
    def _decode(cls, fields):
        return cls([Change._decode(c) for c in fields.all(p.CHANGE)], fields.integer(p.COMMIT_ID, 0),
                   bool(fields.integer(p.FLAGS, 0) & p.FLAG_INITIAL))


class Batch:
    """One edit as items, applied in order as one commit (after xml(), when given). Each method
    returns the batch, so that calls chain:

        conn.apply(ncstore.Batch().merge(path + "/type", "iana-if-type:ethernetCsmacd").remove(other))
    """

    def __init__(self):
        self.items = []   # (op, path, value)
        self.config = ""

    def _add(self, op, path, value=""):
        self.items.append((op, path, value))
        return self

    def merge(self, path, value=""):
        """Create or set."""
        return self._add("merge", path, value)

    def create(self, path, value=""):
        """Create; an error (data-exists) when it exists."""
        return self._add("create", path, value)

    def replace(self, path, value=""):
        return self._add("replace", path, value)

    def remove(self, path):
        """Delete; no error when absent."""
        return self._add("remove", path)

    def erase(self, path):
        """Delete; an error (data-missing) when absent. Also called delete()."""
        return self._add("delete", path)

    delete = erase

    def xml(self, config):
        """edit-config <config> content, applied before the items."""
        self.config = config
        return self

    def __bool__(self):
        return bool(self.items or self.config)

    def __repr__(self):
        return "Batch(%r%s)" % (self.items, ", xml=..." if self.config else "")

    def _add_to(self, fields):
        if self.config:
            fields.add(p.CONFIG, self.config)
        for op, path, value in self.items:
            nested = p.Fields().add(p.ITEM_OP, _ITEM_OPS[op]).add(p.PATH, path)
            if op not in ("delete", "remove"):
                nested.add(p.VALUE, value)
            fields.add(p.ITEM, nested)
        return fields
