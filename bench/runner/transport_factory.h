// Reads "-t name[:provider]" and "--rails" into a TransportSpec; the transports
// themselves, their options and their factories are in lib/transport/registry.h, where
// each transports/ folder registers itself.
#pragma once

#include <string>

#include "lib/transport/registry.h"

namespace railbench {

// The most rails one transport opens (bench/cli/README.md, "Limits"): each rail is a fabric domain
// with its own endpoints, queues and bounce buffers (tens of MB per rank), and the
// largest nodes have 8 to 16 NICs.
inline constexpr int kMaxRails = 64;

// Parses -t and --rails; throws UsageError naming the valid forms (an unknown name
// lists the transports this build has), and for more than kMaxRails rails, before any
// rail is opened.
TransportSpec parse_transport_spec(const std::string& transport, const std::string& rails);

}  // namespace railbench
