#include "datadir.hpp"

#include "ncstore/dqlite/node.hpp"

namespace ncstore::netconfd {

ModelOptions modelOptions(const ServerConfig& config) {
    ModelOptions models = defaultModelOptions();
    models.defaultModels = config.defaultModels;
    models.yangDirs = config.yangDirs;
    models.searchDirs = config.yangSearchDirs;
    return models;
}

ds::StoreOptions storeOptions(const ServerConfig& config) {
    ds::StoreOptions options;
    options.file = config.dataDir / "ncstore.db";
    options.durability = ds::parseDurability(config.durability);
    options.cacheBytes = config.sqliteCacheMb << 20;
    if (config.backend == "dqlite") {
        // The embedded node only: a server whose node is not the leader must fail to write
        // rather than write through another node (cluster/member.hpp, promise 3).
        options.dqlite =
            ds::DqliteStoreOptions{{config.dqliteAddress}, "ncstore.db", std::chrono::seconds(5)};
        // Half the election timeout: a follower that acknowledged a commit starts no election
        // sooner than the whole after it; the other half is a margin for clocks and timers.
        dqlite::Node::Options node;
        node.networkLatency = std::chrono::milliseconds(config.dqliteLatencyMs);
        options.dqlite->readLease = node.electionTimeout() / 2;
    }
    return options;
}

std::filesystem::path lockFile(const ServerConfig& config) {
    return config.dataDir / "ncstored.lock";
}

} // namespace ncstore::netconfd
