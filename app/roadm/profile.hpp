// A device profile: what the hardware says about itself, which no configuration sets (vendor,
// model, serial-id, software version, capacities). A small text file (docs/roadm-device.md,
// app/roadm/examples/device.profile):
//
//   # comment
//   [info]                      leaves of org-openroadm-device/info that are state (config false)
//   vendor = ACME Photonics
//   [equipment]                 circuit-packs and shelves: vendor, hardware-version
//   [degree]                    max-wavelengths
//   [srg]                       max-add-drop-ports, wavelength-duplication
//
// Promises: load() refuses, with the file, line and reason, a line it cannot read, an unknown
// section, and in [info] a leaf that is configuration or that the agent computes itself
// (current-datetime); values are passed on as written and the models check them when pushed.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ncstore::roadm {

struct Profile {
    /// [info] leaves in file order (their order in the model is restored when pushed).
    std::vector<std::pair<std::string, std::string>> info;
    /// "section.key" -> value for the other sections.
    std::map<std::string, std::string> values;

    /// The value of section.key, or `fallback`.
    std::string get(const std::string& key, const std::string& fallback) const;
    /// The [info] leaf, or `fallback`.
    std::string infoValue(const std::string& leaf, const std::string& fallback = {}) const;

    static Profile load(const std::filesystem::path& file);
    static Profile parse(const std::string& text, const std::string& origin);
};

} // namespace ncstore::roadm
