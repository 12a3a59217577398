// Pair schedules: which ranks talk to which, in rounds of disjoint pairs.
#pragma once

#include <vector>

namespace railbench {

struct Pair {
  int a = 0;  // the lower rank; it leads the measurement
  int b = 0;
  bool operator==(const Pair&) const = default;
};

using Round = std::vector<Pair>;

// Round-robin "circle" schedule over n ranks: every unordered pair exactly once, no
// rank twice in a round; n-1 rounds for even n, n rounds for odd n (one rank rests per
// round). n < 2 gives no rounds.
std::vector<Round> circle_schedule(int n);

// The peer of `rank` in `round`, or -1 when it rests.
int peer_in_round(const Round& round, int rank);

}  // namespace railbench
