// ncstore-client: a NETCONF client for administration and timing, over the libnetconf2 client API.
//
//   ncstore-client --user u --password p get-config --source running --filter-xpath /ietf-interfaces:*
//   ncstore-client --user u --password p --sessions 5 --repeat 1000 edit-config --target running --config
//   e.xml
//
// With --repeat/--sessions it prints throughput and latency statistics instead of replies. The
// payload may hold placeholders replaced before the clock starts, so every request can differ:
//   @S@ session index, @N@ request index in its session, @I@ unique index (--index-offset +
//   session * repeat + request), @R@ a random integer in [1, --random-range].
// With --each-line the payload file holds one request per line, sent in turn (a controller
// provisioning services one at a time over one session); --repeat defaults to the line count.
#include "NcClient.hpp"

#include "ncstore/cputime.hpp"
#include "ncstore/xml.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <latch>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace {

using namespace ncstore::client;
using Clock = std::chrono::steady_clock;

constexpr const char* kCommitsNs = "urn:ncstore:yang:ncstore-commits";

std::string xmlText(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '&':
            out += "&amp;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string readPayload(const std::string& source) {
    if (source == "-") {
        return std::string(std::istreambuf_iterator<char>(std::cin), {});
    }
    std::ifstream in(source, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + source);
    }
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/// On-CPU nanoseconds of each live thread of a process (/proc/<pid>/task/*/schedstat), and under
/// the key "total" the process's utime + stime in ns (/proc/<pid>/stat: 10 ms ticks, but it keeps
/// the time of threads that have exited).
using CpuSnapshot = std::map<std::string, double>;

double processTicksNs(long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) {
        return 0;
    }
    std::istringstream fields(text.substr(paren + 1));
    std::string field;
    double ticks = 0;
    for (int i = 0; i < 13 && fields >> field; ++i) {
        if (i == 11 || i == 12) { // utime, stime (fields 14 and 15 of proc(5))
            ticks += std::stod(field);
        }
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK)) * 1e9;
}

std::optional<CpuSnapshot> processCpu(long pid) {
    if (pid <= 0) {
        return std::nullopt;
    }
    std::error_code ec;
    CpuSnapshot snapshot;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream schedstat(task.path() / "schedstat");
        double onCpu = 0;
        if (schedstat >> onCpu) {
            snapshot[task.path().filename().string()] = onCpu;
        }
    }
    if (ec || snapshot.empty()) {
        return std::nullopt;
    }
    snapshot["total"] = processTicksNs(pid);
    return snapshot;
}

/// CPU seconds the process spent between two snapshots: the sum of per-thread deltas (a thread
/// born in between counts whole). When a thread exited in between, its time is only in the
/// tick-based process delta (10 ms resolution), which is then used if larger.
std::optional<double> cpuBetween(const std::optional<CpuSnapshot>& before,
                                 const std::optional<CpuSnapshot>& after) {
    if (!before || !after) {
        return std::nullopt;
    }
    double ns = 0;
    for (const auto& [tid, value] : *after) {
        if (tid == "total") {
            continue;
        }
        const auto it = before->find(tid);
        ns += value - (it == before->end() ? 0.0 : it->second);
    }
    const bool threadExited = std::any_of(before->begin(), before->end(),
                                          [&](const auto& entry) { return !after->contains(entry.first); });
    if (threadExited) {
        ns = std::max(ns, after->at("total") - before->at("total"));
    }
    return ns / 1e9;
}

/// JSON fragment `,"server_cpu_s":X` when it was measured.
std::string serverCpuJson(const std::optional<double>& seconds) {
    if (!seconds) {
        return "";
    }
    std::ostringstream out;
    out << ",\"server_cpu_s\":" << *seconds;
    return out.str();
}

/// What the command line asked for, independent of the session running it.
struct Request {
    std::string command;
    std::string datastore = "running"; // --source / --target
    std::string secondDatastore;       // copy-config --source
    std::string payload;               // config, filter or RPC XML (may hold placeholders)
    bool filterIsXpath = false;
    std::string withDefaults;
    std::string defaultOperation, testOption, errorOption;
    // commit / cancel-commit (RFC 6241 8.4)
    bool confirmed = false;
    uint32_t confirmTimeout = 0; // 0: the server's default (600 s)
    std::string persist, persistId;
};

/// Expands the placeholders of `text` for one request.
class Expander {
public:
    Expander(std::string text, long offset, long repeat, long randomRange, unsigned seed)
        : text_(std::move(text)), offset_(offset), repeat_(repeat), randomRange_(randomRange), rng_(seed),
          templated_(text_.find('@') != std::string::npos) {}
    [[nodiscard]] bool templated() const { return templated_; }
    std::string expand(long session, long n) {
        if (!templated_) {
            return text_;
        }
        std::string out;
        out.reserve(text_.size() + 16);
        for (size_t i = 0; i < text_.size(); ++i) {
            if (text_[i] == '@' && i + 2 < text_.size() && text_[i + 2] == '@') {
                const char c = text_[i + 1];
                if (c == 'S' || c == 'N' || c == 'I' || c == 'R') {
                    long value = 0;
                    if (c == 'S') {
                        value = session;
                    } else if (c == 'N') {
                        value = n;
                    } else if (c == 'I') {
                        value = offset_ + session * repeat_ + n;
                    } else {
                        value = std::uniform_int_distribution<long>(1, std::max(1L, randomRange_))(rng_);
                    }
                    out += std::to_string(value);
                    i += 2;
                    continue;
                }
            }
            out += text_[i];
        }
        return out;
    }

private:
    std::string text_;
    long offset_, repeat_, randomRange_;
    std::mt19937_64 rng_;
    bool templated_;
};

NC_RPC_EDIT_DFLTOP parseDefaultOperation(const std::string& s) {
    if (s.empty()) {
        return NC_RPC_EDIT_DFLTOP_UNKNOWN;
    }
    if (s == "merge") {
        return NC_RPC_EDIT_DFLTOP_MERGE;
    }
    if (s == "replace") {
        return NC_RPC_EDIT_DFLTOP_REPLACE;
    }
    if (s == "none") {
        return NC_RPC_EDIT_DFLTOP_NONE;
    }
    throw std::invalid_argument("unknown default-operation '" + s + "'");
}

NC_RPC_EDIT_TESTOPT parseTestOption(const std::string& s) {
    if (s.empty()) {
        return NC_RPC_EDIT_TESTOPT_UNKNOWN;
    }
    if (s == "test-then-set") {
        return NC_RPC_EDIT_TESTOPT_TESTSET;
    }
    if (s == "set") {
        return NC_RPC_EDIT_TESTOPT_SET;
    }
    if (s == "test-only") {
        return NC_RPC_EDIT_TESTOPT_TEST;
    }
    throw std::invalid_argument("unknown test-option '" + s + "'");
}

NC_RPC_EDIT_ERROPT parseErrorOption(const std::string& s) {
    if (s.empty()) {
        return NC_RPC_EDIT_ERROPT_UNKNOWN;
    }
    if (s == "stop-on-error") {
        return NC_RPC_EDIT_ERROPT_STOP;
    }
    if (s == "continue-on-error") {
        return NC_RPC_EDIT_ERROPT_CONTINUE;
    }
    if (s == "rollback-on-error") {
        return NC_RPC_EDIT_ERROPT_ROLLBACK;
    }
    throw std::invalid_argument("unknown error-option '" + s + "'");
}

/// Builds the RPC for `req` with `payload` (placeholders already expanded).
Rpc buildRpc(const Request& req, const std::string& payload) {
    const auto dup = NC_PARAMTYPE_DUP_AND_FREE;
    const NC_WD_MODE wd = parseWithDefaults(req.withDefaults);
    const std::string filterText = req.filterIsXpath ? payload : stripWrapper(payload, "filter");
    const char* filter = filterText.empty() ? nullptr : filterText.c_str();
    const std::string& c = req.command;
    if (c == "get") {
        return checkedRpc(nc_rpc_get(filter, wd, dup), "get");
    }
    if (c == "get-config") {
        return checkedRpc(nc_rpc_getconfig(parseDatastore(req.datastore), filter, wd, dup), "get-config");
    }
    if (c == "edit-config") {
        const std::string content = stripConfigWrapper(payload);
        return checkedRpc(nc_rpc_edit(parseDatastore(req.datastore),
                                      parseDefaultOperation(req.defaultOperation),
                                      parseTestOption(req.testOption), parseErrorOption(req.errorOption),
                                      content.c_str(), dup),
                          "edit-config");
    }
    if (c == "copy-config") {
        if (!req.secondDatastore.empty()) {
            return checkedRpc(nc_rpc_copy(parseDatastore(req.datastore), nullptr,
                                          parseDatastore(req.secondDatastore), nullptr, wd, dup),
                              "copy-config");
        }
        const std::string content = stripConfigWrapper(payload);
        return checkedRpc(nc_rpc_copy(parseDatastore(req.datastore), nullptr, NC_DATASTORE_CONFIG,
                                      content.c_str(), wd, dup),
                          "copy-config");
    }
    if (c == "delete-config") {
        return checkedRpc(nc_rpc_delete(parseDatastore(req.datastore), nullptr, dup), "delete-config");
    }
    if (c == "lock") {
        return checkedRpc(nc_rpc_lock(parseDatastore(req.datastore)), "lock");
    }
    if (c == "unlock") {
        return checkedRpc(nc_rpc_unlock(parseDatastore(req.datastore)), "unlock");
    }
    if (c == "commit") {
        return checkedRpc(nc_rpc_commit(req.confirmed ? 1 : 0, req.confirmTimeout,
                                        req.persist.empty() ? nullptr : req.persist.c_str(),
                                        req.persistId.empty() ? nullptr : req.persistId.c_str(), dup),
                          "commit");
    }
    if (c == "cancel-commit") {
        return checkedRpc(nc_rpc_cancel(req.persistId.empty() ? nullptr : req.persistId.c_str(), dup),
                          "cancel-commit");
    }
    if (c == "discard-changes") {
        return checkedRpc(nc_rpc_discard(), "discard-changes");
    }
    if (c == "validate") {
        if (!payload.empty()) {
            const std::string content = stripConfigWrapper(payload);
            return checkedRpc(nc_rpc_validate(NC_DATASTORE_CONFIG, content.c_str(), dup), "validate");
        }
        return checkedRpc(nc_rpc_validate(parseDatastore(req.datastore), nullptr, dup), "validate");
    }
    if (c == "rpc") {
        return checkedRpc(nc_rpc_act_generic_xml(payload.c_str(), dup), "rpc");
    }
    throw std::invalid_argument("unknown command " + c);
}

struct Options {
    ConnectOptions connect;
    long repeat = 1;
    long sessions = 1;
    long indexOffset = 0;
    long randomRange = 1;
    long serverPid = 0;
    bool eachLine = false;
    bool time = false;
    bool json = false;
    bool quiet = false;
};

struct SessionResult {
    std::vector<double> latencies; // seconds
    Clock::time_point end;
    long errors = 0;
    std::string firstError;
    std::exception_ptr failure;
};

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) {
        return 0;
    }
    const auto index = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size()))) - 1;
    return sorted[std::min(index, sorted.size() - 1)];
}

/// One request on one session: prints the reply. Returns the exit code.
int runSingle(const Options& opts, const Request& req) {
    applyThreadOptions(opts.connect);
    Session session(opts.connect);
    Expander expander(req.payload, opts.indexOffset, 1, opts.randomRange, std::random_device{}());
    Rpc rpc = buildRpc(req, expander.expand(0, 0));
    const auto server0 = processCpu(opts.serverPid);
    const double cpu0 = ncstore::processCpuSeconds();
    const auto t0 = Clock::now();
    Reply reply = session.call(rpc.get(), opts.connect.rpcTimeoutMs);
    const auto t1 = Clock::now();
    const double cpu = ncstore::processCpuSeconds() - cpu0;
    const auto server1 = processCpu(opts.serverPid);
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    if (opts.json) {
        std::cout << "{\"command\":\"" << req.command << "\",\"count\":1,\"seconds\":" << seconds
                  << ",\"errors\":" << (reply.isError() ? 1 : 0) << ",\"client_cpu_s\":" << cpu
                  << serverCpuJson(cpuBetween(server0, server1)) << "}\n";
        if (reply.isError()) {
            std::cerr << reply.render(parseWithDefaults(req.withDefaults));
        }
    } else {
        if (!opts.quiet || reply.isError()) {
            (reply.isError() ? std::cerr : std::cout) << reply.render(parseWithDefaults(req.withDefaults));
        }
        if (opts.time) {
            std::cout << "round-trip: " << seconds * 1e3 << " ms (client CPU " << cpu * 1e3 << " ms)\n";
        }
    }
    return reply.isError() ? 1 : 0;
}

/// The non-empty lines of `text`.
std::vector<std::string> payloadLines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) {
            lines.push_back(std::move(line));
        }
    }
    return lines;
}

/// `sessions` threads, each its own session, each sending `repeat` requests in sequence.
int runLoad(const Options& opts, const Request& req) {
    const auto n = static_cast<size_t>(opts.sessions);
    std::vector<SessionResult> results(n);
    std::mutex connectMutex; // connect one at a time: the schema cache is shared, the server accepts serially
    std::latch ready(static_cast<std::ptrdiff_t>(n) + 1);
    std::latch go(1);
    // Sessions stay open until the main thread has read the CPU figures: a server may run a
    // thread per session, whose CPU time would vanish from /proc with the thread.
    std::latch finished(static_cast<std::ptrdiff_t>(n));
    std::latch release(1);
    Clock::time_point start;
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (size_t s = 0; s < n; ++s) {
        threads.emplace_back([&, s] {
            SessionResult& result = results[s];
            bool counted = false;
            bool finishedCounted = false;
            try {
                applyThreadOptions(opts.connect);
                std::optional<Session> session;
                {
                    std::lock_guard lock(connectMutex);
                    session.emplace(opts.connect);
                }
                Expander expander(req.payload, opts.indexOffset, opts.repeat, opts.randomRange,
                                  static_cast<unsigned>(s * 7919 + 17));
                std::vector<Rpc> rpcs;
                if (opts.eachLine) {
                    for (const std::string& line : payloadLines(req.payload)) {
                        rpcs.push_back(buildRpc(req, line));
                    }
                } else if (expander.templated()) {
                    rpcs.reserve(static_cast<size_t>(opts.repeat));
                    for (long i = 0; i < opts.repeat; ++i) {
                        rpcs.push_back(buildRpc(req, expander.expand(static_cast<long>(s), i)));
                    }
                } else {
                    rpcs.push_back(buildRpc(req, req.payload));
                }
                result.latencies.reserve(static_cast<size_t>(opts.repeat));
                ready.count_down();
                counted = true;
                go.wait();
                for (long i = 0; i < opts.repeat; ++i) {
                    nc_rpc* rpc = rpcs[static_cast<size_t>(i) % rpcs.size()].get();
                    const auto t0 = Clock::now();
                    Reply reply = session->call(rpc, opts.connect.rpcTimeoutMs);
                    const auto t1 = Clock::now();
                    result.latencies.push_back(std::chrono::duration<double>(t1 - t0).count());
                    if (reply.isError() && result.errors++ == 0) {
                        result.firstError = reply.render(NC_WD_UNKNOWN);
                    }
                }
                result.end = Clock::now();
                finished.count_down();
                finishedCounted = true;
                release.wait();
            } catch (...) {
                result.failure = std::current_exception();
                result.end = Clock::now();
                if (!counted) {
                    ready.count_down();
                }
                if (!finishedCounted) {
                    finished.count_down();
                }
            }
        });
    }
    ready.arrive_and_wait();
    const auto server0 = processCpu(opts.serverPid);
    const double cpu0 = ncstore::processCpuSeconds();
    start = Clock::now();
    go.count_down();
    finished.wait();
    const double cpu = ncstore::processCpuSeconds() - cpu0;
    const auto server1 = processCpu(opts.serverPid);
    release.count_down();
    for (auto& t : threads) {
        t.join();
    }
    for (const auto& r : results) {
        if (r.failure) {
            std::rethrow_exception(r.failure);
        }
    }
    std::vector<double> all;
    long errors = 0;
    Clock::time_point end = start;
    for (const auto& r : results) {
        all.insert(all.end(), r.latencies.begin(), r.latencies.end());
        errors += r.errors;
        end = std::max(end, r.end);
        if (r.errors && !r.firstError.empty() && errors == r.errors) {
            std::cerr << "first rpc-error:\n" << r.firstError;
        }
    }
    std::sort(all.begin(), all.end());
    const double total = std::chrono::duration<double>(end - start).count();
    const double avg =
        all.empty() ? 0 : std::accumulate(all.begin(), all.end(), 0.0) / static_cast<double>(all.size());
    const double opsPerSecond = total > 0 ? static_cast<double>(all.size()) / total : 0;
    if (opts.json) {
        std::cout << "{\"command\":\"" << req.command << "\",\"sessions\":" << n
                  << ",\"repeat\":" << opts.repeat << ",\"count\":" << all.size() << ",\"errors\":" << errors
                  << ",\"seconds\":" << total << ",\"ops_per_s\":" << opsPerSecond
                  << ",\"lat_min_s\":" << (all.empty() ? 0 : all.front()) << ",\"lat_avg_s\":" << avg
                  << ",\"lat_p50_s\":" << percentile(all, 50) << ",\"lat_p99_s\":" << percentile(all, 99)
                  << ",\"lat_max_s\":" << (all.empty() ? 0 : all.back()) << ",\"client_cpu_s\":" << cpu
                  << serverCpuJson(cpuBetween(server0, server1)) << "}\n";
    } else {
        std::cout << "count: " << all.size() << " (" << n << " sessions x " << opts.repeat << ")\n"
                  << "errors: " << errors << "\n"
                  << "total: " << total << " s\n"
                  << "ops/s: " << opsPerSecond << "\n"
                  << "latency ms: min " << (all.empty() ? 0 : all.front() * 1e3) << " avg " << avg * 1e3
                  << " p50 " << percentile(all, 50) * 1e3 << " p99 " << percentile(all, 99) * 1e3 << " max "
                  << (all.empty() ? 0 : all.back() * 1e3) << "\n"
                  << "client CPU: " << cpu << " s\n";
        if (const auto server = cpuBetween(server0, server1)) {
            std::cout << "server CPU: " << *server << " s (threads alive at the end)\n";
        }
    }
    return errors ? 1 : 0;
}

/// What `subscribe` asks for and how long it listens.
struct SubscribeOptions {
    std::string stream;
    std::string startTime, stopTime;
    std::string datastore; ///< YANG-Push (RFC 8641): running or startup
    long period = 0;       ///< YANG-Push: periodic, every this many centiseconds (0: on change)
    bool noSync = false;   ///< YANG-Push on change: no push-update of the current data first
    long count = 0;        ///< stop after this many notifications (0: never)
    double idle = 0;       ///< stop after this many seconds without one (0: never)
};

/// RFC 5277 create-subscription, then every notification as it arrives: XML, or one JSON line
/// each (eventTime and the event) with --json. Ends at --count, --idle, or when the server ends
/// the subscription (notificationComplete) or the session.
/// RFC 8641 establish-subscription to `sub.datastore` through the request's filter. XPath
/// prefixes are module names (as in libyang's JSON): each one the server has is declared.
std::string establishSubscription(const Request& req, const SubscribeOptions& sub, const ly_ctx* ctx) {
    constexpr const char* kYp = "urn:ietf:params:xml:ns:yang:ietf-yang-push";
    std::string out =
        "<establish-subscription xmlns=\"urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications\">"
        "<datastore xmlns=\"" +
        std::string(kYp) + "\" xmlns:ds=\"urn:ietf:params:xml:ns:yang:ietf-datastores\">ds:" + sub.datastore +
        "</datastore>";
    if (!req.payload.empty() && req.filterIsXpath) {
        out += "<datastore-xpath-filter xmlns=\"" + std::string(kYp) + "\"";
        std::set<std::string> declared;
        const std::regex prefix(R"(([A-Za-z_][A-Za-z0-9_.-]*):)");
        for (auto it = std::sregex_iterator(req.payload.begin(), req.payload.end(), prefix);
             it != std::sregex_iterator(); ++it) {
            const std::string name = (*it)[1];
            const lys_module* m = ly_ctx_get_module_implemented(ctx, name.c_str());
            if (m && declared.insert(name).second) {
                out += " xmlns:" + name + "=\"" + ncstore::xmlEscape(m->ns) + "\"";
            }
        }
        out += ">" + ncstore::xmlEscape(req.payload) + "</datastore-xpath-filter>";
    } else if (!req.payload.empty()) {
        out += "<datastore-subtree-filter xmlns=\"" + std::string(kYp) + "\">" + req.payload +
               "</datastore-subtree-filter>";
    }
    if (!sub.stopTime.empty()) {
        out += "<stop-time>" + ncstore::xmlEscape(sub.stopTime) + "</stop-time>";
    }
    if (sub.period > 0) {
        out += "<periodic xmlns=\"" + std::string(kYp) + "\"><period>" + std::to_string(sub.period) +
               "</period></periodic>";
    } else {
        out += "<on-change xmlns=\"" + std::string(kYp) + "\">" +
               (sub.noSync ? "<sync-on-start>false</sync-on-start>" : "") + "</on-change>";
    }
    return out + "</establish-subscription>";
}

int runSubscribe(const Options& opts, const Request& req, const SubscribeOptions& sub) {
    applyThreadOptions(opts.connect);
    Session session(opts.connect);
    Rpc rpc =
        sub.datastore.empty()
            ? checkedRpc(nc_rpc_subscribe(sub.stream.empty() ? nullptr : sub.stream.c_str(),
                                          req.payload.empty() ? nullptr : req.payload.c_str(),
                                          sub.startTime.empty() ? nullptr : sub.startTime.c_str(),
                                          sub.stopTime.empty() ? nullptr : sub.stopTime.c_str(),
                                          NC_PARAMTYPE_CONST),
                         "create-subscription")
            : checkedRpc(nc_rpc_act_generic_xml(establishSubscription(req, sub, session.context()).c_str(),
                                                NC_PARAMTYPE_DUP_AND_FREE),
                         "establish-subscription");
    Reply reply = session.call(rpc.get(), opts.connect.rpcTimeoutMs);
    if (reply.isError()) {
        std::cerr << reply.render(NC_WD_UNKNOWN);
        return 1;
    }
    long received = 0;
    // libnetconf2 waits in slices; --idle counts them.
    constexpr int kSliceMs = 200;
    auto lastEvent = std::chrono::steady_clock::now();
    while (sub.count == 0 || received < sub.count) {
        std::optional<Notification> n;
        try {
            n = session.receiveNotification(kSliceMs);
        } catch (const ClientError& e) {
            std::cerr << "ncstore-client: " << e.what() << "\n";
            return received > 0 ? 0 : 1;
        }
        if (!n) {
            if (sub.idle > 0 &&
                std::chrono::duration<double>(std::chrono::steady_clock::now() - lastEvent).count() >=
                    sub.idle) {
                break;
            }
            continue;
        }
        lastEvent = std::chrono::steady_clock::now();
        ++received;
        const std::string name = n->content && n->content->schema ? n->content->schema->name : "?";
        if (opts.json) {
            const std::string event =
                n->content ? ncstore::print(n->content.get(), LYD_JSON, LYD_PRINT_SHRINK) : "{}";
            std::cout << "{\"eventTime\":\"" << n->eventTime << "\",\"event\":" << event << "}" << std::endl;
        } else {
            std::cout << "<!-- " << n->eventTime << " -->\n"
                      << (n->content ? ncstore::print(n->content.get(), LYD_XML, 0) : std::string())
                      << std::flush;
        }
        if (name == "notificationComplete" || name == "subscription-terminated") {
            break;
        }
    }
    return 0;
}

std::filesystem::path defaultSchemaDir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
        return std::filesystem::path(xdg) / "ncstore-client" / "schemas";
    }
    if (const char* home = std::getenv("HOME"); home && *home) {
        return std::filesystem::path(home) / ".cache" / "ncstore-client" / "schemas";
    }
    return std::filesystem::temp_directory_path() / "ncstore-client-schemas";
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"ncstore-client: NETCONF over SSH client (libnetconf2) with timing and parallel sessions"};
    app.require_subcommand(1);
    Options opts;
    std::string passwordFile, keyFile, schemaDir;
    std::string user;
    std::string password;
    int port = 8830;
    app.add_option("--host", opts.connect.host, "server address")->capture_default_str();
    app.add_option("--port", port, "server port")->capture_default_str()->check(CLI::Range(1, 65535));
    app.add_option("--user", user, "SSH user (default: $USER)");
    auto* passwordOpt = app.add_option("--password", password, "SSH password");
    app.add_option("--password-file", passwordFile, "file whose first line is the SSH password")
        ->excludes(passwordOpt);
    app.add_option("--key", keyFile, "private key for publickey auth (FILE.pub beside it)");
    app.add_option("--schema-dir", schemaDir, "private cache of schemas fetched from servers");
    app.add_option("--timeout", opts.connect.rpcTimeoutMs, "reply timeout in ms")->capture_default_str();
    app.add_flag("--time", opts.time, "print the round trip");
    app.add_option("--repeat", opts.repeat, "requests per session (statistics mode when > 1)")
        ->check(CLI::Range(1L, 100'000'000L));
    app.add_option("--sessions", opts.sessions,
                   "parallel sessions, one thread each (statistics mode when > 1)")
        ->check(CLI::Range(1L, 1000L));
    auto* repeatOpt = app.get_option("--repeat");
    app.add_flag(
        "--each-line", opts.eachLine,
        "the payload file holds one request per line, sent in turn (--repeat defaults to their count)");
    app.add_option("--index-offset", opts.indexOffset, "first value of @I@ in payloads");
    app.add_option("--random-range", opts.randomRange, "@R@ in payloads is uniform in [1, range]");
    app.add_option("--server-pid", opts.serverPid, "local server process: report its CPU time over the run");
    app.add_flag("--json", opts.json, "print one JSON line of figures");
    app.add_flag("--quiet,-q", opts.quiet, "do not print successful replies");
    bool verbose = false;
    app.add_flag("--verbose,-v", verbose, "libnetconf2 verbose logging");

    Request req;
    std::string payloadFile, filterSubtree, filterXpath;
    auto addFilter = [&](CLI::App* sub) {
        auto* subtree =
            sub->add_option("--filter-subtree", filterSubtree, "subtree filter XML file (- for stdin)");
        sub->add_option("--filter-xpath", filterXpath, "XPath filter")->excludes(subtree);
        sub->add_option("--with-defaults", req.withDefaults, "report-all|report-all-tagged|trim|explicit");
    };
    auto* get = app.add_subcommand("get", "<get>");
    addFilter(get);
    auto* getConfig = app.add_subcommand("get-config", "<get-config>");
    getConfig->add_option("--source", req.datastore, "running|candidate|startup")->capture_default_str();
    addFilter(getConfig);
    auto* edit = app.add_subcommand("edit-config", "<edit-config>");
    edit->add_option("--target", req.datastore, "running|candidate")->capture_default_str();
    edit->add_option("--config", payloadFile, "config XML file (- for stdin)")->required();
    edit->add_option("--default-operation", req.defaultOperation, "merge|replace|none");
    edit->add_option("--test-option", req.testOption, "test-then-set|set|test-only");
    edit->add_option("--error-option", req.errorOption, "stop-on-error|continue-on-error|rollback-on-error");
    auto* copy = app.add_subcommand("copy-config", "<copy-config>");
    copy->add_option("--target", req.datastore, "running|candidate|startup")->required();
    auto* copySource = copy->add_option("--source", req.secondDatastore, "running|candidate|startup");
    copy->add_option("--config", payloadFile, "config XML file (- for stdin)")->excludes(copySource);
    auto* del = app.add_subcommand("delete-config", "<delete-config>");
    del->add_option("--target", req.datastore, "startup|candidate")->required();
    auto* lock = app.add_subcommand("lock", "<lock>");
    lock->add_option("--target", req.datastore, "running|candidate|startup")->capture_default_str();
    auto* unlock = app.add_subcommand("unlock", "<unlock>");
    unlock->add_option("--target", req.datastore, "running|candidate|startup")->capture_default_str();
    auto* commit = app.add_subcommand("commit", "<commit>, confirmed or confirming (RFC 6241 8.4)");
    commit->add_flag("--confirmed", req.confirmed, "rolled back unless confirmed within --confirm-timeout");
    commit->add_option("--confirm-timeout", req.confirmTimeout, "seconds (default 600)")
        ->check(CLI::Range(1u, 4294967295u));
    commit->add_option("--persist", req.persist, "token: any session that gives it may confirm or cancel");
    commit->add_option("--persist-id", req.persistId, "the token of the pending confirmed commit");
    auto* cancel =
        app.add_subcommand("cancel-commit", "<cancel-commit>: roll back the pending confirmed commit");
    cancel->add_option("--persist-id", req.persistId, "the token of the pending confirmed commit");
    app.add_subcommand("discard-changes", "<discard-changes>");
    auto* validate = app.add_subcommand("validate", "<validate>");
    auto* validateSource = validate->add_option("--source", req.datastore, "running|candidate|startup");
    validate->add_option("--config", payloadFile, "config XML file (- for stdin)")->excludes(validateSource);
    // The commit history (ncstore-commits): its listing is state data, rollback an RPC.
    app.add_subcommand("history", "the commits of running the server keeps (<get> of /commits)");
    std::uint64_t rollbackId = 0;
    std::string rollbackComment;
    auto* rollback =
        app.add_subcommand("rollback", "make running what it was right after commit --id, as one new commit");
    rollback->add_option("--id", rollbackId, "the commit to go back to (see history)")->required();
    rollback->add_option("--comment", rollbackComment, "the new commit's comment");
    std::uint64_t compareFrom = 0;
    std::optional<std::uint64_t> compareTo;
    auto* compare = app.add_subcommand(
        "compare",
        "what changed from the state after commit --from to the state after --to (default: now), as an edit");
    compare->add_option("--from", compareFrom, "the commit to start from (see history)")->required();
    compare->add_option("--to", compareTo, "the commit to arrive at; running now when absent");
    auto* rpc = app.add_subcommand("rpc", "any RPC: the operation element in XML");
    rpc->add_option("file", payloadFile, "RPC XML file (- for stdin)")->required();
    SubscribeOptions subscribe;
    auto* sub =
        app.add_subcommand("subscribe", "<create-subscription> (RFC 5277), or with --datastore a YANG-Push "
                                        "<establish-subscription> (RFC 8641); then print each notification");
    sub->add_option("--stream", subscribe.stream, "event stream (default NETCONF)");
    auto* subSubtree =
        sub->add_option("--filter-subtree", filterSubtree, "subtree filter XML file (- for stdin)");
    sub->add_option("--filter-xpath", filterXpath, "XPath filter")->excludes(subSubtree);
    sub->add_option("--start-time", subscribe.startTime, "replay logged events from this time (RFC 3339)");
    sub->add_option("--stop-time", subscribe.stopTime, "end at this time (needs --start-time)");
    sub->add_option("--count", subscribe.count, "stop after this many notifications");
    sub->add_option("--idle", subscribe.idle, "stop after this many seconds without a notification");
    auto* datastoreOpt = sub->add_option("--datastore", subscribe.datastore,
                                         "YANG-Push (RFC 8641): follow this datastore (running or startup) "
                                         "through the filter, instead of the event stream")
                             ->check(CLI::IsMember({"running", "startup"}));
    sub->add_option("--period", subscribe.period,
                    "YANG-Push: a push-update every this many centiseconds "
                    "(default: on change, push-change-update)")
        ->needs(datastoreOpt);
    sub->add_flag("--no-sync", subscribe.noSync, "YANG-Push on change: no push-update of the data first")
        ->needs(datastoreOpt);

    CLI11_PARSE(app, argc, argv);

    try {
        req.command = app.get_subcommands().front()->get_name();
        if (req.command == "history") {
            req.command = "get";
            req.payload = std::string("<commits xmlns=\"") + kCommitsNs + "\"/>";
        } else if (req.command == "rollback") {
            req.command = "rpc";
            req.payload =
                std::string("<rollback xmlns=\"") + kCommitsNs + "\"><id>" + std::to_string(rollbackId) +
                "</id>" +
                (rollbackComment.empty() ? "" : "<comment>" + xmlText(rollbackComment) + "</comment>") +
                "</rollback>";
        } else if (req.command == "compare") {
            req.command = "rpc";
            req.payload = std::string("<compare xmlns=\"") + kCommitsNs + "\"><from>" +
                          std::to_string(compareFrom) + "</from>" +
                          (compareTo ? "<to>" + std::to_string(*compareTo) + "</to>" : "") + "</compare>";
        }
        if (!payloadFile.empty()) {
            req.payload = readPayload(payloadFile);
        } else if (!filterSubtree.empty()) {
            req.payload = readPayload(filterSubtree);
        } else if (!filterXpath.empty()) {
            req.payload = filterXpath;
            req.filterIsXpath = true;
        }
        opts.connect.port = static_cast<uint16_t>(port);
        if (user.empty()) {
            const char* envUser = std::getenv("USER");
            user = envUser ? envUser : "root";
        }
        opts.connect.user = user;
        if (!passwordFile.empty()) {
            std::string line = readPayload(passwordFile);
            line = line.substr(0, line.find('\n'));
            opts.connect.password = line;
        } else if (!password.empty()) {
            opts.connect.password = password;
        }
        if (!keyFile.empty()) {
            opts.connect.privateKey = keyFile;
        }
        opts.connect.schemaDir = schemaDir.empty() ? defaultSchemaDir() : std::filesystem::path(schemaDir);
        std::filesystem::create_directories(opts.connect.schemaDir);

        ClientLibrary library;
        if (verbose) {
            nc_verbosity(NC_VERB_VERBOSE);
        }
        if (opts.eachLine) {
            const auto lines = payloadLines(req.payload);
            if (lines.empty()) {
                throw std::runtime_error("--each-line: the payload has no request");
            }
            if (!repeatOpt->count()) {
                opts.repeat = static_cast<long>(lines.size());
            }
        }
        if (req.command == "subscribe") {
            return runSubscribe(opts, req, subscribe);
        }
        if (opts.sessions == 1 && opts.repeat == 1 && !opts.eachLine) {
            return runSingle(opts, req);
        }
        return runLoad(opts, req);
    } catch (const std::exception& e) {
        std::cerr << "ncstore-client: " << e.what() << "\n";
        return 2;
    }
}
