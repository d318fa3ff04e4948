// The database records the tuning loop writes: a kernel version with its spec, a device, and
// trials built from a backend's measurement (throughput computed once, here).
#include "loop/records.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "ktune/hash.h"
#include "ktune/input_file.h"
#include "ktune/stored_spec.h"
#include "ktune/tuner.h"

namespace ktune {

namespace {

// Inputs other than the original kinds (random, iota, value) and expected files make measurements
// of their own: they join the kernel's identity, a file with its contents, so a resumed run never
// takes times measured on other data. (The original kinds stay out, so existing databases keep
// answering for them.)
void add_input_identity(const KernelSpec& k, Hasher& h) {
  for (const auto& b : k.buffers) {
    const BufferInit init = KernelSpec::parse_init(b);
    const std::string expected = KernelSpec::expected_file(b);
    const bool original =
        init.kind == BufferInit::Kind::kRandom || init.kind == BufferInit::Kind::kIota ||
        init.kind == BufferInit::Kind::kValue || init.kind == BufferInit::Kind::kNone;
    if (!original) h.add("input:" + b.name + "=" + b.init);
    for (const std::string& path :
         {init.kind == BufferInit::Kind::kFile ? init.text : std::string(), expected}) {
      if (path.empty()) continue;
      std::error_code ec;
      h.add("file:" + b.name)
          .add(std::filesystem::exists(path, ec)
                   ? read_input_file(path, "buffer " + b.name + ": file",
                                     std::numeric_limits<std::uint64_t>::max())
                   : std::string());
    }
  }
}

}  // namespace

KernelRecord kernel_record(const KernelInstance& instance) {
  const KernelSpec& k = instance.kernel();
  KernelRecord r;
  r.name = k.name;
  Hasher h;
  h.add(k.source).add(k.entry);
  for (const auto& o : k.compile_options) h.add(o);
  add_input_identity(k, h);
  if (k.user_defines)
    for (const auto& [name, value] : *k.user_defines) h.add("define").add(name).add(value);
  r.source_hash = h.hex();
  r.space_hash = instance.space().hash();
  r.source = k.source;
  r.entry = k.entry;
  r.spec_json = stored_spec(k).to_json();
  return r;
}

DeviceRecord device_record(const DeviceInfo& d) {
  DeviceRecord r;
  static_cast<DeviceIdentity&>(r) = d;
  r.l2_bytes = d.l2_bytes;
  r.driver_version = d.driver_version;
  r.nvrtc_version = nvrtc_version();
  return r;
}

StoredSpec stored_spec(const KernelSpec& k) {
  StoredSpec s;
  for (const auto& p : k.params)
    s.params.push_back({p.name, p.values, p.values.at(p.default_index)});
  for (const auto& p : k.problem) s.problem.push_back({p.name, p.default_value});
  s.restrictions = k.restrictions;
  s.grid = k.launch.grid;
  s.block = k.launch.block;
  s.shared_mem = k.launch.shared_mem;
  s.bytes = k.bytes;
  s.flops = k.flops;
  s.compile_options = k.compile_options;
  s.arch_specific = k.arch_specific;
  s.source_name = k.source_name;
  if (k.define_style == DefineStyle::kKernelTuner) {
    s.defines = "kernel_tuner";
    s.block_names = k.block_names;
    s.user_defines = k.user_defines;
  }
  return s;
}

Throughput throughput(const KernelInstance& instance, const Config& config, double time_ms) {
  const double seconds = time_ms * 1e-3;
  return {instance.bytes(config) / seconds / 1e9, instance.flops(config) / seconds / 1e9};
}

void TrialIds::stamp(TrialRecord& t) const {
  t.run_id = run;
  t.kernel_id = kernel;
  t.device_id = device;
  t.problem_id = problem;
}

void set_timing(TrialRecord& t, const Measurement& m, const Throughput& rate) {
  t.time_ms = m.time_ms;
  t.time_min_ms = m.time_min_ms;
  t.time_mean_ms = m.time_mean_ms;
  t.time_spread = m.time_spread;
  t.samples_ms = m.samples_ms;
  t.sample_count = static_cast<int>(m.samples_ms.size());
  t.rank_ms = m.rank_ms;
  t.cut = m.cut;
  t.sm_clock_mhz = m.sm_clock_mhz;
  t.temperature_c = m.temperature_c;
  t.power_w = m.power_w;
  t.energy_j = m.energy_j;
  t.gbps = rate.gbps;
  t.gflops = rate.gflops;
}

TrialRecord measured_trial(const KernelInstance& instance, const Config& config,
                           const std::string& arch, const Measurement& m,
                           const CompileResult* compiled) {
  TrialRecord t;
  const SearchSpace& space = instance.space();
  t.config_key = space.key(config);
  t.config_json = space.to_json(config).dump();
  t.arch = arch;
  t.time_ms = t.time_min_ms = t.time_mean_ms = t.time_spread = std::nan("");
  t.gbps = t.gflops = std::nan("");
  if (compiled != nullptr) {
    for (const auto& o : compiled->options)
      t.compile_options += (t.compile_options.empty() ? "" : " ") + o;
    t.compile_log = compiled->log;
    t.cubin_hash = compiled->key;
    t.compile_ms = compiled->compile_ms;
    t.registers = compiled->resources.registers;
    t.spill_bytes = compiled->resources.spill_store_bytes;
  }
  t.status = m.status;
  t.error = m.error;
  if (m.status == TrialStatus::kOk) set_timing(t, m, throughput(instance, config, m.time_ms));
  if (m.registers >= 0) t.registers = m.registers;
  t.local_bytes = m.local_bytes;
  t.static_shared_bytes = m.static_shared_bytes;
  t.dynamic_shared_bytes = m.dynamic_shared_bytes;
  t.max_threads_per_block = m.max_threads_per_block;
  t.occupancy = m.occupancy;
  t.l2_flushed = m.l2_flushed;
  t.eval_ms = m.eval_ms;
  return t;
}

}  // namespace ktune
