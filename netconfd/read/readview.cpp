#include "readview.hpp"

#include "filter.hpp"

#include <algorithm>
#include <vector>

namespace ncstore::netconfd {

namespace {

constexpr std::uint32_t kPrint = LYD_PRINT_SHRINK;

/// Frees the top-level node of `forest` that has `schema` (what `skip` was in the original).
void dropTop(Tree& forest, const lysc_node* schema) {
    lyd_node* first = forest ? lyd_first_sibling(forest.get()) : nullptr;
    for (lyd_node* n = first; n; n = n->next) {
        if (n->schema == schema) {
            lyd_node* rest = n == first ? n->next : first;
            forest.release();
            lyd_free_tree(n);
            forest.reset(rest);
            return;
        }
    }
}

std::string printForest(const lyd_node* forest, std::uint32_t wd) {
    return forest ? print(forest, LYD_XML, LYD_PRINT_WITHSIBLINGS | kPrint | wd) : std::string();
}

std::string nameOf(const lyd_node* top) {
    return std::string(top->schema->module->name) + ":" + top->schema->name;
}

} // namespace

std::optional<XPathJob> readableXPathJob(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                                         const nacm::Access* access, const lyd_node* skip) {
    if (!filterNode) {
        return std::nullopt;
    }
    std::optional<std::string> expr = filter::xpathSelect(filterNode);
    if (!expr || filter::boundedXPath(*expr)) {
        return std::nullopt; // a subtree filter, or an XPath as cheap as one
    }
    XPathJob job;
    job.expr = std::move(*expr);
    job.wd = wd;
    if (!forest) {
        return job;
    }
    std::vector<const lyd_node*> absent;
    if (access && !access->permitsAllReads()) {
        access->unreadable(forest, absent);
    }
    if (absent.empty() && (!skip || !access || access->permitsAllReads())) {
        // As readableXml: the filter sees `skip`, the reply leaves it out.
        job.lyb = print(forest, LYD_LYB, LYD_PRINT_WITHSIBLINGS);
        if (skip) {
            job.leaveOut = nameOf(skip);
        }
        return job;
    }
    Tree view = access->readableCopy(forest);
    if (skip) {
        dropTop(view, skip->schema);
    }
    if (view) {
        job.lyb = print(view.get(), LYD_LYB, LYD_PRINT_WITHSIBLINGS);
    }
    return job;
}

std::string readableXml(const lyd_node* forest, const lyd_node* filterNode, std::uint32_t wd,
                        const nacm::Access* access, const lyd_node* skip) {
    if (!forest) {
        return {};
    }
    std::vector<const lyd_node*> absent;
    if (access && !access->permitsAllReads()) {
        access->unreadable(forest, absent);
    }
    if (absent.empty() && !skip) {
        if (!filterNode) {
            return printForest(forest, wd);
        }
        // Printed straight from the data: no copy of what the filter selects (filter.hpp).
        return filter::applyXml(forest, filterNode, wd);
    }
    if (skip) {
        absent.push_back(skip);
    }
    const bool onlyTopLevel =
        std::all_of(absent.begin(), absent.end(), [](const lyd_node* n) { return !lyd_parent(n); });
    const bool xpath = filterNode && filter::xpathSelect(filterNode);
    if (onlyTopLevel && !xpath) {
        // Whole top-level nodes (the /nacm of every user outside group admin, a denied module):
        // left out of the original, no copy.
        if (filterNode) {
            return filter::applySubtreeXmlWithout(forest, filterNode, wd, absent);
        }
        std::string out;
        for (const lyd_node* n = lyd_first_sibling(forest); n; n = n->next) {
            if (std::find(absent.begin(), absent.end(), n) == absent.end()) {
                out += printTree(n, LYD_XML, kPrint | wd);
            }
        }
        return out;
    }
    if (!access || access->permitsAllReads()) {
        // Only `skip`, and an XPath filter: leave it out of the filter's (copied) selection.
        Tree selected = filter::apply(forest, filterNode);
        dropTop(selected, skip->schema);
        return printForest(selected.get(), wd);
    }
    // Something below the top is unreadable: filter what the user may read.
    if (filterNode && !xpath) {
        // A subtree filter selects from the readable view exactly what it selects from the
        // readable part of its own selection: its content matches are in that selection.
        Tree selected = filter::apply(forest, filterNode);
        if (skip) {
            dropTop(selected, skip->schema);
        }
        const Tree view = access->readableCopy(selected.get());
        selected.reset();
        return view ? filter::applyXml(view.get(), filterNode, wd) : std::string();
    }
    // No filter, or an XPath filter, whose predicates may look at any node: the readable view.
    Tree view = access->readableCopy(forest);
    if (skip) {
        dropTop(view, skip->schema);
    }
    if (!view) {
        return {};
    }
    return filterNode ? filter::applyXml(view.get(), filterNode, wd) : printForest(view.get(), wd);
}

} // namespace ncstore::netconfd
