#include "users.hpp"

#include "ncstore/files.hpp"
#include "ncstore/log.hpp"

#include <crypt.h>
#include <sys/random.h>

#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

namespace ncstore::netconfd {

namespace {

std::string randomBytes(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = getrandom(out.data() + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw UserError(std::string("getrandom failed: ") + std::strerror(errno));
        }
        got += static_cast<std::size_t>(r);
    }
    return out;
}

struct SshKeyDeleter {
    void operator()(ssh_key k) const noexcept { ssh_key_free(k); }
};
using SshKey = std::unique_ptr<std::remove_pointer_t<ssh_key>, SshKeyDeleter>;

// Serializes writers of the users file within this process; across processes the rename keeps
// readers from seeing a half-written file.
std::mutex writeMutex;

} // namespace

std::string hashPassword(const std::string& password) {
    const std::string entropy = randomBytes(16);
    std::array<char, CRYPT_GENSALT_OUTPUT_SIZE> salt{};
    if (!crypt_gensalt_rn("$6$", 0, entropy.data(), static_cast<int>(entropy.size()), salt.data(),
                          static_cast<int>(salt.size()))) {
        throw UserError(std::string("crypt_gensalt failed: ") + std::strerror(errno));
    }
    auto data = std::make_unique<crypt_data>();
    const char* hash = crypt_r(password.c_str(), salt.data(), data.get());
    if (!hash || hash[0] == '*') {
        throw UserError("crypt failed to hash the password");
    }
    return hash;
}

bool verifyPassword(const std::string& password, const std::string& hash) {
    if (hash.empty() || hash[0] != '$') {
        return false;
    }
    auto data = std::make_unique<crypt_data>();
    const char* computed = crypt_r(password.c_str(), hash.c_str(), data.get());
    if (!computed || computed[0] == '*') {
        return false;
    }
    const std::size_t n = std::strlen(computed);
    if (n != hash.size()) {
        return false;
    }
    // Constant time: the comparison must not tell how many leading characters matched.
    unsigned char diff = 0;
    for (std::size_t i = 0; i < n; ++i) {
        diff |= static_cast<unsigned char>(computed[i] ^ hash[i]);
    }
    return diff == 0;
}

std::string randomPassword(std::size_t length) {
    static constexpr char alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    constexpr std::size_t size = sizeof(alphabet) - 1;
    std::string out;
    while (out.size() < length) {
        for (unsigned char c : randomBytes(length)) {
            // Rejection sampling keeps the distribution uniform.
            if (c < 256 - 256 % size && out.size() < length) {
                out.push_back(alphabet[c % size]);
            }
        }
    }
    return out;
}

UserDb::UserDb(std::filesystem::path usersFile, std::filesystem::path keysDir)
    : usersFile_(std::move(usersFile)), keysDir_(std::move(keysDir)) {}

bool UserDb::validName(const std::string& name) {
    if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-') {
        return false;
    }
    for (char c : name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}

std::vector<std::pair<std::string, std::string>> UserDb::load() const {
    std::vector<std::pair<std::string, std::string>> out;
    std::ifstream in(usersFile_);
    if (!in) {
        return out;
    }
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        out.emplace_back(line.substr(0, colon), line.substr(colon + 1));
    }
    return out;
}

std::vector<std::string> UserDb::names() const {
    std::vector<std::string> out;
    for (const auto& [name, hash] : load()) {
        out.push_back(name);
    }
    return out;
}

void UserDb::setPassword(const std::string& name, const std::string& password) {
    if (!validName(name)) {
        throw UserError("invalid user name '" + name + "' (allowed: letters, digits, . _ -)");
    }
    if (password.empty()) {
        throw UserError("empty password for user " + name);
    }
    std::lock_guard lock(writeMutex);
    auto users = load();
    const std::string hash = hashPassword(password);
    bool found = false;
    for (auto& [n, h] : users) {
        if (n == name) {
            h = hash;
            found = true;
        }
    }
    if (!found) {
        users.emplace_back(name, hash);
    }
    std::ostringstream text;
    text << "# ncstored users: name:crypt(3) hash. Edit with `ncstored --add-user NAME`.\n";
    for (const auto& [n, h] : users) {
        text << n << ':' << h << '\n';
    }
    try {
        files::writePrivateFile(usersFile_, text.str());
    } catch (const std::exception& e) {
        throw UserError(e.what());
    }
}

bool UserDb::checkPassword(const std::string& name, const std::string& password) const {
    for (const auto& [n, h] : load()) {
        if (n == name) {
            return verifyPassword(password, h);
        }
    }
    // Spend the same time as for a known user, so timing does not reveal which users exist.
    verifyPassword(password, "$6$ncstoreunknown$");
    return false;
}

bool UserDb::checkPublicKey(const std::string& name, ssh_key key) const {
    if (!validName(name) || !key) {
        return false;
    }
    std::ifstream in(keysDir_ / name);
    if (!in) {
        return false;
    }
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string type, base64;
        if (!(fields >> type >> base64) || type.empty() || type[0] == '#') {
            continue;
        }
        const auto keyType = ssh_key_type_from_name(type.c_str());
        if (keyType == SSH_KEYTYPE_UNKNOWN) {
            NCS_LOG(warning) << "authorized_keys/" << name << ": unknown key type " << type;
            continue;
        }
        ssh_key raw = nullptr;
        if (ssh_pki_import_pubkey_base64(base64.c_str(), keyType, &raw) != SSH_OK) {
            NCS_LOG(warning) << "authorized_keys/" << name << ": cannot parse a " << type << " key";
            continue;
        }
        SshKey authorized{raw};
        if (ssh_key_cmp(authorized.get(), key, SSH_KEY_CMP_PUBLIC) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace ncstore::netconfd
