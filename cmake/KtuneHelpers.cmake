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

# ktune_add_layer(<name> [DEPENDS <layer>...] [PRIVATE_DEPENDS <layer>...] [LINK <target>...]
#                 [PRIVATE_LINK <target>...] [EXCLUDE <source>...])
# A library of the layered tree (tuner/CMakeLists.txt): the static library ktune_<name>
# (ktune::<name>) of every .cpp under tuner/<name>/ but the EXCLUDEd ones (paths relative to
# tuner/), its public headers in tuner/<name>/include, its private ones reached as
# "<name>/<header>.h". A layer may depend only on layers declared before it: another is refused
# here, and the include check (ctest ktune_layering) reads these declarations.
function(ktune_add_layer name)
  cmake_parse_arguments(L "" "" "DEPENDS;PRIVATE_DEPENDS;LINK;PRIVATE_LINK;EXCLUDE" ${ARGN})
  get_property(declared GLOBAL PROPERTY KTUNE_LAYER_NAMES)
  foreach(dep IN LISTS L_DEPENDS L_PRIVATE_DEPENDS)
    if(NOT dep IN_LIST declared)
      message(FATAL_ERROR "layer '${name}' depends on '${dep}', which is not a layer declared "
                          "below it (declared: ${declared})")
    endif()
  endforeach()
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${name})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/include/")
  foreach(x IN LISTS L_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${x})
  endforeach()
  add_library(ktune_${name} STATIC ${sources})
  add_library(ktune::${name} ALIAS ktune_${name})
  ktune_target_defaults(ktune_${name})
  if(EXISTS ${dir}/include)
    target_include_directories(ktune_${name} PUBLIC
      $<BUILD_INTERFACE:${dir}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  endif()
  target_include_directories(ktune_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  list(TRANSFORM L_DEPENDS PREPEND ktune_ OUTPUT_VARIABLE public_layers)
  list(TRANSFORM L_PRIVATE_DEPENDS PREPEND ktune_ OUTPUT_VARIABLE private_layers)
  target_link_libraries(ktune_${name} PUBLIC ${public_layers} ${L_LINK}
                                      PRIVATE ${private_layers} ${L_PRIVATE_LINK})
  set_target_properties(ktune_${name} PROPERTIES EXPORT_NAME ${name})
  set_property(GLOBAL APPEND PROPERTY KTUNE_LAYER_NAMES ${name})
  list(JOIN L_DEPENDS "\",\"" deps)
  list(JOIN L_PRIVATE_DEPENDS "\",\"" private_deps)
  set_property(GLOBAL APPEND PROPERTY KTUNE_LAYER_JSON
    "{\"name\":\"${name}\",\"dir\":\"tuner/${name}\",\"depends\":[\"${deps}\"],\"private_depends\":[\"${private_deps}\"]}")
endfunction()

# ktune_write_layers(<file>): the layers declared so far, bottom first, as JSON for the include
# check (scripts/check-layering.py).
function(ktune_write_layers file)
  get_property(layers GLOBAL PROPERTY KTUNE_LAYER_JSON)
  list(JOIN layers ",\n  " body)
  string(REPLACE "[\"\"]" "[]" body "${body}")
  file(WRITE ${file} "[\n  ${body}\n]\n")
endfunction()
