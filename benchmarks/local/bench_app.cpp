// ncstore-bench-app: the applications of the local API's benchmarks (README.md), in C++ so that
// what is measured is the server, not its applications.
//
//   ncstore-bench-app subscribers --socket S --count N      N connections, each a verify+apply
//                                                           subscriber of /ncstore-bench-rows:rows
//                                                           that accepts everything
//   ncstore-bench-app provider --socket S --entries N       provides /ncstore-bench-rows:state
//                                                           with N rows (pulled per read)
//   ncstore-bench-app notify --socket S --count N           raises N tick notifications, one
//                                                           request after the other
// Each prints "ready" once set up (notify: a JSON line of what it did), then runs until SIGTERM and
// prints one JSON line of what it saw.
#include <ncstore/app.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stopRequested{false};

void waitForStop() {
    std::signal(SIGTERM, [](int) { stopRequested = true; });
    std::signal(SIGINT, [](int) { stopRequested = true; });
    while (!stopRequested) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

ncstore::app::Connection::Options optionsFor(const std::string& socket, const std::string& name) {
    ncstore::app::Connection::Options o;
    o.socket = socket;
    o.appName = name;
    return o;
}

int subscribers(const std::string& socket, int count) {
    std::atomic<std::uint64_t> verified{0};
    std::atomic<std::uint64_t> applied{0};
    std::vector<std::unique_ptr<ncstore::app::Connection>> conns;
    std::vector<ncstore::app::Registration> subs;
    for (int i = 0; i < count; ++i) {
        conns.push_back(
            std::make_unique<ncstore::app::Connection>(optionsFor(socket, "sub" + std::to_string(i))));
        ncstore::app::SubscribeOptions s;
        s.xpath = "/ncstore-bench-rows:rows";
        s.priority = i;
        s.verify = [&](const ncstore::app::ChangeSet&, ncstore::app::Verification&) { ++verified; };
        s.onApply = [&](const ncstore::app::ChangeSet&) { ++applied; };
        subs.push_back(conns.back()->subscribe(std::move(s)));
    }
    std::cout << "ready" << std::endl;
    waitForStop();
    std::cout << "{\"verified\": " << verified << ", \"applied\": " << applied << "}" << std::endl;
    return 0;
}

int provider(const std::string& socket, int entries) {
    std::string xml = "<state xmlns=\"urn:ncstore:bench:rows\">";
    for (int i = 0; i < entries; ++i) {
        // The rows ncstore-localload's client 0 inserts (rowFor in localload.cpp).
        xml += "<row><name>c0-s" + std::to_string(i) + "</name><description>row " + std::to_string(i) +
               " of client 0</description><enabled>" + (i % 2 == 0 ? "true" : "false") + "</enabled><count>" +
               std::to_string(i) + "</count></row>";
    }
    xml += "</state>";
    std::atomic<std::uint64_t> pulls{0};
    ncstore::app::Connection conn(optionsFor(socket, "provider"));
    auto reg = conn.provide("/ncstore-bench-rows:state", [&](const std::string&) {
        ++pulls;
        return xml;
    });
    std::cout << "ready" << std::endl;
    waitForStop();
    std::cout << "{\"pulls\": " << pulls << "}" << std::endl;
    return 0;
}

int notify(const std::string& socket, int count) {
    ncstore::app::Connection conn(optionsFor(socket, "notifier"));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
        conn.notify("<tick xmlns=\"urn:ncstore:bench:rows\"><seq>" + std::to_string(i) + "</seq></tick>");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "{\"sent\": " << count << ", \"seconds\": " << seconds << ", \"per_s\": " << count / seconds
              << "}" << std::endl;
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"ncstore-bench-app: the applications of the local API's benchmarks"};
    std::string socket;
    int count = 1;
    int entries = 1000;
    app.require_subcommand(1);
    auto* subs = app.add_subcommand("subscribers", "verify+apply subscribers that accept everything");
    auto* prov = app.add_subcommand("provider", "a pull provider of /ncstore-bench-rows:state");
    auto* note = app.add_subcommand("notify", "raise tick notifications");
    for (auto* c : {subs, prov, note}) {
        c->add_option("--socket", socket, "the server's app.sock")->required();
    }
    subs->add_option("--count", count, "subscriber connections");
    note->add_option("--count", count, "notifications");
    prov->add_option("--entries", entries, "rows provided");
    CLI11_PARSE(app, argc, argv);
    try {
        if (subs->parsed()) {
            return subscribers(socket, count);
        }
        if (prov->parsed()) {
            return provider(socket, entries);
        }
        return notify(socket, count);
    } catch (const ncstore::app::Error& e) {
        std::cerr << "ncstore-bench-app: " << e.tag() << ": " << e.what() << std::endl;
        return 1;
    }
}
