// ncstore through its application API (libncstore-app, <ncstore/app.hpp>): one row is one entry
// of /ncstore-bench-rows:rows/row, inserted by one local commit (a Batch of three leaves; the key
// comes with the path). Durability is the server's (--durability), not per transaction: the
// harness starts ncstored with normal against OVSDB non-durable and full against durable.
#include "backend.hpp"

#include <ncstore/app.hpp>

namespace ncstore::bench {

namespace {

class NcstoreBackend final : public Backend {
public:
    explicit NcstoreBackend(const BackendConfig& config) : config_(config) {}

    void connect() override {
        app::Connection::Options o;
        o.socket = config_.socket;
        o.appName = "localload";
        o.timeout = config_.timeout;
        conn_ = std::make_unique<app::Connection>(o);
    }

    bool transact(int client, int seq, std::string& error) override {
        const Row row = rowFor(client, seq);
        const std::string entry = "/ncstore-bench-rows:rows/row[name='" + row.name + "']";
        app::Batch batch;
        batch.merge(entry + "/description", row.description)
            .merge(entry + "/enabled", row.enabled ? "true" : "false")
            .merge(entry + "/count", std::to_string(row.count));
        try {
            conn_->apply(batch);
            return true;
        } catch (const app::Error& e) {
            if (!conn_->connected()) {
                throw;
            }
            error = e.tag() + ": " + e.what();
            return false;
        }
    }

private:
    BackendConfig config_;
    std::unique_ptr<app::Connection> conn_;
};

} // namespace

std::unique_ptr<Backend> makeNcstoreBackend(const BackendConfig& config) {
    return std::make_unique<NcstoreBackend>(config);
}

} // namespace ncstore::bench
