# The helpers every tests/<folder>/CMakeLists.txt registers its cases with, so each of
# those files reads as a table of cases.
#
# Functions are global in CMake but variables are scoped per directory: the helpers
# read only the RAILBENCH_TESTS_* paths set here (inherited by every subdirectory), never
# ${CMAKE_CURRENT_SOURCE_DIR}, which changes per folder. Every test runs in the tests/
# build directory and every test binary lands there, whichever folder registers it, so a
# case script or a ctest command line does not depend on where the case is listed.

# Included from tests/CMakeLists.txt, so these are tests/ and its build directory.
set(RAILBENCH_TESTS_SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
set(RAILBENCH_TESTS_BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR})
# The rails option a provider needs on this host, as ${RAILBENCH_RAILS_${prov}}: tcp is
# kept on the loopback interface, shm has no rails.
set(RAILBENCH_RAILS_tcp --rails lo)
set(RAILBENCH_RAILS_shm "")

# How the suite shares the cores (scripts/test.sh runs ctest with -j and the resource spec
# that tests/cmake/resources.sh writes: 2 slots of `cores` per core, one `vm`). A test whose
# verdict is a time, a rate or a deadline runs alone (RUN_SERIAL): by its labels, or by a
# pattern of its name for the timing verdicts inside the mpi label; every such test also
# gets the label `alone`, so scripts/test.sh runs the others first, packed, and these
# after. A test labelled `quiet` is alone too, and test.sh starts it only once the
# sanitizer work it runs at idle priority beside the suite has ended: its verdict moves
# even with an idle-priority neighbour (a TCG guest's timing, a noise floor measured in
# the fabric). The others take slots: ranks that move data busy-poll, so an mpirun or
# transport case takes 2 (two at once on 2 cores); a unit case, a refusal or a style
# check takes 1.
set(RAILBENCH_ALONE_LABELS netns rxe slurm robustness timeline burn-in progress quiet)
set(RAILBENCH_ALONE_NAMES "--serve" "--stragglers" "--find-max-rate")
set(RAILBENCH_ONE_SLOT_LABELS unit bad-input style)
# The labels that name a feature rather than an environment or a stage: a Catch2 case
# tagged with one gets it as a ctest label too (railbench_discover), so a feature's label
# selects its cases in every folder (tests/README.md, "Test names and labels").
set(RAILBENCH_FEATURE_LABELS compare db report export csv progress timeline burn-in launch congestion bisection
                             fabric tenants stragglers kvcache rendezvous robustness ucx)

# railbench_run_alone(<name>): RUN_SERIAL and the label `alone`.
function(railbench_run_alone name)
  get_test_property("${name}" LABELS labels)
  if(NOT labels)
    set(labels "")
  endif()
  list(APPEND labels alone)
  set_tests_properties("${name}" PROPERTIES RUN_SERIAL TRUE LABELS "${labels}")
endfunction()

# railbench_schedule(<name> <labels>): RUN_SERIAL or the test's share of the cores, as above.
function(railbench_schedule name labels)
  get_test_property("${name}" RUN_SERIAL serial)
  get_test_property("${name}" RESOURCE_GROUPS groups)
  if(serial)  # the test's own PROPERTIES chose
    railbench_run_alone("${name}")
    return()
  endif()
  if(groups)
    return()
  endif()
  # A refusal ends before it measures anything, whatever its name says.
  if(NOT bad-input IN_LIST labels)
    foreach(label IN LISTS labels)
      if(label IN_LIST RAILBENCH_ALONE_LABELS)
        railbench_run_alone("${name}")
        return()
      endif()
    endforeach()
    foreach(pattern IN LISTS RAILBENCH_ALONE_NAMES)
      string(FIND "${name}" "${pattern}" at)
      if(at GREATER -1)
        railbench_run_alone("${name}")
        return()
      endif()
    endforeach()
  endif()
  set(slots 2)
  foreach(label IN LISTS labels)
    if(label IN_LIST RAILBENCH_ONE_SLOT_LABELS)
      set(slots 1)
    endif()
  endforeach()
  set_tests_properties("${name}" PROPERTIES RESOURCE_GROUPS "cores:${slots}")
endfunction()

# railbench_test(<name> [LABELS l...] [TIMEOUT s] [PROPERTIES p v...] COMMAND cmd args...)
# One ctest test: a command with its labels, timeout and any other test properties, and
# its place in the schedule (railbench_schedule).
function(railbench_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "LABELS;PROPERTIES;COMMAND")
  if(NOT arg_COMMAND)
    message(FATAL_ERROR "railbench_test(\"${name}\"): give COMMAND")
  endif()
  add_test(NAME "${name}" COMMAND ${arg_COMMAND} WORKING_DIRECTORY ${RAILBENCH_TESTS_BINARY_DIR})
  # Labels apart: a list value would split inside a list of properties.
  if(arg_LABELS)
    set_tests_properties("${name}" PROPERTIES LABELS "${arg_LABELS}")
  endif()
  if(arg_TIMEOUT)
    set_tests_properties("${name}" PROPERTIES TIMEOUT ${arg_TIMEOUT})
  endif()
  if(arg_PROPERTIES)
    set_tests_properties("${name}" PROPERTIES ${arg_PROPERTIES})
  endif()
  railbench_schedule("${name}" "${arg_LABELS}")
endfunction()

# railbench_test_binary(<target> <sources>...): a Catch2 test binary with the shared
# main (tests/main.cc, compiled once as railbench_catch_main), built into the tests/
# build directory. Sources are relative to the calling folder; other folders add theirs
# with target_sources().
# RAILBENCH_TEST_CXX_FLAGS (scripts/test.sh: -O1) are added to the test sources' own
# flags: the code under test is in the libraries, built as configured; a test source at
# -O1 compiles in two thirds of the time of -O2 (tests/README.md, "Time").
set(RAILBENCH_TEST_CXX_FLAGS "" CACHE STRING "extra compile flags for the test binaries' own sources")
function(railbench_test_binary target)
  add_executable(${target} $<TARGET_OBJECTS:railbench_catch_main> ${ARGN})
  target_compile_options(${target} PRIVATE ${RAILBENCH_TEST_CXX_FLAGS})
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${RAILBENCH_TESTS_BINARY_DIR})
endfunction()

# railbench_discover(<target> PREFIX "unit: " LABELS l... TIMEOUT s): each Catch2 case of
# <target> as its own ctest test. Call it in the folder that made the target (it adds a
# POST_BUILD step, which CMake allows only there).
function(railbench_discover target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX;TIMEOUT" "LABELS")
  # A unit case takes one slot of the cores; a transport case (ranks as threads that
  # busy-poll a real provider) two (railbench_schedule).
  set(slots 2)
  if(unit IN_LIST arg_LABELS)
    set(slots 1)
  endif()
  # -w NoTests: a case whose ctest name does not select it (Catch2's discovery splits a
  # name at ';') fails instead of passing with "No tests ran".
  catch_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}" WORKING_DIRECTORY ${RAILBENCH_TESTS_BINARY_DIR}
                       EXTRA_ARGS -w NoTests
                       PROPERTIES LABELS "${arg_LABELS}" TIMEOUT ${arg_TIMEOUT} RESOURCE_GROUPS "cores:${slots}")
  # Then each case's feature labels from its Catch2 tags (tests/cmake/catch_tag_labels.cmake),
  # in a CTest script read after Catch2's.
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_tag_labels.cmake)
  list(JOIN arg_LABELS "," base)
  list(JOIN RAILBENCH_FEATURE_LABELS "," features)
  add_custom_command(TARGET ${target} POST_BUILD BYPRODUCTS ${labels_file}
                     COMMAND ${CMAKE_COMMAND} -DTEST_EXECUTABLE=$<TARGET_FILE:${target}> "-DPREFIX=${arg_PREFIX}"
                             -DBASE_LABELS=${base} -DFEATURE_LABELS=${features} -DOUT_FILE=${labels_file}
                             -P ${RAILBENCH_TESTS_SOURCE_DIR}/cmake/catch_tag_labels.cmake
                     VERBATIM)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${target}_tag_labels_include.cmake
       "if(EXISTS \"${labels_file}\")\n  include(\"${labels_file}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
               ${CMAKE_CURRENT_BINARY_DIR}/${target}_tag_labels_include.cmake)
endfunction()

# railbench_mpi_test(<name> <np> <mode> <check> <railbench args>...): "mpirun: <name>",
# the railbench binary under a real mpirun (tests/bench/mpi_case.sh). <mode> is expect-ok
# (then <check> is check_results.py's arguments) or expect-error[:code] (then <check> is
# the regex the one error line must match).
function(railbench_mpi_test name np mode check)
  railbench_test("mpirun: ${name}" LABELS mpi TIMEOUT 400
                 COMMAND ${RAILBENCH_TESTS_SOURCE_DIR}/bench/mpi_case.sh ${np} ${mode} "${check}" --
                         $<TARGET_FILE:railbench> ${ARGN})
endfunction()

# railbench_bad_input_test(<name> <np> <expect-error[:code]> <regex> <railbench args>...):
# "mpirun: bad input: <name>", railbench refusing an input under mpirun: non-zero exit
# (or exactly <code>), one error line matching <regex>, no hang.
function(railbench_bad_input_test name np mode regex)
  railbench_test("mpirun: bad input: ${name}" LABELS mpi bad-input TIMEOUT 400
                 COMMAND ${RAILBENCH_TESTS_SOURCE_DIR}/bench/mpi_case.sh ${np} ${mode} "${regex}" --
                         $<TARGET_FILE:railbench> ${ARGN})
endfunction()

# railbench_fault_test(<name> <case>): "robustness: <name>", one case of
# tests/bench/fault_case.sh (a rank stopped or killed mid-run, windows beyond the queues).
function(railbench_fault_test name case)
  railbench_test("robustness: ${name}" LABELS robustness mpi TIMEOUT 120
                 COMMAND ${RAILBENCH_TESTS_SOURCE_DIR}/bench/fault_case.sh ${case} $<TARGET_FILE:railbench>)
endfunction()

# railbench_netns_test(<name> TIMEOUT s [LABELS more...] COMMAND script args...):
# "netns: <name>", a case on the simulated SU (network namespaces, scripts/netns-su).
# Root only: 77 (skipped) where namespaces cannot be made; serial, as each builds an SU.
function(railbench_netns_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "LABELS;COMMAND")
  railbench_test("netns: ${name}" LABELS netns ${arg_LABELS} TIMEOUT ${arg_TIMEOUT}
                 PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77 COMMAND ${arg_COMMAND})
endfunction()

# railbench_netns_validate_test(<case> [TIMEOUT s] [LABELS more...]): "netns: validate
# <case>", one case of tests/netns/cases.sh.
function(railbench_netns_validate_test case)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "LABELS")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 420)
  endif()
  railbench_netns_test("validate ${case}" TIMEOUT ${arg_TIMEOUT} LABELS ${arg_LABELS}
                       COMMAND ${RAILBENCH_TESTS_SOURCE_DIR}/netns/cases.sh ${case} $<TARGET_FILE:railbench>)
endfunction()
