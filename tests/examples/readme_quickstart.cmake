# The README must quote examples/quickstart.cc's marked region verbatim.
file(READ ${SOURCE_DIR}/examples/quickstart.cc src)
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "// \\[quickstart\\]\n(.*)// \\[quickstart\\]" _ "${src}")
set(region "${CMAKE_MATCH_1}")
string(FIND "${readme}" "${region}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "README.md does not contain the quickstart region of examples/quickstart.cc")
endif()
