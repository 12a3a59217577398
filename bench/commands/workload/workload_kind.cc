// workload's result kind: its --csv rows, the figures compare compares and the report section.
#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"

namespace railbench {
namespace {

const bool workload_kind_registered =
    register_result_kind({"workload", workload_csv, compare::workload_figures, report::workload_section});

}  // namespace
}  // namespace railbench
