// Searches written as straight-line code, the way Kernel Tuner writes pso, firefly_algorithm,
// diff_evo and the scipy optimisers behind minimize, basinhopping and dual_annealing, and run
// as C++20 coroutines on the ask/tell interface: the search co_awaits the times of a batch of
// configurations; those told before are answered from memory at no cost, the rest are proposed
// as the loop asks, and the search resumes once every one of them is told. A search that ends
// (its iterations are spent) is started again (run_number() says which run it is), so the
// budget, not the algorithm, ends the run, as with the other native strategies.
//
// The continuous searches work in Kernel Tuner's scaled space: parameter i with n_i values
// spans [0, eps * n_i) with eps = 1 / max n_i, its j-th value at eps * (j + 0.5); a point is
// snapped to the nearest value of each parameter and, when that configuration is not valid,
// repaired to its nearest valid neighbour (adjacent, then Hamming).
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <vector>

#include "strategies/native/common.h"

namespace ktune::native {

using Point = std::vector<double>;

class SequentialStrategy : public NativeStrategy {
 protected:
  // The coroutine type of search().
  struct Search {
    struct promise_type {
      std::exception_ptr error;
      Search get_return_object() {
        return Search(std::coroutine_handle<promise_type>::from_promise(*this));
      }
      std::suspend_always initial_suspend() noexcept { return {}; }
      std::suspend_always final_suspend() noexcept { return {}; }
      void return_void() {}
      void unhandled_exception() { error = std::current_exception(); }
    };
    explicit Search(std::coroutine_handle<promise_type> h) : handle(h) {}
    Search(Search&& other) noexcept : handle(other.handle) { other.handle = {}; }
    Search& operator=(Search&& other) noexcept;
    Search(const Search&) = delete;
    Search& operator=(const Search&) = delete;
    ~Search() {
      if (handle) handle.destroy();
    }
    std::coroutine_handle<promise_type> handle;
  };

  // What co_await evaluate(...) gives back: the time of each configuration in ms; kFailed for a
  // failure, and (not measured) for an empty configuration (a point with no valid configuration
  // near it) or one the space does not hold.
  struct Evaluation {
    SequentialStrategy& self;
    std::vector<Config> configs;
    bool await_ready();
    // The suspended coroutine is the one to resume: the search, or a coroutine it co_awaits.
    void await_suspend(std::coroutine_handle<> waiting) { self.leaf_ = waiting; }
    std::vector<double> await_resume();
  };
  Evaluation evaluate(std::vector<Config> configs);

  // One run of the algorithm from a fresh start; it may return when its iterations are spent.
  // The first run also sees the warm start (warm_configs(), told before it starts).
  virtual Search search() = 0;
  // Reads the algorithm's options; called from configure().
  virtual void read_options(OptionReader& options) = 0;

  // ---- Kernel Tuner's scaled space ----
  double eps() const { return eps_; }
  const Point& upper() const { return upper_; }  // lower bounds are 0
  Point position(const Config& c) const;
  // The nearest valid configuration to x; empty when neither it nor a neighbour is valid.
  Config snap(const Point& x);
  Point random_point();
  // The nearest valid configuration to index vector idx (rounded and clipped), as snap().
  Config repair(Config c);
  // How many valid configurations there are, at most limit; limit for a space too large to
  // keep in memory (more than 2^19 of them), which is not walked again.
  std::uint64_t valid_count(std::uint64_t limit) const;
  // How many runs of search() have started (1 in the first).
  std::uint64_t run_number() const { return runs_; }

 private:
  void configure(OptionReader& options) final;
  std::vector<Config> propose(std::size_t max_count) final;
  void on_result(const Config&, double) final {}
  // Resumes the search until it waits on configurations not told yet; false if it cannot go on.
  bool advance();

  void drop_search() {
    search_.reset();
    leaf_ = {};
  }

  std::optional<Search> search_;
  std::coroutine_handle<> leaf_;    // the innermost coroutine waiting on an evaluation
  std::vector<Config> waiting_;     // the configurations of the evaluation the search waits on
  std::size_t next_ = 0;            // the next of waiting_ to propose
  std::uint64_t free_batches_ = 0;  // evaluations answered from memory since the last proposal
  std::uint64_t runs_ = 0;
  double eps_ = 1;
  Point upper_;
};

}  // namespace ktune::native
