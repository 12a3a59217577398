// The report's section for each kind of results file, after the run's header: a result
// kind (bench/kinds/result_kind.h) names its own from its command's folder, and
// render_report (report.h) draws whichever the run's kind names.
#pragma once

#include <string>

namespace railbench::report {

struct RunContext;  // sections.h

// validate: the verdict, findings, per-rail heatmaps and link table.
std::string validate_section(const RunContext& ctx);
// sendrecv: latency and bandwidth per size, the pair matrices.
std::string sendrecv_section(const RunContext& ctx);
// allreduce, allgather, reducescatter, alltoall: busbw and time per size; alltoall's
// step-time matrix.
std::string collective_section(const RunContext& ctx);
// kvcache: per mode and token count.
std::string kvcache_section(const RunContext& ctx);
// workload: the step, where it goes per group kind, the what-if and the stragglers.
std::string workload_section(const RunContext& ctx);

}  // namespace railbench::report
