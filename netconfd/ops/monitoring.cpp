// ietf-netconf-monitoring's get-schema (RFC 6022 3.1).
#include "ops.hpp"

#include "rpcargs.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class MonitoringOps {
public:
    explicit MonitoringOps(const Services& svc) : svc_(svc) {}
    Reply getSchema(Request& r);

private:
    Services svc_;
};

using namespace rpcargs;

Reply MonitoringOps::getSchema(Request& r) {
    const lyd_node* rpc = r.op;
    const std::string identifier = valueOf(child(rpc, "identifier"));
    const std::string version = valueOf(child(rpc, "version"));
    std::string format = valueOf(child(rpc, "format"));
    if (const auto colon = format.find(':'); colon != std::string::npos) {
        format = format.substr(colon + 1);
    }
    LYS_OUTFORMAT outFormat = LYS_OUT_YANG;
    if (format == "yin") {
        outFormat = LYS_OUT_YIN;
    } else if (!format.empty() && format != "yang") {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Application,
                       "schema format " + format + " is not supported")
            .withBadElement("format");
    }
    const lys_module* module = version.empty()
                                   ? ly_ctx_get_module_latest(svc_.ctx, identifier.c_str())
                                   : ly_ctx_get_module(svc_.ctx, identifier.c_str(), version.c_str());
    char* raw = nullptr;
    if (module) {
        if (lys_print_mem(&raw, module, outFormat, 0) != LY_SUCCESS) {
            throw YangError("cannot print module " + identifier, svc_.ctx);
        }
    } else {
        const lysp_submodule* sub =
            ly_ctx_get_submodule(svc_.ctx, identifier.c_str(), version.empty() ? nullptr : version.c_str());
        if (!sub) {
            throw RpcError(ErrorTag::InvalidValue, ErrorType::Application,
                           "no schema " + identifier + (version.empty() ? "" : "@" + version))
                .withBadElement("identifier");
        }
        ly_out* out = nullptr;
        if (ly_out_new_memory(&raw, 0, &out) != LY_SUCCESS) {
            throw YangError("cannot print submodule " + identifier, svc_.ctx);
        }
        const LY_ERR printed = lys_print_submodule(out, sub, outFormat, 0, 0);
        ly_out_free(out, nullptr, 0);
        if (printed != LY_SUCCESS) {
            const CString partial{raw};
            throw YangError("cannot print submodule " + identifier, svc_.ctx);
        }
    }
    const CString text{raw};
    return Reply::text(text ? text.get() : "", "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring");
}

void addMonitoringOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<MonitoringOps>(svc);
    d.add("ietf-netconf-monitoring", "get-schema", handler(ops, &MonitoringOps::getSchema));
}

} // namespace ncstore::netconfd
