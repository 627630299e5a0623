#include "syncpoint.hpp"

#include <map>
#include <mutex>

namespace ncstore::ds::detail {

std::atomic<bool> syncPointsOn{false};

namespace {

std::mutex& callbacksMutex() {
    static std::mutex m;
    return m;
}
std::map<std::string, std::function<void()>, std::less<>>& callbacks() {
    static std::map<std::string, std::function<void()>, std::less<>> c;
    return c;
}

} // namespace

void runSyncPoint(const char* name) {
    std::function<void()> callback;
    {
        std::lock_guard lock(callbacksMutex());
        const auto it = callbacks().find(std::string_view(name));
        if (it == callbacks().end()) {
            return;
        }
        callback = it->second;
    }
    callback();
}

void SyncPoints::set(const std::string& name, std::function<void()> callback) {
    std::lock_guard lock(callbacksMutex());
    callbacks()[name] = std::move(callback);
    syncPointsOn = true;
}

void SyncPoints::clear() {
    std::lock_guard lock(callbacksMutex());
    callbacks().clear();
    syncPointsOn = false;
}

} // namespace ncstore::ds::detail
