// The server's default context (as ncstored builds it), shared by the netconfd unit tests.
#pragma once

#include "ncstore/models.hpp"

namespace ncstore::netconfd::test {

/// One context built from defaultModelOptions(), for the whole test binary.
inline const ly_ctx* serverContext() {
    static const Context ctx = buildContext(defaultModelOptions());
    return ctx.get();
}

} // namespace ncstore::netconfd::test
