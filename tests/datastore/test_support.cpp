#include "test_support.hpp"

#include <cstdlib>
#include <stdexcept>

namespace ncstore::test {

Context interfacesContext() {
    ly_ctx* raw = nullptr;
    if (ly_ctx_new(NCSTORE_IETF_YANG_DIR, LY_CTX_NO_YANGLIBRARY, &raw) != LY_SUCCESS) {
        throw std::runtime_error("ly_ctx_new failed");
    }
    Context ctx{raw};
    const char* features[] = {"*", nullptr};
    for (const char* name : {"ietf-interfaces", "iana-if-type", "ietf-netconf"}) {
        if (!ly_ctx_load_module(ctx.get(), name, nullptr, features)) {
            throw YangError(std::string("cannot load ") + name, ctx.get());
        }
    }
    return ctx;
}

Tree parseEdit(const ly_ctx* ctx, const std::string& xml) {
    return parseData(ctx, xml, LYD_XML, LYD_PARSE_ONLY | LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, 0);
}

std::string interfacesXml(const std::string& prefix, int first, int count, const std::string& op) {
    std::string xml = "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
                      "xmlns:ianaift=\"urn:ietf:params:xml:ns:yang:iana-if-type\" "
                      "xmlns:nc=\"urn:ietf:params:xml:ns:netconf:base:1.0\">";
    for (int i = first; i < first + count; ++i) {
        xml += "<interface" + (op.empty() ? std::string() : " nc:operation=\"" + op + "\"") + "><name>" +
               prefix + std::to_string(i) + "</name>";
        if (op != "delete" && op != "remove") {
            xml += "<type>ianaift:ethernetCsmacd</type><enabled>true</enabled>";
        }
        xml += "</interface>";
    }
    return xml + "</interfaces>";
}

std::vector<std::string> interfaceNames(const lyd_node* tree) {
    std::vector<std::string> names;
    if (!tree) {
        return names;
    }
    lyd_node* top = nullptr;
    if (lyd_find_path(tree, "/ietf-interfaces:interfaces", 0, &top) != LY_SUCCESS) {
        return names;
    }
    for (const lyd_node* e = lyd_child(top); e; e = e->next) {
        names.emplace_back(lyd_get_value(lyd_child(e)));
    }
    return names;
}

} // namespace ncstore::test
