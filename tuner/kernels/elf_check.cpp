// The ELF checks done before a plugin is dlopened (see elf_check.h).
#include "kernels/elf_check.h"

#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "ktune/error.h"

namespace ktune {

namespace {

#if defined(__x86_64__)
constexpr std::uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr std::uint16_t kMachine = EM_PPC64;
#else
#error "ktune: name this machine's ELF e_machine"
#endif
constexpr unsigned char kData =
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::kPlugin, fmt::format("{}: cannot load plugin: {}", path, why));
}

// True when [offset, offset + count * size) lies inside a file of `file_size` bytes, without
// overflow.
bool inside(std::uint64_t offset, std::uint64_t count, std::uint64_t size,
            std::uint64_t file_size) {
  if (offset > file_size) return false;
  if (size != 0 && count > (file_size - offset) / size) return false;
  return true;
}

void check_header(const std::string& path, const Elf64_Ehdr& h, std::uint64_t size) {
  if (h.e_ident[EI_CLASS] != ELFCLASS64)
    refuse(path, "a 32-bit ELF file; this ktune loads 64-bit libraries");
  if (h.e_ident[EI_DATA] != kData) refuse(path, "an ELF file of the other byte order");
  if (h.e_type != ET_DYN)
    refuse(path, fmt::format("an ELF file of type {}, not a shared library", h.e_type));
  if (h.e_machine != kMachine)
    refuse(path,
           fmt::format("an ELF library for machine {}, not this one ({})", h.e_machine, kMachine));
  if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phnum == 0 ||
      !inside(h.e_phoff, h.e_phnum, h.e_phentsize, size))
    refuse(path, fmt::format("truncated or damaged ELF file ({} bytes): its program headers "
                             "lie outside it",
                             size));
  if (h.e_shnum != 0 && !inside(h.e_shoff, h.e_shnum, h.e_shentsize, size))
    refuse(path, fmt::format("truncated or damaged ELF file ({} bytes): its section headers "
                             "end at byte {}",
                             size, h.e_shoff + std::uint64_t{h.e_shnum} * h.e_shentsize));
}

}  // namespace

void check_elf_library(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) refuse(path, "cannot read the file");
  const auto end = in.tellg();
  if (end < 0) refuse(path, "cannot read the file");
  const auto size = static_cast<std::uint64_t>(end);
  Elf64_Ehdr h{};
  in.seekg(0);
  in.read(reinterpret_cast<char*>(&h),
          static_cast<std::streamsize>(std::min<std::uint64_t>(size, sizeof h)));
  if (size < SELFMAG || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
    refuse(path, fmt::format("not an ELF shared library ({} bytes, no ELF magic number)", size));
  if (size < sizeof h) refuse(path, fmt::format("truncated ELF file ({} bytes)", size));
  check_header(path, h, size);
  std::vector<Elf64_Phdr> segments(h.e_phnum);
  in.seekg(static_cast<std::streamoff>(h.e_phoff));
  in.read(reinterpret_cast<char*>(segments.data()),
          static_cast<std::streamsize>(segments.size() * sizeof(Elf64_Phdr)));
  if (!in) refuse(path, "cannot read its program headers");
  for (const Elf64_Phdr& s : segments) {
    if (s.p_type == PT_LOAD && !inside(s.p_offset, 1, s.p_filesz, size))
      refuse(path, fmt::format("truncated ELF file ({} bytes): a loadable segment ends at byte {}",
                               size, s.p_offset + s.p_filesz));
  }
}

}  // namespace ktune
