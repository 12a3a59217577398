// What both engines share (database.h): telling a PostgreSQL URL from a file, and keeping
// a password out of messages.
#include <regex>

#include "lib/store/database.h"

namespace railbench::store {

bool is_postgres_url(std::string_view where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

std::string redact_url(const std::string& url) {
  // postgresql://user:secret@host/db and ...?password=secret
  static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"(([?&]password=)[^&]*)");
  return std::regex_replace(std::regex_replace(url, userinfo, "$1:***@"), param, "$1***");
}

}  // namespace railbench::store
