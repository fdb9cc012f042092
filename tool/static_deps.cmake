# The libraries of a static build (KBUILD_STATIC, the wheel: docs/install.md "How the wheel is built"):
# every one from KBUILD_DEPS_PREFIX, which scripts/wheel-deps builds from pinned sources
# (tool/wheel/deps.toml), and none from the build machine. The targets have the names the system
# build's find_package/pkg_check_modules calls give (top CMakeLists.txt), so tool/CMakeLists.txt
# links the same names either way.
if(NOT KBUILD_DEPS_PREFIX OR NOT EXISTS "${KBUILD_DEPS_PREFIX}/lib")
  message(FATAL_ERROR "KBUILD_STATIC needs KBUILD_DEPS_PREFIX: the prefix scripts/wheel-deps prints "
                      "(its toolchain.cmake, given as CMAKE_TOOLCHAIN_FILE, sets it)")
endif()
set(deps "${KBUILD_DEPS_PREFIX}")
# Nothing from the system: package configs and libraries are looked up in the prefix alone.
set(CMAKE_PREFIX_PATH "${deps}")
set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH FALSE)
set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH FALSE)
set(CMAKE_FIND_USE_PACKAGE_REGISTRY FALSE)
set(CMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY FALSE)

find_package(Threads REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)

# kbuild_static_library(TARGET ARCHIVE [DEPS targets...] [DEFINES ...]): an imported static archive
# of the prefix, with the libraries it needs after it on the link line.
function(kbuild_static_library target archive)
  cmake_parse_arguments(L "" "" "DEPS;DEFINES" ${ARGN})
  if(NOT EXISTS "${deps}/lib/${archive}")
    message(FATAL_ERROR "${deps}/lib/${archive} is missing: rerun scripts/wheel-deps")
  endif()
  add_library(${target} STATIC IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${deps}/lib/${archive}"
                                             INTERFACE_INCLUDE_DIRECTORIES "${deps}/include"
                                             INTERFACE_LINK_LIBRARIES "${L_DEPS}"
                                             INTERFACE_COMPILE_DEFINITIONS "${L_DEFINES}")
endfunction()
kbuild_static_library(kbuild_static_zlib libz.a)
kbuild_static_library(kbuild_static_lzma liblzma.a DEFINES LZMA_API_STATIC)
kbuild_static_library(OpenSSL::Crypto libcrypto.a DEPS Threads::Threads)
kbuild_static_library(OpenSSL::SSL libssl.a DEPS OpenSSL::Crypto)
kbuild_static_library(CURL::libcurl libcurl.a DEPS OpenSSL::SSL kbuild_static_zlib DEFINES CURL_STATICLIB)
kbuild_static_library(PkgConfig::LIBARCHIVE libarchive.a DEPS kbuild_static_lzma kbuild_static_zlib
                      DEFINES LIBARCHIVE_STATIC)
kbuild_static_library(PkgConfig::SQLITE3 libsqlite3.a DEPS Threads::Threads m)
kbuild_static_library(Unistring::Unistring libunistring.a)
foreach(header_only IN ITEMS TOMLPP HTTPLIB)
  add_library(PkgConfig::${header_only} INTERFACE IMPORTED GLOBAL)
  set_target_properties(PkgConfig::${header_only} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
endforeach()
