#include "hostkeys.hpp"

#include "ncstore/log.hpp"

#include <libssh/libssh.h>

#include <sys/stat.h>

#include <memory>
#include <stdexcept>
#include <type_traits>

namespace ncstore::netconfd {

namespace {

struct SshKeyDeleter {
    void operator()(ssh_key k) const noexcept { ssh_key_free(k); }
};
using SshKey = std::unique_ptr<std::remove_pointer_t<ssh_key>, SshKeyDeleter>;

void generate(const std::filesystem::path& file, ssh_keytypes_e type, int bits) {
    if (std::filesystem::exists(file)) {
        return;
    }
    ssh_key raw = nullptr;
    if (ssh_pki_generate(type, bits, &raw) != SSH_OK) {
        throw std::runtime_error("cannot generate SSH host key " + file.string());
    }
    SshKey key{raw};
    // Write beside, then rename: a crash never leaves a truncated key behind.
    const auto tmp = file.string() + ".tmp";
    if (ssh_pki_export_privkey_file(key.get(), nullptr, nullptr, nullptr, tmp.c_str()) != SSH_OK) {
        throw std::runtime_error("cannot write SSH host key " + tmp);
    }
    if (::chmod(tmp.c_str(), 0600) != 0) {
        throw std::runtime_error("cannot chmod SSH host key " + tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
        throw std::runtime_error("cannot rename " + tmp + ": " + ec.message());
    }
    NCS_LOG(info) << "generated SSH host key " << file.string();
}

} // namespace

std::vector<std::filesystem::path> ensureHostKeys(const std::filesystem::path& dir) {
    const auto ed25519 = dir / "ssh_host_ed25519_key";
    const auto rsa = dir / "ssh_host_rsa_key";
    generate(ed25519, SSH_KEYTYPE_ED25519, 0);
    // RSA for clients without Ed25519 (older Java SSH stacks); 2048 bits keeps first start fast.
    generate(rsa, SSH_KEYTYPE_RSA, 2048);
    return {ed25519, rsa};
}

} // namespace ncstore::netconfd
