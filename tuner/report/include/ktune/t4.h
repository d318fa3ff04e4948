// Export of one tuning run in the T4 format of the autotuning community: the "Open Autotuning
// Results" JSON that Kernel Tuner writes (kernel_tuner/schema/T4/1.0.0/results-schema.json)
// and that the AutoTuningAssociation's methodology tools read, plus its metadata file. Mapping
// of ktune's statuses and fields: docs/reports.md#t4-export.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ktune/status.h"
#include "ktune/store.h"

namespace ktune {

inline constexpr const char* kT4SchemaVersion = "1.0.0";

// T4 "invalidity" of a status: correct, constraints, compile, runtime, correctness, timeout.
std::string_view t4_invalidity(TrialStatus status);

// The results document of one run: every search evaluation in the order it was made (the
// final interleaved re-timing of the leaders goes to metadata.ktune.retimed, not into
// results). Pretty-printed JSON. Throws Error(kUsage) for an unknown run.
std::string t4_results(const Store& store, std::int64_t run_id);

// The metadata document (metadata-schema.json) of the run's device and software.
std::string t4_metadata(const Store& store, std::int64_t run_id);

}  // namespace ktune
