#include "ktune/energy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "ktune/error.h"

namespace ktune {

namespace {

bool usable(const TimeEnergy& p) {
  return std::isfinite(p.time_ms) && p.time_ms > 0 && std::isfinite(p.energy_j) && p.energy_j > 0;
}

// Usable indices, fastest first (ties: less energy, then the lower index).
std::vector<std::size_t> by_time(const std::vector<TimeEnergy>& points) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (usable(points[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (points[a].time_ms != points[b].time_ms) return points[a].time_ms < points[b].time_ms;
    return points[a].energy_j < points[b].energy_j;
  });
  return order;
}

}  // namespace

std::vector<std::size_t> pareto_front(const std::vector<TimeEnergy>& points) {
  std::vector<std::size_t> front;
  double least = std::numeric_limits<double>::infinity();
  // In order of time, a point is on the front where it needs less energy than every faster one.
  for (std::size_t i : by_time(points)) {
    if (points[i].energy_j >= least) continue;
    least = points[i].energy_j;
    front.push_back(i);
  }
  return front;
}

EnergyPolicy EnergyPolicy::parse(std::string_view text) {
  EnergyPolicy p;
  if (text == "fastest") return p;
  if (text == "least-energy") {
    p.kind = Kind::kLeastEnergy;
    return p;
  }
  constexpr std::string_view kWithin = "least-energy-within=";
  if (text.substr(0, kWithin.size()) == kWithin) {
    std::string_view number = text.substr(kWithin.size());
    if (!number.empty() && number.back() == '%') number.remove_suffix(1);
    double pct = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), pct);
    if (ec == std::errc() && end == number.data() + number.size() && std::isfinite(pct) &&
        pct >= 0 && pct <= 1000) {
      p.kind = Kind::kLeastEnergyWithin;
      p.within = pct / 100;
      return p;
    }
    throw Error(ErrorKind::kUsage,
                "policy '" + std::string(text) +
                    "': expected a percentage from 0 to 1000 after least-energy-within=, as in "
                    "least-energy-within=5%");
  }
  throw Error(ErrorKind::kUsage, "unknown policy '" + std::string(text) +
                                     "': expected fastest, least-energy or "
                                     "least-energy-within=PCT%");
}

std::string EnergyPolicy::text() const {
  switch (kind) {
    case Kind::kFastest:
      return "fastest";
    case Kind::kLeastEnergy:
      return "least-energy";
    case Kind::kLeastEnergyWithin: {
      char buf[32];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), within * 100);
      return "least-energy-within=" + std::string(buf, ec == std::errc() ? end : buf) + "%";
    }
  }
  return "fastest";
}

std::optional<std::size_t> choose(const std::vector<TimeEnergy>& points, const EnergyPolicy& p) {
  const std::vector<std::size_t> order = by_time(points);
  if (order.empty()) return std::nullopt;
  if (p.kind == EnergyPolicy::Kind::kFastest) return order.front();
  const double limit = p.kind == EnergyPolicy::Kind::kLeastEnergyWithin
                           ? points[order.front()].time_ms * (1 + p.within)
                           : std::numeric_limits<double>::infinity();
  std::optional<std::size_t> pick;
  for (std::size_t i : order) {
    if (points[i].time_ms > limit) break;
    if (!pick || points[i].energy_j < points[*pick].energy_j) pick = i;
  }
  return pick;
}

}  // namespace ktune
