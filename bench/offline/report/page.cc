// The page around the sections: one <style>, the SVG patterns, a header per run and
// the table of contents. No <script> and no external reference of any kind: the page
// opens from file:// on an air-gapped login node and prints as it looks.
#include <fmt/format.h>

#include "bench/offline/report/colour.h"
#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"
#include "bench/offline/report/svg.h"
#include "lib/core/errors.h"

namespace railbench::report {

namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;padding:16px 24px;max-width:1800px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 8px} h2{font-size:19px;margin:28px 0 8px;padding-top:10px;border-top:3px solid #333}
h3{font-size:16px;margin:18px 0 6px} h4{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px} th,td{border:1px solid #ccc;padding:2px 7px;text-align:right;vertical-align:top}
th{background:#f0f0f0} td.l,th.l{text-align:left} td:first-child{text-align:left}
table.head td{text-align:left} table.head td:first-child{font-weight:600;background:#f7f7f7}
tr.bad td,td.bad{background:#fde0dc} tr.warn td,td.warn{background:#fff3c4} tr.mismatch td.m{background:#fde0dc;font-weight:600}
table.findings td:nth-child(4),table.findings td:nth-child(7){text-align:left}
tr:target td{outline:2px solid #000}
.status{display:inline-block;padding:1px 8px;border-radius:3px;font-weight:600}
.status.complete{background:#d7f0dc}.status.failed{background:#fde0dc}.status.running{background:#fff3c4}
.banner{font-size:18px;font-weight:700;padding:10px 14px;margin:10px 0;border:2px solid #333;border-radius:4px}
.banner.pass{background:#d7f0dc}.banner.fail{background:#fde0dc}.banner.warn{background:#fff3c4}
.banner small{font-weight:400;font-size:13px;display:block}
.note{color:#555;font-size:13px;margin:4px 0}
.charts{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:flex-start}
.leaf{display:inline-flex;flex-wrap:wrap;gap:6px 14px;border:1px dashed #888;padding:4px 8px;margin:4px 8px 8px 0;vertical-align:top}
.leaf>.leafname{width:100%;font-weight:600;font-size:13px}
figure{margin:0} figcaption{font-size:13px;font-weight:600}
.legend{font-weight:400} .key{margin-right:12px;white-space:nowrap} .key svg{vertical-align:middle;margin-right:3px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
.linechart .grid{stroke:#e4e4e4} .linechart .tick{font-size:10px;fill:#444} .linechart .axis{font-size:11px;fill:#333}
.linechart .ctitle{font-size:12px;font-weight:600} .line{fill:none;stroke-width:2} .line.baseline{stroke-dasharray:6 4;stroke-width:1.5;opacity:.85}
.band{opacity:.18;stroke:none} .band.baseline{opacity:.08} .pt.baseline{opacity:.7}
.hm .lbl{font-size:11px;fill:#222} .hm .corner{font-size:10px;fill:#666} .hm .v{font-size:9px;text-anchor:middle}
.hm .cell{stroke:#fff;stroke-width:.5} .hm .cell:hover{stroke:#000;stroke-width:2}
.hm .self{fill:#f4f4f4} .hm .group{stroke:#000;stroke-width:1.5}
.mark{fill:none;stroke:#000;stroke-width:2;stroke-dasharray:3 2;paint-order:stroke}
.mark.bad{stroke:#000;stroke-width:2.5;stroke-dasharray:none;outline:none}
.mark.warn{stroke:#000;stroke-dasharray:3 2} .mark.regressed{stroke:#000;stroke-width:2.5;stroke-dasharray:1 2}
svg.defs{position:absolute}
.hm .cell{scroll-margin:160px} .hm .cell:target{stroke:#e4001b;stroke-width:4;filter:drop-shadow(0 0 3px #e4001b)} .hm a .cell{cursor:pointer}
.lpair{border:1px solid #ccc;padding:4px 8px} .lpair:target{outline:3px solid #e4001b;outline-offset:2px}
table.worst td:nth-child(3),table.worst td:nth-child(4),table.worst td:nth-child(8){text-align:left}
.ckey{font-size:12px;display:flex;align-items:center;gap:6px;margin:2px 0 6px;flex-wrap:wrap}
.ckey .bar{display:inline-block;width:180px;height:12px;border:1px solid #888}
.ckey svg{vertical-align:middle}
.ratio{display:inline-block;position:relative;width:90px;height:9px;background:#eee;border:1px solid #bbb;vertical-align:middle}
.ratio span{display:block;height:100%;background:#0072b2}.ratio i{position:absolute;left:45px;top:-2px;height:13px;border-left:1px solid #000}
details{margin:6px 0} summary{cursor:pointer;font-weight:600}
nav ul{margin:4px 0 0 18px;padding:0}
@media print{h2{page-break-before:always} .hm .cell:hover{stroke:#fff}}
)css";

const RunDocument* baseline_for(const RunDocument& run, const std::vector<RunDocument>& baselines) {
  for (const auto& b : baselines)
    if (b.doc.value("command", "") == run.doc.value("command", "")) return &b;
  return nullptr;
}

std::string file_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string render_report(const std::vector<RunDocument>& runs, const std::vector<RunDocument>& baselines,
                          const ReportOptions& options) {
  std::string body;
  std::string toc;
  int n = 0;
  for (const auto& run : runs) {
    ++n;
    const RunContext ctx{run, baseline_for(run, baselines), options, fmt::format("run{}", n)};
    const std::string command = run.doc.value("command", "");
    toc += fmt::format("<li><a href=\"#{}\">{}: {}</a></li>", ctx.id, esc(command), esc(file_name(run.path)));
    // A document that passed check_document may still have a field of an unexpected
    // type (a damaged or hand-edited file): name the file rather than crash.
    try {
      const ResultKind& kind = report_kind(run.doc, run.path);
      body += run_header(ctx);
      body += kind.report_section(ctx);
      body += timeline_section(ctx);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(
          fmt::format("{}{}: a field has an unexpected type ({}); the file is damaged: write it again "
                      "with --json",
                      run.path, ctx.baseline ? " (or its baseline " + ctx.baseline->path + ")" : "", e.what()));
    }
    body += "</section>\n";
  }
  std::string title = runs.size() == 1
                          ? fmt::format("railbench {}: {}", runs[0].doc.value("command", ""), file_name(runs[0].path))
                          : fmt::format("railbench: {} runs", runs.size());
  std::string page;
  page.reserve(body.size() + 8192);
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  page += "<title>" + esc(title) + "</title><style>" + std::string(kStyle) + scale_css() + "</style></head>\n<body>\n";
  page += svg_defs();
  page += "<h1>" + esc(title) + "</h1>\n";
  page += fmt::format(
      "<p class=\"note\">Written by railbench {} report. Hover a cell or a point for its figures; the colour "
      "scales are viridis (dark: bad, yellow: good) and purple-orange for changes, both readable with colour "
      "blindness.</p>\n",
      esc(RAILBENCH_VERSION));
  if (!options.history_store.empty()) toc += "<li><a href=\"#history\">history from the run store</a></li>";
  if (runs.size() > 1 || !options.history_store.empty()) page += "<nav><b>Runs</b><ul>" + toc + "</ul></nav>\n";
  page += body;
  page += history_section(options);
  page += "</body></html>\n";
  return page;
}

}  // namespace railbench::report
