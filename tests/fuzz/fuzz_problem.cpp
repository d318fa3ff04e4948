// libFuzzer target: problem texts (`--problem NAME=TEXT`, a job file's [problem]). Each line of
// the input is NAME=TEXT, given to a ProblemSet as the command line gives it; what is accepted
// is expanded to its problems, as a family tune does.
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "ktune/problem_set.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::refusals_allowed([&] {
    ProblemSet set;
    while (!text.empty()) {
      const auto end = text.find('\n');
      const std::string_view line = text.substr(0, end);
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
      const auto eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      set.set(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)), "--problem");
    }
    (void)set.problems();
  });
  return 0;
}
