#include "lib/runtime/signals.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace railbench {

namespace {

constexpr int kInterruptSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Owners of the published documents. Allocated once and never freed, so a handler that
// runs during static destruction at exit still finds them.
struct Published {
  std::unique_ptr<SignalDocument> current, previous;
};
Published& owners() {
  static auto* p = new Published;
  return *p;
}
std::atomic<const SignalDocument*> g_document{nullptr};
std::atomic<int> g_rank{-1};
std::atomic<bool> g_reported{false};
std::atomic<int> g_entered{0};
std::atomic<pid_t> g_main_tid{0};
std::atomic<pid_t> g_leader{0};
// Where an interrupt that another thread passed on to the main thread came from: the
// main thread sees our own tgkill (SI_TKILL from our pid), not the launcher.
std::atomic<bool> g_forwarded{false};
std::atomic<int> g_forwarded_code{0};
std::atomic<pid_t> g_forwarded_pid{0};
// InterruptsDeferred: whether one lives, and the first interrupt signal it recorded.
std::atomic<bool> g_defer{false};
std::atomic<int> g_deferred{0};
// add_signal_cleanup_path: fixed storage, so a handler reads it without allocating.
constexpr int kCleanupPaths = 16;
char g_cleanup[kCleanupPaths][256];
std::atomic<int> g_cleanup_count{0};

void remove_cleanup_paths() noexcept {
  const int n = g_cleanup_count.load();
  for (int i = 0; i < n && i < kCleanupPaths; ++i) ::unlink(g_cleanup[i]);
}

// How long a rank other than 0 waits before exiting on its launcher's signal (on_signal):
// for rank 0 to exit where it shares our pid namespace, else a fixed while.
constexpr long kLauncherLingerNs = 600'000'000;
constexpr long kLeaderWaitNs = 2'000'000'000;
constexpr long kLeaderPollNs = 5'000'000;
// The main thread's time to take an interrupt that another thread passed on to it, and
// how often the watchdog looks for one that nobody took (see watchdog_loop). Together
// with the write (milliseconds), the bound on a verdict: 100 + 250 ms after the signal,
// under Open MPI's odls_base_sigkill_timeout of 1 s.
constexpr long kMainTakeNs = 250'000'000;
constexpr long kWatchPeriodNs = 100'000'000;
// RAILBENCH_SIGNAL_TRACE: a file that every thread's part in a signal is appended to.
std::atomic<int> g_trace_fd{-1};
// Test hook (RAILBENCH_TEST_MAIN_BLOCKS_SIGNALS=1): the main thread blocks the interrupt
// signals, as a main thread stuck in the kernel cannot take them: the watchdog must.
bool g_test_main_blocks = false;
// Crash handlers run on their own stack: after a stack overflow there is none left.
alignas(16) char g_alt_stack[64 * 1024];

bool is_crash(int sig) noexcept {
  for (int s : kCrashSignals)
    if (s == sig) return true;
  return false;
}

const char* name_of(int sig) noexcept {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a signal";
  }
}

// `u` in decimal at `out` (room for 20 digits), no terminator; returns the length.
size_t format_decimal(unsigned long u, char* out) noexcept {
  char reversed[20];
  size_t n = 0;
  do {
    reversed[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && n < sizeof(reversed));
  for (size_t i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
  return n;
}

// Writes through a buffer on the stack, so a document costs a few write() calls, not
// one per piece; no allocation.
class FdWriter {
 public:
  explicit FdWriter(int fd) : fd_(fd) {}
  void put(const char* p, size_t n) noexcept {
    while (n > 0 && ok_) {
      const size_t k = n < sizeof(buf_) - len_ ? n : sizeof(buf_) - len_;
      std::memcpy(buf_ + len_, p, k);
      len_ += k;
      p += k;
      n -= k;
      if (len_ == sizeof(buf_)) flush();
    }
  }
  void put(const char* s) noexcept { put(s, std::strlen(s)); }
  void put_int(long v) noexcept {
    char digits[24];
    if (v < 0) put("-", 1);
    put(digits, format_decimal(v < 0 ? 0UL - static_cast<unsigned long>(v) : static_cast<unsigned long>(v), digits));
  }
  bool flush() noexcept {
    size_t off = 0;
    while (off < len_ && ok_) {
      const ssize_t w = ::write(fd_, buf_ + off, len_ - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ok_ = false;
        break;
      }
      off += static_cast<size_t>(w);
    }
    len_ = 0;
    return ok_;
  }

 private:
  int fd_;
  char buf_[4096];
  size_t len_ = 0;
  bool ok_ = true;
};

// "2026-11-23T10:00:00Z" from the clock, without gmtime (not async-signal-safe).
void format_utc_now(char (&out)[24]) noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  int64_t days = ts.tv_sec / 86400;
  int64_t secs = ts.tv_sec % 86400;
  if (secs < 0) {
    secs += 86400;
    --days;
  }
  // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-compatible date algorithms").
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  auto two = [](char* p, int64_t v) {
    p[0] = static_cast<char>('0' + v / 10 % 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  two(out, year / 100);
  two(out + 2, year % 100);
  out[4] = '-';
  two(out + 5, month);
  out[7] = '-';
  two(out + 8, day);
  out[10] = 'T';
  two(out + 11, secs / 3600);
  out[13] = ':';
  two(out + 14, secs / 60 % 60);
  out[16] = ':';
  two(out + 17, secs % 60);
  out[19] = 'Z';
  out[20] = '\0';
}

size_t filled_size(const std::string& tmpl, size_t error_len, size_t time_len) noexcept {
  size_t n = 0;
  for (char c : tmpl) n += c == kSignalErrorHole ? error_len : c == kSignalTimeHole ? time_len : 1;
  return n;
}

void put_filled(FdWriter& w, const std::string& tmpl, const char* error, const char* time) noexcept {
  size_t start = 0;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c != kSignalErrorHole && c != kSignalTimeHole) continue;
    w.put(tmpl.data() + start, i - start);
    w.put(c == kSignalErrorHole ? error : time);
    start = i + 1;
  }
  w.put(tmpl.data() + start, tmpl.size() - start);
}

void restore_default_and_raise(int sig) noexcept {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
  // Still blocked while the handler runs: delivered, with the default action, on return
  // (a fault re-executes its instruction and faults again).
  ::raise(sig);
}

void print_line(const char* what, bool crash, const SignalDocument* doc, bool wrote) noexcept {
  FdWriter w(STDERR_FILENO);
  w.put(crash ? "railbench: internal error: " : "railbench: error: ");
  if (const int rank = g_rank.load(); rank > 0) {
    w.put("rank ");
    w.put_int(rank);
    w.put(": ");
  }
  w.put(what);
  if (doc != nullptr) {
    if (wrote) {
      w.put(doc->note.data(), doc->note.size());
    } else {
      w.put("; the results file '");
      w.put(doc->path.data(), doc->path.size());
      w.put("' could not be updated and may still say \"running\"");
    }
  }
  w.put("\n");
  w.flush();
}

pid_t current_tid() noexcept {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

void sleep_ns(long ns) noexcept {
  timespec left{ns / 1'000'000'000, ns % 1'000'000'000};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

// Whether `pid` is still a live process: not gone and not a zombie waiting for its
// parent (kill(pid, 0) succeeds on a zombie). Reads /proc/PID/stat with open and read.
bool process_alive(pid_t pid) noexcept {
  char path[40] = "/proc/";
  const size_t at = 6 + format_decimal(static_cast<unsigned long>(pid), path + 6);
  std::memcpy(path + at, "/stat", 6);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno != ENOENT && errno != ESRCH;
  char buf[512];
  const ssize_t len = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (len <= 0) return false;
  // "PID (comm) S ...": the state follows the last ')' (comm may hold one itself).
  const char* state = nullptr;
  for (ssize_t i = len - 1; i >= 0; --i)
    if (buf[i] == ')') {
      state = i + 2 < len ? buf + i + 2 : nullptr;
      break;
    }
  return state != nullptr && *state != 'Z' && *state != 'X';
}

// A rank ended by its launcher: give rank 0 the time to write its verdict (see
// kLauncherLingerNs).
void linger_for_rank0() noexcept {
  const pid_t leader = g_leader.load();
  if (leader <= 0) return sleep_ns(kLauncherLingerNs);
  for (long waited = 0; waited < kLeaderWaitNs && process_alive(leader); waited += kLeaderPollNs)
    sleep_ns(kLeaderPollNs);
}

// Appends "<monotonic s> tid <tid> main|other <event> sig <n> main: <wchan> <syscall>" to
// the trace file, if one is set: where the main thread is in the kernel when it matters.
void trace(const char* event, int sig) noexcept {
  const int fd = g_trace_fd.load();
  if (fd < 0) return;
  FdWriter w(fd);
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  char frac[16];
  const size_t n = format_decimal(static_cast<unsigned long>(ts.tv_nsec) + 1'000'000'000UL, frac);
  w.put_int(ts.tv_sec);
  w.put(".");
  w.put(frac + 1, n - 1);
  w.put(" tid ");
  const pid_t tid = current_tid(), main_tid = g_main_tid.load();
  w.put_int(tid);
  w.put(tid == main_tid ? " main " : " other ");
  w.put(event);
  w.put(" sig ");
  w.put_int(sig);
  if (main_tid > 0) {
    // /proc/self/task/TID/{wchan,syscall}: what the main thread waits in, if anything.
    for (const char* file : {"/wchan", "/syscall"}) {
      char path[64] = "/proc/self/task/";
      size_t at = 16 + format_decimal(static_cast<unsigned long>(main_tid), path + 16);
      std::memcpy(path + at, file, std::strlen(file) + 1);
      char buf[96] = {};
      const int in = ::open(path, O_RDONLY | O_CLOEXEC);
      ssize_t len = in >= 0 ? ::read(in, buf, sizeof(buf) - 1) : -1;
      if (in >= 0) ::close(in);
      for (ssize_t i = 0; i < len; ++i)
        if (buf[i] == '\n') len = i;
      w.put(file[1] == 'w' ? " main: " : " ");
      if (len > 0) w.put(buf, static_cast<size_t>(len));
    }
  }
  w.put("\n");
  w.flush();
}

// Whether the main thread started on the verdict within kMainTakeNs.
bool main_took_it() noexcept {
  for (long waited = 0; waited < kMainTakeNs; waited += kLeaderPollNs) {
    if (g_entered.load() != 0) return true;
    sleep_ns(kLeaderPollNs);
  }
  return g_entered.load() != 0;
}

// Another thread has an interrupt signal: pass it on to the main thread (which stops
// where it is), and give it kMainTakeNs. Returns false when the main thread did not take
// it (stuck in the kernel, the signal blocked, not scheduled): the caller writes the
// verdict itself. The main thread, back in user space, meets the signal first and stops.
bool pass_to_main(int sig, const siginfo_t* info, pid_t main_tid) noexcept {
  if (info != nullptr && !g_forwarded.exchange(true)) {
    g_forwarded_code.store(info->si_code);
    g_forwarded_pid.store(info->si_pid);
  }
  if (::syscall(SYS_tgkill, ::getpid(), main_tid, sig) != 0) return false;  // the main thread is gone
  trace("passed-to-main", sig);
  if (main_took_it()) return true;
  trace("main-did-not-take-it", sig);
  return false;
}

void conclude(int sig, siginfo_t* info);

// Records `sig` for an InterruptsDeferred when one lives and has none yet: true when
// recorded (then the deferring code acts on it, and nothing else must).
bool deferred(int sig) noexcept {
  if (!g_defer.load()) return false;
  int none = 0;
  if (!g_deferred.compare_exchange_strong(none, sig)) return false;  // a second one: acted on now
  const int saved_errno = errno;
  trace("deferred", sig);
  errno = saved_errno;
  return true;
}

void on_signal(int sig, siginfo_t* info, void*) {
  const bool crash = is_crash(sig);
  // Not passed on to the main thread either: the deferring code polls for it.
  if (!crash && deferred(sig)) return;
  // A process-directed signal goes to any thread that does not block it. Handled here,
  // the main thread would run on and could rename a newer "running" file over the
  // verdict before _exit: pass it to the main thread, which stops where it is. (A crash
  // belongs to the thread that faulted.)
  if (const pid_t main_tid = g_main_tid.load(); !crash && main_tid > 0 && current_tid() != main_tid) {
    const int saved_errno = errno;
    if (g_entered.load() != 0 || pass_to_main(sig, info, main_tid)) {
      errno = saved_errno;
      return;
    }
    errno = saved_errno;  // the main thread did not take it, or is gone: handle it here
  }
  conclude(sig, info);
}

// Claims the verdict (one thread only) and writes it; ends the process.
void conclude(int sig, siginfo_t* info) {
  const bool crash = is_crash(sig);
  if (g_entered.exchange(1) != 0) {
    // Another thread is already writing the verdict and will end the process.
    if (crash) return restore_default_and_raise(sig);
    for (;;) ::pause();
  }
  const int saved_errno = errno;
  trace("verdict", sig);
  char what[48] = {};
  std::strcat(what, crash ? "crashed with " : "interrupted by ");
  std::strcat(what, name_of(sig));
  const SignalDocument* doc = g_document.load();
  const bool wrote = doc != nullptr && write_signal_document(*doc, what);
  if (doc != nullptr && !doc->pending_tmp.empty()) ::unlink(doc->pending_tmp.c_str());
  remove_cleanup_paths();
  // The launcher signals every rank when it ends a job: only rank 0 speaks for it. A
  // signal sent to one rank by someone else is that rank's to report.
  int code = info != nullptr ? info->si_code : SI_KERNEL;
  pid_t from = info != nullptr ? info->si_pid : 0;
  if (code == SI_TKILL && from == ::getpid() && g_forwarded.load()) {
    code = g_forwarded_code.load();
    from = g_forwarded_pid.load();
  }
  const bool sent_directly = code <= 0 && from != ::getppid();
  if (crash || sent_directly || (g_rank.load() == 0 && !g_reported.load())) print_line(what, crash, doc, wrote);
  if (crash) {
    errno = saved_errno;
    return restore_default_and_raise(sig);
  }
  if (!sent_directly && g_rank.load() > 0) {
    // Open MPI's orted ends a job with SIGTERM to each local rank, sleeps, and sends
    // SIGKILL when the sleep ends, and the first child to exit cuts that sleep short.
    // A rank that exited at once would so kill rank 0 while it writes the verdict:
    // the others wait for it first (nanosleep, open and read are async-signal-safe).
    linger_for_rank0();
  }
  ::_exit(128 + sig);
}

bool ours(int sig) noexcept {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == on_signal;
}

// A thread of ours that the interrupt signals cannot interrupt (it blocks them) and that
// collects one nobody took: the kernel hands a process-wide signal to the main thread
// first, and a main thread stuck in the kernel (or not scheduled, or blocking it) leaves
// it pending with no other thread woken. sigtimedwait takes it from the pending set within
// kWatchPeriodNs; then as from any other thread: passed on, or the verdict written here.
// Each period it also takes the handlers back from a library that replaced them.
void watchdog_loop() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kInterruptSignals) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const timespec period{0, kWatchPeriodNs};
  for (;;) {
    siginfo_t info{};
    const int sig = ::sigtimedwait(&set, &info, &period);
    if (sig > 0) {
      trace("watchdog-took", sig);
      if (deferred(sig)) continue;
      if (g_entered.load() == 0 && !pass_to_main(sig, &info, g_main_tid.load())) conclude(sig, &info);
      continue;
    }
    if (g_entered.load() != 0) continue;
    for (int s : kInterruptSignals)
      if (!ours(s)) {
        trace("handler-replaced", s);
        install_signal_handlers();
        break;
      }
  }
}

void start_watchdog() {
  if (const char* path = std::getenv("RAILBENCH_SIGNAL_TRACE"); path != nullptr && *path != '\0')
    g_trace_fd.store(::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (const char* block = std::getenv("RAILBENCH_TEST_MAIN_BLOCKS_SIGNALS"); block != nullptr && *block == '1')
    g_test_main_blocks = true;
  // Detached and never joined: it lives as long as the process, and ends with it.
  std::thread(watchdog_loop).detach();
}

}  // namespace

void install_signal_handlers() {
  pid_t none = 0;
  if (g_main_tid.compare_exchange_strong(none, current_tid())) start_watchdog();
  // The crash handlers' stack is the main thread's (a fault belongs to the thread that made it).
  static bool stack_installed = false;
  if (!stack_installed && current_tid() == g_main_tid.load()) {
    stack_t ss{};
    ss.ss_sp = g_alt_stack;
    ss.ss_size = sizeof(g_alt_stack);
    stack_installed = ::sigaltstack(&ss, nullptr) == 0;
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sigemptyset(&sa.sa_mask);
  // One verdict: while it is written, the other signals wait (and then find it done).
  for (int s : kInterruptSignals) sigaddset(&sa.sa_mask, s);
  for (int s : kCrashSignals) sigaddset(&sa.sa_mask, s);
  sa.sa_flags = SA_SIGINFO;
  for (int s : kInterruptSignals) ::sigaction(s, &sa, nullptr);
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  for (int s : kCrashSignals) ::sigaction(s, &sa, nullptr);
  if (g_test_main_blocks && current_tid() == g_main_tid.load()) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kInterruptSignals) sigaddset(&set, s);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
}

InterruptsDeferred::InterruptsDeferred() {
  g_deferred.store(0);
  g_defer.store(true);
}

InterruptsDeferred::~InterruptsDeferred() {
  g_defer.store(false);
  const int sig = g_deferred.exchange(0);
  // Recorded but never acted on: the process was asked to end, so it ends now, as the
  // handler would have (the handlers are ours again: nothing is deferred any more).
  if (sig != 0 && !taken_) ::raise(sig);
}

int InterruptsDeferred::take() {
  const int sig = g_deferred.load();
  if (sig != 0) taken_ = true;
  return sig;
}

const char* signal_name(int sig) noexcept {
  return name_of(sig);
}

void add_signal_cleanup_path(const std::string& path) {
  const int n = g_cleanup_count.load();
  if (path.empty() || path.size() >= sizeof(g_cleanup[0]) || n >= kCleanupPaths) return;
  for (int i = 0; i < n; ++i)
    if (path == g_cleanup[i]) return;
  std::memcpy(g_cleanup[n], path.c_str(), path.size() + 1);
  g_cleanup_count.store(n + 1);  // published after the bytes: a handler sees whole paths
}

void set_signal_rank(int rank) {
  g_rank.store(rank);
}

void set_signal_leader(pid_t rank0_pid) {
  g_leader.store(rank0_pid == ::getpid() ? 0 : rank0_pid);
}

void set_signal_outcome_reported() {
  g_reported.store(true);
}

void publish_signal_document(std::unique_ptr<SignalDocument> doc) {
  Published& p = owners();
  const SignalDocument* next = doc.get();
  p.previous = std::move(p.current);
  p.current = std::move(doc);
  g_document.store(next);
}

bool write_signal_document(const SignalDocument& doc, const char* error) noexcept {
  char now[24];
  format_utc_now(now);
  if (!doc.rename) {
    // A device or fifo: never replaced by a file. Non-blocking, so a fifo nobody reads
    // cannot hold up the exit.
    const int fd = ::open(doc.path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    FdWriter w(fd);
    put_filled(w, doc.pretty, error, now);
    const bool ok = w.flush();
    ::close(fd);
    return ok;
  }
  // O_EXCL|O_NOFOLLOW: a name planted in the directory is never followed or reused.
  const int fd = ::open(doc.tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) {
    FdWriter w(fd);
    put_filled(w, doc.pretty, error, now);
    bool ok = w.flush();
    if (::close(fd) != 0) ok = false;
    if (ok && ::rename(doc.tmp_path.c_str(), doc.path.c_str()) == 0) return true;
    ::unlink(doc.tmp_path.c_str());
  }
  return overwrite_signal_document_in_place(doc, error);
}

bool overwrite_signal_document_in_place(const SignalDocument& doc, const char* error) noexcept {
  if (!doc.rename) return false;
  char now[24];
  format_utc_now(now);
  const int fd = ::open(doc.path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  const size_t need = filled_size(doc.compact, std::strlen(error), std::strlen(now));
  // Only within the blocks the file already has: a full disk cannot give it more, and a
  // write that ran out of space halfway would tear the last good file.
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && need <= static_cast<size_t>(st.st_size);
  if (ok) {
    FdWriter w(fd);
    put_filled(w, doc.compact, error, now);
    ok = w.flush() && ::ftruncate(fd, static_cast<off_t>(need)) == 0;
  }
  ::close(fd);
  return ok;
}

}  // namespace railbench
