// Transfer between devices: what measurements of a kernel on other GPUs (or other problems)
// say about where to start on a new one. Each source ranks the configurations it measured by
// time; the consensus is the mean of the normalised ranks over the sources, and the search is
// warm-started with the configurations at its top (docs/strategies.md#transfer-between-gpus).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ktune/replay.h"
#include "ktune/space.h"

namespace ktune {

// Measurements of one kernel on one device and problem.
struct TransferSource {
  std::string name;                         // device (and problem), for messages
  std::vector<std::string> params;          // the parameter each value of a row belongs to
  std::vector<std::vector<Value>> configs;  // one row of values per measured configuration
  std::vector<double> times;                // ms per row; NaN where the configuration failed
};

TransferSource transfer_source(const Recording& recording);

// The `count` configurations of `space` that rank best on average over the sources: in each
// source a configuration's rank among its working ones, divided by how many work (0 is the
// fastest); failed, missing or unmappable configurations rank 1. Only configurations measured
// in some source and valid in `space` take part; a parameter a source lacks is taken at its
// default in `space`. Ties go to enumeration order. The list alternates between this mean
// ranking and the sources' own rankings taken in turn (each source's fastest, then each one's
// second ...), without repeats. Fewer than `count` when fewer qualify.
std::vector<Config> consensus_top(const SearchSpace& space,
                                  const std::vector<TransferSource>& sources, std::size_t count);

// How many configurations a transfer warm start proposes by default (chosen leaving one GPU out:
// docs/strategies.md#transfer-between-gpus).
constexpr std::size_t kTransferTopK = 20;

}  // namespace ktune
