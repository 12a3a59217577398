// The sanitizers' run-time options, compiled into every executable of a
// -DRAILBENCH_SANITIZE build (cmake/railbench_sanitize.cmake), so ctest, mpirun's ranks,
// the case scripts and a developer's own run all check the same way without exporting
// anything. *SAN_OPTIONS in the environment still win: the runtimes read these first.
// The suppressions files sit beside this one; each entry says why the leak or race is
// not railbench's.

#if !defined(RAILBENCH_SANITIZER_DIR) || !defined(RAILBENCH_SANITIZER_REPORTS)
#error "RAILBENCH_SANITIZER_DIR and RAILBENCH_SANITIZER_REPORTS are set by cmake/railbench_sanitize.cmake"
#endif

// Every report goes to a file of its own in the build's sanitizer-reports/ (<tool>.<pid>),
// which scripts/dev/sanitize.sh requires empty after the tests: a report fails the suite
// even where the process's exit status is not checked (a rank killed on purpose, a bad
// input whose refusal is any non-zero exit) or is 1 as a FAIL verdict's is.
#define RAILBENCH_SANITIZER_LOG(tool) "log_path=" RAILBENCH_SANITIZER_REPORTS "/" tool

#define RAILBENCH_SANITIZER_DEFAULTS extern "C" __attribute__((used, visibility("default"))) const char*

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>

// Keeps every shared object mapped until exit: this dlclose, defined in the executable,
// takes the place of libc's for every library. Open MPI unloads its components (the
// mca_*.so) in MPI_Finalize; what they still point to from their globals then looks
// leaked (thousands of blocks a rank), their frames turn into <unknown module> that no
// suppression can name, and LSan re-reads the process's maps for each such frame (a
// minute a rank). Left mapped, their globals stay roots, their frames keep their names,
// and what Open MPI really leaks is a few dozen blocks that lsan.supp names.
extern "C" __attribute__((used, visibility("default"))) int dlclose(void* /*handle*/) noexcept {
  return 0;
}
#endif

// Leaks on: railbench's own must fail a test; Open MPI's and PMIx's at exit are
// suppressed by name in lsan.supp instead. Initialization order is checked because
// transports, commands and result kinds register themselves from static initializers.
RAILBENCH_SANITIZER_DEFAULTS __asan_default_options() {
  return "detect_leaks=1:check_initialization_order=1:strict_init_order=1:" RAILBENCH_SANITIZER_LOG("asan");
}

// print_suppressions=0: LSan otherwise writes its table of suppressions used into the
// report file of every clean rank, and any file there fails scripts/dev/sanitize.sh.
RAILBENCH_SANITIZER_DEFAULTS __lsan_default_options() {
  return "print_suppressions=0:suppressions=" RAILBENCH_SANITIZER_DIR "/lsan.supp";
}

// Built with -fno-sanitize-recover=undefined, so the first finding ends the process;
// the stack says where.
RAILBENCH_SANITIZER_DEFAULTS __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:" RAILBENCH_SANITIZER_LOG("ubsan");
}

// The first race fails the test at once (exit 66) instead of at exit, so a rank that
// races cannot be mistaken for one that hung.
RAILBENCH_SANITIZER_DEFAULTS __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" RAILBENCH_SANITIZER_DIR
         "/tsan.supp:" RAILBENCH_SANITIZER_LOG("tsan");
}
