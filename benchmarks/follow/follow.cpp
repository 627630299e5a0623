// ncstore-follow: the subscriber of benchmark B12 (issue 13), in C++ so that what B12 measures is the
// server and not its subscribers. On a machine of 2 cores, ten paramiko subscribers spent about
// 25 us of CPU per notification (12 s per B8 run), as much as the server itself.
//
// It subscribes (RFC 5277 on stream NETCONF, or with --yang-push an RFC 8641 on-change subscription to
// running's /interfaces), prints "ready", then reads until it has seen --count edits of interfaces
// named PREFIX<first+i>, or --idle seconds pass without a message. It checks what the benchmark must
// not assume: every i in [0, count) exactly once; with --per-session K, the entries of one editing
// session (i / K) in the order that session made them; eventTime never going back; no name outside
// the range. It frames and scans, never parses XML (as benchmarks/notify_bench.py, B13 and B14).
// Prints one JSON line: received, duplicates, missing, order_violations, time_going_back,
// outside_range, notifications and reads (how many notifications one read brought: how the server
// batches its writes), seconds, cpu_s, error.
//
// A benchmark tool: it trusts the server's host key (loopback) and is not installed.
#include "framing.hpp"

#include "ncstore/cputime.hpp"

#include <CLI/CLI.hpp>
#include <libssh/libssh.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace {

using ncstore::netconfd::transport::frame;
using ncstore::netconfd::transport::Framing;
using ncstore::netconfd::transport::MessageReader;

constexpr std::string_view kBaseNs = "urn:ietf:params:xml:ns:netconf:base:1.0";
constexpr std::size_t kMaxMessage = 512u << 20;

struct SessionFree {
    void operator()(ssh_session s) const {
        ssh_disconnect(s);
        ssh_free(s);
    }
};
struct ChannelFree {
    void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
using Session = std::unique_ptr<std::remove_pointer_t<ssh_session>, SessionFree>;
using Channel = std::unique_ptr<std::remove_pointer_t<ssh_channel>, ChannelFree>;

class TimedOut : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One NETCONF session over SSH, base:1.1 framing once the hellos are exchanged.
class Netconf {
public:
    Netconf(const std::string& host, int port, const std::string& user, const std::string& password)
        : ssh_(ssh_new()), reader_(kMaxMessage) {
        if (!ssh_) {
            throw std::runtime_error("ssh_new failed");
        }
        const bool processConfig = false; // no ~/.ssh/config: the benchmark says where to connect
        set(SSH_OPTIONS_PROCESS_CONFIG, &processConfig, "process config");
        set(SSH_OPTIONS_HOST, host.c_str(), "host");
        set(SSH_OPTIONS_PORT, &port, "port");
        set(SSH_OPTIONS_USER, user.c_str(), "user");
        set(SSH_OPTIONS_KNOWNHOSTS, "/dev/null", "known hosts");
        if (ssh_connect(ssh_.get()) != SSH_OK) {
            throw std::runtime_error("connect to " + host + ":" + std::to_string(port) + ": " + sshError());
        }
        if (ssh_userauth_password(ssh_.get(), nullptr, password.c_str()) != SSH_AUTH_SUCCESS) {
            throw std::runtime_error("password authentication of " + user + ": " + sshError());
        }
        chan_.reset(ssh_channel_new(ssh_.get()));
        if (!chan_ || ssh_channel_open_session(chan_.get()) != SSH_OK ||
            ssh_channel_request_subsystem(chan_.get(), "netconf") != SSH_OK) {
            throw std::runtime_error("netconf subsystem: " + sshError());
        }
        write(std::string("<hello xmlns=\"") + std::string(kBaseNs) +
              "\"><capabilities><capability>urn:ietf:params:netconf:base:1.1</capability>"
              "</capabilities></hello>]]>]]>");
        const std::string hello = message(10000);
        if (hello.find("urn:ietf:params:netconf:base:1.1") == std::string::npos) {
            throw std::runtime_error("the server does not offer base:1.1");
        }
        reader_.setFraming(Framing::Chunked);
    }

    /// Sends an <rpc> holding `operation` and returns its <rpc-reply>; notifications read on the way
    /// are dropped (none is due before the subscription's reply).
    std::string rpc(const std::string& operation) {
        const std::string id = std::to_string(++messageId_);
        write(frame(std::string("<rpc xmlns=\"") + std::string(kBaseNs) + "\" message-id=\"" + id + "\">" +
                        operation + "</rpc>",
                    Framing::Chunked));
        for (;;) {
            std::string m = message(30000);
            if (m.substr(0, 200).find("<rpc-reply") == std::string::npos) {
                continue;
            }
            if (m.find("rpc-error") != std::string::npos) {
                throw std::runtime_error("rpc-error: " + m.substr(0, 800));
            }
            return m;
        }
    }

    /// The next whole message; TimedOut when none is complete within `timeoutMs`.
    std::string message(int timeoutMs) {
        for (;;) {
            if (auto m = reader_.next()) {
                return std::move(*m);
            }
            const int n = ssh_channel_read_timeout(chan_.get(), buf_.data(),
                                                   static_cast<uint32_t>(buf_.size()), 0, timeoutMs);
            if (n == SSH_ERROR) {
                throw std::runtime_error("read: " + sshError());
            }
            if (n == 0) {
                if (ssh_channel_is_eof(chan_.get()) || !ssh_channel_is_open(chan_.get())) {
                    throw std::runtime_error("the server closed the channel");
                }
                throw TimedOut("no message for " + std::to_string(timeoutMs) + " ms");
            }
            ++reads_;
            reader_.feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
        }
    }

    /// Reads that returned data: notifications / reads tells how the server batches its writes.
    long reads() const { return reads_; }

private:
    void set(ssh_options_e option, const void* value, const char* what) {
        if (ssh_options_set(ssh_.get(), option, value) != SSH_OK) {
            throw std::runtime_error(std::string("ssh option ") + what + ": " + sshError());
        }
    }
    void write(std::string_view bytes) {
        while (!bytes.empty()) {
            const int n = ssh_channel_write(chan_.get(), bytes.data(), static_cast<uint32_t>(bytes.size()));
            if (n <= 0) {
                throw std::runtime_error("write: " + sshError());
            }
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    std::string sshError() const { return ssh_get_error(ssh_.get()); }

    Session ssh_;
    Channel chan_;
    MessageReader reader_;
    std::vector<char> buf_ = std::vector<char>(256 * 1024);
    unsigned messageId_ = 0;
    long reads_ = 0;
};

/// Finds the numbers n of the interfaces PREFIXn an event changes, in document order.
class NameScan {
public:
    NameScan(std::string prefix, bool yangPush) : prefix_(std::move(prefix)), yangPush_(yangPush) {}

    template <typename F> void each(std::string_view m, F&& found) const {
        if (yangPush_) {
            // One YANG Patch edit per entry: <target>/ietf-interfaces:interfaces/interface=PREFIXn</target>.
            const std::string lead = "<target>/ietf-interfaces:interfaces/interface=" + prefix_;
            for (auto at = m.find(lead); at != std::string_view::npos; at = m.find(lead, at + 1)) {
                if (auto n = digits(m, at + lead.size(), "</target>")) {
                    found(*n);
                }
            }
            return;
        }
        // RFC 6470 edit targets: ...interface[PFX:name='PREFIXn'] (the quote may be &apos;).
        for (auto at = m.find("name="); at != std::string_view::npos; at = m.find("name=", at + 1)) {
            if (!afterInterfaceBracket(m, at)) {
                continue;
            }
            std::size_t v = at + 5;
            if (m.substr(v, 6) == "&apos;") {
                v += 6;
            } else if (m.substr(v, 1) == "'") {
                v += 1;
            } else {
                continue;
            }
            if (m.substr(v, prefix_.size()) != prefix_) {
                continue;
            }
            if (auto n = digits(m, v + prefix_.size(), {})) {
                found(*n);
            }
        }
    }

private:
    // "interface[" then an optional module prefix "[\w.-]*:" right before "name=".
    static bool afterInterfaceBracket(std::string_view m, std::size_t nameAt) {
        std::size_t i = nameAt;
        if (i > 0 && m[i - 1] == ':') {
            --i;
            while (i > 0 && (std::isalnum(static_cast<unsigned char>(m[i - 1])) || m[i - 1] == '_' ||
                             m[i - 1] == '.' || m[i - 1] == '-')) {
                --i;
            }
        }
        constexpr std::string_view lead = "interface[";
        return i >= lead.size() && m.substr(i - lead.size(), lead.size()) == lead;
    }
    // The decimal number at `at`, when at least one digit is there (and `end` follows, if given).
    static std::optional<long> digits(std::string_view m, std::size_t at, std::string_view end) {
        long n = 0;
        std::size_t i = at;
        while (i < m.size() && i - at < 18 && m[i] >= '0' && m[i] <= '9') {
            n = n * 10 + (m[i] - '0');
            ++i;
        }
        if (i == at || (!end.empty() && m.substr(i, end.size()) != end)) {
            return std::nullopt;
        }
        return n;
    }

    std::string prefix_;
    bool yangPush_;
};

std::string jsonString(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"B12's subscriber: follows --count edits of interfaces PREFIX<first..> and checks that each "
                 "arrives once, in each session's order"};
    std::string host = "127.0.0.1", user, password, names;
    int port = 0;
    long count = 0, first = 0, perSession = 0;
    double idle = 120;
    bool yangPush = false;
    app.add_option("--host", host);
    app.add_option("--port", port)->required();
    app.add_option("--user", user)->required();
    app.add_option("--password", password)->required();
    app.add_option("--names", names, "interface name prefix")->required();
    app.add_option("--count", count, "edits to wait for")->required()->check(CLI::PositiveNumber);
    app.add_option("--first", first, "the names are PREFIX<first> .. PREFIX<first+count-1>");
    app.add_option("--per-session", perSession, "entries each editing session makes, in order");
    app.add_option("--idle", idle, "seconds without a message before giving up");
    app.add_flag("--yang-push", yangPush, "an RFC 8641 on-change subscription, not RFC 5277");
    CLI11_PARSE(app, argc, argv);

    try {
        Netconf nc(host, port, user, password);
        if (yangPush) {
            nc.rpc(
                "<establish-subscription xmlns=\"urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications\" "
                "xmlns:yp=\"urn:ietf:params:xml:ns:yang:ietf-yang-push\" "
                "xmlns:ds=\"urn:ietf:params:xml:ns:yang:ietf-datastores\"><yp:datastore>ds:running"
                "</yp:datastore><yp:datastore-xpath-filter "
                "xmlns:if=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\">/if:interfaces"
                "</yp:datastore-xpath-filter><yp:on-change><yp:sync-on-start>false</yp:sync-on-start>"
                "</yp:on-change></establish-subscription>");
        } else {
            nc.rpc("<create-subscription xmlns=\"urn:ietf:params:xml:ns:netconf:notification:1.0\"/>");
        }
        std::puts("ready");
        std::fflush(stdout);

        const NameScan scan(names, yangPush);
        std::vector<char> seen(static_cast<std::size_t>(count), 0);
        std::vector<long> lastBySession;
        long received = 0, notifications = 0, duplicates = 0, orderViolations = 0, timeGoingBack = 0,
             outside = 0;
        std::string lastTime;
        std::string error;
        const auto start = std::chrono::steady_clock::now();
        const int idleMs = static_cast<int>(idle * 1000);
        try {
            while (received < count) {
                const std::string m = nc.message(idleMs);
                if (m.find("</notification>") == std::string::npos) {
                    continue;
                }
                ++notifications;
                if (auto t = m.find("<eventTime>"); t != std::string::npos) {
                    t += 11;
                    const auto e = m.find('<', t);
                    const std::string_view when = std::string_view(m).substr(t, e - t);
                    if (when < lastTime) {
                        ++timeGoingBack;
                    }
                    lastTime = when;
                }
                scan.each(m, [&](long n) {
                    const long i = n - first;
                    if (i < 0 || i >= count) {
                        ++outside;
                        return;
                    }
                    if (seen[static_cast<std::size_t>(i)]) {
                        ++duplicates;
                    } else {
                        seen[static_cast<std::size_t>(i)] = 1;
                        ++received;
                    }
                    if (perSession > 0) {
                        const auto s = static_cast<std::size_t>(i / perSession);
                        if (lastBySession.size() <= s) {
                            lastBySession.resize(s + 1, -1);
                        }
                        if (lastBySession[s] > i) {
                            ++orderViolations;
                        }
                        lastBySession[s] = i;
                    }
                });
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf(
            "{\"received\": %ld, \"duplicates\": %ld, \"missing\": %ld, \"order_violations\": %ld, "
            "\"time_going_back\": %ld, \"outside_range\": %ld, \"notifications\": %ld, \"reads\": %ld, "
            "\"seconds\": %.6f, \"cpu_s\": %.6f, \"error\": %s}\n",
            received, duplicates, count - received, orderViolations, timeGoingBack, outside, notifications,
            nc.reads(), seconds, ncstore::processCpuSeconds(),
            error.empty() ? "null" : jsonString(error).c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ncstore-follow: %s\n", e.what());
        return 1;
    }
}
