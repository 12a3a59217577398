// Hostlist expressions as Slurm and cluster inventories write them: "gpu[001-032]",
// "node[1-3,7],login1", "rack[1-2]-gpu[01-04]" (several bracket groups multiply), both
// ways: expanded into names, and names compressed into one (for a drain list).
#pragma once

#include <string>
#include <vector>

namespace railbench {

// Expands `expr` in order; zero padding follows the width of the range's first bound
// ("gpu[001-032]" -> gpu001..gpu032). Throws UsageError naming the position and the
// problem for an empty name, an unclosed bracket, a reversed or non-numeric range, or
// more than `max_hosts` names.
std::vector<std::string> expand_hostlist(const std::string& expr, size_t max_hosts = 1 << 20);

// The inverse: `hosts` sorted, without duplicates, folded into one expression that
// expand_hostlist turns back into exactly that set. It is what ClusterShell's
// `nodeset -f` writes wherever one numeric field varies within a name pattern
// ("gpu003,gpu017,gpu018" -> "gpu[003,017-018]", "gpu9,gpu10" -> "gpu[9-10]",
// "rack1-gpu01,rack2-gpu01" -> "rack[1-2]-gpu01"): names are grouped by the text around
// their numbers, patterns sorted as text, indexes shorter first then by value, and a range
// never mixes paddings ("gpu1,gpu01" -> "gpu[1,01]"). Where several fields vary it folds
// the last field first, then the one before over equal brackets ("rack[1-2]-gpu[01-04]");
// nodeset may cut such a set into other, equally exact, pieces. A number of more than
// 9 digits stays text (expand_hostlist reads no longer ones). Names without digits are
// kept as they are; "" for no hosts. Throws UsageError for an empty name or one that
// holds a character of the syntax ('[', ']', ',') or a space.
std::string compress_hostlist(const std::vector<std::string>& hosts);

}  // namespace railbench
