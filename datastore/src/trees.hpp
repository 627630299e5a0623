// libyang tree helpers shared by the parts of the store. Private to the datastore.
#pragma once

#include "edit.hpp"

#include "ncstore/datastore.hpp"
#include "ncstore/yang.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace ncstore::ds::detail {

using Clock = std::chrono::steady_clock;

inline std::uint64_t usSince(Clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

/// Options of every validation: configuration only, and only the modules that have data
/// (without LYD_VALIDATE_PRESENT libyang validates ietf-yang-library, fails, and leaves implicit
/// nodes behind).
inline constexpr uint32_t kValidateOpts = LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE;

/// libyang's last validation error as an Error, with the RFC 7950 section 15 error-tag / app-tag.
Error validationError(const ly_ctx* ctx, const std::string& prefix);

/// A deep copy of a forest, flags included (nullptr for nullptr): common's.
using ncstore::dupForest;

/// Whether a validation diff deletes a node (a `when` turned false).
bool deletesData(const lyd_node* diff);

/// Reverts what a (possibly failed) validation did to `tree` (its diff), then the edit itself.
void rollback(Tree& tree, lyd_node* validationDiff, UndoLog& undo);

/// Gives a Tree's raw pointer to C APIs that may replace the first node, and takes it back.
class RawTree {
public:
    explicit RawTree(Tree& owner) : owner_(owner), raw_(owner.release()) {}
    ~RawTree() { owner_.reset(raw_); }
    RawTree(const RawTree&) = delete;
    RawTree& operator=(const RawTree&) = delete;
    lyd_node** ptr() { return &raw_; }
    lyd_node* get() const { return raw_; }

private:
    Tree& owner_;
    lyd_node* raw_;
};

} // namespace ncstore::ds::detail
