// SSH host keys of the server, generated once in the data directory.
//
// Promises: a key file that exists is never overwritten (clients pin host keys), only made 0600
// when others could read it; new keys are written with mode 0600. Throws std::runtime_error
// naming the file on failure.
#pragma once

#include <filesystem>
#include <vector>

namespace ncstore::netconfd {

/// Makes sure ssh_host_ed25519_key and ssh_host_rsa_key exist in `dir`; returns their paths,
/// preferred first.
std::vector<std::filesystem::path> ensureHostKeys(const std::filesystem::path& dir);

} // namespace ncstore::netconfd
