#include "trees.hpp"

#include "ncstore/log.hpp"

#include <cstring>

namespace ncstore::ds::detail {

namespace {

/// libyang 2.1.30 reports where an error is as text ('Schema location "/a:b/c", data location
/// "/a:b/c[k='1']", line number 3.'): the data path when there is one, else the schema path.
std::string errorPath(const std::string& where) {
    for (const char* label : {"ata location \"", "chema location \""}) {
        const auto start = where.find(label);
        if (start != std::string::npos) {
            const auto from = start + std::strlen(label);
            return where.substr(from, where.find('"', from) - from);
        }
    }
    return where;
}

} // namespace

Error validationError(const ly_ctx* ctx, const std::string& prefix) {
    const ly_err_item* e = ly_err_last(ctx);
    std::string msg = e && e->msg ? e->msg : "validation failed";
    std::string path = errorPath(e && e->path ? e->path : "");
    std::string appTag = e && e->apptag ? e->apptag : "";
    ErrorTag tag = ErrorTag::OperationFailed;
    if (appTag == "instance-required" || appTag == "missing-choice") {
        tag = ErrorTag::DataMissing;
    } else if (appTag.empty() && e && e->vecode == LYVE_DATA && msg.rfind("Mandatory node", 0) == 0) {
        tag = ErrorTag::DataMissing;
        appTag = "";
    } else if (appTag.empty() && e && e->vecode == LYVE_DATA && msg.find("leafref") != std::string::npos) {
        tag = ErrorTag::DataMissing;
        appTag = "instance-required";
    }
    return Error(tag, prefix + msg, path, appTag);
}

bool deletesData(const lyd_node* diff) {
    for (const lyd_node* top = diff; top; top = top->next) {
        const lyd_node* elem = nullptr;
        LYD_TREE_DFS_BEGIN(top, elem) {
            const lyd_meta* op = lyd_find_meta(elem->meta, nullptr, "yang:operation");
            if (op && std::strcmp(lyd_get_meta_value(op), "delete") == 0) {
                return true;
            }
            LYD_TREE_DFS_END(top, elem);
        }
    }
    return false;
}

void rollback(Tree& tree, lyd_node* validationDiff, UndoLog& undo) {
    RawTree raw(tree);
    if (validationDiff) {
        lyd_node* reversed = nullptr;
        if (lyd_diff_reverse_all(validationDiff, &reversed) == LY_SUCCESS) {
            Tree owned{reversed};
            if (lyd_diff_apply_all(raw.ptr(), reversed) != LY_SUCCESS) {
                NCS_LOG(warning) << "datastore: reverting validation changes failed: "
                                 << lastError(LYD_CTX(validationDiff));
            }
        }
    }
    undo.undo(raw.ptr());
}

} // namespace ncstore::ds::detail
