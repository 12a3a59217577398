// kvcache's result kind: its --csv rows, the figures compare compares and the report section.
#include "bench/kinds/result_kind.h"
#include "bench/offline/compare/figures.h"
#include "bench/offline/report/kind_sections.h"
#include "bench/runner/results_csv.h"

namespace railbench {
namespace {

const bool registered =
    register_result_kind({"kvcache", kvcache_csv, compare::kvcache_figures, report::kvcache_section});

}  // namespace
}  // namespace railbench
