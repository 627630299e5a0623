// The operations on configuration datastores (RFC 6241 7.1-7.4, 8.6): get, get-config,
// edit-config, copy-config, delete-config, validate.
#include "ops.hpp"

#include "edit.hpp"
#include "readpath.hpp"
#include "rpcargs.hpp"

#include "ncstore/log.hpp"

namespace ncstore::netconfd {

class ConfigOps {
public:
    explicit ConfigOps(const Services& svc) : svc_(svc) {}
    Reply get(Request& r);
    Reply getConfig(Request& r);
    Reply read(Request& r, bool config);
    Reply editConfig(Request& r);
    Reply copyConfig(Request& r);
    Reply deleteConfig(Request& r);
    Reply validate(Request& r);

private:
    Services svc_;
};

using namespace rpcargs;

Reply ConfigOps::read(Request& r, bool config) {
    const lyd_node* rpc = r.op;
    return Reply::xml(svc_.reads.readXml(
        r.access, config ? requireDatastore(rpc, "source") : ds::Datastore::Running, !config,
        child(rpc, "filter"), withDefaultsFlag(rpc), [&s = r.session] { return s.abandoned(); }));
}

Reply ConfigOps::get(Request& r) {
    return read(r, false);
}

Reply ConfigOps::getConfig(Request& r) {
    return read(r, true);
}

Reply ConfigOps::editConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    ds::EditOptions options;
    options.defaultOperation = defaultOperation(rpc);
    const std::string testOption = valueOf(child(rpc, "test-option"));
    if (testOption == "set") {
        options.testOption = ds::TestOption::Set;
    } else if (testOption == "test-only") {
        options.testOption = ds::TestOption::TestOnly;
    }
    const std::string errorOption = valueOf(child(rpc, "error-option"));
    if (errorOption == "continue-on-error") {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "error-option continue-on-error is not supported")
            .withBadElement("error-option");
    }
    if (errorOption == "stop-on-error") {
        options.errorOption = ds::ErrorOption::StopOnError;
    }
    return edit::applyEdit(svc_, r, target, options);
}

Reply ConfigOps::copyConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    Reply reply;
    WriteCheck check = edit::writeCheck(svc_, r, target == ds::Datastore::Running);
    const ds::WriteContext who = check.context(writer(r.session));
    ds::WriteTiming timing;
    if (source.config) {
        const Tree config = edit::parseConfig(svc_, r.rpc, source.config, reply.parseUs);
        timing = check.run(svc_.store, [&] { return svc_.store.replace(who, target, config.get()); });
    } else if (*source.ds != target) {
        edit::requireReadable(svc_, r, *source.ds);
        timing = check.run(svc_.store, [&] { return svc_.store.copy(who, *source.ds, target); });
    }
    reply.write = timing;
    return reply;
}

Reply ConfigOps::deleteConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    if (target == ds::Datastore::Running) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the running datastore cannot be deleted")
            .withBadElement("running");
    }
    WriteCheck check = edit::writeCheck(svc_, r, false);
    const ds::WriteContext who = check.context(writer(r.session));
    const auto timing = check.run(svc_.store, [&] { return svc_.store.clear(who, target); });
    Reply reply;
    reply.write = timing;
    return reply;
}

Reply ConfigOps::validate(Request& r) {
    const lyd_node* rpc = r.op;
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    // What a commit or copy to running would refuse: YANG, and a NACM configuration that does
    // not compile (WriteCheck).
    std::vector<nacm::Problem> problems;
    if (source.config) {
        std::uint64_t parseUs = 0;
        const Tree config = edit::parseConfig(svc_, r.rpc, source.config, parseUs);
        svc_.store.validate(config.get());
        problems = nacm::Policy::validate(config.get(), svc_.ctx);
    } else {
        svc_.store.validate(*source.ds);
        svc_.store.read(*source.ds, [&](const lyd_node* tree) {
            problems = nacm::Policy::validate(nacmTop(tree), svc_.ctx);
        });
    }
    if (!problems.empty()) {
        throw RpcError::invalidValue(nacm::ConfigError(problems).what(), {}, ErrorType::Application)
            .withPath(problems.front().path);
    }
    return Reply::ok();
}

void addConfigOperations(Dispatcher& d, const Services& svc) {
    const auto ops = std::make_shared<ConfigOps>(svc);
    d.add("ietf-netconf", "get", handler(ops, &ConfigOps::get));
    d.add("ietf-netconf", "get-config", handler(ops, &ConfigOps::getConfig));
    d.add("ietf-netconf", "edit-config", handler(ops, &ConfigOps::editConfig, true));
    d.add("ietf-netconf", "copy-config", handler(ops, &ConfigOps::copyConfig, true));
    d.add("ietf-netconf", "delete-config", handler(ops, &ConfigOps::deleteConfig, true));
    d.add("ietf-netconf", "validate", handler(ops, &ConfigOps::validate));
}

} // namespace ncstore::netconfd
