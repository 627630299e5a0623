// Local NETCONF users: a `users` file of `name:crypt-hash` lines (SHA-512, "$6$") and
// OpenSSH-style public keys in `authorized_keys/<name>`.
//
// Promises: files are re-read on every check, so `ncstored --add-user` takes effect on a running
// server; the users file is replaced atomically (write + rename) with mode 0600; a password is
// never logged or stored in clear.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <libssh/libssh.h>

namespace ncstore::netconfd {

class UserError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// crypt(3) SHA-512 hash ("$6$salt$...") of `password` with a fresh random salt.
std::string hashPassword(const std::string& password);
/// True when `password` matches `hash` (any scheme crypt(3) knows).
bool verifyPassword(const std::string& password, const std::string& hash);
/// A random password of `length` characters from [A-Za-z0-9].
std::string randomPassword(std::size_t length = 16);

class UserDb {
public:
    /// `usersFile`: the `users` file; `keysDir`: the authorized_keys directory.
    UserDb(std::filesystem::path usersFile, std::filesystem::path keysDir);

    std::vector<std::string> names() const;
    bool empty() const { return names().empty(); }
    /// Adds the user or replaces its password.
    void setPassword(const std::string& name, const std::string& password);
    bool checkPassword(const std::string& name, const std::string& password) const;
    /// True when `key` is listed in authorized_keys/<name>.
    bool checkPublicKey(const std::string& name, ssh_key key) const;

    /// Names are what SSH accepts and what fits a file name: [A-Za-z0-9._-], 1..64 chars.
    static bool validName(const std::string& name);

private:
    std::vector<std::pair<std::string, std::string>> load() const;

    std::filesystem::path usersFile_;
    std::filesystem::path keysDir_;
};

} // namespace ncstore::netconfd
