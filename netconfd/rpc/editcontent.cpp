#include "editcontent.hpp"

#include "errors.hpp"

#include <cstdint>
#include <cstring>
#include <optional>

namespace ncstore::netconfd {

namespace {

bool isDeleteOrRemove(const char* value) {
    return value && (std::strcmp(value, "delete") == 0 || std::strcmp(value, "remove") == 0);
}

/// Whether the opaque node `n` is deleted or removed: its own nc:operation attribute, or else
/// the nearest one of its ancestors.
bool opaqueIsDeleted(const lyd_node* n) {
    for (const lyd_attr* a = reinterpret_cast<const lyd_node_opaq*>(n)->attr; a; a = a->next) {
        if (a->name.name && std::strcmp(a->name.name, "operation") == 0) {
            return isDeleteOrRemove(a->value);
        }
    }
    for (const lyd_node* p = lyd_parent(n); p; p = lyd_parent(p)) {
        for (const lyd_meta* m = p->meta; m; m = m->next) {
            if (std::strcmp(m->name, "operation") == 0 &&
                std::strcmp(m->annotation->module->name, "ietf-netconf") == 0) {
                return isDeleteOrRemove(lyd_get_meta_value(m));
            }
        }
    }
    return false;
}

/// Whether every opaque node of the forest `first` is a childless node under a schema node (or
/// at the top) that is deleted or removed: a leaf written without a value of its type, as
/// LYD_PARSE_OPAQ leaves `<enabled nc:operation="delete"/>`.
bool onlyDeletedOpaqueLeaves(const lyd_node* first) {
    for (const lyd_node* n = first; n; n = n->next) {
        if (!n->schema) {
            if (lyd_child(n) || (n->parent && !lyd_parent(n)->schema) || !opaqueIsDeleted(n)) {
                return false;
            }
        } else if (!onlyDeletedOpaqueLeaves(lyd_child(n))) {
            return false;
        }
    }
    return true;
}

} // namespace

Tree parseEditContent(const ly_ctx* ctx, const std::string& text) {
    if (text.empty()) {
        return nullptr;
    }
    const auto parseWith = [&](std::uint32_t extra) {
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        lyd_node* raw = nullptr;
        const LY_ERR rc =
            lyd_parse_data_mem(ctx, text.c_str(), LYD_XML,
                               LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE | extra, 0, &raw);
        Tree parsed{raw};
        return rc == LY_SUCCESS ? std::optional<Tree>(std::move(parsed)) : std::nullopt;
    };
    std::optional<Tree> tree = parseWith(0);
    if (!tree) {
        auto e = fromLibyang(ctx);
        if (e.tag == ErrorTag::UnknownNamespace && (e.badElement.empty() || e.badElement == "config")) {
            // libyang names only the namespace: find the element that declared it.
            if (auto name = elementDeclaring(text, e.badNamespace); !name.empty()) {
                e.badElement = std::move(name);
            }
        }
        if (e.type == ErrorType::Application && e.tag != ErrorTag::InvalidValue) {
            // Unknown elements and namespaces in <config> are protocol errors (RFC 6241 App. A).
            e.type = ErrorType::Protocol;
        }
        // A leaf without a value of its type (<enabled nc:operation="delete"/>) is what clients
        // write to delete it: with LYD_PARSE_OPAQ libyang keeps such a leaf as an opaque node,
        // which the edit engine deletes or removes. Anything else opaque (a bad value to set, a
        // list entry without its key) keeps the strict parse's error and its error-path.
        tree = parseWith(LYD_PARSE_OPAQ);
        if (!tree || !onlyDeletedOpaqueLeaves(tree->get())) {
            throw e;
        }
    }
    return std::move(*tree);
}

} // namespace ncstore::netconfd
