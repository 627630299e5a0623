#include "ovsdb_backend.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace ncstore::bench {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::size_t skipSpace(std::string_view s, std::size_t p) {
    while (p < s.size() && isSpace(s[p])) {
        ++p;
    }
    return p;
}

/// `p` at the opening quote: the index after the closing one.
std::size_t skipString(std::string_view s, std::size_t p) {
    for (++p; p < s.size(); ++p) {
        if (s[p] == '\\') {
            ++p;
        } else if (s[p] == '"') {
            return p + 1;
        }
    }
    throw std::runtime_error("unterminated JSON string");
}

/// `p` at the first byte of a value: the index after it.
std::size_t skipValue(std::string_view s, std::size_t p) {
    if (p >= s.size()) {
        throw std::runtime_error("JSON value expected");
    }
    if (s[p] == '"') {
        return skipString(s, p);
    }
    if (s[p] == '{' || s[p] == '[') {
        int depth = 0;
        while (p < s.size()) {
            char c = s[p];
            if (c == '"') {
                p = skipString(s, p);
                continue;
            }
            if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return p + 1;
            }
            ++p;
        }
        throw std::runtime_error("unterminated JSON object or array");
    }
    std::size_t start = p;
    while (p < s.size() && !isSpace(s[p]) && s[p] != ',' && s[p] != '}' && s[p] != ']') {
        ++p;
    }
    if (p == start) {
        throw std::runtime_error("JSON value expected");
    }
    return p;
}

/// Calls f(key, value) for each member of the object `s` (raw texts; keys without their quotes).
template <typename F> void forEachMember(std::string_view s, F&& f) {
    std::size_t p = skipSpace(s, 0);
    if (p >= s.size() || s[p] != '{') {
        throw std::runtime_error("JSON object expected");
    }
    p = skipSpace(s, p + 1);
    if (p < s.size() && s[p] == '}') {
        return;
    }
    while (true) {
        if (p >= s.size() || s[p] != '"') {
            throw std::runtime_error("JSON member name expected");
        }
        std::size_t keyEnd = skipString(s, p);
        std::string_view key = s.substr(p + 1, keyEnd - p - 2);
        p = skipSpace(s, keyEnd);
        if (p >= s.size() || s[p] != ':') {
            throw std::runtime_error("':' expected in JSON object");
        }
        p = skipSpace(s, p + 1);
        std::size_t valueEnd = skipValue(s, p);
        f(key, s.substr(p, valueEnd - p));
        p = skipSpace(s, valueEnd);
        if (p < s.size() && s[p] == ',') {
            p = skipSpace(s, p + 1);
            continue;
        }
        if (p < s.size() && s[p] == '}') {
            return;
        }
        throw std::runtime_error("',' or '}' expected in JSON object");
    }
}

void appendJsonString(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[(c >> 4) & 0xf];
            out += hex[c & 0xf];
        } else {
            out += c;
        }
    }
    out += '"';
}

template <typename T> void appendNumber(std::string& out, T value) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, end);
}

std::string errnoText(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

} // namespace

std::optional<std::string_view> JsonStream::next() {
    if (start_ == buffer_.size()) {
        buffer_.clear();
        start_ = scan_ = 0;
    } else if (start_ >= (64u << 10)) {
        buffer_.erase(0, start_);
        scan_ -= start_;
        start_ = 0;
    }
    for (; scan_ < buffer_.size(); ++scan_) {
        char c = buffer_[scan_];
        if (depth_ == 0) { // between two messages
            if (isSpace(c)) {
                start_ = scan_ + 1;
                continue;
            }
            if (c != '{' && c != '[') {
                throw std::runtime_error(std::string("unexpected byte '") + c +
                                         "' between JSON-RPC messages");
            }
            depth_ = 1;
            continue;
        }
        if (inString_) {
            if (escape_) {
                escape_ = false;
            } else if (c == '\\') {
                escape_ = true;
            } else if (c == '"') {
                inString_ = false;
            }
            continue;
        }
        if (c == '"') {
            inString_ = true;
        } else if (c == '{' || c == '[') {
            ++depth_;
        } else if ((c == '}' || c == ']') && --depth_ == 0) {
            std::size_t begin = start_, end = scan_ + 1;
            start_ = scan_ = end;
            return std::string_view(buffer_).substr(begin, end - begin);
        }
    }
    return std::nullopt;
}

JsonRpcMessage parseJsonRpc(std::string_view text) {
    JsonRpcMessage m;
    forEachMember(text, [&](std::string_view key, std::string_view value) {
        if (key == "id") {
            m.id = value;
        } else if (key == "method") {
            m.method = value;
        } else if (key == "params") {
            m.params = value;
        } else if (key == "result") {
            m.result = value;
        } else if (key == "error") {
            m.error = value;
        }
    });
    return m;
}

std::optional<std::string> transactFailure(std::string_view result, std::size_t operations) {
    std::size_t p = skipSpace(result, 0);
    if (p >= result.size() || result[p] != '[') {
        return "transact result is not an array: " + std::string(result);
    }
    std::size_t count = 0;
    p = skipSpace(result, p + 1);
    while (p < result.size() && result[p] != ']') {
        std::size_t end = skipValue(result, p);
        std::string_view element = result.substr(p, end - p);
        ++count;
        if (element == "null") {
            return "operation " + std::to_string(count) + " not executed: " + std::string(result);
        }
        if (element.front() == '{') {
            bool failed = false;
            forEachMember(element, [&](std::string_view key, std::string_view) { failed |= key == "error"; });
            if (failed) {
                return std::string(element);
            }
        }
        p = skipSpace(result, end);
        if (p < result.size() && result[p] == ',') {
            p = skipSpace(result, p + 1);
        }
    }
    if (count < operations) {
        return "transact result of " + std::to_string(count) + " operations for " +
               std::to_string(operations) + ": " + std::string(result);
    }
    return std::nullopt;
}

OvsdbBackend::OvsdbBackend(BackendConfig config) : config_(std::move(config)) {
    for (const auto& [key, value] : config_.options) {
        if (key == "database") {
            database_ = value;
        } else if (key == "table") {
            table_ = value;
        } else {
            throw std::runtime_error("ovsdb backend: unknown option '" + key + "' (known: database, table)");
        }
    }
    request_.reserve(512);
}

OvsdbBackend::~OvsdbBackend() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void OvsdbBackend::connect() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (config_.socket.empty() || config_.socket.size() >= sizeof addr.sun_path) {
        throw std::runtime_error("ovsdb backend: socket path empty or too long: '" + config_.socket + "'");
    }
    std::memcpy(addr.sun_path, config_.socket.c_str(), config_.socket.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        throw std::runtime_error(errnoText("socket"));
    }
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        throw std::runtime_error(errnoText(("connect " + config_.socket).c_str()));
    }
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(config_.timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((config_.timeout.count() % 1000) * 1000);
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
        throw std::runtime_error(errnoText("setsockopt"));
    }
}

void OvsdbBackend::sendAll(std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::runtime_error(errno == EAGAIN ? std::string("send timed out") : errnoText("send"));
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

JsonRpcMessage OvsdbBackend::awaitReply(std::uint64_t id) {
    idText_.clear();
    appendNumber(idText_, id);
    char buf[16384];
    while (true) {
        while (auto text = stream_.next()) {
            JsonRpcMessage m = parseJsonRpc(*text);
            if (!m.method.empty()) {
                if (m.method == "\"echo\"") { // the server's liveness probe
                    echoReply_ = "{\"id\":";
                    echoReply_ += m.id.empty() ? "null" : m.id;
                    echoReply_ += ",\"result\":";
                    echoReply_ += m.params.empty() ? "[]" : m.params;
                    echoReply_ += ",\"error\":null}";
                    sendAll(echoReply_);
                }
                continue; // other requests and notifications: none expected, ignored
            }
            if (m.id != idText_) {
                throw std::runtime_error("reply of id " + std::string(m.id) + " while waiting for id " +
                                         idText_);
            }
            return m;
        }
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
            stream_.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0) {
            throw std::runtime_error("ovsdb-server closed the connection");
        } else if (errno != EINTR) {
            throw std::runtime_error(errno == EAGAIN ? std::string("no reply within the timeout")
                                                     : errnoText("recv"));
        }
    }
}

bool OvsdbBackend::transact(int client, int seq, std::string& error) {
    Row row = rowFor(client, seq);
    std::uint64_t id = nextId_++;
    request_.clear();
    request_ += "{\"method\":\"transact\",\"params\":[";
    appendJsonString(request_, database_);
    request_ += ",{\"op\":\"insert\",\"table\":";
    appendJsonString(request_, table_);
    request_ += ",\"row\":{\"name\":";
    appendJsonString(request_, row.name);
    request_ += ",\"description\":";
    appendJsonString(request_, row.description);
    request_ += row.enabled ? ",\"enabled\":true" : ",\"enabled\":false";
    request_ += ",\"count\":";
    appendNumber(request_, row.count);
    request_ += "}}";
    if (config_.durable) {
        request_ += ",{\"op\":\"commit\",\"durable\":true}";
    }
    request_ += "],\"id\":";
    appendNumber(request_, id);
    request_ += '}';
    sendAll(request_);

    JsonRpcMessage reply = awaitReply(id);
    if (!reply.error.empty() && reply.error != "null") {
        error = std::string(reply.error);
        return false;
    }
    if (reply.result.empty()) {
        error = "reply without result";
        return false;
    }
    if (auto failure = transactFailure(reply.result, config_.durable ? 2 : 1)) {
        error = std::move(*failure);
        return false;
    }
    return true;
}

std::unique_ptr<Backend> makeOvsdbBackend(const BackendConfig& config) {
    return std::make_unique<OvsdbBackend>(config);
}

} // namespace ncstore::bench
