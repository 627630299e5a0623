#include "NcClient.hpp"

#include <cstring>
#include <sstream>
#include <thread>

namespace ncstore::client {

namespace {

char* duplicate(const std::string& s) {
    // libnetconf2 frees what the auth callbacks return with free(): hand it a malloc'ed copy.
    return strdup(s.c_str());
}

char* passwordCallback(const char* /*user*/, const char* /*host*/, void* priv) {
    const auto* options = static_cast<const ConnectOptions*>(priv);
    return options->password ? duplicate(*options->password) : nullptr;
}

char* interactiveCallback(const char* /*authName*/, const char* /*instruction*/, const char* /*prompt*/,
                          int /*echo*/, void* priv) {
    const auto* options = static_cast<const ConnectOptions*>(priv);
    return options->password ? duplicate(*options->password) : nullptr;
}

char* passphraseCallback(const char* /*keyPath*/, void* /*priv*/) {
    return duplicate("");
}

int acceptHostKey(const char* /*host*/, ssh_session /*ssh*/, void* /*priv*/) {
    // A benchmark/administration client for servers on loopback whose host keys are generated
    // per data dir: known_hosts checking would only get in the way.
    return 0;
}

std::string opaqueValue(const lyd_node* first, const char* name) {
    lyd_node* found = nullptr;
    if (lyd_find_sibling_opaq_next(first, name, &found) != LY_SUCCESS || !found) {
        return "";
    }
    const auto* opaq = reinterpret_cast<const lyd_node_opaq*>(found);
    return opaq->value ? opaq->value : "";
}

std::vector<RpcErrorInfo> extractErrors(const lyd_node* envelope) {
    std::vector<RpcErrorInfo> errors;
    if (!envelope) {
        return errors;
    }
    for (const lyd_node* err = lyd_child(envelope); err; err = err->next) {
        if (std::strcmp(LYD_NAME(err), "rpc-error") != 0) {
            continue;
        }
        const lyd_node* first = lyd_child(err);
        RpcErrorInfo info{opaqueValue(first, "error-type"),
                          opaqueValue(first, "error-tag"),
                          opaqueValue(first, "error-severity"),
                          opaqueValue(first, "error-app-tag"),
                          opaqueValue(first, "error-path"),
                          opaqueValue(first, "error-message"),
                          ""};
        lyd_node* infoNode = nullptr;
        if (lyd_find_sibling_opaq_next(first, "error-info", &infoNode) == LY_SUCCESS && infoNode &&
            lyd_child(infoNode)) {
            info.info = print(lyd_child(infoNode), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK);
        }
        errors.push_back(std::move(info));
    }
    return errors;
}

} // namespace

Rpc checkedRpc(nc_rpc* rpc, const char* what) {
    if (!rpc) {
        throw ClientError(std::string("cannot build the <") + what + "> RPC");
    }
    return Rpc(rpc);
}

std::string Reply::render(NC_WD_MODE wdMode) const {
    std::ostringstream out;
    if (isError()) {
        for (const auto& e : errors) {
            out << "rpc-error\n";
            const std::pair<const char*, const std::string*> fields[] = {
                {"type", &e.type}, {"tag", &e.tag},         {"severity", &e.severity}, {"app-tag", &e.appTag},
                {"path", &e.path}, {"message", &e.message}, {"info", &e.info}};
            for (const auto& [name, value] : fields) {
                if (!value->empty()) {
                    out << "  " << name << ": " << *value << "\n";
                }
            }
        }
        return out.str();
    }
    if (operation && lyd_child(operation.get())) {
        uint32_t wd = 0;
        switch (wdMode) {
        case NC_WD_ALL:
            wd = LYD_PRINT_WD_ALL;
            break;
        case NC_WD_ALL_TAG:
            wd = LYD_PRINT_WD_ALL_TAG;
            break;
        case NC_WD_TRIM:
            wd = LYD_PRINT_WD_TRIM;
            break;
        case NC_WD_EXPLICIT:
            wd = LYD_PRINT_WD_EXPLICIT;
            break;
        default:
            break;
        }
        return print(lyd_child(operation.get()), LYD_XML, LYD_PRINT_WITHSIBLINGS | wd);
    }
    if (envelope && lyd_child(envelope.get()) &&
        std::strcmp(LYD_NAME(lyd_child(envelope.get())), "ok") == 0) {
        return "ok\n";
    }
    return envelope ? print(envelope.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS) : std::string("(empty reply)\n");
}

void applyThreadOptions(const ConnectOptions& options) {
    if (nc_client_set_schema_searchpath(options.schemaDir.c_str()) != 0) {
        throw ClientError("cannot set the schema search path " + options.schemaDir.string());
    }
    if (nc_client_ssh_set_username(options.user.c_str()) != 0) {
        throw ClientError("cannot set the SSH username");
    }
    auto* priv = const_cast<ConnectOptions*>(&options);
    nc_client_ssh_set_auth_hostkey_check_clb(acceptHostKey, nullptr);
    nc_client_ssh_set_auth_password_clb(passwordCallback, priv);
    nc_client_ssh_set_auth_interactive_clb(interactiveCallback, priv);
    nc_client_ssh_set_auth_privkey_passphrase_clb(passphraseCallback, nullptr);
    if (options.privateKey) {
        const std::string priv_key = options.privateKey->string();
        const std::string pub_key = priv_key + ".pub";
        if (nc_client_ssh_add_keypair(pub_key.c_str(), priv_key.c_str()) != 0) {
            throw ClientError("cannot use the key pair " + priv_key + " / " + pub_key);
        }
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_PUBLICKEY, 10);
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_PASSWORD, options.password ? 5 : -1);
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_INTERACTIVE, options.password ? 4 : -1);
    } else {
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_PUBLICKEY, -1);
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_PASSWORD, 10);
        nc_client_ssh_set_auth_pref(NC_SSH_AUTH_INTERACTIVE, 5);
    }
}

Session::Session(const ConnectOptions& options) {
    constexpr int attempts = 6;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        // A null context: libnetconf2 creates one per session, fills it from the server's
        // modules (schemas cached in the private search path), and frees it with the session.
        nc_session* raw = nc_connect_ssh(options.host.c_str(), options.port, nullptr);
        if (raw) {
            session_.reset(raw);
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
    }
    throw ClientError("cannot connect to " + options.user + "@" + options.host + ":" +
                      std::to_string(options.port) + " (NETCONF over SSH) after " + std::to_string(attempts) +
                      " attempts");
}

void Session::Deleter::operator()(nc_session* session) const noexcept {
    nc_session_free(session, nullptr);
}

uint32_t Session::id() const {
    return nc_session_get_id(session_.get());
}

const ly_ctx* Session::context() const {
    return nc_session_get_ctx(session_.get());
}

Reply Session::call(nc_rpc* rpc, int timeoutMs) {
    uint64_t msgid = 0;
    const NC_MSG_TYPE sent = nc_send_rpc(session_.get(), rpc, timeoutMs, &msgid);
    if (sent == NC_MSG_WOULDBLOCK) {
        throw ClientError("timeout sending the RPC");
    }
    if (sent != NC_MSG_RPC) {
        throw ClientError("cannot send the RPC (session " + std::to_string(id()) + ")");
    }
    for (;;) {
        lyd_node* envp = nullptr;
        lyd_node* op = nullptr;
        const NC_MSG_TYPE got = nc_recv_reply(session_.get(), rpc, msgid, timeoutMs, &envp, &op);
        Reply reply{Tree(envp), Tree(op), {}};
        switch (got) {
        case NC_MSG_REPLY:
            reply.errors = extractErrors(reply.envelope.get());
            return reply;
        case NC_MSG_REPLY_ERR_MSGID:
        case NC_MSG_NOTIF:
            continue; // not ours: read on
        case NC_MSG_WOULDBLOCK:
            throw ClientError("timeout waiting for the reply (" + std::to_string(timeoutMs) + " ms)");
        default:
            throw ClientError("cannot receive the reply (session " + std::to_string(id()) + ")");
        }
    }
}

std::optional<Notification> Session::receiveNotification(int timeoutMs) {
    lyd_node* envp = nullptr;
    lyd_node* op = nullptr;
    const NC_MSG_TYPE got = nc_recv_notif(session_.get(), timeoutMs, &envp, &op);
    Tree envelope{envp};
    Tree content{op};
    if (got == NC_MSG_WOULDBLOCK) {
        return std::nullopt;
    }
    if (got != NC_MSG_NOTIF) {
        throw ClientError("the session ended (session " + std::to_string(id()) + ")");
    }
    Notification n;
    for (const lyd_node* c = lyd_child(envelope.get()); c; c = c->next) {
        const auto* o = reinterpret_cast<const lyd_node_opaq*>(c);
        if (!c->schema && o->name.name && std::string(o->name.name) == "eventTime" && o->value) {
            n.eventTime = o->value;
        }
    }
    n.content = std::move(content);
    return n;
}

ClientLibrary::ClientLibrary() {
    nc_client_init();
    nc_verbosity(NC_VERB_ERROR);
}

ClientLibrary::~ClientLibrary() {
    nc_client_destroy();
}

NC_DATASTORE parseDatastore(const std::string& name) {
    if (name == "running") {
        return NC_DATASTORE_RUNNING;
    }
    if (name == "candidate") {
        return NC_DATASTORE_CANDIDATE;
    }
    if (name == "startup") {
        return NC_DATASTORE_STARTUP;
    }
    throw std::invalid_argument("unknown datastore '" + name + "' (running, candidate, startup)");
}

NC_WD_MODE parseWithDefaults(const std::string& name) {
    if (name.empty()) {
        return NC_WD_UNKNOWN;
    }
    if (name == "report-all") {
        return NC_WD_ALL;
    }
    if (name == "report-all-tagged") {
        return NC_WD_ALL_TAG;
    }
    if (name == "trim") {
        return NC_WD_TRIM;
    }
    if (name == "explicit") {
        return NC_WD_EXPLICIT;
    }
    throw std::invalid_argument("unknown with-defaults mode '" + name + "'");
}

namespace {

/// End of the start tag that begins at `pos` ('<'), skipping quoted attribute values.
size_t startTagEnd(const std::string& xml, size_t pos) {
    char quote = 0;
    for (size_t i = pos + 1; i < xml.size(); ++i) {
        const char c = xml[i];
        if (quote) {
            if (c == quote) {
                quote = 0;
            }
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '>') {
            return i;
        }
    }
    throw std::invalid_argument("unterminated start tag in the payload");
}

/// The prefixed namespace declarations (` xmlns:p="uri"`) of the start tag xml[begin, end).
std::vector<std::pair<std::string, std::string>> prefixDeclarations(const std::string& xml, size_t begin,
                                                                    size_t end) {
    std::vector<std::pair<std::string, std::string>> decls;
    for (size_t at = xml.find("xmlns:", begin); at != std::string::npos && at < end;
         at = xml.find("xmlns:", at + 6)) {
        const auto eq = xml.find('=', at);
        if (eq == std::string::npos || eq >= end) {
            break;
        }
        const auto q = xml.find_first_of("\"'", eq);
        const auto qEnd = q == std::string::npos ? q : xml.find(xml[q], q + 1);
        if (qEnd == std::string::npos || qEnd >= end) {
            break;
        }
        decls.emplace_back(xml.substr(at + 6, eq - at - 6), xml.substr(at, qEnd + 1 - at));
    }
    return decls;
}

/// Copies `inner` and adds the declarations to each of its top-level start tags that lacks them,
/// so the prefixes the removed wrapper declared (e.g. nc: of nc:operation) stay bound.
std::string withDeclarations(const std::string& inner,
                             const std::vector<std::pair<std::string, std::string>>& decls) {
    if (decls.empty()) {
        return inner;
    }
    std::string out;
    out.reserve(inner.size() + 64);
    int depth = 0;
    size_t i = 0;
    while (i < inner.size()) {
        const auto lt = inner.find('<', i);
        if (lt == std::string::npos) {
            out.append(inner, i, std::string::npos);
            break;
        }
        out.append(inner, i, lt - i);
        if (inner.compare(lt, 4, "<!--") == 0 || inner.compare(lt, 9, "<![CDATA[") == 0 ||
            inner.compare(lt, 2, "<?") == 0) {
            const char* terminator =
                inner.compare(lt, 4, "<!--") == 0 ? "-->" : (inner[lt + 1] == '?' ? "?>" : "]]>");
            const auto close = inner.find(terminator, lt);
            if (close == std::string::npos) {
                throw std::invalid_argument(
                    "unterminated comment, CDATA or processing instruction in the payload");
            }
            const auto stop = close + std::strlen(terminator);
            out.append(inner, lt, stop - lt);
            i = stop;
            continue;
        }
        const auto gt = startTagEnd(inner, lt);
        if (inner[lt + 1] == '/') {
            --depth;
            out.append(inner, lt, gt + 1 - lt);
        } else {
            const bool selfClosing = inner[gt - 1] == '/';
            if (depth == 0) {
                const auto nameEnd = inner.find_first_of(" \t\r\n/>", lt + 1);
                out.append(inner, lt, nameEnd - lt);
                const std::string tag = inner.substr(lt, gt - lt);
                for (const auto& [prefix, decl] : decls) {
                    if (tag.find("xmlns:" + prefix + "=") == std::string::npos) {
                        out += ' ';
                        out += decl;
                    }
                }
                out.append(inner, nameEnd, gt + 1 - nameEnd);
            } else {
                out.append(inner, lt, gt + 1 - lt);
            }
            if (!selfClosing) {
                ++depth;
            }
        }
        i = gt + 1;
    }
    return out;
}

} // namespace

std::string stripWrapper(const std::string& xml, const std::string& element) {
    auto start = xml.find_first_not_of(" \t\r\n");
    if (start == std::string::npos || xml[start] != '<') {
        return xml;
    }
    if (xml.compare(start, 5, "<?xml") == 0) {
        const auto end = xml.find("?>", start);
        start = end == std::string::npos ? end : xml.find_first_not_of(" \t\r\n", end + 2);
        if (start == std::string::npos) {
            return xml;
        }
    }
    const auto nameEnd = xml.find_first_of(" \t\r\n/>", start + 1);
    if (nameEnd == std::string::npos) {
        return xml.substr(start);
    }
    const std::string name = xml.substr(start + 1, nameEnd - start - 1);
    const auto colon = name.find(':');
    if ((colon == std::string::npos ? name : name.substr(colon + 1)) != element) {
        return xml.substr(start); // libnetconf2 wants the content to begin with '<'
    }
    const auto openEnd = startTagEnd(xml, start);
    if (xml[openEnd - 1] == '/') {
        return ""; // <config/>, <filter/>
    }
    const auto close = xml.rfind("</" + name);
    if (close == std::string::npos || close < openEnd) {
        throw std::invalid_argument("no closing </" + name + "> in the payload");
    }
    std::string inner = xml.substr(openEnd + 1, close - openEnd - 1);
    const auto first = inner.find_first_not_of(" \t\r\n");
    inner = first == std::string::npos ? std::string() : inner.substr(first);
    return withDeclarations(inner, prefixDeclarations(xml, start, openEnd));
}

std::string stripConfigWrapper(const std::string& xml) {
    return stripWrapper(xml, "config");
}

} // namespace ncstore::client
