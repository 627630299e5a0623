// ncstore-db: the datastore's maintenance tool.
//   ncstore-db export [--datastore running|startup] [--format xml|json] [-o FILE]   (FILE 0600)
//   ncstore-db import [--datastore running|startup] FILE         (replaces the datastore's content)
//   ncstore-db backup [DEST]       (SQLite online backup, 0600; default <data-dir>/ncstore.db.backup-<time>)
//   ncstore-db check               (SQLite integrity check + every record loads and validates)
//   ncstore-db history [ID]        (the commit history the server keeps: one line per commit, oldest
//                                   first; with ID, that commit's changes too)
// Common: --data-dir DIR, --yang-dir DIR..., --yang-search-dir DIR..., --no-default-models.
// export, backup, check and history work beside a running server (SQLite WAL readers); import must not
// run while the server runs on the same data directory: the server would not see the change.
// --dqlite-peer ADDRESS... (a cluster of `ncstored --backend dqlite`): the same commands on the
// cluster's database, read through its leader, except import: the nodes run inside the servers,
// which keep the data in memory, so a cluster's data changes over NETCONF only (copy-config).
#include "history.hpp"
#include "ncstore/changes.hpp"
#include "ncstore/datastore.hpp"
#include "ncstore/files.hpp"
#include "ncstore/log.hpp"
#include "ncstore/models.hpp"

#include <boost/program_options.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

namespace po = boost::program_options;
using namespace ncstore;

namespace {

ds::Datastore parseDatastore(const std::string& name) {
    if (name == "running") {
        return ds::Datastore::Running;
    }
    if (name == "startup") {
        return ds::Datastore::Startup;
    }
    throw std::invalid_argument("unknown datastore '" + name + "' (running, startup)");
}

LYD_FORMAT parseFormat(const std::string& name) {
    if (name == "xml") {
        return LYD_XML;
    }
    if (name == "json") {
        return LYD_JSON;
    }
    throw std::invalid_argument("unknown format '" + name + "' (xml, json)");
}

std::string timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

/// "2026-12-02T15:04:05.123456Z" for microseconds since the epoch.
std::string utcTime(std::int64_t us) {
    const std::time_t secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::ostringstream out;
    out << buf << '.' << std::setw(6) << std::setfill('0') << us % 1000000 << 'Z';
    return out.str();
}

/// The history journal (netconfd/changes/history) read from the file: what `ncstore-client history` shows,
/// without a server. `only`: print just that commit, with its changes.
int printHistory(const ds::Store& store, std::optional<std::uint64_t> only) {
    namespace history = netconfd::history;
    bool found = false;
    std::cout << "id\ttime\tuser\tsession\torigin\tchanges\tbytes\tcomment\n";
    store.readJournal(history::kJournal, only ? *only - 1 : 0, [&](const ds::JournalRow& row) {
        if (only && row.commitId != *only) {
            return;
        }
        const history::Row r = history::decode(row.data, !only);
        const history::Entry& e = r.entry;
        std::cout << row.commitId << '\t' << utcTime(e.timeUs) << '\t' << e.user << '\t' << e.session << '\t'
                  << ds::toString(e.origin) << '\t' << e.changes << '\t' << row.data.size() << '\t'
                  << e.comment << '\n';
        for (const history::Undo& u : r.undo) {
            // The row keeps what undoes each change: the change itself is its op on that path.
            std::cout << "  " << ds::toString(u.op) << ' ' << u.path << '\n';
        }
        found = true;
    });
    if (only && !found) {
        std::cerr << "ncstore-db: commit " << *only << " is not in the history\n";
        return 1;
    }
    return 0;
}

int run(int argc, char** argv) {
    po::options_description common("Options");
    common.add_options()("help,h", "print this help and exit")(
        "data-dir", po::value<std::string>()->default_value("ncstore-data"),
        "the server's data directory")("yang-dir", po::value<std::vector<std::string>>()->composing(),
                                       "load every module in DIR (as ncstored)")(
        "yang-search-dir", po::value<std::vector<std::string>>()->composing(), "search DIR for imports only")(
        "no-default-models", po::bool_switch(), "do not load the default models (as ncstored)")(
        "datastore", po::value<std::string>()->default_value("running"), "running | startup")(
        "format", po::value<std::string>(), "xml | json (export default xml; import: from the file name)")(
        "output,o", po::value<std::string>(), "export to FILE instead of stdout")(
        "log-level", po::value<std::string>()->default_value("warning"), "trace ... fatal")(
        "dqlite-peer", po::value<std::vector<std::string>>()->composing(),
        "IPv4:port of a node of a dqlite cluster (repeatable): use the cluster's database, not --data-dir's "
        "file (export, backup DEST, check, history)");
    po::options_description hidden;
    hidden.add_options()("command", po::value<std::string>())("argument", po::value<std::string>());
    po::options_description all;
    all.add(common).add(hidden);
    po::positional_options_description positional;
    positional.add("command", 1).add("argument", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || !vm.count("command")) {
        std::cout << "ncstore-db export|import FILE|backup [DEST]|check|history [ID] [options]\n\n"
                  << common << "\n";
        return vm.count("help") ? 0 : 2;
    }
    log::setup(vm["log-level"].as<std::string>());
    log::routeLibyang();

    const std::vector<std::string> peers = vm.count("dqlite-peer")
                                               ? vm["dqlite-peer"].as<std::vector<std::string>>()
                                               : std::vector<std::string>{};
    const std::filesystem::path dataDir = vm["data-dir"].as<std::string>();
    const std::filesystem::path dbFile = dataDir / "ncstore.db";
    const std::string command = vm["command"].as<std::string>();
    std::optional<std::uint64_t> historyId;
    if (command == "history" && vm.count("argument")) {
        const std::string id = vm["argument"].as<std::string>();
        if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos ||
            id == "0") {
            throw std::invalid_argument("history: ID must be a commit id (1, 2, ...), not '" + id + "'");
        }
        historyId = std::stoull(id);
    }
    std::optional<ds::DqliteStoreOptions> cluster;
    if (!peers.empty()) {
        cluster = ds::DqliteStoreOptions{peers};
        cluster->reader = true; // no write lock: the servers' commits go on meanwhile
        if (command == "import") {
            throw std::invalid_argument(
                "import works on a data directory's file, not on a dqlite cluster: its "
                "servers keep the data in memory; replace it over NETCONF (copy-config)");
        }
        if (command == "backup" && !vm.count("argument")) {
            throw std::invalid_argument("backup of a dqlite cluster needs a DEST file");
        }
    } else if (command == "import") {
        // As ncstored: a data directory others can write is refused, one import creates is private.
        files::preparePrivateDir(dataDir);
    } else if (std::filesystem::exists(dataDir)) {
        files::checkPrivateDir(dataDir);
    }

    const std::string where = cluster ? "the dqlite cluster's database" : dbFile.string();
    if (command == "backup") {
        const std::filesystem::path dest =
            vm.count("argument") ? std::filesystem::path(vm["argument"].as<std::string>())
                                 : std::filesystem::path(dbFile.string() + ".backup-" + timestamp());
        if (cluster) {
            ds::backupStore(*cluster, dest);
        } else {
            if (!std::filesystem::exists(dbFile)) {
                throw std::runtime_error("no store at " + dbFile.string());
            }
            ds::backupStore(dbFile, dest);
        }
        std::cout << "backed up " << where << " to " << dest.string() << "\n";
        return 0;
    }

    ModelOptions models = defaultModelOptions();
    models.defaultModels = !vm["no-default-models"].as<bool>();
    if (vm.count("yang-dir")) {
        for (const auto& d : vm["yang-dir"].as<std::vector<std::string>>()) {
            models.yangDirs.emplace_back(d);
        }
    }
    if (vm.count("yang-search-dir")) {
        for (const auto& d : vm["yang-search-dir"].as<std::vector<std::string>>()) {
            models.searchDirs.emplace_back(d);
        }
    }
    Context ctx = buildContext(models);
    if (!cluster && command != "import" && !std::filesystem::exists(dbFile)) {
        throw std::runtime_error("no store at " + dbFile.string());
    }
    ds::StoreOptions storeOptions;
    storeOptions.file = dbFile;
    storeOptions.dqlite = cluster;
    storeOptions.verifyOnOpen = command == "check";
    auto store = ds::Store::open(ctx.get(), storeOptions); // loads and validates every record
    const ds::Datastore which = parseDatastore(vm["datastore"].as<std::string>());

    if (command == "check") {
        const std::string result = store->integrityCheck();
        std::cout << where << ": " << result << "\n";
        return result == "ok" ? 0 : 1;
    }
    if (command == "history") {
        return printHistory(*store, historyId);
    }
    if (command == "export") {
        const LYD_FORMAT format = parseFormat(vm.count("format") ? vm["format"].as<std::string>() : "xml");
        std::string text;
        store->read(which, [&](const lyd_node* tree) {
            text = tree ? print(tree, format, LYD_PRINT_WD_EXPLICIT)
                        : std::string(format == LYD_JSON ? "{}\n" : "");
        });
        if (vm.count("output")) {
            // A copy of the store, so as private as the store (created 0600 before it is written).
            const std::filesystem::path file = files::ensurePrivateFile(vm["output"].as<std::string>());
            std::ofstream out(file, std::ios::binary | std::ios::trunc);
            out << text;
            if (!out.flush()) {
                throw std::runtime_error("cannot write " + file.string());
            }
        } else {
            std::cout << text;
        }
        return 0;
    }
    if (command == "import") {
        if (!vm.count("argument")) {
            throw std::invalid_argument("import needs a FILE");
        }
        const std::string file = vm["argument"].as<std::string>();
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            throw std::runtime_error("cannot read " + file);
        }
        std::stringstream text;
        text << in.rdbuf();
        const LYD_FORMAT format =
            parseFormat(vm.count("format")
                            ? vm["format"].as<std::string>()
                            : (file.size() > 5 && file.substr(file.size() - 5) == ".json" ? "json" : "xml"));
        Tree config = parseData(ctx.get(), text.str(), format,
                                LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, 0);
        store->replace({}, which, config.get());
        std::cout << "imported " << file << " into " << ds::toString(which) << "\n";
        return 0;
    }
    throw std::invalid_argument("unknown command '" + command + "' (export, import, backup, check, history)");
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "ncstore-db: " << e.what() << "\n";
        return 1;
    }
}
