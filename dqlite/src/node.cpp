#include "ncstore/dqlite/node.hpp"

#include "ncstore/log.hpp"

// dqlite.h has no extern "C" of its own (1.11).
extern "C" {
#include <dqlite.h>
}

#include <csignal>
#include <mutex>
#include <utility>

namespace ncstore::dqlite {

void Node::Destroy::operator()(::dqlite_node* node) const noexcept {
    ::dqlite_node_destroy(node);
}

Node::Node(Options options) : options_(std::move(options)) {
    if (options_.id == 0) {
        throw NodeError("dqlite node: id 0 is reserved (ids start at 1, node 1 bootstraps)");
    }
    ::dqlite_node* raw = nullptr;
    const int rc =
        ::dqlite_node_create(options_.id, options_.address.c_str(), options_.dataDir.c_str(), &raw);
    // dqlite allocates the node even when its initialisation fails; the holder frees it either way.
    node_.reset(raw);
    if (rc != 0) {
        fail("dqlite_node_create", rc);
    }
    if (const int bound = ::dqlite_node_set_bind_address(node_.get(), options_.address.c_str()); bound != 0) {
        fail("dqlite_node_set_bind_address", bound);
    }
    if (options_.networkLatency.count() > 0) {
        const auto ms = static_cast<unsigned>(options_.networkLatency.count());
        if (const int set = ::dqlite_node_set_network_latency_ms(node_.get(), ms); set != 0) {
            fail("dqlite_node_set_network_latency_ms", set);
        }
    }
}

Node::~Node() {
    try {
        stop();
    } catch (const std::exception& e) {
        // Destroying a node whose thread still runs would be undefined: keep it (a leak) instead.
        NCS_LOG(error) << e.what() << " (node leaked, not destroyed while it may still run)";
        (void)node_.release();
    }
}

void Node::start() {
    if (running_) {
        return;
    }
    static std::once_flag sigpipe;
    std::call_once(sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
    if (const int rc = ::dqlite_node_start(node_.get()); rc != 0) {
        fail("dqlite_node_start", rc);
    }
    running_ = true;
    NCS_LOG(info) << "dqlite node " << options_.id << " serving on " << options_.address << " (data "
                  << options_.dataDir.string() << ")";
}

void Node::stop() {
    if (!running_) {
        return;
    }
    if (const int rc = ::dqlite_node_stop(node_.get()); rc != 0) {
        fail("dqlite_node_stop", rc);
    }
    running_ = false;
    NCS_LOG(info) << "dqlite node " << options_.id << " stopped";
}

void Node::fail(const char* what, int rc) const {
    const char* message = node_ ? ::dqlite_node_errmsg(node_.get()) : nullptr;
    throw NodeError(std::string(what) + " for node " + std::to_string(options_.id) + " at " +
                    options_.address + ": rc " + std::to_string(rc) +
                    (message && *message ? std::string(": ") + message : ""));
}

} // namespace ncstore::dqlite
