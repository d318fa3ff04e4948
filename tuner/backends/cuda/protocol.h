// The pipe protocol between the CUDA backend (backend.cpp) and its worker process
// (worker_main.cpp): each message's fields, written and read in one place. The header of every
// message is JSON (process/ipc.h), CUBINs travel as its binary blob; everything on either side of
// the pipe is typed.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/compiler.h"
#include "ktune/kernel.h"

namespace ktune::protocol {

// The first message, and a later one that makes a running worker that of another kernel
// instance (op "init": a family's next problem keeps the worker and its context): which kernel
// (found by name in the worker's registry) with the space as tuned, which problem, device and
// measurement.
struct WorkerInit {
  std::string kernel;
  std::vector<Parameter> params;  // the space as tuned (a job file may change it)
  std::vector<std::string> restrictions;
  std::map<std::string, std::string> inputs, expected;  // every buffer's init and expected text
  Problem problem;
  std::vector<std::string> plugins;
  int device = 0;
  MeasureOptions measure;
};
nlohmann::json to_json(const WorkerInit& init);
WorkerInit worker_init_from_json(const nlohmann::json& j);

// One configuration to evaluate; the blob is its CUBIN.
struct EvaluateRequest {
  std::string config;  // SearchSpace::key
  std::string lowered_name;
  double cut_above_ms = 0;  // Backend::set_cutoff: 0 none
};

// The finalists to re-time interleaved; the blob is their CUBINs, one after the other.
struct RetimeRequest {
  struct Candidate {
    std::string config;
    std::string lowered_name;
    std::size_t size = 0;  // bytes of its CUBIN in the blob
  };
  int rounds = 10;
  std::vector<Candidate> candidates;
};

// A request, as the worker reads it.
struct Request {
  enum class Op { kInit, kEvaluate, kRetime, kQuit, kUnknown } op = Op::kUnknown;
  std::string name;  // the op as sent, for the error of an unknown one
  EvaluateRequest evaluate;
  RetimeRequest retime;
};
nlohmann::json to_json(const EvaluateRequest& request);
nlohmann::json to_json(const RetimeRequest& request);
Request request_from_json(const nlohmann::json& j);

// Answers: a Measurement per evaluation; per re-timing one per candidate, or an error.
nlohmann::json to_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j);
// An evaluation's reply carries the fetched outputs (Measurement::outputs) as its blob, one after
// the other in the header's order ("outputs": [[name, bytes], ...]).
std::string outputs_blob(const Measurement& m);
Measurement measurement_from_message(const nlohmann::json& header, const std::string& blob);
struct RetimeReply {
  std::vector<Measurement> results;
  double gpu_ms = 0;
  std::string error;  // non-empty: the re-timing failed
};
nlohmann::json to_json(const RetimeReply& reply);
RetimeReply retime_reply_from_json(const nlohmann::json& j);

}  // namespace ktune::protocol
