// Reports: the self-contained HTML page. Everything is inline: the style sheet, the SVG plots
// (svg.cpp) and one small script that only checks, after load, that every plot was laid
// out with a non-zero size (tests read its marker; the page needs no script to show anything).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "report/internal.h"

namespace ktune {

using namespace report_detail;

namespace {

constexpr const char* kStyle = R"(
:root{--fg:#1d1d1f;--muted:#666;--line:#ddd;--bg:#fafafa;--card:#fff;--accent:#4e79a7}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans","Liberation Sans",Arial,sans-serif}
header{background:#23395b;color:#fff;padding:18px 32px}
header h1{margin:0 0 4px;font-size:22px;font-weight:600}
header .meta{margin:0;color:#cfd8e6;font-size:13px}
nav{padding:8px 32px;background:#eef1f5;border-bottom:1px solid var(--line);font-size:13px}
nav a{margin-right:14px;color:#23395b;text-decoration:none}
main{padding:8px 32px 40px;max-width:1400px}
section.study{margin-top:18px}
h2{font-size:20px;margin:22px 0 6px;border-bottom:2px solid var(--accent);padding-bottom:4px}
h2 .problem{font-weight:400;color:var(--muted);font-size:16px;margin-left:8px}
h3{font-size:16px;margin:26px 0 8px}
h4{font-size:14px;margin:16px 0 6px;color:#333}
p.note{color:var(--muted);font-size:13px;max-width:980px;margin:4px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:10px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;min-width:170px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:20px;font-weight:600}
.card .s{color:var(--muted);font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
.plots figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px}
svg.plot{display:block;max-width:100%;height:auto}
table{border-collapse:collapse;background:var(--card);font-size:13px;margin:6px 0 10px}
th,td{border:1px solid var(--line);padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.n{white-space:nowrap}
tr.best td{background:#eaf5e6}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:11px;color:#fff;white-space:nowrap}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:12px}
pre{background:#f4f4f4;border:1px solid var(--line);padding:8px;overflow:auto;max-height:360px;white-space:pre-wrap}
details{margin:2px 0}
summary{cursor:pointer;color:#23395b}
.muted{color:var(--muted)}
.scroll{overflow-x:auto}
footer{color:var(--muted);font-size:12px;padding:12px 32px 30px}
)";

// After load: count the plots that were laid out with a size and whose data group drew
// something, and leave the counts on a hidden marker element.
constexpr const char* kCheckScript = R"(
window.addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot'), rendered = 0;
  for (var i = 0; i < plots.length; i++) {
    var r = plots[i].getBoundingClientRect(), g = plots[i].querySelector('g.data'), b = g ? g.getBBox() : null;
    if (r.width > 0 && r.height > 0 && b && b.width > 0 && b.height > 0) rendered++;
  }
  var m = document.createElement('div');
  m.id = 'ktune-render-check';
  m.hidden = true;
  m.setAttribute('data-plots', String(plots.length));
  m.setAttribute('data-rendered', String(rendered));
  m.textContent = 'ktune-plots-rendered ' + rendered + '/' + plots.length;
  document.body.appendChild(m);
});
)";

std::string td(const std::string& s, bool numeric = false) {
  return fmt::format("<td{}>{}</td>", numeric ? " class=\"n\"" : "", s);
}
// Long parameter names break after an underscore, not inside a word.
std::string th(const std::string& s, bool numeric = false) {
  std::string text = html_escape(s);
  for (std::size_t at = 0; (at = text.find('_', at)) != std::string::npos; at += 6)
    text.insert(at + 1, "<wbr>");
  return fmt::format("<th{}>{}</th>", numeric ? " class=\"n\"" : "", text);
}

std::string badge(TrialStatus s) {
  return fmt::format("<span class=\"badge\" style=\"background:{}\">{}</span>", status_color(s),
                     to_string(s));
}

std::string short_hash(const std::string& h) { return h.size() > 12 ? h.substr(0, 12) : h; }

std::string card(const std::string& k, const std::string& v, const std::string& s) {
  return fmt::format(
      "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div><div "
      "class=\"s\">{}</div></div>",
      html_escape(k), html_escape(v), html_escape(s));
}

std::string date_only(const std::string& iso) {
  return iso.size() >= 19 ? iso.substr(0, 10) + " " + iso.substr(11, 8) : iso;
}

std::string shared_bytes(const TrialRecord& t) {
  if (t.static_shared_bytes < 0 && t.dynamic_shared_bytes < 0) return "-";
  return fmt::format("{}",
                     std::max(t.static_shared_bytes, 0) + std::max(t.dynamic_shared_bytes, 0));
}
std::string int_or_dash(int v) { return v < 0 ? "-" : fmt::format("{}", v); }

std::string config_cell(const TrialRecord& t) {
  return "<code>" + html_escape(t.config_key) + "</code>";
}

void runs_table(std::string& o, const ReportStudy& s, const TimeUnit& unit) {
  o += "<div class=\"scroll\"><table><tr>" + th("run") + th("strategy") + th("device") +
       th("status") + th("started (UTC)") + th("duration", true) + th("evaluations", true) +
       th("ok", true) + th("failed", true) + th(fmt::format("best ({})", unit.name), true) +
       th("to within 10%", true) + th("to within 1%", true) + th("re-timed", true) + "</tr>\n";
  for (const ReportRun& r : s.runs) {
    const std::size_t ok =
        r.by_status.count(TrialStatus::kOk) ? r.by_status.at(TrialStatus::kOk) : 0;
    const double best = r.improvements.empty() ? NAN : r.improvements.back().second;
    std::string strategy = html_escape(r.run.strategy_text());
    if (!r.run.strategy_options.empty() && r.run.strategy_options != "{}" &&
        r.run.strategy_options != "null")
      strategy += " <span class=\"muted\">" + html_escape(r.run.strategy_options) + "</span>";
    o += "<tr>" + td(fmt::format("#{}", r.run.id)) + td(strategy) + td(html_escape(r.device.name)) +
         td(html_escape(std::string(to_string(r.run.status)))) +
         td(html_escape(date_only(r.run.started_at))) + td(format_duration(r.duration_s), true) +
         td(fmt::format("{}", r.search.size()), true) + td(fmt::format("{}", ok), true) +
         td(fmt::format("{}", r.search.size() - ok), true) + td(format_time(best, unit), true) +
         td(r.evals_to_10pct ? fmt::format("{}", r.evals_to_10pct) : "-", true) +
         td(r.evals_to_1pct ? fmt::format("{}", r.evals_to_1pct) : "-", true) +
         td(fmt::format("{}", r.retimed.size()), true) + "</tr>\n";
  }
  o += "</table></div>\n";
  std::string clocks;
  for (const ReportRun& r : s.runs)
    if (!r.clocks.empty())
      clocks += "<li>" + html_escape(fmt::format("#{}: {}", r.run.id, r.clocks)) + "</li>";
  if (!clocks.empty())
    o += "<p class=\"muted\">GPU clocks under load (NVML; a clock below the highest: a power or "
         "thermal limit):</p><ul class=\"muted\">" +
         clocks + "</ul>\n";
}

void convergence(std::string& o, const ReportStudy& s, const ReportOptions& opt) {
  std::vector<Series> by_eval, by_time;
  bool any_time = false;
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const ReportRun& r = s.runs[i];
    Series e, t;
    e.label = t.label = r.label;
    e.color = t.color = series_color(i);
    e.x_end = static_cast<double>(r.search.size());
    for (std::size_t k = 0; k < r.search.size(); ++k) {
      const TrialRecord& tr = r.search[k];
      if (tr.status != TrialStatus::kOk || !std::isfinite(tr.time_ms) || tr.time_ms <= 0) continue;
      e.points.emplace_back(static_cast<double>(k + 1), tr.time_ms);
      if (std::isfinite(r.elapsed_s[k])) t.points.emplace_back(r.elapsed_s[k], tr.time_ms);
    }
    for (const auto& [k, best] : r.improvements) {
      e.steps.emplace_back(static_cast<double>(k + 1), best);
      if (std::isfinite(r.elapsed_s[k])) t.steps.emplace_back(r.elapsed_s[k], best);
    }
    for (double v : r.elapsed_s)
      if (std::isfinite(v)) t.x_end = std::max(t.x_end, v), any_time = true;
    by_eval.push_back(std::move(e));
    by_time.push_back(std::move(t));
  }
  // Runs of very different lengths (a brute-force sweep beside short guided runs) share the
  // plots on a log x axis, so the short ones are not squeezed against the left edge.
  std::size_t shortest = SIZE_MAX, longest = 0;
  for (const ReportRun& r : s.runs)
    if (!r.search.empty())
      shortest = std::min(shortest, r.search.size()), longest = std::max(longest, r.search.size());
  const bool log_x = longest >= 100 && longest >= 5 * shortest;
  o += "<div class=\"plots\">";
  o += "<figure>" +
       svg_convergence("best so far against evaluations", by_eval,
                       {"evaluation (search trials, in order)", false, log_x}, opt.max_points) +
       "</figure>";
  if (any_time)
    o += "<figure>" +
         svg_convergence("best so far against wall time", by_time,
                         {"wall time since run start", true, log_x}, opt.max_points) +
         "</figure>";
  o += "</div>\n<p class=\"note\">Line: the best time found so far (ok trials only); dots: every "
       "ok evaluation. "
       "Evaluations count every search trial of the run, failed ones included; the final "
       "interleaved re-timing "
       "of the leaders is not an evaluation and is shown under <i>Top configurations</i>. Trials "
       "answered from the "
       "database (resume) are not stored again and do not appear.</p>\n";
}

void effects(std::string& o, const DeviceAnalysis& a, const ReportOptions& opt) {
  if (a.effects.empty() || a.distinct_ok == 0) {
    o += "<p class=\"note\">No ok trials: nothing to compare.</p>\n";
    return;
  }
  double lo = INFINITY, hi = 0;
  for (const auto& e : a.effects)
    for (const auto& v : e.values)
      if (!v.times_ms.empty()) lo = std::min(lo, v.min_ms), hi = std::max(hi, v.max_ms);
  o += "<div class=\"plots\"><figure>" + svg_importance(a.effects, a.explained) +
       "</figure></div>\n";
  double sum = 0;
  for (const auto& e : a.effects) sum += e.importance;
  o += fmt::format(
      "<p class=\"note\"><b>Method.</b> For each parameter, the share of the variance of ln(time) "
      "over the {} ok "
      "distinct configurations that is explained by the parameter's per-value means (the "
      "correlation ratio "
      "&eta;&sup2; = &Sigma;<sub>v</sub> n<sub>v</sub>(&#x0233;<sub>v</sub>&minus;&#x0233;)&sup2; "
      "/ &Sigma;<sub>i</sub>"
      "(y<sub>i</sub>&minus;&#x0233;)&sup2;): a first-order, fANOVA-style main effect. Log-time "
      "makes effects "
      "multiplicative (a parameter that halves the time counts the same at any speed) and keeps "
      "the slowest outliers "
      "from dominating. On a full grid (brute force over an unrestricted space) it equals the "
      "first-order fANOVA "
      "importance of the measured grid. All main effects fitted together (an additive model of "
      "ln(time)) explain "
      "{}; the rest, {}, is interactions between parameters and noise.",
      a.distinct_ok, format_percent(a.explained), format_percent(std::max(0.0, 1 - a.explained)));
  if (sum > a.explained + 0.02)
    o += fmt::format(
        " Here the shares add up to {}, more than {}: parameters are correlated in this data "
        "(restrictions tie "
        "them together, or the strategy sampled some values more than others), so each share also "
        "carries part of "
        "the others' effect. Read the ranking, not the sum.",
        format_percent(sum), format_percent(a.explained));
  o += " Failed configurations are left out of the times and counted under each value "
       "(&#x2717;).</p>\n";
  o += "<div class=\"plots\">";
  for (const auto& e : a.effects)
    o += "<figure>" + svg_effect(e, lo, hi, opt.max_points) + "</figure>";
  o += "</div>\n<p class=\"note\">Per value: every ok configuration's median time (dots), the box "
       "from the first to "
       "the third quartile with the median (red; green box: the value with the lowest median), "
       "whiskers from the "
       "fastest to the slowest. All panels share one time axis.</p>\n";
}

void top_table(std::string& o, const DeviceAnalysis& a) {
  if (a.top.empty()) return;
  double typical = a.top.front().trial.time_ms;
  const TimeUnit unit = time_unit_for(typical);
  bool gflops = false, gbps = false, retimed = false;
  for (const auto& c : a.top) {
    gflops = gflops || std::isfinite(c.trial.gflops);
    gbps = gbps || std::isfinite(c.trial.gbps);
    retimed = retimed || c.retimed_ms.has_value();
  }
  bool local = false, spill = false;
  for (const auto& c : a.top) {
    local = local || c.trial.local_bytes > 0;
    spill = spill || c.trial.spill_bytes >= 0;
  }
  const bool columns = !a.params.empty() && a.params.size() <= 10;
  o += "<div class=\"scroll\"><table><tr>" + th("#", true);
  if (columns)
    for (const auto& p : a.params) o += th(p);
  else
    o += th("configuration");
  o += th(fmt::format("median ({})", unit.name), true) + th("min", true) + th("spread", true) +
       th("samples", true);
  if (retimed) o += th(fmt::format("re-timed ({})", unit.name), true);
  if (gbps) o += th("GB/s", true);
  if (gflops) o += th("GFLOP/s", true);
  o += th("regs", true) + th("shared (B)", true);
  if (spill) o += th("spill (B)", true);
  if (local) o += th("local (B)", true);
  o += th("occupancy", true) + th("trial", true) + "</tr>\n";
  for (const auto& c : a.top) {
    const TrialRecord& t = c.trial;
    o += c.is_best ? "<tr class=\"best\">" : "<tr>";
    o += td(fmt::format(
                "{}{}", c.rank,
                c.is_best ? " <span class=\"badge\" style=\"background:#2e7d32\">best</span>" : ""),
            true);
    if (columns) {
      const auto values = config_values(t);
      for (const auto& p : a.params) {
        std::string v = "-";
        for (const auto& [name, value] : values)
          if (name == p) v = value;
        o += td(html_escape(v), true);
      }
    } else {
      o += td(config_cell(t));
    }
    o += td(format_time(t.time_ms, unit), true) + td(format_time(t.time_min_ms, unit), true) +
         td(format_percent(t.time_spread), true) + td(fmt::format("{}", t.sample_count), true);
    if (retimed) o += td(c.retimed_ms ? format_time(*c.retimed_ms, unit) : "-", true);
    if (gbps) o += td(format_number(t.gbps, 4), true);
    if (gflops) o += td(format_number(t.gflops, 4), true);
    o += td(int_or_dash(t.registers), true) + td(shared_bytes(t), true);
    if (spill) o += td(int_or_dash(t.spill_bytes), true);
    if (local) o += td(int_or_dash(t.local_bytes), true);
    o += td(t.occupancy >= 0 ? format_percent(t.occupancy, 0) : "-", true) +
         td(fmt::format("{}", t.id), true) + "</tr>\n";
  }
  o += "</table></div>\n";
  o += "<p class=\"note\">Distinct configurations ranked by their search median time (latest "
       "measurement of each). "
       "Spread: interquartile range / median of the samples. Regs: registers per thread. Shared: "
       "static + "
       "dynamic shared memory per block. Spill: bytes of spill stores. Occupancy: active warps / "
       "maximum warps per "
       "multiprocessor.";
  if (a.best && a.best_is_stored)
    o += " <b>best</b>: the configuration stored as the best for this device and problem.";
  o += "</p>\n";
}

void finalists_table(std::string& o, const DeviceAnalysis& a) {
  if (a.finalists.empty()) return;
  const TimeUnit unit = time_unit_for(a.finalists.front().time_ms);
  o += "<h4>Final interleaved re-timing</h4>\n<p class=\"note\">At the end of run #" +
       fmt::format("{}", a.finalists.front().run_id) +
       " the leaders were timed again, interleaved (A B C A B C ...), so that drift in clocks or "
       "temperature cannot crown one: half of the rounds ranked them, the other half timed them "
       "(the times here), and the one ranked fastest became the best (highlighted), so its time "
       "is not the luckiest of several draws. These are not search evaluations.</p>\n";
  o += "<div class=\"scroll\"><table><tr>" + th("#", true) + th("configuration") +
       th(fmt::format("re-timed ({})", unit.name), true) + th("spread", true) + th("rounds", true) +
       th("vs fastest", true) + "</tr>\n";
  const double fastest = a.finalists.front().time_ms;
  for (std::size_t i = 0; i < a.finalists.size(); ++i) {
    const TrialRecord& t = a.finalists[i];
    const bool best = a.is_stored_best(t);
    o += (best ? "<tr class=\"best\">" : "<tr>") + td(fmt::format("{}", i + 1), true) +
         td(config_cell(t)) + td(format_time(t.time_ms, unit), true) +
         td(format_percent(t.time_spread), true) + td(fmt::format("{}", t.sample_count), true) +
         td(fastest > 0 ? "+" + format_percent(t.time_ms / fastest - 1) : "-", true) + "</tr>\n";
  }
  o += "</table></div>\n";
}

void failures(std::string& o, const DeviceAnalysis& a) {
  o += "<div class=\"plots\"><figure>" + svg_status(a.by_status) + "</figure></div>\n";
  if (a.failures.empty()) {
    o += "<p class=\"note\">Every evaluation ran and verified.</p>\n";
    return;
  }
  o += "<table><tr>" + th("status") + th("reason") + th("trials", true) + th("details") + "</tr>\n";
  for (const FailureGroup& g : a.failures) {
    std::string d = fmt::format("<details><summary>{} of {} trial{}</summary>", g.examples.size(),
                                g.count, g.count == 1 ? "" : "s");
    for (const TrialRecord& t : g.examples) {
      d += fmt::format("<div><b>trial {}</b> (run #{}) <code>{}</code>", t.id, t.run_id,
                       html_escape(t.config_key));
      if (!t.error.empty()) d += "<pre>" + html_escape(t.error) + "</pre>";
      if (!t.compile_log.empty()) {
        constexpr std::size_t kMax = 20000;
        std::string log =
            t.compile_log.size() > kMax ? t.compile_log.substr(0, kMax) : t.compile_log;
        d += "<div class=\"muted\">compile log" +
             (t.compile_options.empty()
                  ? std::string()
                  : " (options: <code>" + html_escape(t.compile_options) + "</code>)") +
             "</div><pre>" + html_escape(log) + "</pre>";
        if (t.compile_log.size() > kMax)
          d += fmt::format(
              "<div class=\"muted\">log cut at {} of {} characters; the database has all of it "
              "(trial {})</div>",
              kMax, t.compile_log.size(), t.id);
      }
      d += "</div>";
    }
    d += "</details>";
    o += "<tr>" + td(badge(g.status)) + td(html_escape(g.reason)) +
         td(fmt::format("{}", g.count), true) + td(d) + "</tr>\n";
  }
  o += "</table>\n";
}

std::string ratio_color(double r) {
  // 1.0 green, 1.25 yellow, 1.5 and worse red.
  if (r <= 1.02) return "#d8efd3";
  if (r <= 1.10) return "#ecf5d0";
  if (r <= 1.25) return "#fbf0c8";
  if (r <= 1.5) return "#fbdcc4";
  return "#f6c3c3";
}

void cross_device(std::string& o, const CrossDevice& x) {
  const std::size_t n = x.devices.size();
  const TimeUnit unit = time_unit_for(x.best.front().time_ms);
  o += "<div class=\"scroll\"><table><tr>" + th("device") + th("arch") + th("best configuration") +
       th(fmt::format("time ({})", unit.name), true) + th("GB/s", true) + th("source") + "</tr>\n";
  for (std::size_t i = 0; i < n; ++i) {
    const TrialRecord& b = x.best[i];
    o += "<tr>" + td(html_escape(x.devices[i].name)) + td(html_escape(x.devices[i].arch)) +
         td(config_cell(b)) + td(format_time(b.time_ms, unit), true) +
         td(format_number(b.gbps, 4), true) +
         td(x.best_is_stored[i] ? fmt::format("stored best (trial {})", b.id)
                                : fmt::format("fastest trial {} (no stored best)", b.id)) +
         "</tr>\n";
  }
  o += "</table></div>\n<h4>The best of one device on another</h4>\n<div "
       "class=\"scroll\"><table><tr>" +
       th("best of \\ measured on");
  for (const auto& d : x.devices) o += th(d.name, true);
  o += "</tr>\n";
  for (std::size_t i = 0; i < n; ++i) {
    o += "<tr>" + td("<b>" + html_escape(x.devices[i].name) + "</b>");
    for (std::size_t j = 0; j < n; ++j) {
      if (!x.time_ms[i][j]) {
        o += "<td class=\"n muted\">not measured</td>";
        continue;
      }
      const double r = *x.time_ms[i][j] / x.best[j].time_ms;
      o += fmt::format(
          "<td class=\"n\" style=\"background:{}\">{} {} <span "
          "class=\"muted\">({}&times;)</span></td>",
          ratio_color(r), format_time(*x.time_ms[i][j], unit), unit.name, format_number(r, 3));
    }
    o += "</tr>\n";
  }
  o += "</table></div>\n<p class=\"note\">Row: the best configuration of a device; column: its "
       "time on another device "
       "(that device's latest ok trial of the same configuration) and the ratio to that device's "
       "own best "
       "(1&times; on the diagonal). Built from every run of this kernel and problem in the "
       "database.</p>\n";
}

void provenance(std::string& o, const ReportStudy& s) {
  o += "<div class=\"scroll\"><table><tr>" + th("run") + th("device") + th("driver") + th("NVRTC") +
       th("ktune") + th("kernel source") + th("space") + th("host") + th("started (UTC)") +
       th("finished (UTC)") + th("backend") + th("seed") + th("budget") + "</tr>\n";
  for (const ReportRun& r : s.runs) {
    const DeviceRecord& d = r.device;
    o += "<tr>" + td(fmt::format("#{}", r.run.id)) +
         td(html_escape(fmt::format("{} ({}, {} SMs, {}, L2 {})", d.name, d.arch, d.sm_count,
                                    format_bytes(d.memory_bytes), format_bytes(d.l2_bytes)))) +
         td(format_driver(r.run.driver_version ? r.run.driver_version : d.driver_version)) +
         td(html_escape(r.run.nvrtc_version.empty() ? d.nvrtc_version : r.run.nvrtc_version)) +
         td(html_escape(r.run.ktune_version)) +
         td("<code>" + html_escape(short_hash(r.kernel.source_hash)) + "</code>") +
         td("<code>" + html_escape(short_hash(r.kernel.space_hash)) + "</code>") +
         td(html_escape(r.run.host)) + td(html_escape(date_only(r.run.started_at))) +
         td(html_escape(date_only(r.run.finished_at))) + td(html_escape(r.run.backend)) +
         td(fmt::format("{}", r.run.seed)) + td("<code>" + html_escape(r.run.budget) + "</code>") +
         "</tr>\n<tr><td></td><td colspan=\"12\"><span class=\"muted\">command</span> <code>" +
         html_escape(r.run.command_line.empty() ? "(not recorded)" : r.run.command_line) +
         "</code></td></tr>\n";
  }
  o += "</table></div>\n";
  if (s.kernels.size() > 1)
    o += fmt::format(
        "<p class=\"note\">These runs tuned {} versions of the kernel (different source or space "
        "hashes); configurations are compared by their key.</p>\n",
        s.kernels.size());
}

void page_header(std::string& o, const Report& report) {
  const ReportOptions& opt = report.options;
  std::size_t runs = 0;
  for (const auto& s : report.studies) runs += s.runs.size();
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta name=\"generator\" content=\"ktune " KTUNE_VERSION "\">\n";
  o += "<title>" + html_escape(opt.title) + "</title>\n<style>" + kStyle +
       "</style>\n</head>\n<body>\n";
  o += "<header><h1>" + html_escape(opt.title) + "</h1><p class=\"meta\">" +
       html_escape(fmt::format("{} · {} run{} · {} trials · generated {} by ktune {}",
                               opt.database.empty() ? "database" : opt.database, runs,
                               runs == 1 ? "" : "s", report.trials, date_only(report.generated_at),
                               KTUNE_VERSION)) +
       "</p></header>\n<nav>";
  for (std::size_t i = 0; i < report.studies.size(); ++i)
    o += fmt::format("<a href=\"#study-{}\">{} [{}]</a>", i + 1,
                     html_escape(report.studies[i].kernel_name),
                     html_escape(report.studies[i].problem_key));
  o += "</nav>\n<main>\n";
}

// The cards of one device: its best, and the best's speed-up over the median.
void device_cards(std::string& o, const DeviceAnalysis& a) {
  std::string v = format_time_auto(a.best->time_ms);
  if (std::isfinite(a.best->gbps)) v += fmt::format(" · {} GB/s", format_number(a.best->gbps, 4));
  o += card("best on " + a.device.name, v, a.best->config_key);
  // One parameter's values partition the configurations: its times are all the ok times.
  std::vector<double> times;
  if (!a.effects.empty())
    for (const auto& val : a.effects.front().values)
      times.insert(times.end(), val.times_ms.begin(), val.times_ms.end());
  std::sort(times.begin(), times.end());
  if (times.size() >= 2 && a.best->time_ms > 0)
    o += card("speed-up over the median",
              format_number(times[times.size() / 2] / a.best->time_ms, 3) + "×",
              fmt::format("{}: median of {} ok configurations {}", a.device.name, times.size(),
                          format_time_auto(times[times.size() / 2])));
  o += "<div style=\"flex-basis:100%;height:0\"></div>";
}

// Summary cards, one "best" per device.
void study_cards(std::string& o, const ReportStudy& s) {
  o += "<div class=\"cards\">";
  std::size_t evaluations = 0, ok = 0;
  for (const auto& r : s.runs) {
    evaluations += r.search.size();
    ok += r.by_status.count(TrialStatus::kOk) ? r.by_status.at(TrialStatus::kOk) : 0;
  }
  for (const DeviceAnalysis& a : s.devices) {
    if (!a.best) continue;
    device_cards(o, a);
  }
  o +=
      card("evaluations", fmt::format("{}", evaluations),
           fmt::format("{} run{}, {} ok ({})", s.runs.size(), s.runs.size() == 1 ? "" : "s", ok,
                       format_percent(evaluations ? static_cast<double>(ok) / evaluations : 0, 0)));
  o += "</div>\n";
}

// Time against energy, where configurations have an energy: the plot and the Pareto set.
void energy_section(std::string& o, const DeviceAnalysis& a, const std::string& on) {
  if (a.with_energy.empty()) return;
  o += "<h3>Time and energy" + html_escape(on) + "</h3>\n";
  o += fmt::format(
      "<p class=\"note\">{} configurations with an energy; {} on the time-energy Pareto set "
      "(<code>ktune best --policy</code> chooses among it).</p>\n",
      a.with_energy.size(), a.pareto.size());
  o += "<div class=\"plots\"><figure>" +
       svg_pareto("time against energy per run", a.with_energy, a.pareto) + "</figure></div>\n";
  if (a.pareto.empty()) return;
  o += "<table><tr><th>time (ms)</th><th>energy (mJ)</th><th>power (W)</th><th>configuration</th>"
       "</tr>\n";
  for (const TrialRecord& t : a.pareto)
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>\n",
                     format_number(t.time_ms, 4), format_number(t.energy_j * 1e3, 4),
                     format_number(t.power_w, 3), html_escape(t.config_key));
  o += "</table>\n";
}

// The sections of one device's analysis; `on` names the device where the study has several.
void device_sections(std::string& o, const DeviceAnalysis& a, const std::string& on,
                     const ReportOptions& opt) {
  o += "<h3>Parameter effects" + html_escape(on) + "</h3>\n";
  o += fmt::format(
      "<p class=\"note\">{} evaluations over run{} {}; {} distinct configurations, {} of them "
      "ok.</p>\n",
      a.evaluations, a.run_ids.size() == 1 ? "" : "s",
      [&] {
        std::string ids;
        for (auto rid : a.run_ids) ids += (ids.empty() ? "#" : ", #") + std::to_string(rid);
        return ids;
      }(),
      a.distinct, a.distinct_ok);
  effects(o, a, opt);
  o += "<h3>Top configurations" + html_escape(on) + "</h3>\n";
  top_table(o, a);
  finalists_table(o, a);
  energy_section(o, a, on);
  o += "<h3>Failures" + html_escape(on) + "</h3>\n";
  failures(o, a);
}

void study_section(std::string& o, const ReportStudy& s, const std::string& id,
                   const ReportOptions& opt) {
  o += fmt::format(
      "<section class=\"study\" id=\"{}\">\n<h2>{}<span class=\"problem\">{}</span></h2>\n", id,
      html_escape(s.kernel_name), html_escape(s.problem_key));
  study_cards(o, s);

  double typical = NAN;
  for (const auto& r : s.runs)
    if (!r.improvements.empty()) typical = r.improvements.back().second;
  o += "<h3 id=\"" + id + "-runs\">Runs</h3>\n";
  runs_table(o, s, time_unit_for(typical));
  o += "<h3 id=\"" + id + "-convergence\">Convergence</h3>\n";
  convergence(o, s, opt);
  for (const DeviceAnalysis& a : s.devices)
    device_sections(o, a, s.devices.size() > 1 ? " on " + a.device.name : "", opt);
  if (s.cross) {
    o += "<h3>Across devices</h3>\n";
    cross_device(o, *s.cross);
  }
  o += "<h3>Provenance</h3>\n";
  provenance(o, s);
  o += "</section>\n";
}

// A family: its selector's figures, the two plots and a row per tuned size.
void family_section(std::string& o, const ReportFamily& f, const std::string& id) {
  const Selector& sel = f.selector.selector;
  o += fmt::format(
      "<section class=\"study\" id=\"{}\">\n<h2>{}<span class=\"problem\">family of {} "
      "sizes on {}</span></h2>\n",
      id, html_escape(f.kernel_name), f.rows.size(), html_escape(f.device.name));
  o += "<p class=\"note\">" +
       html_escape(fmt::format(
           "Selector {} ({}{}): {} candidates measured at every size.", f.selector.id, sel.method,
           f.selector.replayed ? ", from replayed runs" : "", sel.candidates.size()));
  if (!sel.held_out.empty())
    o += html_escape(fmt::format(
        " Each size left out, its pick there reached {:.3f} of the best on average, {:.3f} at "
        "worst.",
        sel.held_out_mean(), sel.held_out_worst()));
  o += " Untuned sizes within the range are answered by its pick (docs/many-sizes.md).</p>\n";
  o += "<div class=\"plots\">" + svg_family(f) + "</div>\n";
  double typical = NAN;
  for (const auto& r : f.rows)
    if (std::isfinite(r.best_ms)) typical = r.best_ms;
  const TimeUnit unit = time_unit_for(typical);
  o += "<table>\n<tr>" + th("problem") + th(std::string("best (") + unit.name + ")", true) +
       th("its configuration") + th("pick held out") + th("its speed / best", true) + "</tr>\n";
  for (const auto& r : f.rows)
    o += "<tr>" + td(r.problem_key) + td(format_time(r.best_ms, unit), true) + td(r.best_key) +
         td(r.held_out_key.empty() ? "-" : r.held_out_key) +
         td(std::isfinite(r.held_out_performance) ? fmt::format("{:.3f}", r.held_out_performance)
                                                  : "-",
            true) +
         "</tr>\n";
  o += "</table>\n</section>\n";
}

void page_footer(std::string& o, const Report& report) {
  const ReportOptions& opt = report.options;
  o += "</main>\n<footer>" +
       html_escape(fmt::format("Generated {} by ktune {} from {}.", report.generated_at,
                               KTUNE_VERSION,
                               opt.database.empty() ? "the results database" : opt.database));
  if (!opt.command_line.empty())
    o += " Command: <code>" + html_escape(opt.command_line) + "</code>";
  o += " Statuses, sections and the importance method: docs/reports.md.</footer>\n";
  o += std::string("<script>") + kCheckScript + "</script>\n</body>\n</html>\n";
}

}  // namespace

std::string render_html(const Report& report) {
  std::string o;
  o.reserve(1 << 20);
  page_header(o, report);
  for (std::size_t si = 0; si < report.studies.size(); ++si)
    study_section(o, report.studies[si], fmt::format("study-{}", si + 1), report.options);
  for (std::size_t fi = 0; fi < report.families.size(); ++fi)
    family_section(o, report.families[fi], fmt::format("family-{}", fi + 1));
  page_footer(o, report);
  return o;
}

}  // namespace ktune
