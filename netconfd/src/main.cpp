// ncstored: command line, logging, signals; the server itself is in server.cpp.
#include "datadir.hpp"
#include "nacmsetup.hpp"
#include "options.hpp"
#include "server.hpp"
#include "users.hpp"

#include "ncstore/files.hpp"
#include "ncstore/log.hpp"
#include "ncstore/threadname.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#ifndef NCSTORE_VERSION
#define NCSTORE_VERSION "unknown"
#endif

using namespace ncstore::netconfd;

namespace {

int addUser(const ServerConfig& config, const std::string& name, const std::string& group) {
    std::string password;
    if (isatty(STDIN_FILENO)) {
        std::cerr << "password for " << name << ": " << std::flush;
    }
    if (!std::getline(std::cin, password) || password.empty()) {
        std::cerr << "ncstored: no password on stdin\n";
        return 2;
    }
    ncstore::files::preparePrivateDir(config.dataDir);
    UserDb users(config.dataDir / "users", config.dataDir / "authorized_keys");
    if (!group.empty()) {
        // The group first: a password without its group would log in with the NACM defaults.
        try {
            nacmsetup::addToGroup(config, users.names(), name, group, std::cout);
        } catch (const ncstore::files::LockHeld& e) {
            std::cerr
                << "ncstored: a server is running on " << config.dataDir.string() << " (" << e.what()
                << "): it holds the NACM groups in its datastore, which only it may change.\n"
                << "Nothing was changed. Add the user without --group (that takes effect at once), then "
                   "put it into the group over NETCONF as an administrator, e.g. an edit-config of\n"
                << "  <nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\"><groups><group><name>"
                << group << "</name><user-name>" << name << "</user-name></group></groups></nacm>\n"
                << "or stop the server and run this command again.\n";
            return 1;
        }
    }
    users.setPassword(name, password);
    NCS_LOG(info) << "user " << name << " set in " << (config.dataDir / "users").string();
    return 0;
}

int resetNacm(const ServerConfig& config) {
    try {
        ncstore::files::preparePrivateDir(config.dataDir);
        const UserDb users(config.dataDir / "users", config.dataDir / "authorized_keys");
        nacmsetup::reset(config, users.names(), std::cout);
        return 0;
    } catch (const ncstore::files::LockHeld& e) {
        std::cerr << "ncstored: a server is running on " << config.dataDir.string() << " (" << e.what()
                  << "): stop it first; --reset-nacm changes the store offline. Nothing was changed.\n";
        return 1;
    }
}

/// glibc gives a thread that finds its arena locked an arena of its own, up to 8 per core: with
/// one thread per session, each of those arenas ends up holding the high-water mark of the
/// multi-MB replies that passed through it, spread over fragments no trim can return (the soak
/// saw 15 arenas of 10-18 MB each for a live heap of about 50 MB). Two per core keep threads
/// from queueing on one lock while the server's memory stays that of its data. An operator's
/// MALLOC_ARENA_MAX or glibc.malloc.arena_max tunable wins.
void limitMallocArenas() {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (std::getenv("MALLOC_ARENA_MAX") || (tunables && std::strstr(tunables, "glibc.malloc.arena_max"))) {
        return;
    }
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (mallopt(M_ARENA_MAX, 2 * cores) != 1) {
        NCS_LOG(warning) << "cannot limit malloc arenas: the server's memory may grow with its sessions";
    }
}

} // namespace

int main(int argc, char* argv[]) {
    limitMallocArenas(); // before any thread exists
    CommandLine cmd;
    try {
        cmd = parseCommandLine(argc, argv);
        ncstore::log::setup(cmd.config.logLevel, cmd.config.logFile);
    } catch (const std::exception& e) {
        std::cerr << "ncstored: " << e.what() << "\nTry 'ncstored --help'.\n";
        return 2;
    }
    switch (cmd.action) {
    case Action::Help:
        std::cout << cmd.helpText;
        return 0;
    case Action::Version:
        std::cout << "ncstored " << NCSTORE_VERSION << "\n";
        return 0;
    case Action::AddUser:
        try {
            return addUser(cmd.config, cmd.addUser, cmd.group);
        } catch (const std::exception& e) {
            std::cerr << "ncstored: " << e.what() << "\n";
            return 1;
        }
    case Action::ResetNacm:
        try {
            return resetNacm(cmd.config);
        } catch (const std::exception& e) {
            std::cerr << "ncstored: " << e.what() << "\n";
            return 1;
        }
    case Action::Run:
        break;
    }
    // Signals are taken by one thread with sigwait; every other thread inherits the mask.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    try {
        // Held while serving: offline commands that write the store refuse to run beside it,
        // and so does a second server on the same data directory.
        ncstore::files::preparePrivateDir(cmd.config.dataDir);
        std::optional<ncstore::files::ProcessLock> lock;
        try {
            lock.emplace(lockFile(cmd.config));
        } catch (const ncstore::files::LockHeld& e) {
            throw std::runtime_error("another ncstored is running on " + cmd.config.dataDir.string() + " (" +
                                     e.what() + ")");
        }
        Server server(cmd.config);
        server.start();
        std::thread signalThread([&server, stopSignals] {
            ncstore::nameThisThread("ncs-signals");
            int sig = 0;
            sigwait(&stopSignals, &sig);
            NCS_LOG(info) << "signal " << sig << " received";
            server.requestStop();
        });
        server.run();
        // run() returned because of a signal, or an internal stop: release the signal thread.
        pthread_kill(signalThread.native_handle(), SIGTERM);
        signalThread.join();
    } catch (const std::exception& e) {
        NCS_LOG(fatal) << e.what();
        std::cerr << "ncstored: " << e.what() << "\n";
        return 1;
    }
    NCS_LOG(info) << "ncstored stopped";
    return 0;
}
