// congestion's result kind: its --csv rows (one per placement, metric and aggressor).
// compare and report have no part for it and refuse its results file by name.
#include "bench/kinds/result_kind.h"
#include "bench/runner/results_csv.h"

namespace railbench {
namespace {

const bool congestion_kind_registered = register_result_kind({"congestion", congestion_csv, nullptr, nullptr});

}  // namespace
}  // namespace railbench
