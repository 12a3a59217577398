# -DRAILBENCH_SANITIZE=address,undefined (or thread): builds every target, libraries,
# railbench and the test binaries alike, with the sanitizers, so a report from any layer
# fails the test that ran it. tests/sanitizers/ holds the run-time options and the
# suppressions the tests run with (tests/README.md, "Sanitizers").
set(RAILBENCH_SANITIZE "" CACHE STRING "Sanitizers for every target: address, undefined, thread (comma-separated)")

set(railbench_sanitizers "")
if(RAILBENCH_SANITIZE)
  string(REPLACE "," ";" railbench_sanitizers "${RAILBENCH_SANITIZE}")
  list(REMOVE_DUPLICATES railbench_sanitizers)
  foreach(sanitizer IN LISTS railbench_sanitizers)
    if(NOT sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "RAILBENCH_SANITIZE=${RAILBENCH_SANITIZE}: '${sanitizer}' is not a sanitizer railbench "
                          "builds with: give a comma-separated list of address, undefined and thread, "
                          "e.g. -DRAILBENCH_SANITIZE=address,undefined")
    endif()
  endforeach()
  # Both replace the allocator and map shadow memory of their own: the compiler refuses them together.
  if("thread" IN_LIST railbench_sanitizers AND "address" IN_LIST railbench_sanitizers)
    message(FATAL_ERROR "RAILBENCH_SANITIZE=${RAILBENCH_SANITIZE}: thread cannot be combined with address: "
                        "configure two build directories, -DRAILBENCH_SANITIZE=address,undefined and "
                        "-DRAILBENCH_SANITIZE=thread")
  endif()
  list(JOIN railbench_sanitizers "," railbench_sanitize_list)
  # Frame pointers: the reports' stacks (and LSan's fast unwinder) need them. UBSan
  # recovers by default (prints and goes on); a finding must fail the test instead.
  set(railbench_sanitize_flags -fsanitize=${railbench_sanitize_list} -fno-omit-frame-pointer)
  if("undefined" IN_LIST railbench_sanitizers)
    list(APPEND railbench_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  # Host compilers only: nvcc takes none of these (device code is not instrumented).
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${railbench_sanitize_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${railbench_sanitize_flags}>")
  message(STATUS "railbench: sanitizers ${railbench_sanitize_list} on every target")
endif()

# railbench_sanitize_executables(): called once every target exists; compiles the
# sanitizers' run-time options (tests/sanitizers/defaults.cc) into each executable, so
# every way of running one (ctest, mpirun, a case script, by hand) checks the same way.
function(railbench_sanitize_executables)
  if(NOT railbench_sanitizers)
    return()
  endif()
  add_library(railbench_sanitizer_defaults OBJECT ${PROJECT_SOURCE_DIR}/tests/sanitizers/defaults.cc)
  # Where every report lands (defaults.cc, log_path); scripts/dev/sanitize.sh empties it
  # before the tests and fails on anything in it after.
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/sanitizer-reports)
  target_compile_definitions(railbench_sanitizer_defaults
                             PRIVATE RAILBENCH_SANITIZER_DIR="${PROJECT_SOURCE_DIR}/tests/sanitizers"
                                     RAILBENCH_SANITIZER_REPORTS="${PROJECT_BINARY_DIR}/sanitizer-reports")
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_sources(${target} PRIVATE $<TARGET_OBJECTS:railbench_sanitizer_defaults>)
      endif()
    endforeach()
  endwhile()
endfunction()
