// The progress line (bench/runner/status_line.h) and validate's time-left estimate.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "bench/commands/validate/plan.h"
#include "bench/runner/status_line.h"

using namespace railbench;

namespace {

// What a StatusLine wrote, read back from its temporary file.
struct Captured {
  std::FILE* f = std::tmpfile();
  ~Captured() { std::fclose(f); }
  std::string text() const {
    std::fflush(f);
    std::string out;
    std::rewind(f);
    for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
    return out;
  }
};

}  // namespace

TEST_CASE("progress mode: live on a terminal, lines elsewhere, none for --quiet or other ranks", "[progress]") {
  CHECK(StatusLine::mode_for(false, true, true) == StatusLine::Mode::live);
  CHECK(StatusLine::mode_for(false, true, false) == StatusLine::Mode::lines);
  CHECK(StatusLine::mode_for(true, true, true) == StatusLine::Mode::off);
  CHECK(StatusLine::mode_for(false, false, true) == StatusLine::Mode::off);
}

TEST_CASE("progress to a file: one line per step, finer updates left out", "[progress]") {
  Captured out;
  {
    StatusLine line(StatusLine::Mode::lines, out.f, 80);
    line.step("allreduce: size 1/2 (1K), 00:00 elapsed");
    line.update("sendrecv: size 1/2 (1K), rail 0 round 1/3, 00:00 elapsed");
    line.hide();
    line.show();
    line.step("allreduce: size 2/2 (2K), 00:00 elapsed");
  }
  CHECK(out.text() == "allreduce: size 1/2 (1K), 00:00 elapsed\nallreduce: size 2/2 (2K), 00:00 elapsed\n");
}

TEST_CASE("progress on a terminal: one line rewritten in place, erased around output and at the end", "[progress]") {
  Captured out;
  {
    StatusLine line(StatusLine::Mode::live, out.f, 20);
    line.step("size 1/2");
    line.update("a line longer than the terminal");
    line.hide();
    line.show();
  }
  CHECK(out.text() ==
        "\rsize 1/2\033[K"
        "\ra line longer than \033[K"  // cut to 19 columns: a wrapped line could not be taken back
        "\r\033[K"
        "\ra line longer than \033[K"
        "\r\033[K");  // the destructor leaves a clean line
}

TEST_CASE("progress off: nothing at all", "[progress]") {
  Captured out;
  {
    StatusLine line(StatusLine::Mode::off, out.f, 80);
    line.step("x");
    line.update("y");
    line.show();
    line.clear();
  }
  CHECK(out.text().empty());
}

TEST_CASE("elapsed and left read as a clock", "[progress]") {
  CHECK(format_clock(0) == "00:00");
  CHECK(format_clock(42.4) == "00:42");
  CHECK(format_clock(75) == "01:15");
  CHECK(format_clock(3599.6) == "1:00:00");
  CHECK(format_clock(3723) == "1:02:03");
  CHECK(format_clock(-3) == "00:00");
  CHECK(sweep_step_text("allreduce", 12, 24, 1 << 20, 3) == "allreduce: size 12/24 (1M), 00:03 elapsed");
}

TEST_CASE("validate's time left: the model until a round is done, then the pace measured", "[progress]") {
  ValidatePlan p;
  p.pair_s = 2;
  p.cross_s = 2;
  p.collectives_s = 10;
  // Nothing done: the model, 31 rounds at 2 s, the cross-rail round and the collectives.
  CHECK(validate_remaining_s(p, 31, 0, 0, true, true) == Approx(31 * 2 + 2 + 10));
  // 7 rounds done in 42 s: 6 s a round, three times the model, for the rest too.
  CHECK(validate_remaining_s(p, 31, 7, 42, true, true) == Approx(24 * 6 + 3 * 2 + 3 * 10));
  CHECK(validate_remaining_s(p, 31, 7, 42, false, false) == Approx(24 * 6));
  // All rounds done, only the collectives ahead.
  CHECK(validate_remaining_s(p, 31, 31, 31, false, true) == Approx(5));
  CHECK(validate_remaining_s(p, 0, 0, 0, false, false) == 0);
}
