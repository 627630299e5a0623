// Logging through Boost.Log: severity levels, stderr or a file.
#pragma once

#include <boost/log/sources/severity_logger.hpp>
#include <boost/log/trivial.hpp>

#include <string>

namespace ncstore::log {

/// Configures the global Boost.Log core. `level` is one of trace, debug, info, warning, error,
/// fatal; `file` empty means stderr. Safe to call again (reconfigures).
void setup(const std::string& level, const std::string& file = "");

/// Sends libyang's own messages to this log at debug level instead of stderr: its errors are
/// reported with context by whoever called it, and a standard module's compile warnings are not
/// an operator's business.
void routeLibyang();

/// Parses a level name; throws std::invalid_argument on an unknown one.
boost::log::trivial::severity_level parseLevel(const std::string& level);

} // namespace ncstore::log

#define NCS_LOG(sev) BOOST_LOG_TRIVIAL(sev)
