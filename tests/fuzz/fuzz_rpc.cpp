// Fuzz target (a): one <rpc> message as a client sends it, through the server's parse on the
// server's own context (parseRpc: the libyang hazard guard, libyang's parse with the inline
// <config> content parsed apart, the rpc-error mapping, the message-id check), the inline <config>
// scanner, and the <rpc-reply> printed for it.
//
// Checks beyond "no crash, no sanitizer report":
//  - what findInlineConfig() finds lies inside the message, and putting the same content back
//    with replaceContent() gives the message unchanged;
//  - a parse without an error gives an operation; every <config> placeholder comes with its
//    parsed content, taken once.
#include "fuzz_models.hpp"
#include "inlineconfig.hpp"
#include "reply.hpp"
#include "rpcparse.hpp"

#include "ncstore/models.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

using namespace ncstore;
using namespace ncstore::netconfd;

namespace {

[[noreturn]] void violated(const char* what) {
    fuzz::violated("fuzz_rpc", what);
}

const ly_ctx* serverContext() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

void checkScanner(const std::string& message) {
    const auto found = findInlineConfig(message);
    if (!found) {
        return;
    }
    if (found->begin > found->end || found->end > message.size()) {
        violated("inline <config> bounds outside the message");
    }
    if (found->document.empty()) {
        violated("inline <config> found with an empty document");
    }
    const std::string_view content =
        std::string_view(message).substr(found->begin, found->end - found->begin);
    if (replaceContent(message, *found, content) != message) {
        violated("replaceContent() with the same content changed the message");
    }
}

void checkParse(const std::string& message) {
    const ly_ctx* ctx = serverContext();
    ParsedRpc p = parseRpc(ctx, message);
    if (!p.error && !p.op) {
        violated("a parse without an error and without an operation");
    }
    if (p.op && !p.error) {
        // edit-config's <config>, or copy-config's <source><config>
        for (const lyd_node* c = lyd_child(p.op.get()); c; c = c->next) {
            for (const lyd_node* n = c; n; n = (n == c ? lyd_child(c) : n->next)) {
                if (isParsedSeparately(n) && !p.takeConfig(n)) {
                    violated("a <config> placeholder without its parsed content");
                }
                if (isParsedSeparately(n) && p.takeConfig(n)) {
                    violated("a parsed <config> content taken twice");
                }
            }
        }
    }
    // The reply repeats the <rpc>'s attributes: printed for every message, as the server does.
    std::string out;
    renderReply(out, p.envelope.get(), p.error ? Reply::error(*p.error) : Reply::ok(), ctx);
    if (out.rfind("<rpc-reply", 0) != 0) {
        violated("a reply that is no <rpc-reply>");
    }
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    serverContext();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The transport hands the message over as a NUL-terminated string.
    const std::string message(reinterpret_cast<const char*>(data),
                              strnlen(reinterpret_cast<const char*>(data), size));
    checkScanner(message);
    checkParse(message);
    return 0;
}
