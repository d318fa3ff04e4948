// NVML through dlopen: the handful of read-only calls gpu_clocks.h needs, declared here with
// NVML's documented signatures (nvmlReturn_t is an int, nvmlDevice_t an opaque pointer).
#include "backends/cuda/gpu_clocks.h"

#include <dlfcn.h>

namespace ktune::worker {

namespace {

constexpr int kNvmlSuccess = 0;
constexpr int kClockSm = 1;      // NVML_CLOCK_SM
constexpr int kClockMemory = 2;  // NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;

}  // namespace

struct GpuClocks::Api {
  void* library = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci)(const char*, void**) = nullptr;
  int (*clock)(void*, int, unsigned*) = nullptr;
  int (*max_clock)(void*, int, unsigned*) = nullptr;
  int (*temperature)(void*, int, unsigned*) = nullptr;
  int (*reasons)(void*, unsigned long long*) = nullptr;
  int (*energy)(void*, unsigned long long*) = nullptr;
  int (*power)(void*, unsigned*) = nullptr;

  template <typename F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library, name));
  }
  ~Api() {
    if (shutdown) shutdown();
    if (library) dlclose(library);
  }
};

std::unique_ptr<GpuClocks> GpuClocks::open(const std::string& pci_bus_id) {
  return open([&] { return pci_bus_id; });
}

std::unique_ptr<GpuClocks> GpuClocks::open(const std::function<std::string()>& pci_bus_id) {
  auto api = std::make_unique<Api>();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) return nullptr;
  api->bind(api->init, "nvmlInit_v2");
  api->bind(api->by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  api->bind(api->clock, "nvmlDeviceGetClockInfo");
  api->bind(api->max_clock, "nvmlDeviceGetMaxClockInfo");
  api->bind(api->temperature, "nvmlDeviceGetTemperature");
  api->bind(api->reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (api->reasons == nullptr) api->bind(api->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  api->bind(api->energy, "nvmlDeviceGetTotalEnergyConsumption");
  api->bind(api->power, "nvmlDeviceGetPowerUsage");
  if (!api->init || !api->by_pci || !api->clock || api->init() != kNvmlSuccess) return nullptr;
  api->bind(api->shutdown, "nvmlShutdown");
  std::unique_ptr<GpuClocks> clocks(new GpuClocks());
  const std::string bus = pci_bus_id();
  if (bus.empty() || api->by_pci(bus.c_str(), &clocks->device_) != kNvmlSuccess) return nullptr;
  unsigned max = 0;
  if (api->max_clock && api->max_clock(clocks->device_, kClockSm, &max) == kNvmlSuccess)
    clocks->max_sm_mhz_ = static_cast<int>(max);
  clocks->api_ = std::move(api);
  return clocks;
}

GpuClocks::~GpuClocks() = default;

ClockReading GpuClocks::read() const {
  ClockReading r;
  unsigned v = 0;
  if (api_->clock(device_, kClockSm, &v) == kNvmlSuccess) r.sm_mhz = static_cast<int>(v);
  if (api_->clock(device_, kClockMemory, &v) == kNvmlSuccess) r.memory_mhz = static_cast<int>(v);
  if (api_->temperature && api_->temperature(device_, kTemperatureGpu, &v) == kNvmlSuccess)
    r.temperature_c = static_cast<int>(v);
  unsigned long long reasons = 0;
  if (api_->reasons && api_->reasons(device_, &reasons) == kNvmlSuccess) r.reasons = reasons;
  return r;
}

long long GpuClocks::energy_mj() const {
  unsigned long long mj = 0;
  if (api_->energy && api_->energy(device_, &mj) == kNvmlSuccess) return static_cast<long long>(mj);
  return -1;
}

int GpuClocks::power_mw() const {
  unsigned mw = 0;
  if (api_->power && api_->power(device_, &mw) == kNvmlSuccess) return static_cast<int>(mw);
  return -1;
}

}  // namespace ktune::worker
