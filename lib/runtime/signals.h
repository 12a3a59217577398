// What a signal does to a run. railbench installs its own handlers so that a run ended
// from outside still leaves a results file with a verdict:
//   SIGINT, SIGTERM, SIGHUP, SIGPIPE: the file says "failed", "interrupted by SIGTERM";
//     one line on stderr; exit 128+signal. A rank other than 0 that its launcher
//     signalled first waits for rank 0 to exit (set_signal_leader) or 0.6 s, so that
//     rank 0 writes its verdict before Open MPI's SIGKILL (sent as soon as any local
//     rank has exited).
//   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: "failed", "crashed with SIGSEGV"; one
//     line; then the signal's default action (so the exit status still names it).
// An interrupt signal is written within 0.4 s wherever the main thread is: a watchdog
// thread takes one nobody took (100 ms), the main thread gets 250 ms to take one passed to
// it, then the thread holding it writes the verdict (Open MPI SIGKILLs 1 s after its
// SIGTERM). RAILBENCH_SIGNAL_TRACE=FILE appends who did what, and where the main thread was.
// A handler may run anywhere, even inside malloc, so it only writes a document rendered
// ahead of time (lib/results/results.cc renders one after every rewrite of the file) with
// async-signal-safe calls: open, write, rename, ftruncate, _exit.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace railbench {

// The results file as a handler writes it: the failed document with holes, kSignalErrorHole
// where the error text goes and kSignalTimeHole where the current time goes.
struct SignalDocument {
  std::string path;      // the --json target
  std::string tmp_path;  // a fresh random name beside it, for write-then-rename
  // The temporary the main thread is about to rename over `path` (published before the
  // rename): a signal in between removes it rather than leave it in the user's directory.
  std::string pending_tmp;
  bool rename = true;   // false: a device or fifo, written directly
  std::string pretty;   // the document as the file holds it (indented)
  std::string compact;  // the same on one line: small enough to overwrite the last good file in place
  std::string note;     // appended to the stderr line: where the results are
};
inline constexpr char kSignalErrorHole = '\x01';
inline constexpr char kSignalTimeHole = '\x02';

// Installs the handlers (the first call also starts the watchdog). Call again after a library may have installed its
// own (MPI_Init, opening a libfabric provider): ours take over again. The first call names the calling thread the main
// thread: an interrupt signal that the kernel delivers to another thread (ours, MPI's, a provider's) is passed on to
// it, so the handler always stops the thread that rewrites the results file instead of racing it.
void install_signal_handlers();

// Rank 0 (and a process that is not yet in a job) always prints the line; other ranks
// print it only for a signal sent to them directly, not one their launcher sent to the
// whole job, so that ending a job prints one line, not one per rank.
void set_signal_rank(int rank);

// Rank 0's pid, from a rank that shares its kernel and pid namespace (0: rank 0 is
// elsewhere). On its launcher's signal such a rank waits for rank 0 to have exited (up to
// 2 s) before it exits itself, instead of a fixed 0.6 s: Open MPI's orted sends SIGKILL
// to every local rank as soon as the first one exits, so a rank that left before rank 0
// would cut rank 0's verdict short however long rank 0 needs.
void set_signal_leader(pid_t rank0_pid);

// This process has said how its run ended (its table and verdict, or its error line):
// a launcher's signal that arrives afterwards (mpirun ending the job because another rank
// exited non-zero first) is no news, and ends the process with 128+signal without a
// second line. A signal sent to this process directly, and a crash, still speak.
void set_signal_outcome_reported();

// The document a handler writes from now on (null: none, e.g. once the run has its
// verdict). The previous document is kept one more turn, in case a handler on another
// thread is reading it.
void publish_signal_document(std::unique_ptr<SignalDocument> doc);

// A file the handlers remove before the process ends on a signal (a transport's shared-
// memory region, which its normal close would have removed). Up to 16 paths; more, or
// a path over 255 bytes, are ignored. Adding a path twice keeps one.
void add_signal_cleanup_path(const std::string& path);

// Work that must not be cut off halfway but can stop early by itself: a run store's
// transaction, which rolls back and ends the command with its own line. While one lives,
// the first interrupt signal (SIGINT, SIGTERM, SIGHUP) is only recorded, for the work to
// find with take(); a second one ends the process as usual, so a stuck step cannot hold a
// Ctrl-C or a launcher's second signal. A signal recorded and never taken is acted on when
// the scope ends. One at a time, on the main thread; crash signals are never deferred.
class InterruptsDeferred {
 public:
  InterruptsDeferred();
  ~InterruptsDeferred();
  InterruptsDeferred(const InterruptsDeferred&) = delete;
  InterruptsDeferred& operator=(const InterruptsDeferred&) = delete;
  // The signal recorded since the scope began (0: none). Once taken it is the caller's to
  // act on (roll back, say so, exit 128+signal); any further one ends the process.
  int take();

 private:
  bool taken_ = false;
};

// "SIGTERM" for SIGTERM, and so on for the signals the handlers take ("a signal" else).
const char* signal_name(int sig) noexcept;

// Writes `doc` with `error` as a handler does: a temporary beside it renamed over it
// (or directly, for a device or fifo); when that fails (a full disk), overwrites the
// file in place with the compact form if that fits in its current size. Returns true
// when the file now says `error`. Async-signal-safe.
bool write_signal_document(const SignalDocument& doc, const char* error) noexcept;
// Only the in-place overwrite of a regular file. Async-signal-safe.
bool overwrite_signal_document_in_place(const SignalDocument& doc, const char* error) noexcept;

}  // namespace railbench
