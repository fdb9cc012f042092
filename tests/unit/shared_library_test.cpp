#include <gtest/gtest.h>

#include "kbuild/util/lazy_libraries.hpp"
#include "kbuild/util/shared_library.hpp"

using kbuild::ExitCode;
using kbuild::util::SharedLibrary;

TEST(SharedLibrary, AMissingLibraryIsAToolchainErrorNamingItAndTheHint) {
  auto library = SharedLibrary::open("libkbuild-no-such-library.so.7", "apt install something");
  ASSERT_FALSE(library);
  EXPECT_EQ(library.error().code, ExitCode::toolchain);
  EXPECT_NE(library.error().message.find("cannot load libkbuild-no-such-library.so.7"), std::string::npos);
  EXPECT_EQ(library.error().hint, "apt install something");
}

TEST(SharedLibrary, TheBuildsSonamesLoadAndBindTheirFunctions) {
  for (const char* soname : {kbuild::util::k_libcurl_soname, kbuild::util::k_libarchive_soname}) {
    auto library = SharedLibrary::open(soname, "");
    ASSERT_TRUE(library) << library.error().message;
    EXPECT_EQ(library->soname(), soname);
  }
  auto curl = SharedLibrary::open(kbuild::util::k_libcurl_soname, "");
  ASSERT_TRUE(curl);
  char* (*version)() = nullptr;
  ASSERT_TRUE(curl->bind(version, "curl_version"));
  EXPECT_EQ(std::string(version()).rfind("libcurl/", 0), 0u);
  auto missing = curl->bind(version, "curl_no_such_function");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("has no symbol curl_no_such_function"), std::string::npos);
}
