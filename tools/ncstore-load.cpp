// ncstore-load: loads a device's data dump (a <get> of a real device: configuration and state, XML
// or JSON) into a running ncstored: the configuration into running (each top-level node of the
// dump replaced, one commit), the state into the operational datastore (persistent pushed data:
// served until a later load or push replaces it, across restarts).
//
//   ncstore-load [--lenient] [--report FILE] [--set PATH=VALUE]... [--check] DUMP
//
// Strict (the default): a dump the models do not accept as it is loads nothing; the report lists
// every node that would have to go. --lenient: what is valid loads, the rest is dropped node by
// node (tools/load/dump.hpp says what is kept), with the report on stdout and, with --report, as
// JSON in a file. --check: parse, clean and report only (no server needed). The models are given
// as to ncstored (--yang-dir, --yang-search-dir, --no-default-models) and must be the server's.
// It talks to the server as an application (the unix socket of the application API), so NACM
// applies to the user its uid maps to.
#include "load/dump.hpp"
#include "ncstore/app.hpp"
#include "ncstore/log.hpp"
#include "ncstore/models.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;
using namespace ncstore;

namespace {

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string jsonString(std::string_view text) {
    std::string out = "\"";
    for (const unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

struct Outcome {
    bool loaded = false;
    std::uint64_t commit = 0;
    std::string error;
};

std::string reportJson(const std::string& dump, bool lenient, const load::Result& r, const Outcome& o) {
    std::string j =
        "{\n  \"dump\": " + jsonString(dump) + ",\n  \"mode\": \"" + (lenient ? "lenient" : "strict") +
        "\",\n  \"nodes_read\": " + std::to_string(r.nodesRead) +
        ",\n  \"config_nodes\": " + std::to_string(r.configNodes) +
        ",\n  \"state_nodes\": " + std::to_string(r.stateNodes) +
        ",\n  \"loaded\": " + (o.loaded ? "true" : "false") + ",\n  \"commit\": " + std::to_string(o.commit) +
        ",\n  \"error\": " + jsonString(o.error) + ",\n  \"counts\": {";
    bool first = true;
    for (const auto& [reason, n] : r.countsByReason()) {
        j += (first ? "\n    " : ",\n    ") + jsonString(reason) + ": " + std::to_string(n);
        first = false;
    }
    j += "\n  },\n  \"dropped\": [";
    first = true;
    for (const load::Dropped& d : r.dropped) {
        j += (first ? "\n    {" : ",\n    {") + std::string("\"path\": ") + jsonString(d.path) +
             ", \"reason\": " + jsonString(d.reason) + ", \"nodes\": " + std::to_string(d.nodes) +
             ", \"message\": " + jsonString(d.message) + "}";
        first = false;
    }
    return j + "\n  ]\n}\n";
}

std::set<std::string> dataModules(const ModelOptions& models) {
    std::set<std::string> out;
    std::vector<std::filesystem::path> dirs = models.yangDirs;
    if (models.defaultModels) {
        out.insert({"ietf-interfaces", "iana-if-type"});
        if (!models.bundledDir.empty()) {
            dirs.push_back(models.bundledDir);
        }
    }
    for (const auto& dir : dirs) {
        for (std::string& m : modulesInDir(dir)) {
            out.insert(std::move(m));
        }
    }
    return out;
}

// The configuration as edit-config content that replaces each of its top-level nodes.
std::string replacingConfig(const ly_ctx* ctx, lyd_node* config) {
    for (lyd_node* top = config; top; top = top->next) {
        if (lyd_new_meta(ctx, top, nullptr, "ietf-netconf:operation", "replace", 0, nullptr) != LY_SUCCESS) {
            throw YangError("marking " + pathOf(top) + " for replace failed", ctx);
        }
    }
    return print(config, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK);
}

int run(int argc, char** argv) {
    po::options_description opts("Options");
    opts.add_options()("help,h", "print this help and exit")(
        "data-dir", po::value<std::string>()->default_value("ncstore-data"),
        "the server's data directory: its app.sock is used")(
        "socket", po::value<std::string>(), "the server's application socket (instead of --data-dir's)")(
        "lenient", po::bool_switch(), "load what is valid, drop the rest node by node (default: strict)")(
        "check", po::bool_switch(), "parse, clean and report only: send nothing")(
        "report", po::value<std::string>(), "also write the report as JSON to FILE")(
        "set", po::value<std::vector<std::string>>()->composing(),
        "PATH=VALUE: set this leaf before loading, e.g. "
        "/org-openroadm-device:org-openroadm-device/info/node-id=ROADM-7 (repeatable)")(
        "format", po::value<std::string>(), "xml | json (default: from the file name, else xml)")(
        "yang-dir", po::value<std::vector<std::string>>()->composing(),
        "load every module in DIR (as ncstored)")(
        "yang-search-dir", po::value<std::vector<std::string>>()->composing(), "search DIR for imports only")(
        "no-default-models", po::bool_switch(), "do not load the default models (as ncstored)")(
        "quiet,q", po::bool_switch(), "print the summary only, not a line per dropped node")(
        "log-level", po::value<std::string>()->default_value("warning"), "trace ... fatal");
    po::options_description hidden;
    hidden.add_options()("dump", po::value<std::string>());
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description positional;
    positional.add("dump", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || !vm.count("dump")) {
        std::cout
            << "ncstore-load [options] DUMP: load a device's data (a <get> reply: configuration and state,\n"
               "XML or JSON) into a running ncstored: running and the operational datastore\n\n"
            << opts << "\n";
        return vm.count("help") ? 0 : 2;
    }
    log::setup(vm["log-level"].as<std::string>());
    log::routeLibyang();

    ModelOptions models = defaultModelOptions();
    models.defaultModels = !vm["no-default-models"].as<bool>();
    for (const char* key : {"yang-dir", "yang-search-dir"}) {
        if (vm.count(key)) {
            for (const auto& d : vm[key].as<std::vector<std::string>>()) {
                (std::string(key) == "yang-dir" ? models.yangDirs : models.searchDirs).emplace_back(d);
            }
        }
    }
    const Context ctx = buildContext(models);
    const std::string dumpFile = vm["dump"].as<std::string>();
    std::string formatName = vm.count("format")            ? vm["format"].as<std::string>()
                             : dumpFile.ends_with(".json") ? "json"
                                                           : "xml";
    if (formatName != "xml" && formatName != "json") {
        throw std::invalid_argument("--format must be xml or json, not " + formatName);
    }
    const LYD_FORMAT format = formatName == "json" ? LYD_JSON : LYD_XML;
    const bool lenient = vm["lenient"].as<bool>();

    load::Result r =
        load::clean(ctx.get(), load::unwrap(readFile(dumpFile), format), format, dataModules(models));
    if (vm.count("set")) {
        for (const std::string& s : vm["set"].as<std::vector<std::string>>()) {
            const std::size_t eq = s.find('=');
            if (eq == std::string::npos || eq == 0) {
                throw std::invalid_argument("--set wants PATH=VALUE, not " + s);
            }
            load::setLeaf(r, ctx.get(), s.substr(0, eq), s.substr(eq + 1));
        }
    }

    if (!vm["quiet"].as<bool>()) {
        for (const load::Dropped& d : r.dropped) {
            std::cout << (lenient ? "dropped " : "invalid ") << d.path << " (" << d.nodes << " node"
                      << (d.nodes == 1 ? "" : "s") << "): " << d.reason << ": " << d.message << "\n";
        }
    }
    std::size_t droppedNodes = 0;
    for (const load::Dropped& d : r.dropped) {
        droppedNodes += d.nodes;
    }
    std::cout << dumpFile << ": " << r.nodesRead << " nodes read: " << r.configNodes << " configuration, "
              << r.stateNodes << " state (with the keys of their entries); " << r.dropped.size()
              << " subtrees (" << droppedNodes << " nodes) " << (lenient ? "dropped" : "invalid") << "\n";
    for (const auto& [reason, n] : r.countsByReason()) {
        std::cout << "  " << reason << ": " << n << "\n";
    }

    Outcome outcome;
    int status = 0;
    if (!r.dropped.empty() && !lenient) {
        outcome.error = "refused: the dump is not valid as it is (--lenient loads what is)";
        status = 1;
    } else if (!vm["check"].as<bool>()) {
        app::Connection::Options options;
        options.appName = "ncstore-load";
        options.socket =
            vm.count("socket")
                ? vm["socket"].as<std::string>()
                : (std::filesystem::path(vm["data-dir"].as<std::string>()) / "app.sock").string();
        options.timeout = std::chrono::minutes(5);
        try {
            app::Connection nc(options);
            if (r.config) {
                app::EditOptions edit;
                edit.comment = "ncstore-load " + std::filesystem::path(dumpFile).filename().string();
                outcome.commit = nc.edit(replacingConfig(ctx.get(), r.config.get()), edit);
            }
            if (r.state) {
                for (const lyd_node* top = r.state.get(); top; top = top->next) {
                    nc.pushDelete(pathOf(top), app::Lifetime::Persistent);
                }
                nc.push(print(r.state.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK),
                        app::Lifetime::Persistent);
            }
            outcome.loaded = true;
        } catch (const app::Error& e) {
            outcome.error = e.what();
            if (!e.path().empty()) {
                outcome.error += " (at " + e.path() + ")";
            }
            status = 1;
        }
    }
    if (vm.count("report")) {
        std::ofstream out(vm["report"].as<std::string>());
        out << reportJson(dumpFile, lenient, r, outcome);
        if (!out.flush()) {
            throw std::runtime_error("cannot write the report " + vm["report"].as<std::string>());
        }
    }
    if (outcome.loaded) {
        std::cout << "loaded: " << r.configNodes << " configuration nodes into running"
                  << (outcome.commit ? " (commit " + std::to_string(outcome.commit) + ")" : std::string())
                  << ", " << r.stateNodes << " state nodes into the operational datastore\n";
    } else if (!outcome.error.empty()) {
        std::cerr << "ncstore-load: " << outcome.error << "\n";
    }
    return status;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "ncstore-load: " << e.what() << "\n";
        return 1;
    }
}
