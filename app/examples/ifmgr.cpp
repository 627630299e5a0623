// ncstore-example-ifmgr: the interface manager of a small device, on ncstored's application
// API (<ncstore/app.hpp>, docs/app-guide.md). What a device's own daemon does:
//  - verify: refuses an interface whose type the hardware has none of (only ethernetCsmacd and
//    softwareLoopback here), with a message, the error-path and an error-app-tag the NETCONF
//    client sees;
//  - apply: once a change is durable, "programs the hardware" (prints what it applies) and keeps
//    /ietf-interfaces:interfaces-state (pushed operational data) following the configuration:
//    oper-status up when enabled, down when not; the state goes with the process;
//  - resume: it remembers the last commit it applied in a file and resumes from there after a
//    restart, so that it applies every change exactly once.
//
//   ncstore-example-ifmgr --socket DATA_DIR/app.sock [--state FILE]
#include <ncstore/app.hpp>

#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

namespace {

volatile std::sig_atomic_t stopRequested = 0;

const char* kInterfaces = "/ietf-interfaces:interfaces";
const std::string kIfNs = "urn:ietf:params:xml:ns:yang:ietf-interfaces";

/// The interfaces this daemon knows, name -> enabled, from what it applied.
std::map<std::string, bool> known;
std::mutex knownMutex;

std::string nameIn(const std::string& path) {
    static const std::regex name(R"(interface\[name='([^']*)'\])");
    std::smatch m;
    return std::regex_search(path, m, name) ? m[1].str() : std::string();
}

/// Every <interface> of an XML subtree: name -> enabled (default true).
void interfacesIn(const std::string& xml, std::map<std::string, bool>& out) {
    static const std::regex entry(R"(<interface>(.*?)</interface>)");
    static const std::regex name(R"(<name>([^<]*)</name>)");
    static const std::regex enabled(R"(<enabled>([^<]*)</enabled>)");
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), entry); it != std::sregex_iterator(); ++it) {
        const std::string body = (*it)[1];
        std::smatch n;
        std::smatch e;
        if (std::regex_search(body, n, name)) {
            out[n[1]] = !std::regex_search(body, e, enabled) || e[1] != "false";
        }
    }
}

std::string stateXml() {
    std::string xml = "<interfaces-state xmlns=\"" + kIfNs + "\">";
    for (const auto& [name, up] : known) {
        xml += "<interface><name>" + name +
               "</name><type xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
               "ianaift:ethernetCsmacd</type><oper-status>" +
               (up ? "up" : "down") +
               "</oper-status><statistics><discontinuity-time>2026-12-07T00:00:00Z</discontinuity-time>"
               "</statistics></interface>";
    }
    return xml + "</interfaces-state>";
}

} // namespace

int main(int argc, char** argv) {
    ncstore::app::Connection::Options options;
    options.appName = "ifmgr";
    std::string stateFile;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--socket") == 0) {
            options.socket = argv[i + 1];
        } else if (std::strcmp(argv[i], "--state") == 0) {
            stateFile = argv[i + 1];
        }
    }
    std::signal(SIGTERM, [](int) { stopRequested = 1; });
    std::signal(SIGINT, [](int) { stopRequested = 1; });

    try {
        ncstore::app::Connection nc(options);
        std::optional<std::uint64_t> since;
        if (std::ifstream in(stateFile); !stateFile.empty() && in) {
            std::uint64_t last = 0;
            if (in >> last) {
                since = last;
            }
        }

        ncstore::app::SubscribeOptions sub;
        sub.xpath = kInterfaces;
        sub.initial = !since; // first start: the configuration there is, as creates
        sub.since = since;
        // Verify: only the types this hardware has.
        sub.verify = [](const ncstore::app::ChangeSet& changes, ncstore::app::Verification&) {
            // A type leaf set on its own (a new value), or inside a created entry (its XML).
            static const std::regex typeElement(R"(<type[^>]*>(?:[^<:]*:)?([^<]*)</type>)");
            auto check = [](const std::string& type, const std::string& path) {
                if (type != "ethernetCsmacd" && type != "softwareLoopback") {
                    throw ncstore::app::Error("this device has no interface of type " + type, "invalid-value",
                                              path, "unsupported-interface-type");
                }
            };
            for (const auto& c : changes.changes) {
                if (c.newValue && c.path.ends_with("/type")) {
                    check(c.newValue->substr(c.newValue->find(':') + 1), c.path);
                }
                for (auto it = std::sregex_iterator(c.xml.begin(), c.xml.end(), typeElement);
                     it != std::sregex_iterator(); ++it) {
                    check((*it)[1], c.path);
                }
            }
        };
        // Apply: what is durable goes to the hardware, and the state follows.
        sub.onApply = [&](const ncstore::app::ChangeSet& changes) {
            {
                const std::lock_guard lock(knownMutex);
                if (changes.initial) {
                    known.clear();
                }
                for (const auto& c : changes.changes) {
                    std::cout << "apply " << changes.commitId << ": " << ncstore::app::toString(c.op) << " "
                              << c.path << (c.newValue ? " = " + *c.newValue : "") << std::endl;
                    const std::string name = nameIn(c.path);
                    if (c.op == ncstore::app::Change::Op::Delete) {
                        if (name.empty()) {
                            known.clear(); // the whole container
                        } else if (c.path.ends_with("']")) {
                            known.erase(name);
                        } else if (c.path.ends_with("/enabled")) {
                            known[name] = true; // back to its default
                        }
                    } else if (c.path.ends_with("/enabled") && c.newValue) {
                        known[name] = *c.newValue == "true";
                    } else {
                        interfacesIn(c.xml, known);
                    }
                }
                for (const auto& [name, up] : known) {
                    std::cout << "  " << name << (up ? " up" : " down") << std::endl;
                }
            }
            // Operational state: replaced whole (lifetime: this connection).
            const std::lock_guard lock(knownMutex);
            nc.pushDelete("/ietf-interfaces:interfaces-state");
            nc.push(stateXml());
            if (!stateFile.empty() && changes.commitId != 0) {
                std::ofstream(stateFile) << changes.commitId << "\n";
            }
        };
        if (since) {
            // Restarted: the state it pushed went with the previous process, so it starts from
            // the configuration as it is; the replay then names exactly the changes made since the
            // last commit it applied (applying them onto the current configuration is harmless
            // here: sets and erases), which a real daemon would program into its hardware.
            const std::lock_guard lock(knownMutex);
            interfacesIn(nc.get(ncstore::app::Datastore::Running, kInterfaces), known);
            nc.push(stateXml());
        }
        ncstore::app::Registration registration = nc.subscribe(std::move(sub));
        std::unique_lock printing(knownMutex); // its applies print from the callback thread
        std::cout << "ifmgr: session " << nc.session() << " as " << nc.user()
                  << (since ? ", resuming after commit " + std::to_string(*since) : std::string())
                  << std::endl;
        printing.unlock();
        while (!stopRequested && nc.connected()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return nc.connected() ? 0 : 1;
    } catch (const ncstore::app::Error& e) {
        std::cerr << "ifmgr: " << e.tag() << ": " << e.what() << std::endl;
        return 1;
    }
}
