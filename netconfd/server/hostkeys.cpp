#include "hostkeys.hpp"

#include "ncstore/files.hpp"
#include "ncstore/log.hpp"

#include <libssh/libssh.h>

#include <memory>
#include <stdexcept>
#include <type_traits>

namespace ncstore::netconfd {

namespace {

struct SshKeyDeleter {
    void operator()(ssh_key k) const noexcept { ssh_key_free(k); }
};
using SshKey = std::unique_ptr<std::remove_pointer_t<ssh_key>, SshKeyDeleter>;

struct SshStringDeleter {
    void operator()(char* s) const noexcept { ssh_string_free_char(s); }
};

void generate(const std::filesystem::path& file, ssh_keytypes_e type, int bits) {
    if (std::filesystem::exists(file)) {
        files::ensurePrivateFile(file); // one copied in readable by others is made private
        return;
    }
    ssh_key raw = nullptr;
    if (ssh_pki_generate(type, bits, &raw) != SSH_OK) {
        throw std::runtime_error("cannot generate SSH host key " + file.string());
    }
    SshKey key{raw};
    char* raw64 = nullptr;
    if (ssh_pki_export_privkey_base64(key.get(), nullptr, nullptr, nullptr, &raw64) != SSH_OK) {
        throw std::runtime_error("cannot export SSH host key " + file.string());
    }
    const std::unique_ptr<char, SshStringDeleter> text{raw64};
    // Written 0600 beside, then renamed: never a truncated or readable key, whatever the umask.
    files::writePrivateFile(file, text.get());
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
