// libFuzzer target: Kernel Tuner caches (docs/replay.md). Any text is parsed as a cache; one
// that is accepted becomes a replay target (a kernel synthesized from it), as `ktune tune
// --replay` does.
#include <string_view>

#include "fuzz_common.h"
#include "ktune/replay.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::refusals_allowed([&] {
    const Recording recording = parse_kt_cache(text, "fuzz.json", "Fuzz GPU");
    const ReplayTarget target = replay_target(recording, nullptr);
    (void)target;
  });
  return 0;
}
