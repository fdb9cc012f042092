# Writes OUTPUT (a header) with the git commit, its date and whether the tree is dirty, from the
# checkout at SOURCE_DIR, or from $KBUILD_SOURCE_COMMIT / $KBUILD_SOURCE_DATE, or where there is no
# git (the sdist) from tool/source_commit.txt, which scripts/wheel writes before making the sdist:
# one line, "<commit> <date> <dirty: true|false>". Run at every build; the file is rewritten only when its content changes, so
# only what includes it (cli/app.cpp) recompiles after a commit. The "date" is the commit's, not the
# build's: two builds of one commit name the same date (reproducible).
cmake_minimum_required(VERSION 3.25)
set(commit "$ENV{KBUILD_SOURCE_COMMIT}")
set(date "$ENV{KBUILD_SOURCE_DATE}")
set(dirty "false")
find_program(GIT git)
if(GIT AND commit STREQUAL "")
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse HEAD OUTPUT_VARIABLE commit
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
  if(failed)
    set(commit "")
  else()
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" log -1 --format=%cs OUTPUT_VARIABLE date
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no -- tool templates
                    CMakeLists.txt OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT changes STREQUAL "")
      set(dirty "true")
    endif()
  endif()
endif()
if(commit STREQUAL "" AND EXISTS "${SOURCE_DIR}/tool/source_commit.txt")
  file(READ "${SOURCE_DIR}/tool/source_commit.txt" recorded)
  if(recorded MATCHES "^([0-9a-f]+) ([0-9-]+) (true|false)")
    set(commit "${CMAKE_MATCH_1}")
    set(date "${CMAKE_MATCH_2}")
    set(dirty "${CMAKE_MATCH_3}")
  endif()
endif()
if(commit STREQUAL "")
  set(commit "unknown")
endif()
if(date STREQUAL "")
  set(date "unknown")
endif()
set(content "#pragma once
// Generated at build time by tool/source_info.cmake: the commit kbuild was built from.
namespace kbuild::util {
inline constexpr const char* k_source_commit = \"${commit}\";
inline constexpr const char* k_source_date = \"${date}\";
inline constexpr bool k_source_dirty = ${dirty};
}  // namespace kbuild::util
")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
endif()
if(NOT previous STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
