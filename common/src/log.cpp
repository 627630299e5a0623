#include "ncstore/log.hpp"

#include <boost/log/core.hpp>
#include <boost/log/expressions.hpp>
#include <boost/log/support/date_time.hpp>
#include <boost/log/utility/setup/common_attributes.hpp>
#include <boost/log/utility/setup/console.hpp>
#include <boost/log/utility/setup/file.hpp>

#include <libyang/log.h>

#include <iostream>
#include <stdexcept>
#include <string>

namespace ncstore::log {

namespace logging = boost::log;

namespace {
void libyangLog(LY_LOG_LEVEL level, const char* msg, const char* path) {
    if (level == LY_LLERR || level == LY_LLWRN) {
        NCS_LOG(debug) << "libyang: " << msg << (path ? std::string(" (") + path + ")" : std::string());
    }
}
} // namespace

void routeLibyang() {
    ly_set_log_clb(libyangLog, 1);
}

logging::trivial::severity_level parseLevel(const std::string& level) {
    logging::trivial::severity_level sev{};
    if (!logging::trivial::from_string(level.c_str(), level.size(), sev)) {
        throw std::invalid_argument("unknown log level '" + level +
                                    "' (trace, debug, info, warning, error, fatal)");
    }
    return sev;
}

void setup(const std::string& level, const std::string& file) {
    auto sev = parseLevel(level);
    auto core = logging::core::get();
    core->remove_all_sinks();
    logging::add_common_attributes();
    namespace expr = logging::expressions;
    auto format =
        expr::stream << expr::format_date_time<boost::posix_time::ptime>("TimeStamp", "%Y-%m-%d %H:%M:%S.%f")
                     << " [" << logging::trivial::severity << "] " << expr::smessage;
    if (file.empty()) {
        logging::add_console_log(std::clog, logging::keywords::format = format,
                                 logging::keywords::auto_flush = true);
    } else {
        logging::add_file_log(logging::keywords::file_name = file, logging::keywords::format = format,
                              logging::keywords::auto_flush = true,
                              logging::keywords::open_mode = std::ios_base::app);
    }
    core->set_filter(logging::trivial::severity >= sev);
}

} // namespace ncstore::log
