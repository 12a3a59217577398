// A test-only door to lib/hostlist for tests/lib/hostlist_oracle.py, which checks it
// against ClusterShell's nodeset: one request a line on stdin, one answer a line on
// stdout, so hundreds of lists cost one process.
//   e EXPR            -> the expanded names, space-separated, in expand_hostlist's order
//   c NAME [NAME...]  -> compress_hostlist of the names
// A request that throws answers "error: <what>".
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/core/errors.h"
#include "lib/runtime/hostlist.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string op;
    in >> op;
    try {
      if (op == "e") {
        std::string expr;
        in >> expr;
        std::string out;
        for (const auto& name : railbench::expand_hostlist(expr)) out += (out.empty() ? "" : " ") + name;
        std::cout << out << '\n';
      } else if (op == "c") {
        std::vector<std::string> names;
        for (std::string n; in >> n;) names.push_back(n);
        std::cout << railbench::compress_hostlist(names) << '\n';
      } else {
        std::cout << "error: unknown request '" << op << "' (e EXPR, or c NAME...)\n";
      }
    } catch (const railbench::Error& e) {
      std::cout << "error: " << e.what() << '\n';
    }
    std::cout.flush();
  }
  return 0;
}
