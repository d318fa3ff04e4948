// libFuzzer target: job files (ktune/job.h). Any bytes are read as a job file; what is accepted
// is applied to the built-in reduction's space, which is then enumerated a little.
#include "fuzz_common.h"
#include "ktune/instance.h"
#include "ktune/job.h"
#include "ktune/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  // Kept for the process (not destroyed: a Registry holds loaded libraries and cannot move).
  static const Registry& registry = *[] {
    auto* r = new Registry;
    register_builtin_kernels(*r);
    return r;
  }();
  const std::string path = fuzz::write_input("job.toml", data, size);
  fuzz::refusals_allowed([&] {
    const JobFile job = load_job(path);
    const KernelSpec kernel =
        apply_job(registry.get(job.kernel.empty() ? "reduce" : job.kernel), job);
    const KernelInstance instance(kernel, kernel.make_problem(job.problem),
                                  DeviceLimits::for_arch(90));
    int seen = 0;
    instance.space().for_each_valid([&](const Config&) { return ++seen < 64; });
  });
  return 0;
}
