// Reports: the plots of the HTML report, drawn as inline SVG in C++ (no script draws them, so
// the file shows its plots in any browser, printed, or with scripts disabled). Scatter points
// are drawn as one path of zero-length round-capped segments, which keeps thousands of points
// small in the file and fast to render.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "report/internal.h"

namespace ktune::report_detail {

namespace {

constexpr const char* kAxisColor = "#444";
constexpr const char* kGridColor = "#e4e4e4";
constexpr const char* kTextColor = "#222";
constexpr double kCharWidth = 6.4;  // average width of an 11 px sans-serif character

struct Scale {
  double d0 = 0, d1 = 1;  // domain
  double r0 = 0, r1 = 1;  // range (pixels)
  bool log = false;
  double t(double v) const { return log ? std::log10(std::max(v, 1e-300)) : v; }
  double operator()(double v) const {
    const double a = t(d0), b = t(d1);
    if (b == a) return (r0 + r1) / 2;
    return r0 + (t(v) - a) / (b - a) * (r1 - r0);
  }
};

double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  const double step = nice_step((hi - lo) / std::max(target, 1));
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  const int e0 = static_cast<int>(std::floor(std::log10(lo))),
            e1 = static_cast<int>(std::ceil(std::log10(hi)));
  const auto collect = [&](std::initializer_list<double> mantissas) {
    out.clear();
    for (int e = e0; e <= e1; ++e)
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
      }
  };
  collect({1, 2, 5});
  if (out.size() > 9) collect({1});
  if (out.size() < 3) collect({1, 2, 3, 4, 5, 6, 7, 8, 9});
  if (out.size() < 3) out = linear_ticks(lo, hi, 4);
  return out;
}

std::vector<double> ticks_of(const Scale& s, int target) {
  return s.log ? log_ticks(s.d0, s.d1) : linear_ticks(s.d0, s.d1, target);
}

// A domain with some air around [lo, hi]; log when the data span more than a factor of 5.
Scale make_scale(double lo, double hi, double r0, double r1, bool allow_log,
                 bool from_zero = false) {
  Scale s;
  s.r0 = r0;
  s.r1 = r1;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  s.log = allow_log && lo > 0 && hi / lo > 5;
  if (s.log) {
    const double span = std::log10(hi / lo);
    s.d0 = lo / std::pow(10.0, 0.06 * span);
    s.d1 = hi * std::pow(10.0, 0.06 * span);
  } else if (hi > lo) {
    const double pad = 0.06 * (hi - lo);
    s.d0 = from_zero ? std::min(0.0, lo) : lo - pad;
    s.d1 = hi + pad;
    if (!from_zero && lo >= 0 && s.d0 < 0) s.d0 = 0;
  } else {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    s.d0 = from_zero ? 0 : lo - pad;
    s.d1 = hi + pad;
  }
  return s;
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string text(double x, double y, const std::string& s, const char* anchor = "middle",
                 const char* extra = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}>{}</text>", num(x), num(y),
                     anchor, extra, html_escape(s));
}

std::string svg_open(double w, double h, const std::string& title, const char* kind) {
  return fmt::format(
      "<svg class=\"plot\" data-kind=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" font-family=\"system-ui, 'DejaVu "
      "Sans', "
      "'Liberation Sans', Arial, sans-serif\" font-size=\"11\" fill=\"{}\">\n<title>{}</title>\n",
      kind, num(w), num(h), num(w), num(h), html_escape(title), kTextColor, html_escape(title));
}

// Grid, axes, tick labels and axis titles of a plot area.
std::string axes(const Scale& x, const Scale& y, const std::vector<double>& xt,
                 const std::vector<double>& yt, const std::string& xlabel,
                 const std::string& ylabel) {
  std::string o = "<g class=\"axes\">\n";
  const double top = std::min(y.r0, y.r1), bottom = std::max(y.r0, y.r1);
  const double left = std::min(x.r0, x.r1), right = std::max(x.r0, x.r1);
  for (double v : yt) {
    const double py = y(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>", num(left),
                     num(right), num(py), num(py), kGridColor);
    o += text(left - 6, py + 3.5, format_number(v, 4), "end");
    o += "\n";
  }
  for (double v : xt) {
    const double px = x(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>", num(px),
                     num(px), num(top), num(bottom), kGridColor);
    o += text(px, bottom + 15, format_number(v, 4));
    o += "\n";
  }
  o += fmt::format("<path d=\"M{} {}V{}H{}\" fill=\"none\" stroke=\"{}\"/>\n", num(left), num(top),
                   num(bottom), num(right), kAxisColor);
  o += text((left + right) / 2, bottom + 32, xlabel, "middle", " font-size=\"12\"") + "\n";
  o += fmt::format(
      "<text transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" "
      "font-size=\"12\">{}</text>\n",
      num(left - 46), num((top + bottom) / 2), html_escape(ylabel));
  o += "</g>\n";
  return o;
}

// A dot cloud as one path.
std::string dots(const std::vector<std::pair<double, double>>& pts, const std::string& color,
                 double size, double opacity) {
  if (pts.empty()) return {};
  std::string d;
  d.reserve(pts.size() * 16);
  for (const auto& [x, y] : pts) {
    d += 'M';
    d += num(x);
    d += ' ';
    d += num(y);
    d += "h0";
  }
  return fmt::format(
      "<path class=\"pts\" d=\"{}\" stroke=\"{}\" stroke-width=\"{}\" stroke-linecap=\"round\" "
      "stroke-opacity=\"{}\" "
      "fill=\"none\"/>\n",
      d, color, num(size), opacity);
}

// Every k-th point, so a plot draws at most `max_points` (the first and last kept).
template <typename T>
std::vector<T> thin(const std::vector<T>& v, int max_points) {
  if (max_points <= 0 || v.size() <= static_cast<std::size_t>(max_points)) return v;
  std::vector<T> out;
  const double step = static_cast<double>(v.size()) / max_points;
  for (int i = 0; i < max_points; ++i) out.push_back(v[static_cast<std::size_t>(i * step)]);
  out.back() = v.back();
  return out;
}

struct XSeconds {
  double div = 1;
  const char* unit = "s";
};
XSeconds seconds_unit(double max_s) {
  if (max_s > 2 * 3600) return {3600, "h"};
  if (max_s > 180) return {60, "min"};
  return {1, "s"};
}

// Legend rows below a plot: (colour, label, kind) flowing left to right. Returns the height used.
double legend(std::string& o, double x0, double y0, double width,
              const std::vector<std::pair<std::string, std::string>>& items, bool line_swatch) {
  double x = x0, y = y0;
  for (const auto& [color, label] : items) {
    const double w = 26 + kCharWidth * static_cast<double>(label.size()) + 18;
    if (x > x0 && x + w > x0 + width) {
      x = x0;
      y += 18;
    }
    if (line_swatch)
      o += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2.5\"/>",
          num(x), num(x + 20), num(y - 4), num(y - 4), color);
    else
      o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>",
                       num(x + 4), num(y - 10), color);
    o += text(x + 26, y, label, "start") + "\n";
    x += w;
  }
  return y - y0 + 18;
}

// The extent of a convergence plot's data: x (the least positive and the largest), y, and how
// many dots there are.
struct Extent {
  double xmin_pos = std::numeric_limits<double>::infinity(), xhi = 0;
  double ylo = std::numeric_limits<double>::infinity(), yhi = 0;
  std::size_t total_points = 0;
};

Extent extent_of(const std::vector<Series>& series) {
  Extent e;
  for (const auto& s : series) {
    const auto take = [&](const std::vector<std::pair<double, double>>& v) {
      for (const auto& [x, y] : v) {
        if (x > 0) e.xmin_pos = std::min(e.xmin_pos, x);
        e.xhi = std::max(e.xhi, x);
        e.ylo = std::min(e.ylo, y);
        e.yhi = std::max(e.yhi, y);
      }
    };
    take(s.points);
    take(s.steps);
    e.xhi = std::max(e.xhi, s.x_end);
    e.total_points += s.points.size();
  }
  if (!std::isfinite(e.ylo)) e.ylo = 1, e.yhi = 2;
  if (!std::isfinite(e.xmin_pos)) e.xmin_pos = 1;
  return e;
}

// Maps a convergence plot's raw values (x in evaluations or seconds, y in ms) onto the image.
struct ConvergenceMap {
  Scale x, y;  // x in display units (evaluations, or s / min / h)
  double div = 1;
  double per_ms = 1;
  double px(double raw) const { return x(std::max(raw / div, x.d0)); }
  double py(double ms) const { return y(ms * per_ms); }
};

Scale convergence_x(const AxisSpec& xspec, const Extent& e, const XSeconds& xs, double r0,
                    double r1) {
  Scale x;
  x.r0 = r0;
  x.r1 = r1;
  x.log = xspec.log;
  if (xspec.log) {
    x.d0 = (xspec.seconds ? e.xmin_pos : 1.0) / xs.div;
    x.d1 = e.xhi / xs.div * 1.05;
  } else {
    x.d0 = xspec.seconds ? 0 : 1;
    x.d1 = std::max(e.xhi / xs.div, x.d0 + 1) * 1.03;
  }
  return x;
}

// The best-so-far step line of a series, and a dot at its end.
std::string best_line(const Series& s, const ConvergenceMap& m) {
  std::string d =
      fmt::format("M{} {}", num(m.px(s.steps.front().first)), num(m.py(s.steps.front().second)));
  for (std::size_t i = 1; i < s.steps.size(); ++i)
    d += fmt::format("H{}V{}", num(m.px(s.steps[i].first)), num(m.py(s.steps[i].second)));
  d += fmt::format("H{}", num(m.px(std::max(s.x_end, s.steps.back().first))));
  std::string o = fmt::format(
      "<path class=\"best\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>\n", d,
      s.color);
  const auto& last = s.steps.back();
  o += fmt::format(
      "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" stroke=\"#fff\"><title>{}: best "
      "{}</title></circle>\n",
      num(m.px(last.first)), num(m.py(last.second)), s.color, html_escape(s.label),
      html_escape(format_time_auto(last.second)));
  return o;
}

// Every series' dots (at most `max_points` in all, thinned) and best lines; `drawn` counts the
// dots.
std::string convergence_data(const std::vector<Series>& series, const ConvergenceMap& m,
                             int max_points, std::size_t& drawn) {
  std::string o = "<g class=\"data\">\n";
  const int per_series =
      series.empty() ? max_points : std::max(50, max_points / static_cast<int>(series.size()));
  for (const auto& s : series) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [vx, vy] : thin(s.points, per_series)) pts.emplace_back(m.px(vx), m.py(vy));
    drawn += pts.size();
    o += dots(pts, s.color, 4, 0.35);
  }
  for (const auto& s : series) {
    if (s.steps.empty()) continue;
    o += best_line(s, m);
  }
  o += "</g>\n";
  return o;
}

}  // namespace

std::string svg_convergence(const std::string& title, const std::vector<Series>& series,
                            const AxisSpec& xspec, int max_points) {
  const double W = 620, left = 70, right = 18, top = 30, plot_h = 250;
  const Extent e = extent_of(series);
  const TimeUnit unit = time_unit_for(std::sqrt(e.ylo * e.yhi));
  const XSeconds xs = xspec.seconds ? seconds_unit(e.xhi) : XSeconds{};

  // Legend below the plot area; its height decides the image's.
  std::string legend_svg;
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& s : series) items.emplace_back(s.color, s.label);
  const double legend_h =
      legend(legend_svg, left, top + plot_h + 58, W - left - right, items, true);
  const double H = top + plot_h + 58 + legend_h;

  ConvergenceMap m;
  m.x = convergence_x(xspec, e, xs, left, W - right);
  m.div = xs.div;
  m.per_ms = unit.per_ms;
  m.y = make_scale(e.ylo * unit.per_ms, e.yhi * unit.per_ms, top + plot_h, top, true);
  std::string o = svg_open(W, H, title, "convergence");
  o += text(left, 18, title, "start", " font-size=\"13\" font-weight=\"600\"") + "\n";
  std::string xlabel = xspec.seconds ? fmt::format("{} ({})", xspec.label, xs.unit) : xspec.label;
  if (xspec.log) xlabel += ", log scale";
  std::vector<double> xt = ticks_of(m.x, 6);
  if (!xspec.seconds)
    xt.erase(std::remove_if(xt.begin(), xt.end(), [](double v) { return v != std::floor(v); }),
             xt.end());
  o += axes(m.x, m.y, xt, ticks_of(m.y, 5), xlabel,
            fmt::format("time ({}{})", unit.name, m.y.log ? ", log scale" : ""));
  std::size_t drawn = 0;
  o += convergence_data(series, m, max_points, drawn);
  if (drawn < e.total_points)
    o += text(W - right, top - 6,
              fmt::format("dots: {} of {} evaluations drawn", drawn, e.total_points), "end",
              " fill=\"#777\" font-size=\"10\"") +
         "\n";
  o += legend_svg;
  o += "</svg>\n";
  return o;
}

namespace {

// The effect plot's y axis (ticks, grid and label) and its frame.
std::string effect_axes(const Scale& y, const TimeUnit& unit, double W, double left, double right,
                        double top, double plot_h) {
  std::string o = "<g class=\"axes\">\n";
  for (double v : ticks_of(y, 5)) {
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>", num(left),
                     num(W - right), num(y(v)), num(y(v)), kGridColor);
    o += text(left - 6, y(v) + 3.5, format_number(v, 4), "end") + "\n";
  }
  o += fmt::format("<path d=\"M{} {}V{}H{}\" fill=\"none\" stroke=\"{}\"/>\n", num(left), num(top),
                   num(top + plot_h), num(W - right), kAxisColor);
  o += fmt::format(
      "<text transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" "
      "font-size=\"12\">{}</text>\n",
      num(left - 46), num(top + plot_h / 2),
      html_escape(fmt::format("time ({}{})", unit.name, y.log ? ", log" : "")));
  o += "</g>\n";
  return o;
}

// One value's strip of times (value index `i`, centred at cx) with its box and whiskers.
std::string value_strip(const ParameterEffect& effect, std::size_t i, double cx, double band,
                        const Scale& y, double per_ms, int per_value) {
  const ValueEffect& v = effect.values[i];
  const bool best = v.value == effect.best_value;
  // Strip: jitter from a fixed hash of the index, so the picture is the same every time.
  std::vector<std::pair<double, double>> pts;
  const auto shown = thin(v.times_ms, per_value);
  for (std::size_t j = 0; j < shown.size(); ++j) {
    std::uint32_t h = static_cast<std::uint32_t>(j * 2654435761u + i * 40503u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    const double jitter = (static_cast<double>(h % 1000) / 1000.0 - 0.5) * band * 0.55;
    pts.emplace_back(cx + jitter, y(shown[j] * per_ms));
  }
  std::string o = dots(pts, "#4e79a7", 3.2, 0.4);
  // Box and whiskers (min to max).
  const double bw = std::min(band * 0.5, 28.0);
  const double yq1 = y(v.q1_ms * per_ms), yq3 = y(v.q3_ms * per_ms);
  const double ymed = y(v.median_ms * per_ms);
  const double ymin = y(v.min_ms * per_ms), ymax = y(v.max_ms * per_ms);
  o += fmt::format(
      "<path d=\"M{0} {1}V{2}M{0} {3}V{4}M{5} {1}H{6}M{5} {4}H{6}\" stroke=\"#333\" "
      "fill=\"none\"/>",
      num(cx), num(ymin), num(yq1), num(yq3), num(ymax), num(cx - bw / 4), num(cx + bw / 4));
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.25\" "
      "stroke=\"#333\"/>",
      num(cx - bw / 2), num(std::min(yq1, yq3)), num(bw), num(std::max(1.0, std::fabs(yq1 - yq3))),
      best ? "#59a14f" : "#ffffff");
  o += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
      "stroke-width=\"2.5\"><title>{}={}: "
      "median {}, {} ok</title></line>\n",
      num(cx - bw / 2), num(cx + bw / 2), num(ymed), num(ymed), best ? "#2e7d32" : "#d62728",
      html_escape(effect.name), html_escape(v.value), html_escape(format_time_auto(v.median_ms)),
      v.times_ms.size());
  return o;
}

}  // namespace

std::string svg_effect(const ParameterEffect& effect, double lo_ms, double hi_ms, int max_points) {
  const std::size_t n = std::max<std::size_t>(effect.values.size(), 1);
  std::size_t longest = 1;
  for (const auto& v : effect.values) longest = std::max(longest, v.value.size());
  double band = std::max(48.0, kCharWidth * static_cast<double>(longest) + 12);
  const double left = 64, right = 12, top = 30, plot_h = 170;
  // Wide enough for the title and its share on one line.
  const double title_w =
      10 + 8.0 * static_cast<double>(effect.name.size()) + 14 + kCharWidth * 18 + right;
  const double W = std::max({230.0, title_w, left + right + band * static_cast<double>(n)});
  band = (W - left - right) / static_cast<double>(n);
  const double H = top + plot_h + 66;
  const TimeUnit unit = time_unit_for(std::sqrt(lo_ms * hi_ms));
  Scale y = make_scale(lo_ms * unit.per_ms, hi_ms * unit.per_ms, top + plot_h, top, true);
  const std::string title =
      fmt::format("{}: {} of variance", effect.name, format_percent(effect.importance));
  std::string o = svg_open(W, H, title, "effect");
  o += text(10, 18, effect.name, "start", " font-size=\"13\" font-weight=\"600\"");
  o += text(W - right, 18, format_percent(effect.importance) + " of variance", "end",
            " fill=\"#555\"") +
       "\n";
  // Axes: y ticks and grid; categories along x.
  o += effect_axes(y, unit, W, left, right, top, plot_h);
  o += "<g class=\"data\">\n";
  const int per_value = std::max(40, max_points / static_cast<int>(n));
  for (std::size_t i = 0; i < effect.values.size(); ++i) {
    const ValueEffect& v = effect.values[i];
    const double cx = left + band * (static_cast<double>(i) + 0.5);
    const bool best = v.value == effect.best_value;
    if (!v.times_ms.empty()) o += value_strip(effect, i, cx, band, y, unit.per_ms, per_value);
    o += text(cx, top + plot_h + 15, v.value, "middle", best ? " font-weight=\"700\"" : "");
    o += text(cx, top + plot_h + 29, fmt::format("n={}", v.times_ms.size()), "middle",
              " fill=\"#777\" font-size=\"10\"");
    if (v.failed > 0)
      o += text(cx, top + plot_h + 42, fmt::format("✗{}", v.failed), "middle",
                " fill=\"#c62828\" font-size=\"10\"");
    o += "\n";
  }
  o += "</g>\n";
  o +=
      text(left + (W - left - right) / 2, H - 6, effect.name, "middle", " font-size=\"12\"") + "\n";
  o += "</svg>\n";
  return o;
}

std::string svg_importance(const std::vector<ParameterEffect>& effects, double explained) {
  std::size_t longest = 8;
  for (const auto& e : effects) longest = std::max(longest, e.name.size());
  const double label_w = std::max(150.0, kCharWidth * static_cast<double>(longest) + 16);
  const double bar_w = 340, row = 24, top = 30;
  const bool rest = explained < 0.999;
  const double rows = static_cast<double>(effects.size() + (rest ? 1 : 0));
  const double W = label_w + bar_w + 70, H = top + row * rows + 30;
  std::string o = svg_open(W, H, "parameter importance", "importance");
  o += text(8, 18, "share of the variance of log(time) explained per parameter", "start",
            " font-size=\"13\" font-weight=\"600\"") +
       "\n<g class=\"axes\">\n";
  for (double v : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    const double px = label_w + v * bar_w;
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>", num(px),
                     num(px), num(top - 4), num(top + row * rows), kGridColor);
    o += text(px, top + row * rows + 14, format_percent(v, 0)) + "\n";
  }
  o += "</g>\n<g class=\"data\">\n";
  double y = top;
  for (const auto& e : effects) {
    o += text(label_w - 8, y + 16, e.name, "end");
    o += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#4e79a7\"><title>{}: "
        "{}</title></rect>",
        num(label_w), num(y + 4), num(std::max(1.0, e.importance * bar_w)), num(row - 8),
        html_escape(e.name), format_percent(e.importance));
    o += text(label_w + std::max(1.0, e.importance * bar_w) + 6, y + 16,
              format_percent(e.importance), "start") +
         "\n";
    y += row;
  }
  if (rest) {
    const double r = std::max(0.0, 1 - explained);
    o += text(label_w - 8, y + 16, "interactions + noise", "end", " fill=\"#777\"");
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#bab0ac\"/>",
                     num(label_w), num(y + 4), num(std::max(1.0, r * bar_w)), num(row - 8));
    o += text(label_w + std::max(1.0, r * bar_w) + 6, y + 16, format_percent(r), "start",
              " fill=\"#777\"") +
         "\n";
  }
  o += "</g>\n</svg>\n";
  return o;
}

std::string svg_family(const ReportFamily& f) {
  const double W = 460, H = 250, left = 64, right = 16, top = 24, bottom = 48;
  double lo_x = std::numeric_limits<double>::infinity(), hi_x = 0;
  double lo_t = lo_x, hi_t = 0;
  for (const auto& r : f.rows) {
    lo_x = std::min(lo_x, r.size), hi_x = std::max(hi_x, r.size);
    if (std::isfinite(r.best_ms))
      lo_t = std::min(lo_t, r.best_ms), hi_t = std::max(hi_t, r.best_ms);
  }
  std::string o;
  // The best time per size.
  {
    const Scale x = make_scale(lo_x, hi_x, left, W - right, true);
    const Scale y = make_scale(lo_t, hi_t, H - bottom, top, true);
    o += svg_open(W, H, f.kernel_name + ": the best time at each tuned size", "family-times");
    o += axes(x, y, ticks_of(x, 5), ticks_of(y, 5), f.size_name, "best time (ms)");
    std::vector<std::pair<double, double>> pts;
    std::string line;
    for (const auto& r : f.rows) {
      if (!std::isfinite(r.best_ms)) continue;
      pts.emplace_back(x(r.size), y(r.best_ms));
      line += fmt::format("{}{} {}", line.empty() ? "M" : "L", num(x(r.size)), num(y(r.best_ms)));
    }
    o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\"/>\n", line, series_color(0));
    o += dots(pts, series_color(0), 7, 1);
    o += "</svg>\n";
  }
  // The selector's pick at each size left out, against that size's best.
  {
    const Scale x = make_scale(lo_x, hi_x, left, W - right, true);
    const Scale y = make_scale(0.5, 1.0, H - bottom, top, false);
    o += svg_open(W, H, f.kernel_name + ": the selector's pick at each size left out",
                  "family-held-out");
    o += axes(x, y, ticks_of(x, 5), ticks_of(y, 5), f.size_name, "pick's speed / best (held out)");
    std::vector<std::pair<double, double>> pts;
    for (const auto& r : f.rows)
      if (std::isfinite(r.held_out_performance))
        pts.emplace_back(x(r.size), y(std::max(0.5, r.held_out_performance)));
    o += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-dasharray=\"4 3\"/>\n",
        num(left), num(W - right), num(y(0.97)), num(y(0.97)), kAxisColor);
    o += dots(pts, series_color(1), 7, 1);
    o += "</svg>\n";
  }
  return o;
}

std::string svg_pareto(const std::string& title, const std::vector<TrialRecord>& all,
                       const std::vector<TrialRecord>& front) {
  const double W = 460, H = 280, left = 64, right = 16, top = 24, bottom = 48;
  double lo_t = std::numeric_limits<double>::infinity(), hi_t = 0, lo_e = lo_t, hi_e = 0;
  for (const auto* set : {&all, &front})
    for (const TrialRecord& t : *set) {
      lo_t = std::min(lo_t, t.time_ms), hi_t = std::max(hi_t, t.time_ms);
      lo_e = std::min(lo_e, t.energy_j * 1e3), hi_e = std::max(hi_e, t.energy_j * 1e3);
    }
  const Scale x = make_scale(lo_t, hi_t, left, W - right, true);
  const Scale y = make_scale(lo_e, hi_e, H - bottom, top, true);
  std::string o = svg_open(W, H, title, "pareto");
  o += axes(x, y, ticks_of(x, 5), ticks_of(y, 5), "time per run (ms)", "energy per run (mJ)");
  o += "<g class=\"data\">\n";
  std::vector<std::pair<double, double>> pts, best;
  for (const TrialRecord& t : all) pts.emplace_back(x(t.time_ms), y(t.energy_j * 1e3));
  o += dots(pts, series_color(0), 5, 0.45);
  std::string line;
  for (const TrialRecord& t : front) {
    best.emplace_back(x(t.time_ms), y(t.energy_j * 1e3));
    line += fmt::format("{}{} {}", line.empty() ? "M" : "L", num(best.back().first),
                        num(best.back().second));
  }
  if (!line.empty())
    o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\"/>\n", line, series_color(1));
  o += dots(best, series_color(1), 8, 1);
  o += "</g>\n</svg>\n";
  return o;
}

std::string svg_status(const std::map<TrialStatus, std::size_t>& by_status) {
  std::size_t total = 0;
  for (const auto& [s, n] : by_status) total += n;
  const double W = 620, left = 8, bar_w = W - 16, top = 10, bar_h = 22;
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& [s, n] : by_status)
    items.emplace_back(status_color(s),
                       fmt::format("{} {} ({})", to_string(s), n,
                                   format_percent(total ? static_cast<double>(n) / total : 0)));
  std::string legend_svg;
  const double legend_h = legend(legend_svg, left, top + bar_h + 22, bar_w, items, false);
  const double H = top + bar_h + 22 + legend_h;
  std::string o = svg_open(W, H, "trials by status", "status");
  o += "<g class=\"data\">\n";
  double x = left;
  for (const auto& [s, n] : by_status) {
    const double w = total ? bar_w * static_cast<double>(n) / static_cast<double>(total) : 0;
    o += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: "
        "{}</title></rect>\n",
        num(x), num(top), num(std::max(w, 0.5)), num(bar_h), status_color(s), to_string(s), n);
    x += w;
  }
  o += "</g>\n" + legend_svg + "</svg>\n";
  return o;
}

}  // namespace ktune::report_detail
