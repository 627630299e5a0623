// Length-prefixed fields ("<n>:<n bytes>") for the rows features keep in the store's journals
// (the confirmed-commit state, the commit history): any byte may occur in a value, a user's
// comment or LYB data, and a damaged row is told apart from a good one.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace ncstore::fields {

inline void put(std::string& out, std::string_view value) {
    out += std::to_string(value.size());
    out += ':';
    out += value;
}

/// The next field of `in`, which then starts after it; nullopt (and `in` unchanged) when `in`
/// does not start with a whole field.
inline std::optional<std::string_view> take(std::string_view& in) {
    const auto colon = in.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(in.data(), in.data() + colon, n);
    if (ec != std::errc{} || end != in.data() + colon || in.size() - colon - 1 < n) {
        return std::nullopt;
    }
    const std::string_view value = in.substr(colon + 1, n);
    in.remove_prefix(colon + 1 + n);
    return value;
}

/// A field holding a whole decimal number, nothing else.
template <class T> std::optional<T> number(std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

} // namespace ncstore::fields
