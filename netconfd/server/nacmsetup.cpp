#include "nacmsetup.hpp"

#include "datadir.hpp"
#include "editcontent.hpp"
#include "users.hpp"

#include "ncstore/files.hpp"
#include "ncstore/log.hpp"
#include "ncstore/models.hpp"

#include <chrono>
#include <cstring>
#include <ctime>

namespace ncstore::netconfd::nacmsetup {

namespace {

constexpr const char* kNacmNs = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm";
constexpr const char* kNetconfNs = "urn:ietf:params:xml:ns:netconf:base:1.0";
constexpr const char* kSelf = "ncstored"; // the user of the server's own writes, for the logs

/// Applies `xml` (edit-config content) to running as the server itself, validated like an
/// edit-config of /nacm.
void write(ds::Store& store, AccessControl& control, const std::string& xml) {
    const Tree edit = parseEditContent(control.context(), xml);
    WriteCheck check(control, nullptr, true);
    check.run(store, [&] {
        return store.edit(check.context({.session = 0, .user = kSelf}), ds::Datastore::Running, edit.get());
    });
}

std::string groupXml(const std::string& group, const std::vector<std::string>& users) {
    std::string xml = "<group><name>" + group + "</name>";
    for (const auto& u : users) {
        xml += "<user-name>" + u + "</user-name>";
    }
    return xml + "</group>";
}

void requireName(const std::string& name, const char* what) {
    // The users file's rule ([A-Za-z0-9._-]) for groups too: no quoting needed anywhere.
    if (!UserDb::validName(name)) {
        throw std::invalid_argument(std::string("invalid ") + what + " name '" + name +
                                    "': use 1 to 64 of A-Z a-z 0-9 . _ -");
    }
}

/// Whether some rule-list of running applies to `group` (names it or "*").
bool hasRuleList(const ds::Store& store, const std::string& group) {
    bool found = false;
    store.read(ds::Datastore::Running, [&](const lyd_node* tree) {
        found = false;
        const lyd_node* nacm = nacmTop(tree);
        for (const lyd_node* rl = nacm ? lyd_child(nacm) : nullptr; rl; rl = rl->next) {
            if (std::strcmp(rl->schema->name, "rule-list") != 0) {
                continue;
            }
            for (const lyd_node* g = lyd_child(rl); g; g = g->next) {
                if (std::strcmp(g->schema->name, "group") == 0) {
                    const std::string v = lyd_get_value(g);
                    found = found || v == group || v == "*";
                }
            }
        }
    });
    return found;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        out += (out.empty() ? "" : ", ") + n;
    }
    return out.empty() ? "nobody" : out;
}

/// The data directory opened by an offline command; the lock first, released last.
struct Offline {
    explicit Offline(const ServerConfig& config)
        : lock((files::preparePrivateDir(config.dataDir), lockFile(config))),
          ctx(buildContext(modelOptions(config))), store(ds::Store::open(ctx.get(), storeOptions(config))),
          control(ctx.get(), "") {}

    files::ProcessLock lock;
    Context ctx;
    std::unique_ptr<ds::Store> store;
    AccessControl control;
};

std::string timestamp() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

} // namespace

std::string firstStartXml(const std::vector<std::string>& admins) {
    return std::string("<nacm xmlns=\"") + kNacmNs + "\"><groups>" + groupXml(kAdminGroup, admins) +
           "</groups><rule-list><name>" + kAdminGroup + "</name><group>" + kAdminGroup +
           "</group><rule><name>permit-all</name><module-name>*</module-name><access-operations>*</"
           "access-operations>"
           "<action>permit</action><comment>written at the first start: group admin may do "
           "everything</comment>"
           "</rule></rule-list></nacm>";
}

bool initialize(ds::Store& store, AccessControl& control, const std::vector<std::string>& admins) {
    // Commit ids are kept across restarts: 0 means nothing was ever written to this store.
    if (store.read(ds::Datastore::Running, [](const lyd_node*) {}) != 0) {
        return false;
    }
    for (const auto& a : admins) {
        requireName(a, "user");
    }
    write(store, control, firstStartXml(admins));
    NCS_LOG(info) << "NACM first start: group " << kAdminGroup
                  << " (every operation permitted): " << joined(admins);
    return true;
}

void addToGroup(const ServerConfig& config, const std::vector<std::string>& usersBefore,
                const std::string& user, const std::string& group, std::ostream& out) {
    requireName(user, "user");
    requireName(group, "group");
    Offline dir(config);
    if (initialize(*dir.store, dir.control, usersBefore)) {
        out << "first start: group " << kAdminGroup << " (every operation permitted): " << joined(usersBefore)
            << "\n";
    }
    write(*dir.store, dir.control,
          std::string("<nacm xmlns=\"") + kNacmNs + "\"><groups>" + groupXml(group, {user}) +
              "</groups></nacm>");
    out << "user " << user << " is in NACM group " << group << "\n";
    if (!hasRuleList(*dir.store, group)) {
        out << "note: no rule-list names group " << group
            << " yet: its users get the NACM defaults (read permitted, write denied)\n";
    }
}

void reset(const ServerConfig& config, const std::vector<std::string>& users, std::ostream& out) {
    for (const auto& u : users) {
        requireName(u, "user");
    }
    Offline dir(config);
    std::string old;
    dir.store->read(ds::Datastore::Running, [&](const lyd_node* tree) {
        const lyd_node* nacm = nacmTop(tree);
        old = nacm ? printTree(nacm, LYD_XML, 0) : "";
    });
    if (!old.empty()) {
        const auto saved = config.dataDir / ("nacm-before-reset-" + timestamp() + ".xml");
        files::writePrivateFile(saved, old);
        out << "the NACM configuration replaced is kept in " << saved.string() << "\n";
    }
    std::string xml = firstStartXml(users);
    const std::string open = std::string("<nacm xmlns=\"") + kNacmNs + "\"";
    xml.replace(0, open.size(), open + " xmlns:nc=\"" + kNetconfNs + "\" nc:operation=\"replace\"");
    write(*dir.store, dir.control, xml);
    out << "NACM reset to the first-start rules: enable-nacm true, group " << kAdminGroup
        << " (every operation permitted): " << joined(users) << "\n";
}

} // namespace ncstore::netconfd::nacmsetup
