#include "xpathworker.hpp"

#include "filter.hpp"

#include "ncstore/log.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ncstore::netconfd {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(20);
// A worker loads its context in tens of ms (about a second for the Open ROADM 2.2.1 set; ten
// times that under a sanitizer): past this it is taken for broken.
constexpr auto kStartLimit = std::chrono::seconds(120);
constexpr int kWorkerNice = 10;

// Messages: a length (8 bytes, this machine's order: both ends are one program) and the bytes.
// The server's first message is the ModelOptions, the worker's first "r" once its context is
// built. A job: wd, tree, expr, leaveOut, lyb; its answer: a status byte and the XML (LYB for a
// tree job) or the message.
constexpr char kOk = 'o';
constexpr char kFilterError = 'e';
constexpr char kFailed = 'f';

class Encoder {
public:
    void u32(std::uint32_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
    void str(const std::string& s) {
        u32(static_cast<std::uint32_t>(s.size()));
        bytes_ += s;
    }
    std::string take() { return std::move(bytes_); }

private:
    std::string bytes_;
};

class Decoder {
public:
    explicit Decoder(const std::string& bytes) : bytes_(bytes) {}
    std::uint32_t u32() {
        std::uint32_t v = 0;
        need(sizeof v);
        std::memcpy(&v, bytes_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    std::string str() {
        const std::uint32_t n = u32();
        need(n);
        std::string s = bytes_.substr(at_, n);
        at_ += n;
        return s;
    }
    std::string rest() {
        std::string s = bytes_.substr(at_);
        at_ = bytes_.size();
        return s;
    }

private:
    void need(std::size_t n) const {
        if (bytes_.size() - at_ < n) {
            throw std::runtime_error("xpath worker: truncated message");
        }
    }
    const std::string& bytes_;
    std::size_t at_ = 0;
};

std::string encodeModels(const ModelOptions& m) {
    Encoder e;
    e.u32(m.defaultModels ? 1 : 0);
    e.u32(static_cast<std::uint32_t>(m.yangDirs.size()));
    for (const auto& d : m.yangDirs) {
        e.str(d.string());
    }
    e.u32(static_cast<std::uint32_t>(m.searchDirs.size()));
    for (const auto& d : m.searchDirs) {
        e.str(d.string());
    }
    e.str(m.ietfDir.string());
    e.str(m.serverDir.string());
    e.str(m.bundledDir.string());
    return e.take();
}

ModelOptions decodeModels(const std::string& bytes) {
    Decoder d(bytes);
    ModelOptions m;
    m.defaultModels = d.u32() != 0;
    for (std::uint32_t n = d.u32(); n > 0; --n) {
        m.yangDirs.emplace_back(d.str());
    }
    for (std::uint32_t n = d.u32(); n > 0; --n) {
        m.searchDirs.emplace_back(d.str());
    }
    m.ietfDir = d.str();
    m.serverDir = d.str();
    m.bundledDir = d.str();
    return m;
}

std::string frame(const std::string& payload) {
    const std::uint64_t n = payload.size();
    std::string out(reinterpret_cast<const char*>(&n), sizeof n);
    out += payload;
    return out;
}

// ---------------------------------------------------------------------------------------------
// The server's side: non-blocking I/O that gives up at a deadline or when asked to.

enum class Wait { Done, Late, Stopped, Broken };

/// Waits until `fd` is ready for `events`, `deadline` passes or `stop` says so.
Wait waitFor(int fd, short events, Clock::time_point deadline, const StopRequested& stop) {
    for (;;) {
        if (stop && stop()) {
            return Wait::Stopped;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return Wait::Late;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min(left, kSlice).count()) + 1);
        if (n < 0 && errno != EINTR) {
            return Wait::Broken;
        }
        if (n > 0) {
            return (p.revents & (events | POLLHUP | POLLERR)) ? Wait::Done : Wait::Broken;
        }
    }
}

Wait sendAll(int fd, const std::string& bytes, Clock::time_point deadline, const StopRequested& stop) {
    std::size_t at = 0;
    while (at < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
        if (n > 0) {
            at += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return Wait::Broken;
        }
        if (const Wait w = waitFor(fd, POLLOUT, deadline, stop); w != Wait::Done) {
            return w;
        }
    }
    return Wait::Done;
}

Wait recvExactly(int fd, char* into, std::size_t size, Clock::time_point deadline,
                 const StopRequested& stop) {
    std::size_t at = 0;
    while (at < size) {
        const ssize_t n = ::recv(fd, into + at, size - at, 0);
        if (n > 0) {
            at += static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            return Wait::Broken;
        }
        if (const Wait w = waitFor(fd, POLLIN, deadline, stop); w != Wait::Done) {
            return w;
        }
    }
    return Wait::Done;
}

Wait recvFrame(int fd, std::string& out, Clock::time_point deadline, const StopRequested& stop) {
    std::uint64_t n = 0;
    if (const Wait w = recvExactly(fd, reinterpret_cast<char*>(&n), sizeof n, deadline, stop);
        w != Wait::Done) {
        return w;
    }
    out.resize(n);
    return recvExactly(fd, out.data(), n, deadline, stop);
}

// ---------------------------------------------------------------------------------------------
// The worker's side: blocking I/O.

bool readFully(int fd, char* into, std::size_t size) {
    std::size_t at = 0;
    while (at < size) {
        const ssize_t n = ::read(fd, into + at, size - at);
        if (n > 0) {
            at += static_cast<std::size_t>(n);
        } else if (n == 0 || errno != EINTR) {
            return false;
        }
    }
    return true;
}

bool readFrame(int fd, std::string& out) {
    std::uint64_t n = 0;
    if (!readFully(fd, reinterpret_cast<char*>(&n), sizeof n)) {
        return false;
    }
    out.resize(n);
    return readFully(fd, out.data(), n);
}

bool writeFrame(int fd, const std::string& payload) {
    const std::string bytes = frame(payload);
    std::size_t at = 0;
    while (at < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
        if (n > 0) {
            at += static_cast<std::size_t>(n);
        } else if (n < 0 && errno != EINTR) {
            return false;
        }
    }
    return true;
}

std::string answer(const ly_ctx* ctx, const std::string& request) {
    try {
        Decoder d(request);
        const std::uint32_t wd = d.u32();
        const bool tree = d.u32() != 0;
        const std::string expr = d.str();
        const std::string leaveOut = d.str();
        const std::string lyb = d.rest();
        const Tree data = parseData(ctx, lyb, LYD_LYB, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0);
        if (tree) {
            const Tree selected = filter::xpath(data.get(), expr);
            return kOk + (selected ? print(selected.get(), LYD_LYB, LYD_PRINT_WITHSIBLINGS) : std::string());
        }
        const lysc_node* left = nullptr;
        if (!leaveOut.empty()) {
            left = lys_find_path(ctx, nullptr, ("/" + leaveOut).c_str(), 0);
            if (!left) {
                throw std::runtime_error("xpath worker: no top-level node " + leaveOut);
            }
        }
        return kOk + filter::xpathXml(data.get(), expr, wd, left);
    } catch (const filter::Error& e) {
        return kFilterError + std::string(e.what());
    } catch (const std::exception& e) {
        return kFailed + std::string(e.what());
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------

XPathEvaluator::Worker::~Worker() {
    if (fd >= 0) {
        ::close(fd);
    }
    if (pid > 0) {
        ::kill(pid, SIGKILL);
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

XPathEvaluator::XPathEvaluator(Options options)
    : options_(std::move(options)), hello_(frame(encodeModels(options_.models))) {
    if (options_.workers == 0) {
        throw std::invalid_argument("xpath evaluator: at least one worker");
    }
}

XPathEvaluator::~XPathEvaluator() = default;

std::unique_ptr<XPathEvaluator::Worker> XPathEvaluator::spawn() const {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        throw filter::Stopped(ErrorTag::OperationFailed,
                              std::string("cannot start an XPath worker: socketpair: ") +
                                  std::strerror(errno));
    }
    auto w = std::make_unique<Worker>();
    w->fd = fds[0];
    struct Spawn {
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        int child;
        Spawn(int c) : child(c) {
            posix_spawn_file_actions_init(&actions);
            posix_spawnattr_init(&attr);
        }
        ~Spawn() {
            posix_spawn_file_actions_destroy(&actions);
            posix_spawnattr_destroy(&attr);
            ::close(child);
        }
    } s(fds[1]);
    // The worker gets its socket as fd 3 and no other descriptor of the server's (sessions'
    // sockets, the database), default signal handling and no blocked signal.
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    int rc = posix_spawn_file_actions_adddup2(&s.actions, s.child, 3);
    rc = rc ? rc : posix_spawn_file_actions_addclosefrom_np(&s.actions, 4);
    rc = rc ? rc : posix_spawnattr_setsigmask(&s.attr, &none);
    rc = rc ? rc : posix_spawnattr_setsigdefault(&s.attr, &defaults);
    rc = rc ? rc : posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const std::string program = options_.program.string();
    char arg[] = "--xpath-worker";
    char* argv[] = {const_cast<char*>(program.c_str()), arg, nullptr};
    rc = rc ? rc : posix_spawn(&w->pid, program.c_str(), &s.actions, &s.attr, argv, environ);
    if (rc != 0) {
        w->pid = -1;
        throw filter::Stopped(ErrorTag::OperationFailed,
                              "cannot start an XPath worker (" + program + "): " + std::strerror(rc));
    }
    (void)::fcntl(w->fd, F_SETFL, ::fcntl(w->fd, F_GETFL) | O_NONBLOCK);
    // The context it is to load; the socket's buffer holds it until the worker reads.
    if (sendAll(w->fd, hello_, Clock::now() + kStartLimit, {}) != Wait::Done) {
        throw filter::Stopped(ErrorTag::OperationFailed, "cannot start an XPath worker: it ended at once");
    }
    NCS_LOG(debug) << "xpath worker " << w->pid << " started";
    return w;
}

std::unique_ptr<XPathEvaluator::Worker> XPathEvaluator::acquire(const StopRequested& stop) const {
    std::unique_ptr<Worker> w;
    {
        std::unique_lock lock(mutex_);
        while (!w) {
            if (!idle_.empty()) {
                w = std::move(idle_.back());
                idle_.pop_back();
            } else if (running_ < options_.workers) {
                ++running_;
                lock.unlock();
                try {
                    w = spawn();
                } catch (...) {
                    lock.lock();
                    --running_;
                    throw;
                }
                lock.lock();
            } else {
                freed_.wait_for(lock, kSlice);
                if (stop && stop()) {
                    throw filter::Stopped(ErrorTag::OperationFailed,
                                          "the request was abandoned waiting for an XPath worker");
                }
            }
        }
    }
    if (!w->ready) {
        std::string hello;
        const Wait got = recvFrame(w->fd, hello, Clock::now() + kStartLimit, stop);
        if (got != Wait::Done || hello != "r") {
            const std::string why =
                got == Wait::Done ? hello.substr(hello.empty() ? 0 : 1) : "it did not start";
            discard(std::move(w));
            if (got == Wait::Stopped) {
                throw filter::Stopped(ErrorTag::OperationFailed,
                                      "the request was abandoned waiting for an XPath worker");
            }
            throw filter::Stopped(ErrorTag::OperationFailed, "the XPath worker failed: " + why);
        }
        w->ready = true;
    }
    return w;
}

void XPathEvaluator::release(std::unique_ptr<Worker> w) const {
    {
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(w));
    }
    freed_.notify_one();
}

void XPathEvaluator::discard(std::unique_ptr<Worker> w) const {
    const pid_t pid = w->pid;
    w.reset(); // SIGKILL, reaped
    NCS_LOG(debug) << "xpath worker " << pid << " ended";
    std::unique_ptr<Worker> replacement;
    try {
        replacement = spawn(); // loads its context while nobody waits for it
    } catch (const std::exception& e) {
        NCS_LOG(warning) << e.what();
    }
    {
        std::lock_guard lock(mutex_);
        if (replacement) {
            idle_.push_back(std::move(replacement));
        } else {
            --running_;
        }
    }
    freed_.notify_one();
}

std::string XPathEvaluator::evaluate(const XPathJob& job, const StopRequested& stop) const {
    if (job.lyb.empty()) {
        return {};
    }
    std::unique_ptr<Worker> w = acquire(stop);
    Encoder e;
    e.u32(job.wd);
    e.u32(job.tree ? 1 : 0);
    e.str(job.expr);
    e.str(job.leaveOut);
    std::string request = e.take();
    request += job.lyb;
    const auto started = Clock::now();
    const auto deadline = started + options_.budget;
    std::string reply;
    Wait w8 = sendAll(w->fd, frame(request), deadline, stop);
    if (w8 == Wait::Done) {
        w8 = recvFrame(w->fd, reply, deadline, stop);
    }
    if (w8 != Wait::Done || reply.empty()) {
        discard(std::move(w));
        switch (w8) {
        case Wait::Late:
            NCS_LOG(info) << "XPath filter \"" << job.expr << "\" stopped at its budget of "
                          << options_.budget.count() << " ms";
            throw filter::Stopped(ErrorTag::ResourceDenied,
                                  "the XPath filter was stopped at its budget of " +
                                      std::to_string(options_.budget.count()) +
                                      " ms (the server's --xpath-budget-ms raises it)");
        case Wait::Stopped:
            throw filter::Stopped(ErrorTag::OperationFailed,
                                  "the request was abandoned while its XPath filter ran");
        default:
            throw filter::Stopped(ErrorTag::OperationFailed,
                                  "the XPath worker ended while evaluating the filter");
        }
    }
    const char status = reply.front();
    reply.erase(0, 1);
    release(std::move(w));
    NCS_LOG(trace) << "xpath filter evaluated in "
                   << std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count()
                   << " us";
    switch (status) {
    case kOk:
        return reply;
    case kFilterError:
        throw filter::Error(reply);
    default:
        throw filter::Stopped(ErrorTag::OperationFailed, "the XPath worker failed: " + reply);
    }
}

int runXPathWorker(int fd) {
    log::setup("warning");
    // A filter that takes all of a core must leave the server's threads (sessions, logins, the
    // commit path) the first claim on the CPU.
    if (::setpriority(PRIO_PROCESS, 0, kWorkerNice) != 0) {
        NCS_LOG(warning) << "xpath worker: cannot lower its priority: " << std::strerror(errno);
    }
    // Its server gone (even killed), the socket ends: so does this process, evaluating or not.
    std::thread([fd] {
        for (;;) {
            pollfd p{fd, POLLRDHUP, 0};
            if (::poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                ::_exit(0);
            }
        }
    }).detach();
    std::string message;
    if (!readFrame(fd, message)) {
        return 1;
    }
    Context ctx;
    try {
        ctx = buildContext(decodeModels(message));
    } catch (const std::exception& e) {
        writeFrame(fd, kFailed + std::string(e.what()));
        return 1;
    }
    if (!writeFrame(fd, "r")) {
        return 1;
    }
    while (readFrame(fd, message)) {
        if (!writeFrame(fd, answer(ctx.get(), message))) {
            return 1;
        }
    }
    return 0;
}

} // namespace ncstore::netconfd
