// A driver for the fuzz targets where libFuzzer is not built (gcc: the CI build). It runs every
// seed, then random mutations of them (byte flips, insertions of bytes and of tokens the parsers
// care about, deletions, repeated chunks, splices of two seeds) for a number of seconds, from a
// fixed seed. It reaches less than libFuzzer's coverage-guided search under the sanitizers does
// in hours (scripts/fuzz.sh), but runs the same targets on every CI run. The target's rule
// holds: a ktune::Error is the one accepted refusal; any other exception or a crash ends the
// program, leaving the input in fuzz-smoke-<target>.input in the working directory.
//
//   fuzz_smoke_TARGET SECONDS SEED_DIR ...
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// The input being run, for the signal handler (which may only use async-signal-safe calls).
std::string g_current;
char g_keep[512] = "fuzz-smoke.input";

void keep_input() {
  const int fd = ::open(g_keep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < g_current.size()) {
    const ssize_t n = ::write(fd, g_current.data() + done, g_current.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void on_fatal(int sig) {
  keep_input();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void run(const std::string& input) {
  g_current = input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

const std::array<const char*, 24> kTokens = {
    " ",   "=",  "[",  "]",    "{",   "}",    "(",       ")",
    "\"",  ",",  "\n", "[[",   "]]",  "-1",   "0",       "1e309",
    "nan", "**", "if", "else", "not", "true", "\\u0000", "9223372036854775808"};

std::string mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  const auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  const int steps = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < steps; ++i) {
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // insert a random byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                 static_cast<char>(rng() & 0xff));
        break;
      case 2:  // insert a token
        s.insert(pick(s.size() + 1), kTokens[pick(kTokens.size())]);
        break;
      case 3: {  // delete a range
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(64, s.size() - at)));
        break;
      }
      case 4: {  // repeat a chunk
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        const std::string chunk = s.substr(at, 1 + pick(32));
        s.insert(pick(s.size() + 1), chunk);
        break;
      }
      default: {  // splice with another seed
        const std::string& other = seeds[pick(seeds.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SECONDS SEED_DIR ...\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  std::snprintf(g_keep, sizeof g_keep, "%s.input",
                std::filesystem::path(argv[0]).filename().c_str());
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal);
  std::set_terminate([] {
    keep_input();
    std::fprintf(stderr, "fuzz smoke: an exception other than ktune::Error escaped\n");
    std::abort();
  });

  std::vector<std::string> seeds;
  for (int i = 2; i < argc; ++i)
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      std::ifstream in(entry.path(), std::ios::binary);
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz smoke: no seeds\n");
    return 2;
  }
  std::uint64_t runs = 0;
  for (const std::string& s : seeds) run(s), ++runs;
  std::mt19937_64 rng(20261126);
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  while (elapsed() < seconds) {
    run(mutate(seeds[rng() % seeds.size()], seeds, rng));
    ++runs;
  }
  std::printf("fuzz smoke %s: %llu runs in %.1f s, no finding\n",
              std::filesystem::path(argv[0]).filename().c_str(),
              static_cast<unsigned long long>(runs), elapsed());
  return 0;
}
