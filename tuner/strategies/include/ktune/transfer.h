// Transfer between devices: what measurements of a kernel on other GPUs (or other problems)
// say about where to start on a new one. Each source ranks the configurations it measured by
// time (normalised: position / working configurations, failed or missing ones 1); the
// consensus is the mean of those ranks; TransferSearch races them on the new device
// (docs/strategies.md#transfer-between-gpus).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ktune/space.h"
#include "ktune/strategy.h"

namespace ktune {

// Measurements of one kernel on one device and problem.
struct TransferSource {
  std::string name;                         // device (and problem), for messages
  std::vector<std::string> params;          // the parameter each value of a row belongs to
  std::vector<std::vector<Value>> configs;  // one row of values per measured configuration
  std::vector<double> times;                // ms per row; NaN where the configuration failed
};

// How many evaluations a transfer opening spends by default before the search strategy takes
// over (docs/strategies.md#transfer-between-gpus).
constexpr std::size_t kTransferTopK = 20;

// A search that starts from measurements on other devices (or problems), wrapped around the
// strategy that continues it. Its first `opening` evaluations race the sources: each source is
// an arm that ranks configurations by its own times, and one more arm ranks them by the
// consensus (the mean normalised rank). Every arm's fastest configuration is measured first;
// then, in rounds, the slower half of the arms (by the best time each has found on this device)
// drops out, and each arm left takes 1, 2, 4, ... steps: the configuration it ranks best among
// the unmeasured ones at most one parameter (else two) away from its own best so far, else its
// next in rank. The last arm standing spends what is left of the opening (with a single source,
// where there is nothing to race, its next in rank and its climb take turns). Then `inner` starts
// afresh with the rest of the budget; a configuration the opening measured that it proposes is
// answered from the opening's result, not measured again. The opening is deterministic and
// knows nothing of GPUs, vendors or kernels, only parameter values and times. Measured leaving
// one GPU out on Kernel Tuner's recordings (docs/strategies.md#transfer-between-gpus). `inner`
// must outlive this strategy; the name and the batching are inner's, and its options are
// checked when this one starts.
class TransferSearch final : public Strategy {
 public:
  TransferSearch(Strategy& inner, std::vector<TransferSource> sources,
                 std::size_t opening = kTransferTopK);
  ~TransferSearch() override;
  std::string name() const override;
  void start(const StrategyContext& context) override;
  std::vector<Config> ask(std::size_t max_count) override;
  void tell(const Config& config, const Outcome& outcome) override;
  bool exhausted() const override;
  std::size_t ask_batch() const override;
  bool fixed_order() const override;
  // Whether `config` was proposed by the opening (a warm-start trial, not the inner search's).
  bool from_opening(const Config& config) const;

 private:
  struct State;
  Strategy& inner_;
  std::vector<TransferSource> sources_;
  std::size_t opening_;
  std::unique_ptr<State> state_;
};

}  // namespace ktune
