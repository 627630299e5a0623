#include "agent.hpp"

#include "rules.hpp"

#include "ncstore/log.hpp"
#include "ncstore/xml.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ncstore::roadm {

namespace {

using ncstore::app::Datastore;
using ncstore::app::Error;
using ncstore::app::Lifetime;
using Clock = std::chrono::system_clock;

constexpr const char* kAlarmList = "/org-openroadm-alarm:active-alarm-list";
constexpr const char* kDbNs = "http://org/openroadm/database";
constexpr const char* kOpsNs = "http://org/openroadm/de/operations";

struct LyInDeleter {
    void operator()(ly_in* in) const noexcept { ly_in_free(in, 0); }
};

/// An RPC's input as the server sends it (the operation element), parsed against the models.
class RpcInput {
public:
    RpcInput(const ly_ctx* ctx, const std::string& xml) {
        ly_in* raw = nullptr;
        if (ly_in_new_memory(xml.c_str(), &raw) != LY_SUCCESS) {
            throw std::runtime_error("cannot read the RPC input");
        }
        std::unique_ptr<ly_in, LyInDeleter> in(raw);
        lyd_node* tree = nullptr;
        lyd_node* op = nullptr;
        const LY_ERR rc = lyd_parse_op(ctx, nullptr, in.get(), LYD_XML, LYD_TYPE_RPC_YANG, &tree, &op);
        tree_.reset(tree);
        if (rc != LY_SUCCESS || !op) {
            throw YangError("the RPC input does not parse", ctx);
        }
        op_ = op;
    }
    /// A leaf below the operation ("enabled", "device/node-id"), or `fallback`.
    std::string leaf(const char* path, const std::string& fallback = {}) const {
        lyd_node* n = nullptr;
        if (lyd_find_path(op_, path, 0, &n) != LY_SUCCESS || !n) {
            return fallback;
        }
        const char* v = lyd_get_value(n);
        return v ? v : fallback;
    }
    /// The child subtrees named, printed as XML (with their namespace), in the order given.
    std::string children(std::initializer_list<const char*> names) const {
        std::string out;
        for (const char* name : names) {
            for (const lyd_node* c = lyd_child(op_); c; c = c->next) {
                if (std::string(LYD_NAME(c)) == name) {
                    out += printTree(c, LYD_XML, LYD_PRINT_SHRINK);
                }
            }
        }
        return out;
    }

private:
    Tree tree_;
    const lyd_node* op_ = nullptr;
};

std::string status(const char* ns, bool ok, const std::string& message = {}) {
    std::string x =
        "<status xmlns=\"" + std::string(ns) + "\">" + (ok ? "Successful" : "Failed") + "</status>";
    if (!message.empty()) {
        x += "<status-message xmlns=\"" + std::string(ns) + "\">" + xmlEscape(message) + "</status-message>";
    }
    return x;
}

/// RFC 3339 date-and-time (fraction and zone optional) to a time point.
std::optional<Clock::time_point> parseDateTime(const std::string& s) {
    static const std::regex re(
        R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?)");
    std::smatch m;
    if (!std::regex_match(s, m, re)) {
        return std::nullopt;
    }
    std::tm tm{};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = std::stoi(m[4]);
    tm.tm_min = std::stoi(m[5]);
    tm.tm_sec = std::stoi(m[6]);
    std::time_t t = timegm(&tm);
    const std::string zone = m[8];
    if (!zone.empty() && zone != "Z") {
        const int sign = zone[0] == '-' ? -1 : 1;
        t -= sign * (std::stoi(zone.substr(1, 2)) * 3600 + std::stoi(zone.substr(4, 2)) * 60);
    }
    return Clock::from_time_t(t);
}

std::string alarmId(const Resource& r, const std::string& cause) {
    return r.kind + ":" + r.name + (r.port.empty() ? "" : "/" + r.port) + ":" + cause;
}

std::string alarmEntryPath(const std::string& id) {
    return std::string(kAlarmList) + "/activeAlarms[id=" + quoted(id) + "]";
}

const char* operation(ncstore::app::Change::Op op) {
    using Op = ncstore::app::Change::Op;
    switch (op) {
    case Op::Create:
        return "create";
    case Op::Delete:
        return "delete";
    case Op::Replace:
        return "replace";
    case Op::Update:
    case Op::Move:
        break;
    }
    return "merge";
}

/// `path` with every node and predicate key prefixed by its module (a step without a prefix
/// is in its parent's module), the modules collected in `modules`.
std::string qualifiedPath(const std::string& path, std::set<std::string>& modules) {
    std::string out, module;
    std::size_t i = 0;
    auto name = [&]() {
        const std::size_t start = i;
        while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) || path[i] == '-' ||
                                   path[i] == '_' || path[i] == '.')) {
            ++i;
        }
        return path.substr(start, i - start);
    };
    auto qualified = [&]() {
        std::string n = name();
        if (i < path.size() && path[i] == ':') {
            ++i;
            module = n;
            n = name();
        }
        modules.insert(module);
        return module + ":" + n;
    };
    while (i < path.size()) {
        const char ch = path[i];
        if (ch == '/') {
            out += ch;
            ++i;
            out += qualified();
        } else if (ch == '[') {
            out += ch;
            ++i;
            if (i < path.size() && (std::isalpha(static_cast<unsigned char>(path[i])) || path[i] == '_')) {
                const std::string saved = module;
                out += qualified();
                module = saved;
            }
        } else if (ch == '\'' || ch == '"') {
            const std::size_t end = path.find(ch, i + 1);
            const std::size_t stop = end == std::string::npos ? path.size() : end + 1;
            out += path.substr(i, stop - i);
            i = stop;
        } else {
            out += ch;
            ++i;
        }
    }
    return out;
}

std::string firstMatch(const std::string& xml, const char* leaf) {
    const std::regex re(std::string("<") + leaf + "(?: [^>]*)?>([^<]*)</" + leaf + ">");
    std::smatch m;
    return std::regex_search(xml, m, re) ? m[1].str() : std::string();
}

} // namespace

Agent::Agent(ncstore::app::Connection& nc, const ly_ctx* ctx, Profile profile, AgentOptions options)
    : nc_(nc), ctx_(ctx), profile_(std::move(profile)), options_(std::move(options)) {
    std::filesystem::create_directories(options_.filesDir);
}

Agent::~Agent() {
    registrations_.clear(); // no callback runs once the registrations are gone
    {
        const std::lock_guard lock(queueMutex_);
        stopping_ = true;
        queueReady_.notify_one();
    }
    if (notifier_.joinable()) {
        notifier_.join();
    }
    const std::lock_guard lock(workersMutex_);
    for (auto& t : workers_) {
        t.join(); // each ends when its edit is answered, or the connection is gone
    }
}

Device Agent::parseDevice(const std::string& xml) const {
    if (xml.find_first_not_of(" \t\r\n") == std::string::npos) {
        return {};
    }
    const Tree tree = parseData(ctx_, xml, LYD_XML, LYD_PARSE_ONLY, 0);
    return deviceFrom(tree.get());
}

Device Agent::readRunning(Datastore ds) {
    return parseDevice(nc_.get(ds, kDevice));
}

Clock::time_point Agent::deviceClock() const {
    const std::lock_guard lock(mutex_);
    return Clock::now() + clockOffset_;
}

void Agent::start() {
    if (std::ifstream in(options_.stateFile); in) {
        std::uint64_t last = 0;
        if (in >> last) {
            since_ = last;
        }
    }
    loadAlarms();
    {
        const std::lock_guard lock(mutex_);
        device_ = readRunning();
        reconcileAlarms();
        publishState();
    }

    // Pulled: what is computed at the moment it is read.
    registrations_.push_back(nc_.provide(std::string(kDevice) + "/info/current-datetime",
                                         [this](const std::string&) { return datetimeXml(deviceClock()); }));
    registrations_.push_back(nc_.provide("/org-openroadm-pm:current-pm-list", [this](const std::string&) {
        const std::lock_guard lock(mutex_);
        return pmXml(device_, Clock::now() + clockOffset_, unavailableSince_);
    }));
    registerRpcs();

    ncstore::app::SubscribeOptions check;
    check.xpath = kDevice;
    check.priority = 10;
    check.apply = false;
    check.verify = [this](const ncstore::app::ChangeSet& c, ncstore::app::Verification& v) { verify(c, v); };
    registrations_.push_back(nc_.subscribe(std::move(check)));

    notifier_ = std::thread([this] { notifyLoop(); });
    ncstore::app::SubscribeOptions apply;
    apply.xpath = kDevice;
    apply.since = since_;
    apply.initial = !since_;
    apply.onApply = [this](const ncstore::app::ChangeSet& c) { onApply(c); };
    registrations_.push_back(nc_.subscribe(std::move(apply)));
}

void Agent::verify(const ncstore::app::ChangeSet&, ncstore::app::Verification& v) {
    const Device before = parseDevice(v.getBefore(kDevice));
    const Device after = parseDevice(v.get(kDevice));
    if (const auto violation = check(before, after)) {
        NCS_LOG(info) << "refused: " << violation->message << " (" << violation->path << ")";
        throw Error(violation->message, violation->tag, violation->path, violation->appTag);
    }
}

void Agent::onApply(const ncstore::app::ChangeSet& changes) {
    try {
        {
            // The state follows the configuration as it is now, which a replay after a restart
            // may already have moved past this change set: state is a function of it.
            const std::lock_guard lock(mutex_);
            device_ = readRunning();
            reconcileAlarms();
            publishState();
        }
        NCS_LOG(info) << "applied commit " << changes.commitId << " (" << changes.changes.size() << " changes"
                      << (changes.initial ? ", initial" : "") << ")";
    } catch (const std::exception& e) {
        // Recorded as applied all the same: a change set is given once; the next one, or a
        // restart, recomputes everything from the configuration.
        NCS_LOG(error) << "applying commit " << changes.commitId << ": " << e.what();
    }
    // The notification needs the commit's record, an operational read: not on the callback
    // thread, where the server would wait for this agent's own providers (agent.hpp).
    const std::lock_guard lock(queueMutex_);
    queue_.push_back(changes);
    queueReady_.notify_one();
}

void Agent::notifyLoop() {
    for (;;) {
        ncstore::app::ChangeSet changes;
        {
            std::unique_lock lock(queueMutex_);
            queueReady_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;
            }
            changes = std::move(queue_.front());
            queue_.pop_front();
        }
        if (!changes.initial) {
            changeNotification(changes);
        }
        // Recorded once its notification is out: killed before, the replay sends it again.
        if (changes.commitId != 0) {
            saveCommit(changes.commitId);
        }
    }
}

void Agent::saveCommit(std::uint64_t id) {
    const auto tmp = options_.stateFile.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << id << "\n";
        out.flush();
        if (!out) {
            NCS_LOG(error) << "cannot write the state file " << tmp;
            return;
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, options_.stateFile, ec);
    if (ec) {
        NCS_LOG(error) << "cannot replace the state file " << options_.stateFile << ": " << ec.message();
    }
}

void Agent::publishState() {
    std::set<std::string> entries;
    for (const auto& [name, cp] : device_.circuitPacks) {
        entries.insert(circuitPackPath(name));
        for (const auto& [port, p] : cp.ports) {
            entries.insert(portPath(name, port));
        }
    }
    for (const auto& [name, i] : device_.interfaces) {
        entries.insert(interfacePath(name));
    }
    for (const auto& [name, s] : device_.shelves) {
        entries.insert(std::string(kDevice) + "/shelves[shelf-name=" + quoted(name) + "]");
    }
    for (const auto& [n, g] : device_.degrees) {
        entries.insert(std::string(kDevice) + "/degree[degree-number='" + std::to_string(n) + "']");
    }
    for (const auto& [n, s] : device_.srgs) {
        entries.insert(std::string(kDevice) + "/shared-risk-group[srg-number='" + std::to_string(n) + "']");
    }
    // Merged over what was pushed before (values replaced), then what no longer exists goes:
    // a reader never sees the device without its state.
    nc_.push(deviceStateXml(device_, profile_));
    for (const auto& gone : pushedEntries_) {
        if (!entries.contains(gone)) {
            try {
                nc_.pushDelete(gone);
            } catch (const Error& e) {
                NCS_LOG(warning) << "removing the state of " << gone << ": " << e.what();
            }
        }
    }
    pushedEntries_ = std::move(entries);
}

void Agent::loadAlarms() {
    const std::string xml = nc_.get(Datastore::Operational, kAlarmList);
    if (xml.find("activeAlarms") == std::string::npos) {
        return;
    }
    const Tree tree = parseData(ctx_, xml, LYD_XML, LYD_PARSE_ONLY, 0);
    Set found;
    ly_set* raw = nullptr;
    if (lyd_find_xpath(tree.get(), "/org-openroadm-alarm:active-alarm-list/activeAlarms", &raw) !=
        LY_SUCCESS) {
        throw YangError("reading the active alarms", ctx_);
    }
    found.reset(raw);
    auto value = [](const lyd_node* n, const char* path) {
        lyd_node* m = nullptr;
        return lyd_find_path(n, path, 0, &m) == LY_SUCCESS && m && lyd_get_value(m)
                   ? std::string(lyd_get_value(m))
                   : std::string();
    };
    const std::lock_guard lock(mutex_);
    for (std::uint32_t i = 0; i < found->count; ++i) {
        const lyd_node* n = found->dnodes[i];
        Alarm a;
        a.id = value(n, "id");
        a.resource.kind = value(n, "resource/resourceType/type");
        if (a.resource.kind == "port") {
            a.resource.name = value(n, "resource/resource/port/circuit-pack-name");
            a.resource.port = value(n, "resource/resource/port/port-name");
        } else {
            lyd_node* inner = nullptr;
            if (lyd_find_path(n, "resource/resource", 0, &inner) == LY_SUCCESS && inner && lyd_child(inner)) {
                const char* v = lyd_get_value(lyd_child(inner));
                a.resource.name = v ? v : "";
            }
        }
        a.cause = value(n, "probableCause/cause");
        a.direction = value(n, "probableCause/direction");
        a.location = value(n, "probableCause/location");
        a.raiseTime = value(n, "raiseTime");
        a.severity = value(n, "severity");
        a.detail = value(n, "additional-detail");
        alarms_[a.id] = a;
    }
    NCS_LOG(info) << "active alarms kept from before: " << alarms_.size();
}

void Agent::raise(const Alarm& a) {
    if (alarms_.contains(a.id)) {
        return;
    }
    nc_.push(alarmListXml(device_.nodeId, {{a.id, a}}), Lifetime::Persistent);
    alarms_[a.id] = a;
    NCS_LOG(info) << "alarm raised: " << a.id << " " << a.severity;
    nc_.notify(alarmNotificationXml(device_.nodeId, a, false, a.raiseTime));
}

void Agent::clear(const std::string& id) {
    const auto it = alarms_.find(id);
    if (it == alarms_.end()) {
        return;
    }
    const Alarm a = it->second;
    alarms_.erase(it);
    alarmExpiry_.erase(id);
    nc_.pushDelete(alarmEntryPath(id), Lifetime::Persistent);
    NCS_LOG(info) << "alarm cleared: " << id;
    nc_.notify(alarmNotificationXml(device_.nodeId, a, true, dateTime(Clock::now() + clockOffset_)));
}

void Agent::reconcileAlarms() {
    const auto now = Clock::now() + clockOffset_;
    std::set<std::string> wanted;
    for (const auto& [cpName, cp] : device_.circuitPacks) {
        for (const auto& [portName, port] : cp.ports) {
            const std::string key = cpName + "/" + portName;
            if (portOperState(device_, cpName, portName) == "outOfService") {
                unavailableSince_.try_emplace(key, now);
            } else {
                unavailableSince_.erase(key);
            }
            if (port.admin != "outOfService") {
                continue;
            }
            Alarm a;
            a.resource = {"port", cpName, portName};
            a.cause = "administrativeDown";
            a.id = alarmId(a.resource, a.cause);
            a.severity = "minor";
            a.raiseTime = dateTime(now);
            a.detail = "port " + key + " is administratively out of service";
            wanted.insert(a.id);
            raise(a);
        }
    }
    std::vector<std::string> stale;
    for (const auto& [id, a] : alarms_) {
        if (a.cause == "administrativeDown" && a.resource.kind == "port" && !wanted.contains(id)) {
            stale.push_back(id);
        }
    }
    for (const auto& id : stale) {
        clear(id);
    }
}

std::string Agent::moduleNamespace(const std::string& module) const {
    const lys_module* m = ly_ctx_get_module_implemented(ctx_, module.c_str());
    return m ? m->ns : "";
}

void Agent::changeNotification(const ncstore::app::ChangeSet& changes) {
    std::string who = "<changed-by><server/></changed-by>";
    std::string when;
    try {
        const std::string commit =
            nc_.get(Datastore::Operational,
                    "/ncstore-commits:commits/commit[id='" + std::to_string(changes.commitId) + "']");
        const std::string user = firstMatch(commit, "user");
        const std::string session = firstMatch(commit, "session-id");
        const std::string host = firstMatch(commit, "source-host");
        when = firstMatch(commit, "time");
        // changed-by/username is org-openroadm-user-mgmt's username-type: a user it cannot
        // name is shown as the server.
        static const std::regex username("[a-z][a-z0-9]{2,31}");
        static const std::regex ip(R"([0-9.]+|[0-9a-fA-F:]+)");
        if (std::regex_match(user, username) && !session.empty()) {
            who = "<changed-by><username>" + user + "</username><session-id>" + session + "</session-id>" +
                  (std::regex_match(host, ip) ? "<source-host>" + host + "</source-host>" : "") +
                  "</changed-by>";
        }
    } catch (const Error& e) {
        NCS_LOG(warning) << "no commit record for " << changes.commitId << ": " << e.what();
    }
    std::string x = "<change-notification xmlns=\"" + std::string(kDeviceNs) + "\">";
    if (!when.empty()) {
        x += "<change-time>" + xmlEscape(when) + "</change-time>";
    }
    x += who + "<datastore>running</datastore>";
    for (const auto& c : changes.changes) {
        // An instance-identifier value in XML: every node and key qualified, every module
        // named declared as its prefix.
        std::set<std::string> modules;
        const std::string target = qualifiedPath(c.path, modules);
        x += "<edit><target";
        for (const auto& m : modules) {
            x += " xmlns:" + m + "=\"" + xmlEscape(moduleNamespace(m)) + "\"";
        }
        x += ">" + xmlEscape(target) + "</target><operation>" + operation(c.op) + "</operation></edit>";
    }
    x += "</change-notification>";
    try {
        nc_.notify(x, when);
    } catch (const Error& e) {
        NCS_LOG(error) << "change-notification of commit " << changes.commitId << ": " << e.what();
    }
}

std::filesystem::path Agent::fileIn(const std::string& name) const {
    if (name.empty() || name.find('/') != std::string::npos || name.front() == '.') {
        throw Error("a file name without a directory (the agent's files directory holds it): '" + name + "'",
                    "invalid-value");
    }
    return options_.filesDir / name;
}

std::string Agent::control(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) {
        words.push_back(w);
    }
    const std::string usage = "expected: raise KIND NAME [PORT] CAUSE SEVERITY [DETAIL...] | clear KIND NAME "
                              "[PORT] CAUSE (KIND: port, circuit-pack, interface, connection, degree, "
                              "shared-risk-group, shelf, device)";
    if (words.size() < 4 || (words[0] != "raise" && words[0] != "clear")) {
        throw std::invalid_argument(usage);
    }
    const bool raising = words[0] == "raise";
    Resource r;
    r.kind = words[1];
    r.name = words[2];
    std::size_t next = 3;
    if (r.kind == "port") {
        r.port = words[3];
        next = 4;
    }
    if (words.size() < next + (raising ? 2 : 1)) {
        throw std::invalid_argument(usage);
    }
    const std::string cause = words[next];
    const std::string id = alarmId(r, cause);
    const std::lock_guard lock(mutex_);
    if (!raising) {
        if (!alarms_.contains(id)) {
            return "no active alarm " + id;
        }
        clear(id);
        return "cleared " + id;
    }
    Alarm a;
    a.resource = r;
    a.cause = cause;
    a.id = id;
    a.severity = words[next + 1];
    a.raiseTime = dateTime(Clock::now() + clockOffset_);
    for (std::size_t i = next + 2; i < words.size(); ++i) {
        a.detail += (a.detail.empty() ? "" : " ") + words[i];
    }
    if (a.detail.empty()) {
        a.detail = "injected fault";
    }
    raise(a);
    return "raised " + id;
}

void Agent::tick() {
    const std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::string> due;
    for (const auto& [id, at] : alarmExpiry_) {
        if (at <= now) {
            due.push_back(id);
        }
    }
    for (const auto& id : due) {
        clear(id);
    }
}

void Agent::registerRpcs() {
    using ncstore::app::Responder;
    auto sync = [this](const char* path, std::function<std::string(const RpcInput&)> fn) {
        registrations_.push_back(nc_.handleRpc(path, [this, fn](const std::string& xml) {
            const RpcInput input(ctx_, xml);
            return fn(input);
        }));
    };

    sync("/org-openroadm-device:led-control", [this](const RpcInput& in) {
        Resource r{"circuit-pack", in.leaf("circuit-pack-name"), {}};
        if (r.name.empty()) {
            r = {"shelf", in.leaf("shelf-name"), {}};
        }
        const bool on = in.leaf("enabled") == "true";
        const std::lock_guard lock(mutex_);
        Alarm a;
        a.resource = r;
        a.cause = "equipmentLedOn";
        a.id = alarmId(r, a.cause);
        a.severity = "warning";
        a.raiseTime = dateTime(Clock::now() + clockOffset_);
        a.detail = "location LED of " + r.kind + " " + r.name + " is on";
        a.direction = "notApplicable";
        a.location = "notApplicable";
        if (on) {
            raise(a);
        } else {
            clear(a.id);
        }
        return status(kDeviceNs, true);
    });

    sync("/org-openroadm-device:get-connection-port-trail", [this](const RpcInput& in) {
        // Computed from the configuration as it is now, not from the last change applied.
        const Device now = readRunning();
        std::string out = portTrailXml(now, in.leaf("connection-name"));
        // Each child of the output in the module's namespace.
        std::string withNs;
        static const std::regex top(R"(<(status|status-message|ports)>)");
        withNs = std::regex_replace(out, top, "<$1 xmlns=\"" + std::string(kDeviceNs) + "\">");
        return withNs;
    });

    sync("/org-openroadm-device:set-current-datetime", [this](const RpcInput& in) {
        const std::string value = in.leaf("current-datetime");
        const auto t = parseDateTime(value);
        if (!t) {
            return status(kDeviceNs, false, "cannot read date-and-time " + value);
        }
        const std::lock_guard lock(mutex_);
        clockOffset_ = *t - Clock::now();
        NCS_LOG(info) << "device clock set to " << value;
        return status(kDeviceNs, true);
    });

    sync("/org-openroadm-device:disable-automatic-shutoff", [this](const RpcInput& in) {
        Resource r{"degree", in.leaf("degree-number"), {}};
        if (r.name.empty()) {
            r = {"other", "line-amplifier " + in.leaf("amp-number"), {}};
        }
        const int seconds = std::stoi(in.leaf("support-timer", "20"));
        const std::lock_guard lock(mutex_);
        Alarm a;
        a.resource = r;
        a.cause = "automaticShutoffDisabled";
        a.id = alarmId(r, a.cause);
        a.severity = "warning";
        a.raiseTime = dateTime(Clock::now() + clockOffset_);
        a.detail = "automatic shutoff disabled for " + std::to_string(seconds) + " s";
        raise(a);
        alarmExpiry_[a.id] = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        return status(kDeviceNs, true);
    });

    registrations_.push_back(nc_.handleRpcAsync(
        "/org-openroadm-device:create-tech-info",
        [this](const std::string& xml, std::shared_ptr<Responder> responder) {
            const RpcInput in(ctx_, xml);
            const std::string shelf = in.leaf("shelf-id");
            const auto now = Clock::now() + clockOffset_;
            std::string stamp = dateTime(now);
            std::erase(stamp, ':');
            const std::string name = "tech-info-" + stamp + ".txt";
            bool ok = true;
            std::string message;
            {
                std::ofstream out(options_.filesDir / name);
                const std::lock_guard lock(mutex_);
                out << "ncstore-roadm-agent tech-info, " << dateTime(now) << "\nnode-id: " << device_.nodeId
                    << "\nshelf: " << (shelf.empty() ? "(all)" : shelf)
                    << "\nlog-option: " << in.leaf("log-option") << "\n\n[profile]\n";
                for (const auto& [k, v] : profile_.info) {
                    out << k << " = " << v << "\n";
                }
                out << "\n[active alarms]\n";
                for (const auto& [id, a] : alarms_) {
                    out << id << " " << a.severity << " since " << a.raiseTime << " " << a.detail << "\n";
                }
                out << "\n[running configuration]\n" << nc_.get(Datastore::Running, kDevice) << "\n";
                ok = static_cast<bool>(out);
                if (!ok) {
                    message = "cannot write " + (options_.filesDir / name).string();
                }
            }
            std::string fields;
            if (!shelf.empty()) {
                fields += "<shelf-id>" + xmlEscape(shelf) + "</shelf-id>";
            }
            fields += "<log-file-name>" + xmlEscape(name) + "</log-file-name>";
            std::string reply = std::regex_replace(fields, std::regex("<(shelf-id|log-file-name)>"),
                                                   "<$1 xmlns=\"" + std::string(kDeviceNs) + "\">");
            responder->reply(reply + status(kDeviceNs, ok, message));
            std::string note =
                "<create-tech-info-notification xmlns=\"" + std::string(kDeviceNs) + "\">" + fields +
                "<status>" + (ok ? "Successful" : "Failed") + "</status>" +
                (message.empty() ? "" : "<status-message>" + xmlEscape(message) + "</status-message>") +
                "</create-tech-info-notification>";
            nc_.notify(note);
        }));

    registrations_.push_back(nc_.handleRpcAsync(
        "/org-openroadm-de-operations:restart",
        [this](const std::string& xml, std::shared_ptr<Responder> responder) {
            const RpcInput in(ctx_, xml);
            const std::string option = in.leaf("option", "warm");
            const std::string kind = in.leaf("resourceType/type");
            {
                // A device restart reloads everything from the configuration; a cold one also
                // forgets the faults the configuration does not explain (injected, LED, timers).
                const std::lock_guard lock(mutex_);
                if (kind == "device" && option == "cold") {
                    std::vector<std::string> ids;
                    for (const auto& [id, a] : alarms_) {
                        if (a.cause != "administrativeDown") {
                            ids.push_back(id);
                        }
                    }
                    for (const auto& id : ids) {
                        clear(id);
                    }
                }
                device_ = readRunning();
                reconcileAlarms();
                publishState();
            }
            responder->reply(status(kOpsNs, true));
            nc_.notify("<restart-notification xmlns=\"" + std::string(kOpsNs) + "\">" +
                       in.children({"device", "resource", "resourceType"}) + "</restart-notification>");
        }));

    auto dbNote = [this](const char* name, bool ok, const std::string& message,
                         const std::string& extra = {}) {
        nc_.notify("<" + std::string(name) + " xmlns=\"" + kDbNs + "\">" + extra + "<status>" +
                   (ok ? "Successful" : "Failed") + "</status>" +
                   (message.empty() ? "" : "<status-message>" + xmlEscape(message) + "</status-message>") +
                   "</" + name + ">");
    };

    registrations_.push_back(nc_.handleRpcAsync(
        "/org-openroadm-database:db-backup",
        [this, dbNote](const std::string& xml, std::shared_ptr<Responder> responder) {
            const RpcInput in(ctx_, xml);
            const auto path = fileIn(in.leaf("filename", "roadm-db-backup.xml"));
            std::string message;
            {
                std::ofstream out(path, std::ios::trunc);
                out << nc_.get(Datastore::Running, kDevice);
                if (!out) {
                    message = "cannot write " + path.string();
                }
            }
            NCS_LOG(info) << "db-backup to " << path << (message.empty() ? "" : ": " + message);
            responder->reply(status(kDbNs, message.empty(), message));
            dbNote("db-backup-notification", message.empty(), message);
        }));

    registrations_.push_back(nc_.handleRpcAsync(
        "/org-openroadm-database:db-restore",
        [this, dbNote](const std::string& xml, std::shared_ptr<Responder> responder) {
            const RpcInput in(ctx_, xml);
            const auto path = fileIn(in.leaf("filename", "roadm-db-backup.xml"));
            std::string message;
            try {
                std::ifstream file(path);
                if (!file) {
                    throw std::runtime_error("no backup " + path.filename().string());
                }
                std::stringstream s;
                s << file.rdbuf();
                const Device restored = parseDevice(s.str());
                const std::lock_guard lock(mutex_);
                if (in.leaf("nodeIDCheck", "true") == "true" && restored.nodeId != device_.nodeId) {
                    throw std::runtime_error("the backup is of node " + restored.nodeId + ", this is " +
                                             device_.nodeId + " (nodeIDCheck)");
                }
                staged_ = path;
            } catch (const std::exception& e) {
                message = e.what();
            }
            responder->reply(status(kDbNs, message.empty(), message));
            dbNote("db-restore-notification", message.empty(), message);
        }));

    registrations_.push_back(nc_.handleRpcAsync(
        "/org-openroadm-database:db-activate",
        [this, dbNote](const std::string&, std::shared_ptr<Responder> responder) {
            std::optional<std::filesystem::path> staged;
            {
                const std::lock_guard lock(mutex_);
                staged = staged_;
            }
            std::string config;
            if (staged) {
                std::ifstream file(*staged);
                std::stringstream s;
                s << file.rdbuf();
                config = s.str();
            }
            const auto open = config.find("<org-openroadm-device");
            if (!staged || open == std::string::npos) {
                const std::string why = staged ? "the restored file holds no org-openroadm-device"
                                               : "nothing restored: db-restore first";
                responder->reply(status(kDbNs, false, why));
                dbNote("db-activate-notification", false, why);
                return;
            }
            // The device's subtree replaced whole, as one commit through the server's commit
            // path (and so through this agent's own verify).
            config.insert(open + std::strlen("<org-openroadm-device"),
                          " xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\" nc:operation=\"replace\"");
            auto done = nc_.editAsync(ncstore::app::Batch().xml(config), {.comment = "db-activate"});
            // Waited for elsewhere: the commit runs this agent's verify on this very thread.
            const std::lock_guard lock(workersMutex_);
            workers_.emplace_back([responder, dbNote, done = std::move(done)]() mutable {
                std::string why;
                try {
                    done.get();
                } catch (const std::exception& e) {
                    why = e.what();
                }
                try {
                    responder->reply(status(kDbNs, why.empty(), why));
                    dbNote("db-activate-notification", why.empty(), why,
                           "<db-active-notification-type>activate</db-active-notification-type>");
                } catch (const std::exception& e) {
                    NCS_LOG(error) << "db-activate: " << e.what();
                }
            });
        },
        std::chrono::milliseconds(30000)));
}

} // namespace ncstore::roadm
