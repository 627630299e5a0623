// Finding libnetconf2's sockets: it does not expose the file descriptors of its listening
// socket or of a session, but we need them (to raise the listen backlog, and to sleep in poll()
// on a session's socket instead of letting nc_ps_poll busy-poll). Both are looked up among the
// process's descriptors by address.
#pragma once

#include <cstdint>
#include <string>

namespace ncstore::netconfd {

/// A TCP port on `address` that was free a moment ago (for --port 0; libnetconf2 cannot bind 0).
std::uint16_t pickFreePort(const std::string& address);
/// The listening TCP socket bound to `port`, or -1.
int findListeningSocket(std::uint16_t port);
/// The connected TCP socket whose peer is `host`:`port`, or -1.
int findPeerSocket(const std::string& host, std::uint16_t port);
/// Bytes received on a TCP socket so far (TCP_INFO), or 0 when unknown.
std::uint64_t bytesReceived(int fd);

} // namespace ncstore::netconfd
