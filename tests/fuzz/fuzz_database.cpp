// libFuzzer target: results databases (docs/database.md). Any bytes as a database file, opened
// read-only as `ktune best` and `report` open it and as the run-time client opens it; what opens
// is read through: runs, trials, bests, a client lookup.
#include "fuzz_common.h"
#include "ktune/client.h"
#include "ktune/store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  const std::string path = fuzz::write_input("fuzz.db", data, size);
  fuzz::refusals_allowed([&] {
    const Store store = Store::open(path, Store::Mode::kReadOnly);
    for (const RunRecord& run : store.runs()) (void)store.trials_of_run(run.id);
    for (const BestRecord& b : store.bests())
      (void)store.best(b.kernel_name, b.problem_key, b.device_id);
  });
  fuzz::refusals_allowed([&] {
    static const ClientDevice device =
        ClientDevice::describe("NVIDIA H200", "sm_90", 132, 150'000'000'000);
    Client client(path, device);
    for (const char* kernel : {"reduce", "convolution_kernel"})
      (void)client.best(kernel, {{"n", 1 << 24}});
  });
  return 0;
}
