# Install step of a wheel (tool/CMakeLists.txt): copies every shared library the installed kbuild
# (KBUILD_EXE) loads, except glibc's own, into KBUILD_LIBS (the C++ runtime too: an executable has its
# process to itself, so its own newer libstdc++ cannot clash with an older system one),
# and points the executable's RUNPATH there ($ORIGIN/../lib/kbuild.libs) and each library's at its
# own directory ($ORIGIN), so the wheel runs without any of the build machine's packages.
# Needs ldd and patchelf (scripts/bootstrap installs patchelf).
find_program(PATCHELF patchelf REQUIRED)
execute_process(COMMAND ldd "${KBUILD_EXE}" OUTPUT_VARIABLE ldd_output RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "ldd ${KBUILD_EXE} failed")
endif()
file(MAKE_DIRECTORY "${KBUILD_LIBS}")
string(REPLACE "\n" ";" lines "${ldd_output}")
set(bundled 0)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^[ \t]*([^ ]+) => ([^ ]+) ")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  set(path "${CMAKE_MATCH_2}")
  if(name MATCHES "^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|ld-linux.*)\\.so")
    continue()
  endif()
  file(COPY_FILE "${path}" "${KBUILD_LIBS}/${name}")
  file(CHMOD "${KBUILD_LIBS}/${name}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN" "${KBUILD_LIBS}/${name}" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND strip --strip-unneeded "${KBUILD_LIBS}/${name}")
  math(EXPR bundled "${bundled} + 1")
endforeach()
execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN/../lib/kbuild.libs" "${KBUILD_EXE}" COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "bundled ${bundled} shared libraries into ${KBUILD_LIBS}")
