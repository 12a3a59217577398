# cmake -P script, run after a Catch2 test binary is built (railbench_discover): gives
# each discovered case the suite's feature labels its Catch2 tags name, so `ctest -L
# congestion` selects the congestion cases wherever their folder is (tests/README.md,
# "Test names and labels": the labels are the index of the suite).
#
# In: TEST_EXECUTABLE, PREFIX (the ctest name's prefix), BASE_LABELS (the binary's labels),
# FEATURE_LABELS (the labels a tag may add), OUT_FILE (a CTest script, included after
# Catch2's own, whose set_tests_properties replaces the LABELS Catch2 gave).
foreach(var TEST_EXECUTABLE OUT_FILE)
  if(NOT ${var})
    message(FATAL_ERROR "catch_tag_labels.cmake: give -D${var}=...")
  endif()
endforeach()
string(REPLACE "," ";" base "${BASE_LABELS}")
string(REPLACE "," ";" features "${FEATURE_LABELS}")

set(names "")
foreach(label IN LISTS features)
  execute_process(COMMAND "${TEST_EXECUTABLE}" "[${label}]" --list-test-names-only
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  # Catch2 v2 exits with the number of cases listed: 0 is "no case has this tag".
  if(rc LESS 0 OR NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "catch_tag_labels.cmake: ${TEST_EXECUTABLE} [${label}] --list-test-names-only failed: ${rc}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(name IN LISTS lines)
    if(name STREQUAL "")
      continue()
    endif()
    string(MD5 key "${name}")
    if(NOT DEFINED labels_${key})
      set(labels_${key} ${base})
      set(name_${key} "${name}")
      list(APPEND names ${key})
    endif()
    list(APPEND labels_${key} ${label})
  endforeach()
endforeach()

set(script "# Written by tests/cmake/catch_tag_labels.cmake: feature labels from Catch2 tags.\n")
foreach(key IN LISTS names)
  list(REMOVE_DUPLICATES labels_${key})
  list(JOIN labels_${key} ";" joined)
  string(APPEND script "set_tests_properties([==[${PREFIX}${name_${key}}]==] PROPERTIES LABELS \"${joined}\")\n")
endforeach()
file(WRITE "${OUT_FILE}" "${script}")
