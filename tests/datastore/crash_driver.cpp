// Child process of the crash test. `commit` mode: commits edits from several threads, each edit
// creating a pair of interfaces <tag>-a and <tag>-b, and prints "ACK <tag>" once it is durable.
// `fill` mode: limits the file size (as a full disk does) and commits until a commit fails, then
// checks that the store still reads and prints "FULL <n> <error>" (n: acknowledged edits).
#include "test_support.hpp"

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

std::string pairXml(const std::string& tag) {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
           "<interface><name>" +
           tag + "-a</name><type>ianaift:ethernetCsmacd</type></interface><interface><name>" + tag +
           "-b</name><type>ianaift:ethernetCsmacd</type></interface></interfaces>";
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: " << argv[0] << " commit|fill DBFILE THREADS RUN-ID\n";
        return 2;
    }
    const std::string mode = argv[1];
    log::setup("error");
    Context ctx = test::interfacesContext();
    ds::StoreOptions options;
    options.file = argv[2];
    const int threads = std::stoi(argv[3]);
    const std::string run = argv[4];
    if (mode == "fill") {
        // A full disk: the file may grow by 64 KiB at most.
        std::error_code ec;
        auto size = std::filesystem::file_size(options.file, ec);
        rlimit lim{};
        lim.rlim_cur = lim.rlim_max = (ec ? 0 : size) + 64 * 1024 + 4 * 1024 * 1024 / 64;
        std::signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
            std::cerr << "setrlimit: " << std::strerror(errno) << "\n";
            return 2;
        }
    }
    auto store = ds::Store::open(ctx.get(), options);
    writeLine("READY");
    if (mode == "fill") {
        int acked = 0;
        for (int i = 0;; ++i) {
            Tree edit = test::parseEdit(ctx.get(), pairXml(run + "-" + std::to_string(i)));
            try {
                store->edit(ds::Datastore::Running, edit.get());
                ++acked;
            } catch (const ds::Error& e) {
                std::size_t count = 0;
                store->read(ds::Datastore::Running,
                            [&](const lyd_node* t) { count = test::interfaceNames(t).size(); });
                writeLine("FULL " + std::to_string(acked) + " " + std::to_string(count) + " " + e.what());
                return 0;
            }
            if (i > 1000000) {
                writeLine("NEVER-FULL");
                return 1;
            }
        }
    }
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0;; ++i) {
                const std::string tag = run + "-" + std::to_string(t) + "-" + std::to_string(i);
                Tree edit = test::parseEdit(ctx.get(), pairXml(tag));
                store->edit(ds::Datastore::Running, edit.get());
                writeLine("ACK " + tag);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    return 0;
}
