// What the server keeps about one NETCONF session beyond libnetconf2's nc_session.
#pragma once

#include <nc_server.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ncstore::netconfd {

class Session {
public:
    explicit Session(nc_session* ncs)
        : nc(ncs), id(nc_session_get_id(ncs)), user(orEmpty(nc_session_get_username(ncs))),
          host(orEmpty(nc_session_get_host(ncs))), port(nc_session_get_port(ncs)),
          login(std::chrono::system_clock::now()), wakeFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
        if (wakeFd < 0) {
            throw std::runtime_error("eventfd failed for session " + std::to_string(id));
        }
    }
    ~Session() { ::close(wakeFd); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// Interrupts the session thread's sleep.
    void wake() const {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(wakeFd, &one, sizeof one);
    }

    nc_session* const nc; ///< owned by the session thread, freed when the session ends
    const std::uint32_t id;
    const std::string user;
    const std::string host;
    const std::uint16_t port;
    const std::chrono::system_clock::time_point login;
    const int wakeFd;
    int fd = -1; ///< the TCP socket (owned by libssh), -1 when not found

    std::atomic<std::uint64_t> inRpcs{0};
    std::atomic<std::uint64_t> inBadRpcs{0};
    std::atomic<std::uint64_t> outRpcErrors{0};

    /// Message size guard: set while libnetconf2 may be reading a message.
    std::atomic<bool> reading{false};
    std::atomic<std::uint64_t> readBaseline{0};
    std::atomic<bool> oversized{false};

    std::atomic<bool> killRequested{false};
    std::atomic<std::uint32_t> killedBy{0};

private:
    static std::string orEmpty(const char* s) { return s ? s : ""; }
};

} // namespace ncstore::netconfd
