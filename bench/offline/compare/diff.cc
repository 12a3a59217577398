#include "bench/offline/compare/diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::compare {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::regression: return "regression";
    case Verdict::noise: return "noise";
    case Verdict::same: return "same";
    case Verdict::improvement: return "improvement";
  }
  return "?";
}

int Diff::count(Verdict v) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [v](const DiffRow& r) { return r.verdict == v; }));
}

DiffRow judge(const Figure& o, const Figure& n, double threshold) {
  DiffRow r{o.subject, o.metric, o.unit, o.higher_better, o.value, n.value, o.lo, o.hi, n.lo, n.hi};
  if (o.value != 0) {
    r.change = (n.value - o.value) / std::fabs(o.value);
  } else if (n.value != 0) {
    r.change = n.value > 0 ? INFINITY : -INFINITY;  // from nothing: as far as it goes
  }
  r.worse = o.higher_better ? -r.change : r.change;
  // The new run's band entirely on the worse side of the baseline's band, or entirely
  // on the better side: what separates a change from the noise both runs show.
  const bool band_worse = o.higher_better ? n.hi < o.lo : n.lo > o.hi;
  const bool band_better = o.higher_better ? n.lo > o.hi : n.hi < o.lo;
  if (std::fabs(r.change) <= threshold) {
    r.verdict = Verdict::same;
  } else if (r.worse > 0) {
    r.verdict = band_worse ? Verdict::regression : Verdict::noise;
  } else {
    r.verdict = band_better ? Verdict::improvement : Verdict::noise;
  }
  return r;
}

namespace {

int rank(Verdict v) {
  switch (v) {
    case Verdict::regression: return 0;
    case Verdict::noise: return 1;
    case Verdict::same: return 2;
    case Verdict::improvement: return 3;
  }
  return 4;
}

}  // namespace

Diff diff(const std::vector<Figure>& base, const std::vector<Figure>& next, double threshold) {
  std::map<std::string, const Figure*> old_by_key;
  for (const auto& f : base) old_by_key.emplace(f.key(), &f);
  Diff d;
  std::map<std::string, bool> matched;
  for (const auto& n : next) {
    const auto it = old_by_key.find(n.key());
    if (it == old_by_key.end()) {
      d.only_new.push_back(n.key());
      continue;
    }
    matched[n.key()] = true;
    d.rows.push_back(judge(*it->second, n, threshold));
  }
  for (const auto& f : base)
    if (!matched.count(f.key())) d.only_base.push_back(f.key());
  // Worst first: regressions by how much worse, then the rest; improvements last, the
  // largest at the bottom.
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    if (rank(a.verdict) != rank(b.verdict)) return rank(a.verdict) < rank(b.verdict);
    return a.worse > b.worse;
  });
  return d;
}

double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v) || v <= 0 || v > 1000) {
    throw UsageError(
        fmt::format("--threshold '{}': expected a percentage above 0 and at most 1000, such as 5% or 12.5%", text));
  }
  return v / 100;
}

}  // namespace railbench::compare
