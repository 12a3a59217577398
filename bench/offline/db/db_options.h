// The options the db and history commands share.
#pragma once

#include <ctime>
#include <string>

namespace railbench::db {

// --since: "30d", "12w", "48h" or "all" as a time in days since the epoch, counted back
// from `now`. Throws UsageError naming the text and the forms it takes.
double since_days(const std::string& text, std::time_t now);

}  // namespace railbench::db
