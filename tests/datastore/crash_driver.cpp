// Child process of the crash test. Both modes keep a journal "acks" (one row per write: the
// names of the interfaces it created) in the same transactions as the writes.
// `commit` mode: commits edits from several threads, each edit creating a pair of interfaces
// <tag>-a and <tag>-b, and prints "ACK <tag>" once it is durable.
// `fill` mode: limits the file size (as a full disk does) and commits until a commit fails; each
// edit creates a pair and also sets the description of the first pair's "-a" (a leaf patch).
// Prints "FULL <n> <in memory> <error>" (n: acknowledged edits), lifts the limit, commits one
// more edit (tag "next") and prints "NEXT-OK" or "NEXT-FAILED <error>".
#include "test_support.hpp"

#include "ncstore/changes.hpp"
#include "ncstore/log.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

using namespace ncstore;

namespace {

void writeLine(const std::string& line) {
    // One write(2) per line, so a kill never leaves half an acknowledgement that parses.
    std::string l = line + "\n";
    (void)!::write(STDOUT_FILENO, l.data(), l.size());
}

std::string pairXml(const std::string& tag, const std::string& extra = "") {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
           "<interface><name>" +
           tag + "-a</name><type>ianaift:ethernetCsmacd</type></interface><interface><name>" + tag +
           "-b</name><type>ianaift:ethernetCsmacd</type></interface>" + extra + "</interfaces>";
}

/// The journal row of a write: the interfaces it created, space-separated.
std::vector<std::string> createdInterfaces(const ds::ChangeSet& cs) {
    std::string names;
    for (const ds::Change& c : cs.changes) {
        if (c.op != ds::ChangeOp::Create || !c.newTree) {
            continue;
        }
        // A pair, or the first write's whole <interfaces>.
        const lyd_node* top = c.newTree.get();
        const bool container = top->schema->nodetype == LYS_CONTAINER;
        for (const lyd_node* e = container ? lyd_child(top) : top; e; e = container ? e->next : nullptr) {
            names += std::string(names.empty() ? "" : " ") + lyd_get_value(lyd_child(e));
        }
    }
    return {names};
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: " << argv[0] << " commit|fill DBFILE|dqlite:ADDRESS THREADS RUN-ID\n";
        return 2;
    }
    const std::string mode = argv[1];
    log::setup("error");
    Context ctx = test::interfacesContext();
    ds::StoreOptions options;
    options.file = argv[2];
    // "dqlite:ADDRESS": the store on a dqlite node's database (issue 17's backend) instead.
    if (const std::string target = argv[2]; target.rfind("dqlite:", 0) == 0) {
        options.dqlite = ds::DqliteStoreOptions{{target.substr(7)}, "crash.db", std::chrono::seconds(10)};
    }
    const int threads = std::stoi(argv[3]);
    const std::string run = argv[4];
    if (mode == "fill") {
        // A full disk: the file may grow by 64 KiB at most.
        std::error_code ec;
        auto size = std::filesystem::file_size(options.file, ec);
        rlimit lim{};
        if (getrlimit(RLIMIT_FSIZE, &lim) != 0) {
            std::cerr << "getrlimit: " << std::strerror(errno) << "\n";
            return 2;
        }
        lim.rlim_cur = (ec ? 0 : size) + 64 * 1024 + 4 * 1024 * 1024 / 64; // the hard limit stays
        std::signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
            std::cerr << "setrlimit: " << std::strerror(errno) << "\n";
            return 2;
        }
    }
    auto store = ds::Store::open(ctx.get(), options);
    store->addJournal("acks", createdInterfaces);
    writeLine("READY");
    if (mode == "fill") {
        auto description = [&](const std::string& value) {
            return "<interface><name>" + run + "-0-a</name><description>" + value +
                   "</description></interface>";
        };
        int acked = 0;
        for (int i = 0;; ++i) {
            const std::string tag = run + "-" + std::to_string(i);
            Tree edit =
                test::parseEdit(ctx.get(), pairXml(tag, i == 0 ? "" : description("d" + std::to_string(i))));
            try {
                store->edit({}, ds::Datastore::Running, edit.get());
                ++acked;
            } catch (const ds::Error& e) {
                std::size_t count = 0;
                store->read(ds::Datastore::Running,
                            [&](const lyd_node* t) { count = test::interfaceNames(t).size(); });
                writeLine("FULL " + std::to_string(acked) + " " + std::to_string(count) + " " + e.what());
                break;
            }
            if (i > 1000000) {
                writeLine("NEVER-FULL");
                return 1;
            }
        }
        // The disk has room again: the store must take the next write.
        rlimit lim{};
        getrlimit(RLIMIT_FSIZE, &lim);
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_FSIZE, &lim);
        Tree next = test::parseEdit(ctx.get(), pairXml(run + "-next", description("dnext")));
        try {
            store->edit({}, ds::Datastore::Running, next.get());
            writeLine("NEXT-OK");
        } catch (const ds::Error& e) {
            writeLine(std::string("NEXT-FAILED ") + e.what());
        }
        return 0;
    }
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0;; ++i) {
                const std::string tag = run + "-" + std::to_string(t) + "-" + std::to_string(i);
                Tree edit = test::parseEdit(ctx.get(), pairXml(tag));
                store->edit({}, ds::Datastore::Running, edit.get());
                writeLine("ACK " + tag);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    return 0;
}
