// The plain values of the API: batches, registrations, change names.
// The library is built with hidden visibility: what the public header declares is its ABI, and
// nothing else (the codec, the internals, templates instantiated on them) is exported.
#pragma GCC visibility push(default)
#include "ncstore/app.hpp"
#pragma GCC visibility pop

#include "ncstore/app/protocol.hpp"

namespace ncstore::app {

namespace {

Batch::Item item(proto::ItemOp op, std::string path, std::string value) {
    return Batch::Item{static_cast<int>(op), std::move(path), std::move(value)};
}

} // namespace

Batch& Batch::merge(std::string path, std::string value) {
    items_.push_back(item(proto::ItemOp::Merge, std::move(path), std::move(value)));
    return *this;
}

Batch& Batch::create(std::string path, std::string value) {
    items_.push_back(item(proto::ItemOp::Create, std::move(path), std::move(value)));
    return *this;
}

Batch& Batch::replace(std::string path, std::string value) {
    items_.push_back(item(proto::ItemOp::Replace, std::move(path), std::move(value)));
    return *this;
}

Batch& Batch::remove(std::string path) {
    items_.push_back(item(proto::ItemOp::Remove, std::move(path), {}));
    return *this;
}

Batch& Batch::erase(std::string path) {
    items_.push_back(item(proto::ItemOp::Delete, std::move(path), {}));
    return *this;
}

Batch& Batch::xml(std::string config) {
    config_ = std::move(config);
    return *this;
}

void Registration::release() noexcept {
    // Cleared before the call: a release that throws, or that is reached again from inside it,
    // must not send the undo twice.
    auto fn = std::move(release_);
    release_ = nullptr;
    if (!fn) {
        return;
    }
    try {
        fn();
    } catch (...) {
        // The connection may be gone, and with it what was registered: nothing is left to undo.
    }
}

const char* toString(Change::Op op) {
    switch (op) {
    case Change::Op::Create:
        return "create";
    case Change::Op::Update:
        return "update";
    case Change::Op::Replace:
        return "replace";
    case Change::Op::Delete:
        return "delete";
    case Change::Op::Move:
        return "move";
    }
    return "unknown";
}

} // namespace ncstore::app
