# Script mode: writes OUT, a C++ file defining the text of IN as `const char* const SYMBOL`.
# The text is emitted as a hex byte array, so any content (quotes, raw-string delimiters) is safe.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" len)
math(EXPR nbytes "${len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" bytes "${bytes}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "// Generated from ${name}; do not edit.\n"
  "#include <cstddef>\n"
  "namespace { const char kData[] = {\n${bytes}0x00};\n}\n"
  "extern const char* const ${SYMBOL};\n"
  "extern const std::size_t ${SYMBOL}_size;\n"
  "const char* const ${SYMBOL} = kData;\n"
  "const std::size_t ${SYMBOL}_size = ${nbytes};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
