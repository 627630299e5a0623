#include "patch.hpp"

#include "events.hpp"

#include "ncstore/xml.hpp"
#include "ncstore/yang.hpp"

namespace ncstore::netconfd::push {

namespace {

bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

void appendPercentEncoded(std::string& out, std::string_view value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (unreserved(c)) {
            out += ch;
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        }
    }
}

/// The change's own value as one parentless node (terminals are made from their path).
std::string ownValue(const ds::Change& c, const ly_ctx* ctx) {
    if (c.newTree) {
        return printTree(c.newTree.get(), LYD_XML, LYD_PRINT_SHRINK);
    }
    if (!c.newValue) {
        return {};
    }
    lyd_node* top = nullptr;
    lyd_node* node = nullptr;
    const bool leafList = c.schema && c.schema->nodetype == LYS_LEAFLIST;
    if (lyd_new_path2(nullptr, ctx, c.path.c_str(), leafList ? nullptr : c.newValue->c_str(), 0,
                      LYD_ANYDATA_STRING, 0, &top, &node) != LY_SUCCESS ||
        !node) {
        Tree owned{top};
        throw YangError("cannot make the value of " + c.path, ctx);
    }
    Tree owned{top};
    return printTree(node, LYD_XML, LYD_PRINT_SHRINK);
}

} // namespace

std::string restconfPath(std::string_view path) {
    std::string out;
    out.reserve(path.size());
    std::string_view module;
    for (const notify::PathStep& step : notify::splitPath(path)) {
        out += '/';
        if (step.module != module) {
            out.append(step.module);
            out += ':';
            module = step.module;
        }
        out.append(step.name);
        bool first = true;
        for (const auto& p : step.predicates) {
            if (p.literal.empty()) {
                throw notify::PathError("a positional predicate has no RESTCONF form: " + std::string(path));
            }
            out += first ? '=' : ',';
            first = false;
            appendPercentEncoded(out, notify::unquoted(p.literal));
        }
    }
    return out;
}

const char* changeType(const ds::Change& c) {
    switch (c.op) {
    case ds::ChangeOp::Create:
        return c.position ? "insert" : "create";
    case ds::ChangeOp::Delete:
        return "delete";
    case ds::ChangeOp::Move:
        return "move";
    case ds::ChangeOp::Update:
    case ds::ChangeOp::Replace:
        break;
    }
    return "replace";
}

std::string edit(const ds::Change& c, std::string_view editId, const lyd_node* value, const ly_ctx* ctx) {
    std::string out = "<edit>";
    appendElement(out, "edit-id", editId);
    appendElement(out, "operation", changeType(c));
    appendElement(out, "target", restconfPath(c.path));
    if (c.position && (c.op == ds::ChangeOp::Create || c.op == ds::ChangeOp::Move)) {
        if (c.position->where == ds::Position::Where::After) {
            appendElement(out, "point", restconfPath(c.position->anchor));
            appendElement(out, "where", "after");
        } else {
            appendElement(out, "where", "first");
        }
    }
    if (c.op != ds::ChangeOp::Delete && c.op != ds::ChangeOp::Move) {
        out += "<value>";
        if (value) {
            // A part of a bigger tree: printed alone, so that it declares its namespace.
            lyd_node* copy = nullptr;
            if (lyd_dup_single(value, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
                throw YangError("cannot copy the selected part of " + c.path, ctx);
            }
            const Tree owned{copy};
            out += printTree(copy, LYD_XML, LYD_PRINT_SHRINK);
        } else {
            out += ownValue(c, ctx);
        }
        out += "</value>";
    }
    out += "</edit>";
    return out;
}

std::string pushChangeUpdate(std::uint32_t id, std::string_view patchId, std::string_view edits) {
    std::string out;
    out.reserve(edits.size() + 256);
    out += "<push-change-update xmlns=\"";
    out += kYpNs;
    out += "\"><id>" + std::to_string(id) + "</id><datastore-changes><yang-patch>";
    appendElement(out, "patch-id", patchId);
    out.append(edits);
    out += "</yang-patch></datastore-changes></push-change-update>";
    return out;
}

std::string pushUpdate(std::uint32_t id, std::string_view contents) {
    std::string out;
    out.reserve(contents.size() + 160);
    out += "<push-update xmlns=\"";
    out += kYpNs;
    out += "\"><id>" + std::to_string(id) + "</id><datastore-contents>";
    out.append(contents);
    out += "</datastore-contents></push-update>";
    return out;
}

namespace {

/// A subscription state notification with an id and a reason identity.
std::string stateChange(const char* name, std::uint32_t id, std::string_view reason) {
    const auto colon = reason.find(':');
    const std::string_view module = reason.substr(0, colon);
    std::string out = "<";
    out += name;
    out += " xmlns=\"";
    out += kSnNs;
    out += "\"><id>" + std::to_string(id) + "</id><reason";
    if (colon != std::string_view::npos) {
        out += " xmlns:";
        out.append(module);
        out += "=\"";
        out += module == "ietf-yang-push" ? kYpNs : kSnNs;
        out += '"';
    }
    out += '>';
    appendXmlEscaped(out, reason);
    out += "</reason></";
    out += name;
    out += '>';
    return out;
}

} // namespace

std::string subscriptionTerminated(std::uint32_t id, std::string_view reason) {
    return stateChange("subscription-terminated", id, reason);
}

std::string subscriptionSuspended(std::uint32_t id, std::string_view reason) {
    return stateChange("subscription-suspended", id, reason);
}

std::string replayCompleted(std::uint32_t id) {
    return std::string("<replay-completed xmlns=\"") + kSnNs + "\"><id>" + std::to_string(id) +
           "</id></replay-completed>";
}

std::shared_ptr<const std::vector<std::string>> EditCache::edits(const ds::ChangeSet& changes,
                                                                 const ly_ctx* ctx) {
    std::shared_ptr<Entry> entry;
    {
        std::lock_guard lock(mutex_);
        auto& slot = entries_[changes.commitId];
        if (!slot) {
            slot = std::make_shared<Entry>();
        }
        entry = slot;
        while (entries_.size() > keep_) {
            entries_.erase(entries_.begin()); // the oldest commit
        }
    }
    std::call_once(entry->once, [&] {
        auto made = std::make_shared<std::vector<std::string>>();
        made->reserve(changes.changes.size());
        for (std::size_t i = 0; i < changes.changes.size(); ++i) {
            made->push_back(edit(changes.changes[i], editId(changes, i), nullptr, ctx));
        }
        entry->edits = std::move(made);
    });
    return entry->edits;
}

} // namespace ncstore::netconfd::push
