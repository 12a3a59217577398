#include "lib/core/schedule.h"

#include <algorithm>

namespace railbench {

std::vector<Round> circle_schedule(int n) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  // Odd n: add a phantom rank; whoever meets it rests that round.
  const int m = (n % 2 == 0) ? n : n + 1;
  std::vector<int> ring(m);
  for (int i = 0; i < m; ++i) ring[i] = i;
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int i = 0; i < m / 2; ++i) {
      int x = ring[i], y = ring[m - 1 - i];
      if (x >= n || y >= n) continue;
      round.push_back(Pair{std::min(x, y), std::max(x, y)});
    }
    std::sort(round.begin(), round.end(), [](const Pair& p, const Pair& q) { return p.a < q.a; });
    rounds.push_back(std::move(round));
    // Keep ring[0] fixed and rotate the rest by one.
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
  }
  return rounds;
}

int peer_in_round(const Round& round, int rank) {
  for (const auto& p : round) {
    if (p.a == rank) return p.b;
    if (p.b == rank) return p.a;
  }
  return -1;
}

}  // namespace railbench
