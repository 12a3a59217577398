// validate's result kind: its --csv rows (one per link), the per-link figures compare
// compares and the report section.
#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"
#include "bench/runner/results_metrics.h"

namespace railbench {
namespace {

const bool validate_kind_registered = register_result_kind(
    {"validate", validate_csv, compare::validate_figures, report::validate_section, validate_metrics});

}  // namespace
}  // namespace railbench
