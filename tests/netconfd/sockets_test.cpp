#include "sockets.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace ncstore::netconfd;

namespace {

struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

std::uint16_t localPort(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
}

} // namespace

TEST(Sockets, FindsListenerAndPeerByAddress) {
    const auto port = pickFreePort("127.0.0.1");
    ASSERT_NE(port, 0);
    Fd listener(socket(AF_INET, SOCK_STREAM, 0));
    int one = 1;
    setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    auto addr = loopback(port);
    ASSERT_EQ(bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener.fd, 5), 0);
    EXPECT_EQ(findListeningSocket(port), listener.fd);

    Fd client(socket(AF_INET, SOCK_STREAM, 0));
    ASSERT_EQ(connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    Fd server(accept(listener.fd, nullptr, nullptr));
    ASSERT_GE(server.fd, 0);
    // The server side's peer is the client's local address.
    EXPECT_EQ(findPeerSocket("127.0.0.1", localPort(client.fd)), server.fd);
    EXPECT_EQ(findPeerSocket("::ffff:127.0.0.1", localPort(client.fd)), server.fd);
    EXPECT_EQ(findPeerSocket("127.0.0.2", localPort(client.fd)), -1);

    const auto before = bytesReceived(server.fd);
    const char data[1000] = {};
    ASSERT_EQ(write(client.fd, data, sizeof data), static_cast<ssize_t>(sizeof data));
    char buf[1000];
    ASSERT_GT(read(server.fd, buf, sizeof buf), 0);
    EXPECT_GE(bytesReceived(server.fd) - before, 1u);
    EXPECT_EQ(bytesReceived(-1), 0u);
}
