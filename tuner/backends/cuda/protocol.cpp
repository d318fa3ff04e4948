// The CUDA backend's pipe protocol (protocol.h): every message to and from JSON.
#include "backends/cuda/protocol.h"

#include <cmath>
#include <limits>

#include "ktune/error.h"

namespace ktune::protocol {

using nlohmann::json;

namespace {

json measure_json(const MeasureOptions& m) {
  return json{{"samples", m.samples},
              {"warmup", m.warmup},
              {"min_samples", m.min_samples},
              {"max_samples", m.max_samples},
              {"target_spread", m.target_spread},
              {"max_seconds", m.max_seconds},
              {"batch_below_ms", m.batch_below_ms},
              {"sustain_ms", m.sustain_ms},
              {"energy_ms", m.energy_ms},
              {"flush_l2", std::string(to_string(m.flush_l2))},
              {"timeout_seconds", m.timeout_seconds},
              {"verify_on_device", m.verify_on_device},
              {"seed", m.seed},
              {"fetch_outputs", m.fetch_outputs}};
}

MeasureOptions measure_from_json(const json& j) {
  MeasureOptions m;
  m.samples = j.value("samples", m.samples);
  m.warmup = j.value("warmup", m.warmup);
  m.min_samples = j.value("min_samples", m.min_samples);
  m.max_samples = j.value("max_samples", m.max_samples);
  m.target_spread = j.value("target_spread", m.target_spread);
  m.max_seconds = j.value("max_seconds", m.max_seconds);
  m.batch_below_ms = j.value("batch_below_ms", m.batch_below_ms);
  m.sustain_ms = j.value("sustain_ms", m.sustain_ms);
  m.energy_ms = j.value("energy_ms", m.energy_ms);
  m.flush_l2 =
      flush_l2_from_string(j.value("flush_l2", std::string("auto"))).value_or(FlushL2::kAuto);
  m.timeout_seconds = j.value("timeout_seconds", m.timeout_seconds);
  m.verify_on_device = j.value("verify_on_device", m.verify_on_device);
  m.seed = j.value("seed", m.seed);
  m.fetch_outputs = j.value("fetch_outputs", std::vector<std::string>{});
  return m;
}

}  // namespace

json to_json(const WorkerInit& init) {
  json j;
  j["op"] = "init";
  j["kernel"] = init.kernel;
  j["params"] = json::array();
  for (const auto& p : init.params) {
    json values = json::array();
    for (const auto& v : p.values) values.push_back(v.to_literal());
    j["params"].push_back(
        {{"name", p.name}, {"values", values}, {"default_index", p.default_index}});
  }
  j["restrictions"] = init.restrictions;
  j["inputs"] = init.inputs;
  j["expected"] = init.expected;
  j["problem"] = init.problem;
  j["plugins"] = init.plugins;
  j["device"] = init.device;
  j["measure"] = measure_json(init.measure);
  return j;
}

WorkerInit worker_init_from_json(const json& j) {
  WorkerInit init;
  init.kernel = j.at("kernel").get<std::string>();
  for (const auto& p : j.value("params", json::array())) {
    Parameter param;
    param.name = p.at("name").get<std::string>();
    for (const auto& v : p.at("values")) param.values.push_back(Value::parse(v.get<std::string>()));
    param.default_index = p.at("default_index").get<std::size_t>();
    init.params.push_back(std::move(param));
  }
  init.restrictions = j.value("restrictions", std::vector<std::string>{});
  init.inputs = j.value("inputs", std::map<std::string, std::string>{});
  init.expected = j.value("expected", std::map<std::string, std::string>{});
  init.problem = j.at("problem").get<Problem>();
  init.plugins = j.value("plugins", std::vector<std::string>{});
  init.device = j.value("device", 0);
  init.measure = measure_from_json(j.at("measure"));
  return init;
}

json to_json(const EvaluateRequest& r) {
  json j{{"op", "evaluate"}, {"config", r.config}, {"lowered_name", r.lowered_name}};
  if (r.cut_above_ms > 0) j["cut_above_ms"] = r.cut_above_ms;
  return j;
}

json to_json(const RetimeRequest& r) {
  json j{{"op", "retime"}, {"rounds", r.rounds}, {"candidates", json::array()}};
  for (const auto& c : r.candidates)
    j["candidates"].push_back(
        {{"config", c.config}, {"lowered_name", c.lowered_name}, {"size", c.size}});
  return j;
}

Request request_from_json(const json& j) {
  Request r;
  r.name = j.value("op", "");
  if (r.name == "init") {
    r.op = Request::Op::kInit;  // read whole by worker_init_from_json
  } else if (r.name == "evaluate") {
    r.op = Request::Op::kEvaluate;
    r.evaluate.config = j.at("config").get<std::string>();
    r.evaluate.lowered_name = j.at("lowered_name").get<std::string>();
    r.evaluate.cut_above_ms = j.value("cut_above_ms", 0.0);
  } else if (r.name == "retime") {
    r.op = Request::Op::kRetime;
    r.retime.rounds = j.value("rounds", 10);
    for (const auto& c : j.at("candidates"))
      r.retime.candidates.push_back({c.at("config").get<std::string>(),
                                     c.at("lowered_name").get<std::string>(),
                                     c.at("size").get<std::size_t>()});
  } else if (r.name == "quit") {
    r.op = Request::Op::kQuit;
  }
  return r;
}

json to_json(const Measurement& m) {
  json j{{"status", std::string(to_string(m.status))},
         {"registers", m.registers},
         {"local_bytes", m.local_bytes},
         {"static_shared_bytes", m.static_shared_bytes},
         {"dynamic_shared_bytes", m.dynamic_shared_bytes},
         {"max_threads_per_block", m.max_threads_per_block},
         {"occupancy", m.occupancy},
         {"l2_flushed", m.l2_flushed},
         {"launches_per_sample", m.launches_per_sample},
         {"sm_clock_mhz", m.sm_clock_mhz},
         {"max_sm_clock_mhz", m.max_sm_clock_mhz},
         {"temperature_c", m.temperature_c},
         {"clock_reasons", m.clock_reasons},
         {"gpu_ms", m.gpu_ms},
         {"timed_ms", m.timed_ms},
         {"eval_ms", m.eval_ms},
         {"phases_ms", m.phases_ms}};
  if (!m.error.empty()) j["error"] = m.error;
  if (m.status == TrialStatus::kOk) {
    j["samples_ms"] = m.samples_ms;
    j["time_ms"] = m.time_ms;
    j["time_min_ms"] = m.time_min_ms;
    j["time_mean_ms"] = m.time_mean_ms;
    j["time_spread"] = m.time_spread;
    if (std::isfinite(m.rank_ms)) j["rank_ms"] = m.rank_ms;
    if (m.cut) j["cut"] = true;
    if (std::isfinite(m.energy_j)) j["energy_j"] = m.energy_j;
    if (std::isfinite(m.power_w)) j["power_w"] = m.power_w;
    if (!m.energy_source.empty()) j["energy_source"] = m.energy_source;
  }
  if (!m.outputs.empty()) {
    j["outputs"] = json::array();
    for (const auto& [name, bytes] : m.outputs) j["outputs"].push_back({name, bytes.size()});
  }
  return j;
}

std::string outputs_blob(const Measurement& m) {
  std::string blob;
  for (const auto& [name, bytes] : m.outputs) blob += bytes;
  return blob;
}

Measurement measurement_from_message(const json& header, const std::string& blob) {
  Measurement m = measurement_from_json(header);
  std::size_t at = 0;
  for (const auto& o : header.value("outputs", json::array())) {
    const auto name = o.at(0).get<std::string>();
    const auto size = o.at(1).get<std::size_t>();
    if (at + size > blob.size())
      throw Error(ErrorKind::kInternal, "worker reply: outputs larger than the data sent");
    m.outputs[name] = blob.substr(at, size);
    at += size;
  }
  return m;
}

Measurement measurement_from_json(const json& j) {
  Measurement m;
  m.status = trial_status_from_string(j.value("status", "crashed")).value_or(TrialStatus::kCrashed);
  m.error = j.value("error", "");
  m.samples_ms = j.value("samples_ms", std::vector<double>{});
  m.time_ms = j.value("time_ms", 0.0);
  m.time_min_ms = j.value("time_min_ms", 0.0);
  m.time_mean_ms = j.value("time_mean_ms", 0.0);
  m.time_spread = j.value("time_spread", 0.0);
  m.rank_ms = j.value("rank_ms", std::numeric_limits<double>::quiet_NaN());
  m.cut = j.value("cut", false);
  m.energy_j = j.value("energy_j", std::numeric_limits<double>::quiet_NaN());
  m.power_w = j.value("power_w", std::numeric_limits<double>::quiet_NaN());
  m.energy_source = j.value("energy_source", "");
  m.registers = j.value("registers", -1);
  m.local_bytes = j.value("local_bytes", -1);
  m.static_shared_bytes = j.value("static_shared_bytes", -1);
  m.dynamic_shared_bytes = j.value("dynamic_shared_bytes", -1);
  m.max_threads_per_block = j.value("max_threads_per_block", -1);
  m.occupancy = j.value("occupancy", -1.0);
  m.l2_flushed = j.value("l2_flushed", -1);
  m.launches_per_sample = j.value("launches_per_sample", 1);
  m.sm_clock_mhz = j.value("sm_clock_mhz", -1);
  m.max_sm_clock_mhz = j.value("max_sm_clock_mhz", -1);
  m.temperature_c = j.value("temperature_c", -1);
  m.clock_reasons = j.value("clock_reasons", std::uint64_t{0});
  m.gpu_ms = j.value("gpu_ms", 0.0);
  m.timed_ms = j.value("timed_ms", 0.0);
  m.eval_ms = j.value("eval_ms", 0.0);
  m.phases_ms = j.value("phases_ms", std::map<std::string, double>{});
  return m;
}

json to_json(const RetimeReply& r) {
  if (!r.error.empty()) return json{{"error", r.error}};
  json j{{"gpu_ms", r.gpu_ms}, {"results", json::array()}};
  for (const auto& m : r.results) j["results"].push_back(to_json(m));
  return j;
}

RetimeReply retime_reply_from_json(const json& j) {
  RetimeReply r;
  r.error = j.value("error", "");
  r.gpu_ms = j.value("gpu_ms", 0.0);
  for (const auto& m : j.value("results", json::array()))
    r.results.push_back(measurement_from_json(m));
  return r;
}

}  // namespace ktune::protocol
