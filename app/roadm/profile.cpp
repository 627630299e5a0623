#include "profile.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ncstore::roadm {

namespace {

// The state leaves of info, in the model's order; current-datetime is the agent's (pulled).
constexpr std::array kInfoState = {"vendor",
                                   "model",
                                   "serial-id",
                                   "source",
                                   "current-ipAddress",
                                   "current-prefix-length",
                                   "current-defaultGateway",
                                   "macAddress",
                                   "softwareVersion",
                                   "openroadm-version",
                                   "max-degrees",
                                   "max-srgs",
                                   "max-num-bin-15min-historical-pm",
                                   "max-num-bin-24hour-historical-pm"};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) {
        return {};
    }
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

} // namespace

std::string Profile::get(const std::string& key, const std::string& fallback) const {
    const auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
}

std::string Profile::infoValue(const std::string& leaf, const std::string& fallback) const {
    for (const auto& [k, v] : info) {
        if (k == leaf) {
            return v;
        }
    }
    return fallback;
}

Profile Profile::parse(const std::string& text, const std::string& origin) {
    Profile p;
    std::istringstream in(text);
    std::string line, section;
    int number = 0;
    auto fail = [&](const std::string& why) {
        throw std::runtime_error(origin + ":" + std::to_string(number) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++number;
        line = trim(line.substr(0, line.find('#')));
        if (line.empty()) {
            continue;
        }
        if (line.front() == '[') {
            if (line.back() != ']') {
                fail("a section is written [name]");
            }
            section = trim(line.substr(1, line.size() - 2));
            if (section != "info" && section != "equipment" && section != "degree" && section != "srg") {
                fail("unknown section [" + section + "] (info, equipment, degree, srg)");
            }
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string::npos) {
            fail("expected key = value");
        }
        const std::string key = trim(line.substr(0, eq));
        const std::string value = trim(line.substr(eq + 1));
        if (key.empty()) {
            fail("a key is missing before '='");
        }
        if (section.empty()) {
            fail("key " + key + " outside a section");
        }
        if (section == "info") {
            if (std::find(kInfoState.begin(), kInfoState.end(), key) == kInfoState.end()) {
                fail("[info] " + key +
                     " is not a state leaf of info the profile sets (configuration such as node-id is "
                     "edited over NETCONF; current-datetime is the agent's clock)");
            }
            p.info.emplace_back(key, value);
        } else {
            p.values[section + "." + key] = value;
        }
    }
    // The model's order: a pushed container's children are printed as they are given.
    std::stable_sort(p.info.begin(), p.info.end(), [](const auto& a, const auto& b) {
        auto rank = [](const std::string& k) { return std::find(kInfoState.begin(), kInfoState.end(), k); };
        return rank(a.first) < rank(b.first);
    });
    for (const char* required : {"vendor", "model", "serial-id"}) {
        if (p.infoValue(required).empty()) {
            throw std::runtime_error(origin + ": [info] " + required +
                                     " is required (mandatory in the model)");
        }
    }
    return p;
}

Profile Profile::load(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) {
        throw std::runtime_error("cannot read the device profile " + file.string());
    }
    std::stringstream s;
    s << in.rdbuf();
    return parse(s.str(), file.string());
}

} // namespace ncstore::roadm
