# Sanitizer and fuzzing builds (scripts/fuzz.sh, docs/design.md "Fuzzing and sanitizers").
#   -DKTUNE_SANITIZE=address,undefined   every target built and linked with these sanitizers;
#                                        a failure stops the program (no recovery)
#   -DKTUNE_FUZZ=ON                      the libFuzzer targets of tests/fuzz (clang only); the
#                                        code under test is instrumented for coverage
set(KTUNE_SANITIZE "" CACHE STRING "sanitizers for every target, e.g. address,undefined")
option(KTUNE_FUZZ "build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

if(KTUNE_SANITIZE)
  add_compile_options(-fsanitize=${KTUNE_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${KTUNE_SANITIZE})
endif()
if(KTUNE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KTUNE_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
