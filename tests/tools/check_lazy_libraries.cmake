# The `lazy_libraries` test: the kbuild executable (EXE) has none of the libraries it loads on first
# use (LAZY: tool/lazy_libraries.txt) among its DT_NEEDED entries, so that linking one of them again
# (and with it its dependencies' start-up cost, kbuild/util/shared_library.hpp) fails here.
execute_process(COMMAND readelf -d "${EXE}" OUTPUT_VARIABLE dynamic COMMAND_ERROR_IS_FATAL ANY)
file(STRINGS "${LAZY}" lazy_libraries)
list(LENGTH lazy_libraries count)
if(count EQUAL 0)
  message(FATAL_ERROR "${LAZY} lists no library")
endif()
foreach(library IN LISTS lazy_libraries)
  get_filename_component(soname "${library}" NAME)
  if(dynamic MATCHES "Shared library: \\[${soname}\\]")
    message(FATAL_ERROR "${EXE} links ${soname}, which kbuild loads on first use (util/shared_library.hpp)")
  endif()
endforeach()
message(STATUS "${EXE} needs none of the ${count} lazily loaded libraries")
