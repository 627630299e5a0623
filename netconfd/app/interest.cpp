#include "interest.hpp"

#include <stdexcept>

namespace ncstore::netconfd::app {

namespace {

bool isAncestorOrSelf(const lysc_node* ancestor, const lysc_node* node) {
    for (const lysc_node* n = node; n; n = n->parent) {
        if (n == ancestor) {
            return true;
        }
    }
    return false;
}

} // namespace

std::string schemaPathOf(const std::string& path, bool* had) {
    std::string out;
    int depth = 0;
    char quote = 0;
    for (char c : path) {
        if (quote) {
            quote = c == quote ? 0 : quote;
        } else if (depth > 0) {
            if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '[') {
                ++depth;
            } else if (c == ']') {
                --depth;
            }
        } else if (c == '[') {
            if (had) {
                *had = true;
            }
            ++depth;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

Interest::Interest(const ly_ctx* ctx, std::string xpath) : xpath_(std::move(xpath)) {
    if (xpath_.size() < 2 || xpath_[0] != '/') {
        throw std::invalid_argument("a subscription's subtree is an absolute path (\"/module:node\" or "
                                    "\"/module:*\"), not \"" +
                                    xpath_ + "\"");
    }
    while (xpath_.size() > 1 && xpath_.back() == '/') {
        xpath_.pop_back();
    }
    if (xpath_.size() > 2 && xpath_.compare(xpath_.size() - 2, 2, ":*") == 0 &&
        xpath_.find('/', 1) == std::string::npos) {
        const std::string name = xpath_.substr(1, xpath_.size() - 3);
        module_ = ly_ctx_get_module_implemented(ctx, name.c_str());
        if (!module_) {
            throw std::invalid_argument("no implemented module \"" + name + "\" for the subscription \"" +
                                        xpath_ + "\"");
        }
        return;
    }
    const std::string schemaPath = schemaPathOf(xpath_, &predicates_);
    schema_ = lys_find_path(ctx, nullptr, schemaPath.c_str(), 0);
    if (!schema_) {
        throw std::invalid_argument("the subscription's subtree \"" + xpath_ +
                                    "\" is no data node of the "
                                    "models the server has");
    }
    module_ = schema_->module;
}

bool Interest::touches(const ds::Change& change) const {
    if (!change.schema) {
        return false;
    }
    if (!schema_) {
        const lysc_node* top = change.schema;
        while (top->parent) {
            top = top->parent;
        }
        return top->module == module_;
    }
    if (isAncestorOrSelf(schema_, change.schema)) {
        // Within the subtree's schema node; with predicates, within the instance they name.
        return !predicates_ || (change.path.compare(0, xpath_.size(), xpath_) == 0 &&
                                (change.path.size() == xpath_.size() || change.path[xpath_.size()] == '/' ||
                                 change.path[xpath_.size()] == '['));
    }
    if (isAncestorOrSelf(change.schema, schema_)) {
        // An ancestor created, deleted or replaced whole: the subtree went with it.
        return change.op == ds::ChangeOp::Create || change.op == ds::ChangeOp::Delete ||
               change.op == ds::ChangeOp::Replace;
    }
    return false;
}

bool Interest::touches(const ds::ChangeSet& changes) const {
    for (const auto& c : changes.changes) {
        if (touches(c)) {
            return true;
        }
    }
    return false;
}

std::vector<std::size_t> Interest::within(const ds::ChangeSet& changes) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < changes.changes.size(); ++i) {
        if (touches(changes.changes[i])) {
            out.push_back(i);
        }
    }
    return out;
}

} // namespace ncstore::netconfd::app
