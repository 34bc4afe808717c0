# Writes OUT: the console's files (DIR/FILES) as C++ string constants, so that the daemon
# serves them from its binary. Run at build time when a file changes (server/CMakeLists.txt).
set(body "// Generated from server/console by embed.cmake: do not edit.\n#include <string_view>\n#include <utility>\n\nnamespace amfgate::server::console_files {\n\nextern const std::pair<std::string_view, std::string_view> all[] = {\n")
foreach(name ${FILES})
  file(READ ${DIR}/${name} content)
  string(APPEND body "    {\"${name}\", R\"amfgate_console(${content})amfgate_console\"},\n")
endforeach()
list(LENGTH FILES count)
string(APPEND body "};\nextern const std::size_t count = ${count};\n\n}  // namespace amfgate::server::console_files\n")
file(WRITE ${OUT} "${body}")
