// While this server is a standby of its dqlite cluster (member.hpp), its NETCONF address answers
// every connection with where the leader is, instead of refusing it: the text goes out as lines
// an SSH server may send before its version string (RFC 4253 4.2: `ssh -v` prints them, a plain
// TCP client reads them as they are), then the connection is closed. Only with a fixed --port:
// with port 0 nobody could know where to look.
//
// Promises:
//  1. Nothing but the notice is read or written: no SSH, no authentication, no NETCONF. A client
//     that does not read gets what fits in the socket buffer; nothing waits for it.
//  2. The destructor stops the listener and closes its socket before returning, so that the
//     server proper can bind the same address right after.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace ncstore::cluster {

class StandbyNotice {
public:
    /// Listens on `host`:`port` (a name or numeric address, as --listen takes) and answers each
    /// connection with notice() (called per connection: the leader may change). Throws
    /// std::runtime_error naming the address when it cannot listen.
    StandbyNotice(const std::string& host, std::uint16_t port, std::function<std::string()> notice);
    StandbyNotice(const StandbyNotice&) = delete;
    StandbyNotice& operator=(const StandbyNotice&) = delete;
    ~StandbyNotice();

private:
    void loop();

    int listenFd_ = -1;
    int stopFd_ = -1; // an eventfd the destructor writes
    std::function<std::string()> notice_;
    std::thread thread_;
};

} // namespace ncstore::cluster
