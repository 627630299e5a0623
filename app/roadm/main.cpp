// ncstore-roadm-agent: the Open ROADM 2.2.1 device agent's program (agent.hpp says what it
// does; packaging/ncstore-roadm-agent.8 documents the options). Also the small client of its
// control FIFO: `ncstore-roadm-agent --control FIFO --fault "raise ..."` writes one line and exits.
#include "agent.hpp"

#include "ncstore/log.hpp"
#include "ncstore/models.hpp"

#include <boost/program_options.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

namespace po = boost::program_options;

namespace {

std::atomic<bool> stopRequested{false};

/// Writes one control line to a running agent's FIFO; fails when no agent reads it.
int sendControl(const std::string& fifo, const std::string& line) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) {
        std::cerr << "ncstore-roadm-agent: cannot open the control FIFO " << fifo << ": "
                  << std::strerror(errno) << (errno == ENXIO ? " (no agent is running on it)" : "")
                  << std::endl;
        return 1;
    }
    const std::string text = line + "\n";
    const ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
        std::cerr << "ncstore-roadm-agent: writing to " << fifo << ": " << std::strerror(errno) << std::endl;
        return 1;
    }
    return 0;
}

/// Reads control lines until stopRequested; opened read-write so that it never sees EOF when a
/// writer goes.
void controlLoop(const std::string& fifo, ncstore::roadm::Agent& agent) {
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        NCS_LOG(error) << "cannot open the control FIFO " << fifo << ": " << std::strerror(errno);
        return;
    }
    std::string pending;
    while (!stopRequested) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            continue;
        }
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
            continue;
        }
        pending.append(buf, static_cast<std::size_t>(n));
        for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
            const std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            if (line.find_first_not_of(" \t\r") == std::string::npos) {
                continue;
            }
            try {
                NCS_LOG(info) << "control: " << line << ": " << agent.control(line);
            } catch (const std::exception& e) {
                NCS_LOG(error) << "control: " << line << ": " << e.what();
            }
        }
    }
    ::close(fd);
}

} // namespace

int main(int argc, char** argv) {
    po::options_description desc("ncstore-roadm-agent: an Open ROADM 2.2.1 device on ncstored (man "
                                 "ncstore-roadm-agent)");
    std::string socket, profileFile, filesDir, stateFile, control, fault, logLevel, appName;
    std::vector<std::string> yangDirs, searchDirs;
    desc.add_options()("help,h", "this help")(
        "socket", po::value(&socket),
        "ncstored's application socket (default: $NCSTORE_APP_SOCKET, else /var/lib/ncstore/app.sock)")(
        "yang-dir", po::value(&yangDirs)->composing(),
        "the models ncstored serves (its --yang-dir), e.g. the Open ROADM 2.2.1 device set")(
        "yang-search-dir", po::value(&searchDirs)->composing(),
        "imports only (ncstored's --yang-search-dir)")("profile", po::value(&profileFile),
                                                       "the device profile (vendor, model, serial-id, ...)")(
        "files-dir", po::value(&filesDir),
        "where tech-info and database backups go (default: roadm-agent beside the socket)")(
        "state", po::value(&stateFile),
        "the last commit applied, for resume (default: FILES-DIR/agent.state)")(
        "control", po::value(&control), "the control FIFO for injected faults (default: FILES-DIR/control)")(
        "fault", po::value(&fault), "send this control line to the running agent's FIFO and exit")(
        "app-name", po::value(&appName)->default_value("roadm"), "the application's name in the server")(
        "log-level", po::value(&logLevel)->default_value("info"), "trace, debug, info, warning, error");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "ncstore-roadm-agent: " << e.what() << "\n" << desc << std::endl;
        return 2;
    }
    if (vm.count("help")) {
        std::cout << desc << std::endl;
        return 0;
    }
    if (socket.empty()) {
        const char* env = std::getenv("NCSTORE_APP_SOCKET");
        socket = env ? env : "/var/lib/ncstore/app.sock";
    }
    if (filesDir.empty()) {
        filesDir = (std::filesystem::path(socket).parent_path() / "roadm-agent").string();
    }
    if (control.empty()) {
        control = (std::filesystem::path(filesDir) / "control").string();
    }
    if (!fault.empty()) {
        return sendControl(control, fault);
    }
    if (stateFile.empty()) {
        stateFile = (std::filesystem::path(filesDir) / "agent.state").string();
    }
    if (yangDirs.empty() || profileFile.empty()) {
        std::cerr << "ncstore-roadm-agent: --yang-dir and --profile are required\n" << desc << std::endl;
        return 2;
    }
    try {
        ncstore::log::setup(logLevel);
        ncstore::log::routeLibyang();
    } catch (const std::exception& e) {
        std::cerr << "ncstore-roadm-agent: " << e.what() << std::endl;
        return 2;
    }
    std::signal(SIGTERM, [](int) { stopRequested = true; });
    std::signal(SIGINT, [](int) { stopRequested = true; });
    std::signal(SIGPIPE, SIG_IGN);

    try {
        const auto profile = ncstore::roadm::Profile::load(profileFile);
        ncstore::ModelOptions models = ncstore::defaultModelOptions();
        models.defaultModels = false;
        models.yangDirs.assign(yangDirs.begin(), yangDirs.end());
        models.searchDirs.assign(searchDirs.begin(), searchDirs.end());
        const ncstore::Context ctx = ncstore::buildContext(models);

        std::filesystem::create_directories(filesDir);
        if (::mkfifo(control.c_str(), 0600) != 0 && errno != EEXIST) {
            throw std::runtime_error("cannot create the control FIFO " + control + ": " +
                                     std::strerror(errno));
        }
        ncstore::app::Connection nc({.socket = socket, .appName = appName});
        ncstore::roadm::Agent agent(nc, ctx.get(), profile, {.filesDir = filesDir, .stateFile = stateFile});
        agent.start();
        std::cout << "ncstore-roadm-agent: session " << nc.session() << " as " << nc.user()
                  << (agent.resumedAfter()
                          ? ", resuming after commit " + std::to_string(*agent.resumedAfter())
                          : std::string())
                  << std::endl;
        std::thread controller(controlLoop, control, std::ref(agent));
        while (!stopRequested && nc.connected()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            agent.tick();
        }
        const bool lost = !nc.connected();
        stopRequested = true;
        controller.join();
        if (lost) {
            NCS_LOG(error) << "the server closed the connection";
            return 1;
        }
        return 0;
    } catch (const ncstore::app::Error& e) {
        std::cerr << "ncstore-roadm-agent: " << e.tag() << ": " << e.what()
                  << (e.path().empty() ? "" : " (" + e.path() + ")") << std::endl;
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "ncstore-roadm-agent: " << e.what() << std::endl;
        return 1;
    }
}
