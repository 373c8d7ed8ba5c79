# tapegrad_add_ops: a user library of ops from JSON op specs, built against the installed
# tapegrad (docs/ADDING_AN_OP.md).
#
#   tapegrad_add_ops(<target> SPECS ops/a.json ... SOURCES kernels.cpp ...
#                    [NAMESPACE myops] [HEADERS helpers.h ...])
#
# Runs the installed tg_opgen on the specs at build time, into this project's build tree only
# (<build>/<target>_generated/<target>/), and builds the shared library <target> from the
# generated code and SOURCES (the kernels and checks the specs name, relative to NAMESPACE, which
# defaults to <target>). It gives:
#   #include <<target>/functions.h>   NAMESPACE::op(...) and, where a spec asks, NAMESPACE::op_(...)
#   the autograd nodes of the specs' backward formulas (tapegrad's public ops, and the helpers
#   declared in HEADERS, which the generated autograd code includes), the dispatch entries of the
#   kernels, and registry entries added when the library loads (tg::registry::find_op, print_tape,
#   to_dot, tg::testing::check_op).
# The target's property TAPEGRAD_SPEC_TESTS names a generated doctest file with one op-check case
# per op (add it to a doctest executable that links tapegrad::testing).
# A spec mistake fails the build naming the file, the op and the key; an op named like a built-in
# one fails the build too, and a clash between two user libraries is an error when both load.
function(tapegrad_add_ops target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "NAMESPACE" "SPECS;SOURCES;HEADERS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tapegrad_add_ops(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SPECS)
    message(FATAL_ERROR "tapegrad_add_ops(${target}): give SPECS, the op spec JSON files")
  endif()
  if(NOT ARG_NAMESPACE)
    set(ARG_NAMESPACE ${target})
  endif()
  set(root ${CMAKE_CURRENT_BINARY_DIR}/${target}_generated)
  set(gen ${root}/${target})
  set(outputs ${gen}/functions.h ${gen}/kernels.h ${gen}/ops_internal.h ${gen}/ops.cpp
              ${gen}/autograd.cpp ${gen}/registry.cpp ${gen}/spec_tests.cpp)
  set(args --namespace ${ARG_NAMESPACE} --library ${target} --out ${gen})
  set(deps)
  foreach(spec IN LISTS ARG_SPECS)
    get_filename_component(abs ${spec} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH rel ${CMAKE_CURRENT_SOURCE_DIR} ${abs})
    list(APPEND args --spec ${rel})
    list(APPEND deps ${abs})
  endforeach()
  set(sources)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND args --source ${abs})
    list(APPEND sources ${abs})
  endforeach()
  foreach(header IN LISTS ARG_HEADERS)
    get_filename_component(abs ${header} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND args --include ${abs})
    list(APPEND deps ${abs})
  endforeach()
  if(tapegrad_SPECS_DIR)
    list(APPEND args --builtin-specs ${tapegrad_SPECS_DIR})
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND tapegrad::tg_opgen ${args}
    DEPENDS tapegrad::tg_opgen ${deps} ${sources}
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    COMMENT "tg_opgen: generating ${target}'s ops (namespace ${ARG_NAMESPACE})"
    VERBATIM)
  add_library(${target} SHARED ${sources} ${gen}/ops.cpp ${gen}/autograd.cpp ${gen}/registry.cpp)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}> PRIVATE ${gen})
  target_link_libraries(${target} PUBLIC tapegrad::tapegrad)
  # The library registers its ops when it loads; a program that only looks them up by name
  # (tg::testing::check_op("my_op")) calls none of its functions, and a linker that drops unused
  # libraries (--as-needed, Debian's and Ubuntu's default) would leave it out.
  target_link_options(${target} INTERFACE "LINKER:--no-as-needed")
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES TAPEGRAD_SPEC_TESTS ${gen}/spec_tests.cpp)
endfunction()
