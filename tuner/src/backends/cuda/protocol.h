// The GPU worker's answers, shared by the worker (gpu_worker.cpp) and the tuner's side
// (cuda_backend.cpp): a Measurement as the JSON header of a reply.
#pragma once

#include <nlohmann/json.hpp>

#include "ktune/backend.h"

namespace ktune {

Measurement measurement_from_json(const nlohmann::json& reply);

}  // namespace ktune
