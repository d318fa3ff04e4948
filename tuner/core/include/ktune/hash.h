// Content hashes used as keys (kernel sources, search spaces, compile-cache entries).
#pragma once

#include <string>
#include <string_view>

namespace ktune {

// 128-bit XXH3 of the bytes, as 32 lower-case hex digits. Stable across runs and machines.
std::string content_hash(std::string_view bytes);

// Incremental form for hashing several fields without ambiguity (each field is length-prefixed).
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add(std::string_view field);
  std::string hex() const;

 private:
  void* state_;
};

}  // namespace ktune
