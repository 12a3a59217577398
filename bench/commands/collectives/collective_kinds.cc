// The result kinds of the four collective commands: their --csv rows, the figures compare
// compares and the report section. allreduce, allgather and reducescatter share one table;
// alltoall adds a row per link.
#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"
#include "bench/runner/results_metrics.h"

namespace railbench {
namespace {

const bool collective_kinds_registered = [] {
  for (const char* name : {"allreduce", "allgather", "reducescatter"})
    register_result_kind(
        {name, collective_csv, compare::collective_figures, report::collective_section, collective_metrics});
  return register_result_kind(
      {"alltoall", alltoall_csv, compare::collective_figures, report::collective_section, collective_metrics});
}();

}  // namespace
}  // namespace railbench
