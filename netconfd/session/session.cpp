#include "session.hpp"

namespace ncstore::netconfd {

const char* toString(TermReason r) {
    switch (r) {
    case TermReason::Closed:
        return "closed";
    case TermReason::Killed:
        return "killed";
    case TermReason::Dropped:
        return "dropped";
    case TermReason::Timeout:
        return "timeout";
    case TermReason::BadHello:
        return "bad-hello";
    case TermReason::Other:
        break;
    }
    return "other";
}

} // namespace ncstore::netconfd
