// Hostlist expressions as Slurm and cluster inventories write them: "gpu[001-032]",
// "node[1-3,7],login1", "rack[1-2]-gpu[01-04]" (several bracket groups multiply).
#pragma once

#include <string>
#include <vector>

namespace railbench {

// Expands `expr` in order; zero padding follows the width of the range's first bound
// ("gpu[001-032]" -> gpu001..gpu032). Throws UsageError naming the position and the
// problem for an empty name, an unclosed bracket, a reversed or non-numeric range, or
// more than `max_hosts` names.
std::vector<std::string> expand_hostlist(const std::string& expr, size_t max_hosts = 1 << 20);

}  // namespace railbench
