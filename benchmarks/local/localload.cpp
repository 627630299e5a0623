// ncstore-localload: the load driver of benchmarks/local (issue 37): --clients processes, each with
// its own connection to a store on this machine, each sending --transactions transactions one
// after the other (each waits for its reply), one inserted row per transaction (rowFor: unique
// strings, a bool, an integer). The clients connect and do their --warmup transactions first, then
// wait at a barrier and start together; every transaction is timed with steady_clock. Writes JSON
// (--json): transactions, errors with the first message, wall seconds from the barrier's release
// to the last reply, transactions/s, latency percentiles, the clients' own CPU and, with
// --server-pid, the server's CPU over the same interval.
//
//   ncstore-localload --backend ovsdb --socket PATH --clients 50 --transactions 1000 [--durable]
//                     [--warmup N] [--server-pid PID] [--opt KEY=VALUE]... --json OUT
//
// A benchmark tool, not installed. Exit status: 0, 2 when any transaction failed, 1 on bad usage.
#include "backend.hpp"

#include <CLI/CLI.hpp>

#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ncstore::bench {

Row rowFor(int client, int seq) {
    Row row;
    row.name = "c" + std::to_string(client) + "-s" + std::to_string(seq);
    row.description = "row " + std::to_string(seq) + " of client " + std::to_string(client);
    row.enabled = seq % 2 == 0;
    row.count = static_cast<std::int64_t>(client) * 1'000'000'000 + seq;
    return row;
}

namespace {

// The backends by --backend name. Adding one: its file (see backend.hpp) and one line here.
const std::map<std::string, BackendFactory, std::less<>> kBackends = {
    {"ovsdb", makeOvsdbBackend},
    {"ncstore", makeNcstoreBackend},
};

std::int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// User and system CPU seconds of `who` (RUSAGE_SELF, RUSAGE_CHILDREN).
struct Cpu {
    double user = 0, sys = 0;
    double total() const { return user + sys; }
};
Cpu cpuOf(int who) {
    rusage u{};
    getrusage(who, &u);
    auto s = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    return {s(u.ru_utime), s(u.ru_stime)};
}

/// What one client process reports to the parent, in memory shared across the fork.
struct ChildResult {
    std::int64_t endNs = 0;        // steady_clock of its last reply
    std::int64_t attempted = 0;    // timed transactions sent and answered
    std::int64_t errorReplies = 0; // of those, answered with an error
    std::int64_t warmupErrors = 0;
    double cpuUser = 0, cpuSys = 0; // its own CPU from the barrier's release to its last reply
    int ready = 0;                  // connected (and warmed up) before the barrier
    char firstError[768] = {};
};

void setError(ChildResult& r, const std::string& message) {
    if (r.firstError[0] == '\0') {
        std::snprintf(r.firstError, sizeof r.firstError, "%s", message.c_str());
    }
}

/// The server's on-CPU time: the sum over its threads of /proc/PID/task/*/schedstat's first field
/// (ns), and utime + stime of /proc/PID/stat (clock ticks, includes threads that exited).
struct ServerCpu {
    double schedstat = 0, ticks = 0;
    bool ok = false;
};

ServerCpu serverCpu(long pid) {
    ServerCpu cpu;
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') {
                continue;
            }
            std::ifstream f(dir + "/" + e->d_name + "/schedstat");
            unsigned long long ns = 0;
            if (f >> ns) {
                cpu.schedstat += static_cast<double>(ns) / 1e9;
            }
        }
        closedir(d);
        cpu.ok = true;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto paren = text.rfind(')');
    if (paren != std::string::npos) {
        // After ") ": state(3) ppid ... utime(14) stime(15): fields 11 and 12 counting from state as 0.
        std::vector<std::string> fields;
        std::size_t p = paren + 2;
        while (p < text.size() && fields.size() < 13) {
            std::size_t q = text.find(' ', p);
            fields.push_back(text.substr(p, q - p));
            p = q == std::string::npos ? text.size() : q + 1;
        }
        if (fields.size() == 13) {
            double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
            cpu.ticks = (std::stod(fields[11]) + std::stod(fields[12])) / tick;
        }
    }
    return cpu;
}

std::string jsonString(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

/// Nearest-rank percentile of sorted `v`, in ms.
double percentileMs(const std::vector<std::int64_t>& v, double p) {
    if (v.empty()) {
        return 0;
    }
    auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, v.size());
    return static_cast<double>(v[rank - 1]) / 1e6;
}

struct Options {
    std::string backend, json = "-";
    BackendConfig config;
    int clients = 1, transactions = 1000, warmup = 0;
    long serverPid = 0;
    int timeoutMs = 30000;
    std::vector<std::string> opts;
};

/// One client process: never returns.
[[noreturn]] void runClient(const Options& o, BackendFactory factory, int client, ChildResult& r,
                            std::int64_t* latencies, int readyFd, int releaseFd) {
    std::unique_ptr<Backend> backend;
    std::string error;
    bool usable = false;
    try {
        backend = factory(o.config);
        backend->connect();
        usable = true;
        for (int i = 0; i < o.warmup; ++i) {
            if (!backend->transact(client, i, error)) {
                ++r.warmupErrors;
                setError(r, "warmup: " + error);
            }
        }
        r.ready = 1;
    } catch (const std::exception& e) {
        setError(r, std::string(usable ? "warmup: " : "connect: ") + e.what());
        usable = false;
    }
    char byte = 'r';
    (void)!::write(readyFd, &byte, 1);
    ::close(readyFd);
    while (::read(releaseFd, &byte, 1) < 0 && errno == EINTR) {
    } // EOF: released
    Cpu cpu0 = cpuOf(RUSAGE_SELF);
    std::int64_t end = nowNs();
    for (int s = 0; s < o.transactions && usable; ++s) {
        std::int64_t t0 = nowNs();
        bool ok = false;
        try {
            ok = backend->transact(client, o.warmup + s, error);
        } catch (const std::exception& e) {
            setError(r, "transaction " + std::to_string(s) + ": " + e.what());
            usable = false;
            break;
        }
        end = nowNs();
        latencies[s] = end - t0;
        ++r.attempted;
        if (!ok) {
            ++r.errorReplies;
            setError(r, "transaction " + std::to_string(s) + ": " + error);
        }
    }
    r.endNs = end;
    Cpu cpu1 = cpuOf(RUSAGE_SELF);
    r.cpuUser = cpu1.user - cpu0.user;
    r.cpuSys = cpu1.sys - cpu0.sys;
    backend.reset();
    std::fflush(nullptr);
    _exit(0);
}

int run(const Options& o, BackendFactory factory) {
    const auto n = static_cast<std::size_t>(o.clients), t = static_cast<std::size_t>(o.transactions);
    std::size_t bytes = n * sizeof(ChildResult) + n * t * sizeof(std::int64_t);
    void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto* results = static_cast<ChildResult*>(shared);
    for (std::size_t c = 0; c < n; ++c) {
        new (&results[c]) ChildResult();
    }
    auto* latencies = reinterpret_cast<std::int64_t*>(results + n);
    std::fill(latencies, latencies + n * t, -1);

    int ready[2], release[2];
    if (pipe(ready) != 0 || pipe(release) != 0) {
        std::perror("pipe");
        return 1;
    }
    std::fflush(nullptr);
    std::vector<pid_t> pids;
    for (int c = 0; c < o.clients; ++c) {
        pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            for (pid_t p : pids) {
                kill(p, SIGKILL);
                waitpid(p, nullptr, 0);
            }
            return 1;
        }
        if (pid == 0) {
            ::close(ready[0]);
            ::close(release[1]);
            runClient(o, factory, c, results[c], latencies + static_cast<std::size_t>(c) * t, ready[1],
                      release[0]);
        }
        pids.push_back(pid);
    }
    ::close(ready[1]);
    ::close(release[0]);
    // The barrier: every client has connected and warmed up (or failed: EOF when all are gone).
    for (int got = 0; got < o.clients;) {
        char buf[64];
        ssize_t k = ::read(ready[0], buf, sizeof buf);
        if (k > 0) {
            got += static_cast<int>(k);
        } else if (k == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(ready[0]);
    ServerCpu server0 = o.serverPid ? serverCpu(o.serverPid) : ServerCpu{};
    std::int64_t start = nowNs();
    ::close(release[1]); // releases every client at once
    std::string abnormal;
    for (std::size_t c = 0; c < pids.size(); ++c) {
        int status = 0;
        while (waitpid(pids[c], &status, 0) < 0 && errno == EINTR) {
        }
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && abnormal.empty()) {
            abnormal =
                "client " + std::to_string(c) + " exited abnormally (status " + std::to_string(status) + ")";
        }
    }
    ServerCpu server1 = o.serverPid ? serverCpu(o.serverPid) : ServerCpu{};
    double childrenCpu = cpuOf(RUSAGE_CHILDREN).total();

    std::int64_t end = start, attempted = 0, errorReplies = 0, warmupErrors = 0;
    double clientCpu = 0, clientSys = 0;
    int notReady = 0;
    std::string firstError = abnormal;
    std::vector<std::int64_t> all;
    all.reserve(n * t);
    for (std::size_t c = 0; c < n; ++c) {
        const ChildResult& r = results[c];
        end = std::max(end, r.endNs);
        attempted += r.attempted;
        errorReplies += r.errorReplies;
        warmupErrors += r.warmupErrors;
        clientCpu += r.cpuUser + r.cpuSys;
        clientSys += r.cpuSys;
        notReady += r.ready ? 0 : 1;
        if (firstError.empty() && r.firstError[0] != '\0') {
            firstError = "client " + std::to_string(c) + ": " + r.firstError;
        }
        for (std::size_t s = 0; s < t; ++s) {
            if (latencies[c * t + s] >= 0) {
                all.push_back(latencies[c * t + s]);
            }
        }
    }
    std::sort(all.begin(), all.end());
    std::int64_t ok = attempted - errorReplies;
    std::int64_t notSent = static_cast<std::int64_t>(n * t) - attempted; // a client's connection failed
    double wall = static_cast<double>(end - start) / 1e9;
    double mean = 0;
    for (auto v : all) {
        mean += static_cast<double>(v);
    }
    mean = all.empty() ? 0 : mean / static_cast<double>(all.size()) / 1e6;
    // Every error counts: error replies (timed or warmup), transactions never answered, a client
    // that did not exit normally.
    std::int64_t errors = errorReplies + warmupErrors + notSent + (abnormal.empty() ? 0 : 1);

    std::string js = "{\n";
    auto field = [&](const char* key, const std::string& value, bool last = false) {
        js += "  \"";
        js += key;
        js += "\": " + value + (last ? "\n" : ",\n");
    };
    auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
    };
    field("backend", jsonString(o.backend));
    field("socket", jsonString(o.config.socket));
    field("durable", o.config.durable ? "true" : "false");
    field("clients", std::to_string(o.clients));
    field("transactions_per_client", std::to_string(o.transactions));
    field("warmup_per_client", std::to_string(o.warmup));
    field("transactions", std::to_string(attempted));
    field("ok", std::to_string(ok));
    field("errors", std::to_string(errors));
    field("error_replies", std::to_string(errorReplies));
    field("warmup_errors", std::to_string(warmupErrors));
    field("not_sent", std::to_string(notSent));
    field("clients_not_ready", std::to_string(notReady));
    field("first_error", firstError.empty() ? "null" : jsonString(firstError));
    field("wall_s", num(wall));
    field("tx_per_s", num(wall > 0 ? static_cast<double>(ok) / wall : 0));
    field("latency_ms", "{\"p50\": " + num(percentileMs(all, 50)) + ", \"p90\": " +
                            num(percentileMs(all, 90)) + ", \"p99\": " + num(percentileMs(all, 99)) +
                            ", \"max\": " + num(all.empty() ? 0 : static_cast<double>(all.back()) / 1e6) +
                            ", \"mean\": " + num(mean) + "}");
    field("client_cpu_s", num(clientCpu));
    field("client_cpu_sys_s", num(clientSys));
    field("client_cpu_total_s", num(childrenCpu));
    field("server_pid", std::to_string(o.serverPid));
    if (o.serverPid && server0.ok && server1.ok) {
        double sched = server1.schedstat - server0.schedstat, ticks = server1.ticks - server0.ticks;
        double cpu = std::max(sched, ticks);
        field("server_cpu_schedstat_s", num(sched));
        field("server_cpu_ticks_s", num(ticks));
        field("server_cpu_s", num(cpu));
        field("server_cpu_us_per_tx", num(attempted ? cpu * 1e6 / static_cast<double>(attempted) : 0));
    } else {
        field("server_cpu_s", "null");
    }
    field("client_cpu_us_per_tx", num(attempted ? clientCpu * 1e6 / static_cast<double>(attempted) : 0),
          true);
    js += "}\n";

    if (o.json == "-") {
        std::fputs(js.c_str(), stdout);
    } else {
        std::ofstream out(o.json);
        out << js;
        if (!out) {
            std::fprintf(stderr, "ncstore-localload: cannot write %s\n", o.json.c_str());
            return 1;
        }
    }
    std::fprintf(stderr,
                 "ncstore-localload: %s%s %dx%d: %" PRId64 " ok, %" PRId64
                 " errors in %.3f s = %.0f tx/s, p50 %.3f p99 %.3f ms, client CPU %.2f s%s%s\n",
                 o.backend.c_str(), o.config.durable ? " durable" : "", o.clients, o.transactions, ok, errors,
                 wall, wall > 0 ? static_cast<double>(ok) / wall : 0, percentileMs(all, 50),
                 percentileMs(all, 99), clientCpu, errors ? "; first error: " : "", firstError.c_str());
    munmap(shared, bytes);
    return errors ? 2 : 0;
}

} // namespace
} // namespace ncstore::bench

int main(int argc, char** argv) {
    using namespace ncstore::bench;
    Options o;
    std::string names;
    for (const auto& [name, factory] : kBackends) {
        names += (names.empty() ? "" : ", ") + name;
    }
    CLI::App app{"ncstore-localload: concurrent single-row transactions against a local store"};
    app.add_option("--backend", o.backend, "the store's client: " + names)->required();
    app.add_option("--socket", o.config.socket, "the server's unix socket")->required();
    app.add_option("--clients", o.clients, "client processes")->check(CLI::Range(1, 10000));
    app.add_option("--transactions", o.transactions, "timed transactions per client")
        ->check(CLI::Range(1, 100000000));
    app.add_flag("--durable", o.config.durable, "durable transactions (OVSDB: commit durable:true)");
    app.add_option("--warmup", o.warmup, "untimed transactions per client before the barrier")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--server-pid", o.serverPid, "measure this process's CPU over the timed interval");
    app.add_option("--timeout-ms", o.timeoutMs, "per transaction")->check(CLI::PositiveNumber);
    app.add_option("--opt", o.opts, "KEY=VALUE for the backend (repeatable)");
    app.add_option("--json", o.json, "where the results go ('-': stdout)");
    CLI11_PARSE(app, argc, argv);

    auto it = kBackends.find(o.backend);
    if (it == kBackends.end()) {
        std::fprintf(stderr, "ncstore-localload: unknown backend '%s' (built: %s)\n", o.backend.c_str(),
                     names.c_str());
        return 1;
    }
    for (const auto& kv : o.opts) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) {
            std::fprintf(stderr, "ncstore-localload: --opt %s: KEY=VALUE expected\n", kv.c_str());
            return 1;
        }
        o.config.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    o.config.timeout = std::chrono::milliseconds(o.timeoutMs);
    try {
        it->second(o.config); // rejects bad --opt before forking
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ncstore-localload: %s\n", e.what());
        return 1;
    }
    return run(o, it->second);
}
