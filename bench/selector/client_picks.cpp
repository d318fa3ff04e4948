// What the run-time client (ktune::Client: the C++ client alone, no Python, no Boost) answers for
// problems of a kernel, one JSON line per problem: the configuration, how it was found (exact
// problem, selector, nearest problem; which device level) and the query's microseconds. The GPU
// host's `family` step asks it at the sizes a family did not tune (docs/many-sizes.md#measured).
//
//   client_picks DB KERNEL PROBLEM [PROBLEM ...] [--device NAME ARCH]
//
// PROBLEM: name=value[,name=value...]. The device is the current GPU, or the one described by
// --device (by the name and architecture a run stored). Exit codes: 0 every problem answered, 1
// some had no answer (their line says why), 2 usage or database error.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "ktune/client.h"
#include "ktune/error.h"

namespace {

// "n=1024,f=15" as a problem; nullopt where it is not that.
std::optional<ktune::Problem> parse_problem(const std::string& text) {
  ktune::Problem p;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    char* rest = nullptr;
    const long long value = std::strtoll(item.c_str() + eq + 1, &rest, 0);
    if (rest == item.c_str() + eq + 1 || *rest != '\0') return std::nullopt;
    p[item.substr(0, eq)] = value;
    at = end + 1;
  }
  return p.empty() ? std::nullopt : std::optional<ktune::Problem>(p);
}

// A JSON string of text without control characters ("quoted", backslashes and quotes escaped).
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<ktune::ClientDevice> device;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--device") continue;
    if (i + 2 >= args.size()) {
      std::fprintf(stderr, "error: --device takes a name and an architecture (sm_90)\n");
      return 2;
    }
    device = ktune::ClientDevice::describe(args[i + 1], args[i + 2], 0, 0);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + 3));
    break;
  }
  if (args.size() < 3) {
    std::fprintf(stderr, "usage: %s DB KERNEL PROBLEM [PROBLEM ...] [--device NAME ARCH]\n",
                 argv[0]);
    return 2;
  }
  std::vector<ktune::Problem> problems;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const auto p = parse_problem(args[i]);
    if (!p) {
      std::fprintf(stderr, "error: problem '%s': expected name=value[,name=value...]\n",
                   args[i].c_str());
      return 2;
    }
    problems.push_back(*p);
  }
  if (!device) device = ktune::ClientDevice::current(0);
  ktune::Client client(args[0], *device);
  int code = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const ktune::LookupResult r = client.best(args[1], problems[i]);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const std::string asked = json_string(args[i + 2]);
    if (!r) {
      std::printf("{\"problem\": %s, \"error\": %s}\n", asked.c_str(),
                  json_string(r.message).c_str());
      code = 1;
      continue;
    }
    std::printf(
        "{\"problem\": %s, \"key\": %s, \"problem_match\": %s, \"device_match\": %s, "
        "\"answered_from\": %s, \"describe\": %s, \"query_us\": %.2f}\n",
        asked.c_str(), json_string(r->config_key).c_str(),
        json_string(std::string(ktune::to_string(r->problem_match))).c_str(),
        json_string(std::string(ktune::to_string(r->device_match))).c_str(),
        json_string(r->problem_key).c_str(), json_string(r->describe()).c_str(), us);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
