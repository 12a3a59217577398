// Runs `n` ranks as threads of this process, each with a threads bootstrap and its own
// real transport, and rethrows the first rank's failure on the test's thread (as gloo's
// tests do), so a failing rank fails the test instead of hanging it.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lib/runtime/bootstrap.h"

namespace railbench::testing {

// Catch2 is not thread-safe: rank threads must not use its macros. They call expect(),
// which throws; run_ranks rethrows the first failure on the test's own thread.
inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("expectation failed: " + what);
}

inline void run_ranks(int n, const std::function<void(Bootstrap&)>& body, double timeout_s = 30) {
  auto group = make_thread_group(n);
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto b = make_thread_bootstrap(group, r);
        b->set_timeout(timeout_s);
        body(*b);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace railbench::testing
