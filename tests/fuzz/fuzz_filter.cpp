// Fuzz target (b): a subtree filter (the content of <filter type="subtree"> in a get-config, as
// a client writes it) applied to a fixed datastore tree: the filter test's list-heavy module,
// ietf-interfaces and the bundled Open ROADM example device.
//
// Checks beyond "no crash, no sanitizer report": the two ways the server can answer the filter
// agree (filter.hpp): apply()'s tree printed, and applyXml() printing straight from the data,
// give the same data once both are parsed back, in every with-defaults mode.
#include "filter.hpp"
#include "filter_test_data.hpp"
#include "fuzz_models.hpp"
#include "inlineconfig.hpp"

#include "ncstore/yang.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

using namespace ncstore;

namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
    fuzz::violated("fuzz_filter", what, detail);
}

struct Fixture {
    Context ctx;
    Tree data;
};

/// The example device as the datastore holds it: without the edit's nc:operation.
std::string exampleDevice() {
    std::string xml = fuzz::exampleConfig(NCSTORE_SOURCE_DIR "/yang/openroadm/examples/device-create.xml");
    const std::string operation = " nc:operation=\"create\"";
    for (auto at = xml.find(operation); at != std::string::npos; at = xml.find(operation)) {
        xml.erase(at, operation.size());
    }
    return xml;
}

const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture out;
        out.ctx = makeContext({{NCSTORE_FILTER_TEST_YANG_DIR, NCSTORE_SOURCE_DIR "/yang/openroadm"},
                               {NCSTORE_IETF_YANG_DIR},
                               true});
        const char* all[] = {"*", nullptr};
        for (const char* m :
             {"ietf-netconf", "ietf-netconf-with-defaults", "ietf-interfaces", "iana-if-type"}) {
            if (!ly_ctx_load_module(out.ctx.get(), m, nullptr, all)) {
                throw YangError(std::string("cannot load ") + m, out.ctx.get());
            }
        }
        const std::string xml = test::filterTestData() + exampleDevice();
        out.data = parseData(out.ctx.get(), xml, LYD_XML, LYD_PARSE_STRICT, LYD_VALIDATE_PRESENT);
        return out;
    }();
    return f;
}

struct InputDeleter {
    void operator()(ly_in* in) const noexcept { ly_in_free(in, 0); }
};

/// The data of a filter result printed by either path, in one spelling (namespaces, order of
/// declarations): parsed without a schema check of values and printed again.
std::string normalized(const ly_ctx* ctx, const std::string& xml, uint32_t wd) {
    if (xml.empty()) {
        return {};
    }
    lyd_node* raw = nullptr;
    if (lyd_parse_data_mem(ctx, xml.c_str(), LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0, &raw) !=
        LY_SUCCESS) {
        violated("a filter result does not parse back", xml + "\n" + lastError(ctx));
    }
    const Tree tree{raw};
    return print(tree.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK | wd);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    (void)fixture();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    const Fixture& f = fixture();
    const ly_ctx* ctx = f.ctx.get();
    const std::string content(reinterpret_cast<const char*>(bytes),
                              strnlen(reinterpret_cast<const char*>(bytes), size));
    // Exactly how the server gets the filter: the anyxml of a parsed get-config.
    const std::string rpc = "<rpc xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\" message-id=\"1\">"
                            "<get-config><source><running/></source><filter type=\"subtree\">" +
                            content + "</filter></get-config></rpc>";
    if (netconfd::libyangHazard(rpc)) {
        return 0; // the server refuses it before libyang, which would crash (inlineconfig.hpp)
    }
    ly_in* rawIn = nullptr;
    if (ly_in_new_memory(rpc.c_str(), &rawIn) != LY_SUCCESS) {
        return 0;
    }
    const std::unique_ptr<ly_in, InputDeleter> in{rawIn};
    lyd_node* rawEnvelope = nullptr;
    lyd_node* rawOp = nullptr;
    const LY_ERR rc =
        lyd_parse_op(ctx, nullptr, in.get(), LYD_XML, LYD_TYPE_RPC_NETCONF, &rawEnvelope, &rawOp);
    const Tree envelope{rawEnvelope};
    const Tree op{rawOp};
    lyd_node* filterNode = nullptr;
    if (rc != LY_SUCCESS || lyd_find_path(op.get(), "filter", 0, &filterNode) != LY_SUCCESS) {
        ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
        return 0;
    }
    // One with-defaults mode per input, chosen by its length: every mode gets its share.
    static constexpr uint32_t kModes[] = {LYD_PRINT_WD_EXPLICIT, LYD_PRINT_WD_TRIM, LYD_PRINT_WD_ALL,
                                          LYD_PRINT_WD_ALL_TAG};
    const uint32_t wd = kModes[size % 4];
    try {
        const Tree tree = filter::apply(f.data.get(), filterNode);
        const std::string viaTree =
            tree ? print(tree.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK | wd) : std::string();
        const std::string direct = filter::applyXml(f.data.get(), filterNode, wd);
        if (normalized(ctx, direct, wd) != normalized(ctx, viaTree, wd)) {
            violated("applyXml() and apply() disagree",
                     "filter: " + content + "\ndirect: " + direct + "\ntree: " + viaTree);
        }
    } catch (const filter::Error&) {
        // An unreadable filter: the server answers bad-element.
    }
    ly_err_clean(const_cast<ly_ctx*>(ctx), nullptr);
    return 0;
}
