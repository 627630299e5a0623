// ncstored: command line, logging, signals; the server itself is in server.cpp.
#include "options.hpp"
#include "server.hpp"
#include "users.hpp"

#include "ncstore/log.hpp"

#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>

#ifndef NCSTORE_VERSION
#define NCSTORE_VERSION "unknown"
#endif

using namespace ncstore::netconfd;

namespace {

int addUser(const ServerConfig& config, const std::string& name) {
    std::string password;
    if (isatty(STDIN_FILENO)) {
        std::cerr << "password for " << name << ": " << std::flush;
    }
    if (!std::getline(std::cin, password) || password.empty()) {
        std::cerr << "ncstored: no password on stdin\n";
        return 2;
    }
    std::filesystem::create_directories(config.dataDir);
    UserDb users(config.dataDir / "users", config.dataDir / "authorized_keys");
    users.setPassword(name, password);
    NCS_LOG(info) << "user " << name << " set in " << (config.dataDir / "users").string();
    return 0;
}

} // namespace

int main(int argc, char* argv[]) {
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
            return addUser(cmd.config, cmd.addUser);
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
        Server server(cmd.config);
        server.start();
        std::thread signalThread([&server, stopSignals] {
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
