#include "stats.hpp"

#include <sstream>

namespace ncstore::netconfd {

void Stats::record(const std::string& op, std::uint64_t us, bool error, std::uint64_t parseUs,
                   const ds::WriteTiming* write) {
    std::lock_guard lock(mutex_);
    auto& c = ops_[op];
    ++c.count;
    c.errors += error ? 1 : 0;
    c.totalUs += us;
    c.maxUs = std::max(c.maxUs, us);
    c.parseUs += parseUs;
    if (write) {
        c.lockWaitUs += write->lockWaitUs;
        c.applyUs += write->applyUs;
        c.validateUs += write->validateUs;
        c.commitWaitUs += write->commitWaitUs;
    }
}

std::map<std::string, OpCounters> Stats::operations() const {
    std::lock_guard lock(mutex_);
    return ops_;
}

std::string Stats::summary() const {
    std::ostringstream out;
    out << "rpcs=" << inRpcs.load() << " bad-rpcs=" << inBadRpcs.load()
        << " rpc-errors=" << outRpcErrors.load() << " sessions=" << inSessions.load()
        << " dropped=" << droppedSessions.load();
    for (const auto& [op, c] : operations()) {
        out << "; " << op << " n=" << c.count << " err=" << c.errors
            << " avg=" << (c.count ? c.totalUs / c.count : 0) << "us max=" << c.maxUs << "us";
        if (c.parseUs || c.applyUs || c.validateUs || c.commitWaitUs) {
            out << " (parse=" << c.parseUs << "us lock-wait=" << c.lockWaitUs << "us apply=" << c.applyUs
                << "us validate=" << c.validateUs << "us commit-wait=" << c.commitWaitUs << "us total)";
        }
    }
    return out.str();
}

} // namespace ncstore::netconfd
