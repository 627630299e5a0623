#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"

namespace ncstore::ds {

const char* toString(Datastore ds) {
    switch (ds) {
    case Datastore::Running:
        return "running";
    case Datastore::Startup:
        return "startup";
    case Datastore::Candidate:
        return "candidate";
    }
    return "?";
}

Durability parseDurability(const std::string& text) {
    if (text == "full") {
        return Durability::Full;
    }
    if (text == "normal") {
        return Durability::Normal;
    }
    if (text == "off") {
        return Durability::Off;
    }
    throw std::invalid_argument("unknown durability '" + text + "' (full, normal, off)");
}

const char* toString(Durability d) {
    switch (d) {
    case Durability::Full:
        return "full";
    case Durability::Normal:
        return "normal";
    case Durability::Off:
        return "off";
    }
    return "?";
}

const char* toString(ChangeOp op) {
    switch (op) {
    case ChangeOp::Create:
        return "create";
    case ChangeOp::Update:
        return "update";
    case ChangeOp::Replace:
        return "replace";
    case ChangeOp::Delete:
        return "delete";
    case ChangeOp::Move:
        return "move";
    }
    return "?";
}

const char* toString(Origin origin) {
    switch (origin) {
    case Origin::Edit:
        return "edit";
    case Origin::Replace:
        return "replace";
    case Origin::Copy:
        return "copy";
    case Origin::Clear:
        return "clear";
    case Origin::Commit:
        return "commit";
    case Origin::Event:
        return "event";
    }
    return "?";
}

} // namespace ncstore::ds
