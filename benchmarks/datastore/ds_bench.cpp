// Datastore-level benchmarks, durable commits included, no network. Payloads come from the
// project's generator (clients/generator/ncstore-gen), made before the clock starts.
//   build/benchmarks/datastore/ncstore-ds-bench --benchmark_filter=...  (see benchmarks/README.md)
// Counters: items_per_second, bytes_written/changed_leaf (write amplification), p50/p99 latency.
#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"
#include "ncstore/log.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <malloc.h>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace ncstore;
using namespace ncstore::ds;
namespace fs = std::filesystem;

namespace {

Context makeCtx() {
    ly_ctx* raw = nullptr;
    const std::string dirs =
        std::string(NCSTORE_IETF_YANG_DIR) + ":" + NCSTORE_SOURCE_DIR + "/yang/openroadm";
    if (ly_ctx_new(dirs.c_str(), LY_CTX_NO_YANGLIBRARY, &raw) != LY_SUCCESS) {
        throw std::runtime_error("ly_ctx_new failed");
    }
    Context ctx{raw};
    const char* features[] = {"*", nullptr};
    for (const char* m : {"ietf-interfaces", "iana-if-type", "ietf-netconf", "ncstore-openroadm-inventory"}) {
        if (!ly_ctx_load_module(ctx.get(), m, nullptr, features)) {
            throw YangError(std::string("cannot load ") + m, ctx.get());
        }
    }
    return ctx;
}

const ly_ctx* ctx() {
    static Context c = makeCtx();
    return c.get();
}

/// Runs the generator and returns its payload without the <config> wrapper.
std::string generate(const std::string& args) {
    const std::string cmd =
        std::string("/usr/bin/python3 ") + NCSTORE_SOURCE_DIR + "/clients/generator/ncstore-gen " + args;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) {
        throw std::runtime_error("cannot run " + cmd);
    }
    std::string out;
    std::array<char, 65536> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) {
        out.append(buf.data(), n);
    }
    const auto open = out.find("<config");
    if (open != std::string::npos) {
        const auto start = out.find('>', open) + 1;
        const auto end = out.rfind("</config>");
        out = out.substr(start, end - start);
        // The nc: prefix was declared on <config>: declare it on the first element instead.
        const auto tagEnd = out.find_first_of(" >", 1);
        out.insert(tagEnd, " xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\"");
    }
    return out;
}

Tree parseEdit(const std::string& xml) {
    return parseData(ctx(), xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, 0);
}

struct TempStore {
    fs::path dir;
    std::unique_ptr<Store> store;
    explicit TempStore(Durability d = Durability::Full) {
        std::string templ = (fs::temp_directory_path() / "ncstore-bench-XXXXXX").string();
        dir = mkdtemp(templ.data());
        open(d);
    }
    void open(Durability d = Durability::Full) {
        StoreOptions o;
        o.file = dir / "bench.db";
        o.durability = d;
        store.reset();
        store = Store::open(ctx(), o);
    }
    ~TempStore() {
        store.reset();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

/// Bytes this process has caused to be written to storage (/proc/self/io write_bytes): the WAL,
/// checkpoints and fsyncs included, so it is the real write amplification.
double diskWriteBytes() {
    std::ifstream io("/proc/self/io");
    std::string key;
    double value = 0;
    while (io >> key >> value) {
        if (key == "write_bytes:") {
            return value;
        }
    }
    return 0;
}

void reportTiming(benchmark::State& state, const WriteTiming& t) {
    state.counters["apply_ms"] = static_cast<double>(t.applyUs) / 1000.0;
    state.counters["validate_ms"] = static_cast<double>(t.validateUs) / 1000.0;
    state.counters["serialize_ms"] = static_cast<double>(t.serializeUs) / 1000.0;
    state.counters["commit_wait_ms"] = static_cast<double>(t.commitWaitUs) / 1000.0;
}

void reportWrites(benchmark::State& state, const Stats& before, const Stats& after, double changedLeaves,
                  double diskBefore) {
    const double iters = static_cast<double>(state.iterations());
    state.counters["payload_bytes_per_changed_leaf"] =
        static_cast<double>(after.bytesWritten - before.bytesWritten) / (iters * changedLeaves);
    state.counters["disk_bytes_per_changed_leaf"] = (diskWriteBytes() - diskBefore) / (iters * changedLeaves);
    state.counters["records_per_op"] =
        static_cast<double>(after.recordsWritten - before.recordsWritten) / iters;
}

// B1 shape: N devices into an empty store, one edit.
void StoreDevices(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    Tree edit = parseEdit(generate("inventory --scenario B1 -n " + std::to_string(n)));
    for (auto _ : state) {
        state.PauseTiming();
        auto s = std::make_unique<TempStore>();
        state.ResumeTiming();
        reportTiming(state, s->store->edit({}, Datastore::Running, edit.get()));
        state.PauseTiming();
        s.reset();
        state.ResumeTiming();
    }
    state.counters["devices_per_second"] =
        benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["fragments_per_second"] =
        benchmark::Counter(86.0 * n, benchmark::Counter::kIsIterationInvariantRate);
}

// B3 shape: merge status + ne-state of N devices of 1000 (values alternate so each merge changes).
void MergeLeaves(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    TempStore s;
    Tree all = parseEdit(generate("inventory --scenario B1 -n 1000"));
    s.store->edit({}, Datastore::Running, all.get());
    std::array<Tree, 2> edits{parseEdit(generate("inventory --scenario B3 -n " + std::to_string(n) +
                                                 " --status success --ne-state inservice")),
                              parseEdit(generate("inventory --scenario B3 -n " + std::to_string(n) +
                                                 " --status fail --ne-state jeopardy"))};
    const Stats before = s.store->stats();
    const double disk = diskWriteBytes();
    std::size_t i = 0;
    for (auto _ : state) {
        reportTiming(state, s.store->edit({}, Datastore::Running, edits[i++ % 2].get()));
    }
    reportWrites(state, before, s.store->stats(), 2.0 * n, disk);
}

// B4c shape: delete N devices of 300 (re-added outside the clock).
void DeleteDevices(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    TempStore s;
    Tree all = parseEdit(generate("inventory --scenario B1 -n 300"));
    Tree del = parseEdit(generate("inventory --scenario B4c -n " + std::to_string(n)));
    for (auto _ : state) {
        state.PauseTiming();
        s.store->edit({}, Datastore::Running, all.get());
        state.ResumeTiming();
        reportTiming(state, s.store->edit({}, Datastore::Running, del.get()));
    }
}

std::string interfaceXml(const std::string& name) {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\"><interface><name>" +
           name +
           "</name><type>ianaift:ethernetCsmacd</type><enabled>true</enabled></interface></interfaces>";
}

void preloadInterfaces(Store& store, int count) {
    std::string xml = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                      "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">";
    for (int i = 0; i < count; ++i) {
        xml += "<interface><name>pre" + std::to_string(i) +
               "</name><type>ianaift:ethernetCsmacd</type><enabled>true</enabled></interface>";
    }
    Tree e = parseEdit(xml + "</interfaces>");
    store.edit({}, Datastore::Running, e.get());
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

/// Receives the change sets and drops them: what one registered listener costs.
class CountingListener : public ChangeListener {
public:
    void changed(const ChangeSet& changes) override { received += changes.changes.size(); }
    void lost(std::uint64_t) override {}
    std::atomic<std::uint64_t> received{0};
};

// B8 shape at datastore level: P committers x K single-entry commits into a store of 10,000;
// `listened`: with one change listener registered.
void concurrentCommits(benchmark::State& state, bool listened) {
    const int sessions = static_cast<int>(state.range(0));
    const int each = static_cast<int>(state.range(1));
    const auto durability = static_cast<Durability>(state.range(2));
    std::vector<double> latencies;
    int round = 0;
    for (auto _ : state) {
        state.PauseTiming();
        auto s = std::make_unique<TempStore>(durability);
        preloadInterfaces(*s->store, 10000);
        CountingListener listener;
        if (listened) {
            s->store->addListener(listener);
        }
        // Payloads parsed before the clock: a committer only commits.
        std::vector<std::vector<Tree>> edits(static_cast<std::size_t>(sessions));
        for (int t = 0; t < sessions; ++t) {
            for (int i = 0; i < each; ++i) {
                edits[static_cast<std::size_t>(t)].push_back(parseEdit(interfaceXml(
                    "r" + std::to_string(round) + "-" + std::to_string(t) + "-" + std::to_string(i))));
            }
        }
        std::vector<std::vector<double>> lat(static_cast<std::size_t>(sessions));
        state.ResumeTiming();
        std::vector<std::thread> threads;
        for (int t = 0; t < sessions; ++t) {
            threads.emplace_back([&, t] {
                for (const auto& e : edits[static_cast<std::size_t>(t)]) {
                    auto t0 = std::chrono::steady_clock::now();
                    s->store->edit({}, Datastore::Running, e.get());
                    lat[static_cast<std::size_t>(t)].push_back(
                        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                            .count());
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
        state.PauseTiming();
        for (auto& l : lat) {
            latencies.insert(latencies.end(), l.begin(), l.end());
        }
        const Stats st = s->store->stats();
        state.counters["commits_per_transaction"] =
            static_cast<double>(st.writes) / static_cast<double>(std::max<std::uint64_t>(1, st.transactions));
        if (listened) {
            s->store->removeListener(listener);
        }
        s.reset();
        ++round;
        state.ResumeTiming();
    }
    state.counters["commits_per_second"] = benchmark::Counter(static_cast<double>(sessions) * each,
                                                              benchmark::Counter::kIsIterationInvariantRate);
    state.counters["p50_us"] = percentile(latencies, 0.5);
    state.counters["p99_us"] = percentile(latencies, 0.99);
}

void ConcurrentCommits(benchmark::State& state) {
    concurrentCommits(state, false);
}
void ConcurrentCommitsListened(benchmark::State& state) {
    concurrentCommits(state, true);
}

// One single-entry commit into a store of N entries: latency should not grow with N.
void SingleCommit(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    TempStore s;
    preloadInterfaces(*s.store, n);
    const Stats before = s.store->stats();
    const double disk = diskWriteBytes();
    int i = 0;
    for (auto _ : state) {
        state.PauseTiming();
        Tree e = parseEdit(interfaceXml("one" + std::to_string(i++)));
        state.ResumeTiming();
        s.store->edit({}, Datastore::Running, e.get());
    }
    // An entry has 3 leaves.
    reportWrites(state, before, s.store->stats(), 3.0, disk);
}

double rssMb() {
    std::ifstream statm("/proc/self/statm");
    double size = 0;
    double resident = 0;
    statm >> size >> resident;
    return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

// B10 shape: open an existing store of N devices (load + check) and read one device.
void Startup(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    TempStore s;
    {
        Tree all = parseEdit(generate("inventory --scenario B1 -n " + std::to_string(n)));
        s.store->edit({}, Datastore::Running, all.get());
    }
    s.store.reset();
    malloc_trim(0);
    const double rssBefore = rssMb();
    for (auto _ : state) {
        s.open();
        s.store->read(Datastore::Running, [](const lyd_node* t) { benchmark::DoNotOptimize(t); });
    }
    // What the open store holds (the payload used to fill it is gone by now).
    state.counters["store_rss_mb"] = rssMb() - rssBefore;
    std::error_code ec;
    state.counters["file_mb"] = static_cast<double>(fs::file_size(s.dir / "bench.db", ec)) / 1048576.0;
}

BENCHMARK(StoreDevices)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(MergeLeaves)->Arg(1000)->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK(DeleteDevices)->Arg(300)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(ConcurrentCommits)
    ->Args({50, 1000, static_cast<int>(Durability::Full)})
    ->Args({50, 1000, static_cast<int>(Durability::Normal)})
    ->Args({5, 2000, static_cast<int>(Durability::Full)})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(ConcurrentCommitsListened)
    ->Args({50, 1000, static_cast<int>(Durability::Full)})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(SingleCommit)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond)->Iterations(200);
BENCHMARK(Startup)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

int main(int argc, char** argv) {
    log::setup("warning");
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
