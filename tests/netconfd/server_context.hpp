// The server's default context (as ncstored builds it), shared by the netconfd unit tests.
#pragma once

#include "models.hpp"

namespace ncstore::netconfd::test {

/// The options ncstored uses by default: bundled models, ietf-interfaces, the system IETF dir.
inline ModelOptions defaultModelOptions() {
    ModelOptions o;
    o.ietfDir = systemIetfDir();
    o.bundledDir = bundledModelsDir();
    o.defaultModels = true;
    return o;
}

/// One context built from defaultModelOptions(), for the whole test binary.
inline const ly_ctx* serverContext() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

} // namespace ncstore::netconfd::test
