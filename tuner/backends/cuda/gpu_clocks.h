// The GPU's clocks, temperature, power and energy, read-only, through NVML (internal). libnvidia-ml
// ships with the driver; it is loaded with dlopen, so ktune neither links it nor needs its header,
// and a machine without it simply records no clocks. Nothing here changes a setting.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ktune::worker {

struct ClockReading {
  int sm_mhz = -1;            // current SM clock
  int memory_mhz = -1;        // current memory clock
  int temperature_c = -1;     // GPU core temperature
  std::uint64_t reasons = 0;  // NVML's clock event (throttle) reasons, a bit set
};

class GpuClocks {
 public:
  // The device with this PCI bus id ("0000:17:00.0", from cudaDeviceGetPCIBusId); null where
  // NVML cannot be loaded or does not know the device.
  static std::unique_ptr<GpuClocks> open(const std::string& pci_bus_id);
  // The same, loading and starting NVML (tens of milliseconds) before asking for the bus id, so
  // that a caller starts it on another thread before it knows the id; an empty id gives null.
  static std::unique_ptr<GpuClocks> open(const std::function<std::string()>& pci_bus_id);
  ~GpuClocks();
  GpuClocks(const GpuClocks&) = delete;
  GpuClocks& operator=(const GpuClocks&) = delete;

  ClockReading read() const;
  int max_sm_mhz() const { return max_sm_mhz_; }
  // NVML's energy counter: millijoules since the driver loaded (Volta and later); -1 where the
  // device has none. It advances in steps (every few to a hundred milliseconds, by device).
  long long energy_mj() const;
  // The board's power draw in milliwatts as NVML reports it (on some devices an average over
  // the last second); -1 where unknown.
  int power_mw() const;

 private:
  struct Api;
  GpuClocks() = default;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;
  int max_sm_mhz_ = -1;
};

}  // namespace ktune::worker
