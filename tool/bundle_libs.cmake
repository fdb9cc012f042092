# Install step of a wheel (tool/CMakeLists.txt): copies every shared library the installed kbuild
# (KBUILD_EXE) loads, except glibc's own, into KBUILD_LIBS (the C++ runtime too: an executable has its
# process to itself, so its own newer libstdc++ cannot clash with an older system one),
# and points the executable's RUNPATH there ($ORIGIN/../lib/kbuild.libs) and each library's at its
# own directory ($ORIGIN), so the wheel runs without any of the build machine's packages.
# The libraries kbuild loads on first use (KBUILD_LAZY_LIBRARIES: a file with one path per line,
# tool/lazy_libraries.txt) are bundled too, with everything they load: dlopen searches the
# executable's RUNPATH. Needs ldd and patchelf (scripts/bootstrap installs patchelf).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST) in script mode
find_program(PATCHELF patchelf REQUIRED)
file(STRINGS "${KBUILD_LAZY_LIBRARIES}" lazy_libraries)
file(MAKE_DIRECTORY "${KBUILD_LIBS}")
set(bundled "")
function(bundle_library name path)
  if(name MATCHES "^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|ld-linux.*)\\.so" OR name IN_LIST bundled)
    return()
  endif()
  file(COPY_FILE "${path}" "${KBUILD_LIBS}/${name}")
  file(CHMOD "${KBUILD_LIBS}/${name}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN" "${KBUILD_LIBS}/${name}" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND strip --strip-unneeded "${KBUILD_LIBS}/${name}")
  set(bundled ${bundled} "${name}" PARENT_SCOPE)
endfunction()
foreach(object IN ITEMS "${KBUILD_EXE}" ${lazy_libraries})
  if(NOT object STREQUAL KBUILD_EXE)
    get_filename_component(name "${object}" NAME)
    bundle_library("${name}" "${object}")
  endif()
  execute_process(COMMAND ldd "${object}" OUTPUT_VARIABLE ldd_output RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "ldd ${object} failed")
  endif()
  string(REPLACE "\n" ";" lines "${ldd_output}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*([^ ]+) => ([^ ]+) ")
      bundle_library("${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endforeach()
execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN/../lib/kbuild.libs" "${KBUILD_EXE}" COMMAND_ERROR_IS_FATAL ANY)
list(LENGTH bundled count)
message(STATUS "bundled ${count} shared libraries into ${KBUILD_LIBS}")
