// The NACM counters (RFC 8341) as state data; the read path merges them with running's /nacm.
#include "providers.hpp"

#include "sessionaccess.hpp"

namespace ncstore::netconfd {

namespace {

class NacmCountersState final : public StateProvider {
public:
    explicit NacmCountersState(const AccessControl& nacm) : nacm_(nacm) {}
    std::vector<Top> tops() const override { return {{"ietf-netconf-acm", "nacm"}}; }
    Tree state(const ly_ctx* ctx) const override { return nacm_.counters().state(ctx); }

private:
    const AccessControl& nacm_;
};

} // namespace

std::shared_ptr<const StateProvider> makeNacmCountersState(const AccessControl& nacm) {
    return std::make_shared<NacmCountersState>(nacm);
}

} // namespace ncstore::netconfd
