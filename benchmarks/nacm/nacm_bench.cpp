// NACM rule engine micro-benchmarks (no server, no network): what a read or write check costs per
// data node, for a user with full access and for a limited one, with 6, 60 and 600 rules.
//   build/benchmarks/nacm/ncstore-nacm-bench [--benchmark_filter=...]
// Data: 3000 inventory devices (ncstore-openroadm-inventory, ~200 nodes each) and 16384
// ietf-interfaces entries, made by clients/generator/ncstore-gen before the clock starts.
// Rule set (5 groups): admin permit-all; operators read everything; limited (also an operator):
// deep read denies, permits on devices by key (half the fillers; 20 of the devices exist, so the
// limited user sees 20 devices with 60 and with 600 rules, 1 with 6), everything else on devices
// denied; auditors: the inventory module denied; guests. The other fillers are rules the limited
// user has about other nodes and operations, and rules of the guests.
// Counter per_node: time per data node of the tree (the walk may skip subtrees: that is the point).
#include "nacm.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace ncstore;
using namespace ncstore::nacm;

namespace {

/// The bundled inventory model, and from the IETF directory what the server loads beside it.
Context makeCtx() {
    Context ctx = makeContext(
        {{std::filesystem::path(NCSTORE_SOURCE_DIR) / "yang/openroadm"}, {NCSTORE_IETF_YANG_DIR}});
    const char* features[] = {"*", nullptr};
    for (const char* m :
         {"ietf-netconf-acm", "ietf-netconf", "ietf-netconf-monitoring", "ietf-interfaces", "iana-if-type"}) {
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

/// A data document from the project's generator.
Tree generated(const std::string& args) {
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("ncstore-nacm-bench-" + std::to_string(getpid()) + ".xml");
    const std::string cmd = std::string("/usr/bin/python3 ") + NCSTORE_SOURCE_DIR +
                            "/clients/generator/ncstore-gen " + args + " -o " + file.string();
    if (std::system(cmd.c_str()) != 0) {
        throw std::runtime_error("generator failed: " + cmd);
    }
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(file);
    return parseData(ctx(), text.str(), LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE,
                     LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
}

struct Data {
    Tree tree;
    std::vector<const lyd_node*> nodes; // document order
};

Data load(const std::string& args) {
    Data d{generated(args), {}};
    for (const lyd_node* top = d.tree.get(); top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            d.nodes.push_back(n);
            LYD_TREE_DFS_END(top, n);
        }
    }
    return d;
}

const Data& inventory() {
    static const Data d = load("inventory --scenario doc -n 3000");
    return d;
}

const Data& interfaces() {
    static const Data d = load("interfaces --scenario doc -n 16384");
    return d;
}

const Data& dataset(int64_t which) {
    return which == 0 ? inventory() : interfaces();
}

constexpr const char* kOri = "xmlns:o=\"urn:ncstore:yang:openroadm-inventory\"";
constexpr const char* kIf = "xmlns:if=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\"";

std::string rule(const std::string& name, const std::string& match, const std::string& ops, bool permit) {
    return "<rule><name>" + name + "</name>" + match + "<access-operations>" + ops +
           "</access-operations><action>" + (permit ? "permit" : "deny") + "</action></rule>";
}

std::string devicePath(int i) {
    return std::string("<path ") + kOri + ">/o:openroadm-devices/o:openroadm-device[o:device-id='C201-7-1A-" +
           std::to_string(i) + "']</path>";
}

/// The benchmark rule set with exactly `total` rules (>= 6).
std::string ruleSet(int total) {
    const int fillers = total - 6;
    // Device permits for the limited group: the first 20 devices of the inventory, the others name
    // devices that are not there, so that the reply is the same with 60 and 600 rules.
    const int devices = fillers / 2;
    const int limitedOther = (fillers - devices) / 2; // the limited user's rules about other things
    const int others = fillers - devices - limitedOther;
    const char* rpcs[] = {"get",  "get-config", "edit-config", "copy-config",
                          "lock", "unlock",     "validate",    "commit"};

    std::string s = "<groups>";
    for (const char* g : {"admin", "operators", "limited", "auditors", "guests"}) {
        s += std::string("<group><name>") + g + "</name><user-name>" + g + "-user</user-name>";
        if (std::string(g) == "operators") {
            s += "<user-name>limited-user</user-name>"; // the limited user is an operator too
        }
        s += "</group>";
    }
    s += "</groups>";

    s += "<rule-list><name>admin-acl</name><group>admin</group>" + rule("permit-all", "", "*", true) +
         "</rule-list>";

    s += "<rule-list><name>limited-acl</name><group>limited</group>";
    s += rule("no-commission-date",
              std::string("<path ") + kOri +
                  ">/o:openroadm-devices/o:openroadm-device/o:commission-date-time</path>",
              "read", false);
    s += rule("no-descriptions",
              std::string("<path ") + kIf + ">/if:interfaces/if:interface/if:description</path>", "read",
              false);
    for (int i = 1; i <= devices + 1; ++i) {
        s += rule("device-" + std::to_string(i), devicePath(i <= 20 ? i : 100000 + i), "*", true);
    }
    for (int i = 0; i < limitedOther; ++i) {
        switch (i % 3) {
        case 0:
            s += rule("if-desc-" + std::to_string(i),
                      std::string("<path ") + kIf + ">/if:interfaces/if:interface[if:name='eth" +
                          std::to_string(i) + "']/if:description</path>",
                      "update", true);
            break;
        case 1:
            s += rule("rpc-" + std::to_string(i),
                      "<module-name>ietf-netconf</module-name><rpc-name>" + std::string(rpcs[i % 8]) +
                          "</rpc-name>",
                      "exec", true);
            break;
        default:
            s += rule("ncm-" + std::to_string(i), "<module-name>ietf-netconf-monitoring</module-name>",
                      "read", false);
        }
    }
    s += rule("other-devices",
              std::string("<path ") + kOri + ">/o:openroadm-devices/o:openroadm-device</path>", "*", false);
    s += "</rule-list>";

    s += "<rule-list><name>operators-acl</name><group>operators</group>" +
         rule("read-all", "<path>/</path>", "read", true) + "</rule-list>";
    s += "<rule-list><name>auditors-acl</name><group>auditors</group>" +
         rule("no-inventory", "<module-name>ncstore-openroadm-inventory</module-name>", "*", false) +
         "</rule-list>";
    s += "<rule-list><name>guests-acl</name><group>guests</group>";
    for (int i = 0; i < others; ++i) {
        s += rule("g-" + std::to_string(i),
                  std::string("<path ") + kIf + ">/if:interfaces/if:interface[if:name='eth" +
                      std::to_string(i) + "']</path>",
                  "read", i % 2 == 0);
    }
    s += "</rule-list>";
    return s;
}

std::shared_ptr<const Policy> policyWith(int rules) {
    static std::map<int, std::shared_ptr<const Policy>> cache;
    auto& p = cache[rules];
    if (!p) {
        Tree config = parseData(
            ctx(),
            "<nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\">" + ruleSet(rules) + "</nacm>",
            LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
        p = Policy::compile(config.get(), ctx());
    }
    return p;
}

const char* userName(int64_t which) {
    return which == 0 ? "admin-user" : "limited-user";
}

void label(benchmark::State& state) {
    state.SetLabel(std::string(userName(state.range(0))) +
                   (state.range(1) == 0 ? " inventory" : " interfaces") +
                   " rules=" + std::to_string(state.range(2)));
}

void perNode(benchmark::State& state, size_t nodes) {
    state.counters["nodes"] = static_cast<double>(nodes);
    state.counters["per_node"] =
        benchmark::Counter(static_cast<double>(nodes),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// unreadable(): which subtrees a read reply leaves out (what the server asks when the user
/// does not permitsAllReads()).
void BM_ReadFilter(benchmark::State& state) {
    const Data& d = dataset(state.range(1));
    auto access = policyWith(static_cast<int>(state.range(2)))->forUser(userName(state.range(0)));
    std::vector<const lyd_node*> out;
    access->unreadable(d.tree.get(), out); // warm the decision cache
    for (auto _ : state) {
        out.clear();
        access->unreadable(d.tree.get(), out);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["dropped_subtrees"] = static_cast<double>(out.size());
    state.counters["permitsAllReads"] = access->permitsAllReads();
    perNode(state, d.nodes.size());
    label(state);
}

/// allowed(node, read) asked for every node: the cost without subtree skipping.
void BM_CheckEveryNode(benchmark::State& state) {
    const Data& d = dataset(state.range(1));
    auto access = policyWith(static_cast<int>(state.range(2)))->forUser(userName(state.range(0)));
    size_t permitted = 0;
    for (auto _ : state) {
        permitted = 0;
        for (const lyd_node* n : d.nodes) {
            permitted += access->allowed(n, Op::Read);
        }
        benchmark::DoNotOptimize(permitted);
    }
    state.counters["permitted"] = static_cast<double>(permitted);
    perNode(state, d.nodes.size());
    label(state);
}

/// readableCopy(): the reply tree for a limited user, against printing and duplicating the whole
/// tree (what any read reply, and any copy, cost anyway).
void BM_ReadableCopy(benchmark::State& state) {
    const Data& d = dataset(state.range(1));
    auto access = policyWith(static_cast<int>(state.range(2)))->forUser(userName(state.range(0)));
    for (auto _ : state) {
        Tree copy = access->readableCopy(d.tree.get());
        benchmark::DoNotOptimize(copy.get());
    }
    perNode(state, d.nodes.size());
    label(state);
}

void BM_PrintXml(benchmark::State& state) {
    const Data& d = dataset(state.range(0));
    for (auto _ : state) {
        std::string xml = print(d.tree.get(), LYD_XML, LYD_PRINT_SHRINK);
        benchmark::DoNotOptimize(xml.data());
    }
    perNode(state, d.nodes.size());
    state.SetLabel(state.range(0) == 0 ? "inventory" : "interfaces");
}

/// libyang's own recursive duplicate of the whole tree: what any copy of it costs.
void BM_DupWhole(benchmark::State& state) {
    const Data& d = dataset(state.range(0));
    for (auto _ : state) {
        lyd_node* dup = nullptr;
        if (lyd_dup_siblings(d.tree.get(), nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &dup) !=
            LY_SUCCESS) {
            state.SkipWithError("lyd_dup_siblings failed");
            break;
        }
        Tree copy(dup);
    }
    perNode(state, d.nodes.size());
    state.SetLabel(state.range(0) == 0 ? "inventory" : "interfaces");
}

/// firstDenied(device, create) for every device: the write check of creating them all.
void BM_WriteCheckDevices(benchmark::State& state) {
    const Data& d = inventory();
    auto access = policyWith(static_cast<int>(state.range(2)))->forUser(userName(state.range(0)));
    size_t denied = 0;
    for (auto _ : state) {
        denied = 0;
        for (const lyd_node* dev = lyd_child(d.tree.get()); dev; dev = dev->next) {
            denied += access->firstDenied(dev, Op::Create) != nullptr;
        }
        benchmark::DoNotOptimize(denied);
    }
    state.counters["denied_devices"] = static_cast<double>(denied);
    perNode(state, d.nodes.size());
    label(state);
}

/// Policy::compile (schema index included) and the first forUser.
void BM_Compile(benchmark::State& state) {
    const int rules = static_cast<int>(state.range(0));
    Tree config = parseData(
        ctx(), "<nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\">" + ruleSet(rules) + "</nacm>",
        LYD_XML, LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
    for (auto _ : state) {
        auto p = Policy::compile(config.get(), ctx());
        benchmark::DoNotOptimize(p->forUser("limited-user").get());
    }
    state.SetLabel("rules=" + std::to_string(rules));
}

void userTreeRules(benchmark::internal::Benchmark* b) {
    for (int64_t user : {0, 1}) {
        for (int64_t tree : {0, 1}) {
            for (int64_t rules : {6, 60, 600}) {
                b->Args({user, tree, rules});
            }
        }
    }
}

} // namespace

BENCHMARK(BM_ReadFilter)->Apply(userTreeRules)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckEveryNode)->Apply(userTreeRules)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadableCopy)
    ->Args({1, 0, 60})
    ->Args({1, 1, 60})
    ->Args({1, 0, 600})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrintXml)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DupWhole)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteCheckDevices)
    ->Args({0, 0, 60})
    ->Args({1, 0, 6})
    ->Args({1, 0, 60})
    ->Args({1, 0, 600})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Compile)->Arg(6)->Arg(60)->Arg(600)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
