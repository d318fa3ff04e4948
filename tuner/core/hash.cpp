// Content hashes: 128-bit XXH3 (libxxhash, used header-only) printed as 32 hex digits.
#include "ktune/hash.h"

#include <cstdint>
#include <new>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ktune {
namespace {

// The canonical (big-endian) form, as `xxhsum -H2` prints it.
std::string to_hex(XXH128_hash_t h) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, h);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < 16; ++i) {
    out[2 * i] = kDigits[canonical.digest[i] >> 4];
    out[2 * i + 1] = kDigits[canonical.digest[i] & 0xf];
  }
  return out;
}

XXH3_state_t* state_of(void* p) { return static_cast<XXH3_state_t*>(p); }

}  // namespace

std::string content_hash(std::string_view bytes) {
  return to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

Hasher::Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_of(state_));
}

Hasher::~Hasher() { XXH3_freeState(state_of(state_)); }

Hasher& Hasher::add(std::string_view field) {
  // The length as 8 little-endian bytes, so ("ab", "c") and ("a", "bc") differ.
  unsigned char length[8];
  auto n = static_cast<std::uint64_t>(field.size());
  for (auto& byte : length) {
    byte = static_cast<unsigned char>(n & 0xff);
    n >>= 8;
  }
  XXH3_128bits_update(state_of(state_), length, sizeof length);
  XXH3_128bits_update(state_of(state_), field.data(), field.size());
  return *this;
}

std::string Hasher::hex() const { return to_hex(XXH3_128bits_digest(state_of(state_))); }

}  // namespace ktune
