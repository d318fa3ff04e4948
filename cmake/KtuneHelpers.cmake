# Small helpers shared by the project's CMake files.
include_guard(GLOBAL)

# ktune_target_defaults(<target>): the compile features and warnings every ktune target uses.
function(ktune_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(KTUNE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# ktune_embed_text(<out_cpp> <symbol> <file>): turns a text file (a kernel template, an SQL
# migration) into a C++ source that defines `extern const char* const <symbol>`, so the binary
# carries it and needs no data files at run time.
function(ktune_embed_text out_cpp symbol file)
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out_cpp} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${file} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "embedding ${file}"
    VERBATIM)
endfunction()
