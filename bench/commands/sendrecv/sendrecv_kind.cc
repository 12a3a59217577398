// sendrecv's result kind: its --csv rows, the figures compare compares and the report section.
#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"
#include "bench/runner/results_metrics.h"

namespace railbench {
namespace {

const bool sendrecv_kind_registered = register_result_kind(
    {"sendrecv", sendrecv_csv, compare::sendrecv_figures, report::sendrecv_section, sendrecv_metrics});

}  // namespace
}  // namespace railbench
