#include <gtest/gtest.h>

#include "kbuild/layout/check.hpp"

using namespace kbuild::layout;

namespace {
ElfInfo good_library() {
  ElfInfo elf;
  elf.machine = "x86_64";
  elf.shared_object = true;
  elf.needed = {"libc10.so", "libtorch_cpu.so", "libcudart.so.13", "libstdc++.so.6", "libc.so.6"};
  elf.dynamic_symbols = {{"PyInit__k_cuda_abc", "", true, true, true},
                         {"PyModule_Create2", "", false, true, true},
                         {"memcpy", "GLIBC_2.14", false, true, true},
                         {"_ZSt28__throw_bad_array_new_lengthv", "GLIBCXX_3.4.24", false, true, true}};
  return elf;
}
std::string messages(const std::vector<CheckIssue>& issues) {
  std::string out;
  for (const auto& i : issues) out += i.message + "\n";
  return out;
}
}  // namespace

TEST(Check, AGoodLibraryPasses) {
  EXPECT_EQ(messages(check_library(good_library(), "v/x.so", "_k_cuda_abc", "x86_64", {})), "");
}

TEST(Check, MissingInitForeignLibraryRpathPrivateSymbolsAndNewGlibc) {
  ElfInfo elf = good_library();
  elf.dynamic_symbols[0].name = "PyInit_other";
  elf.needed.push_back("libopencv_core.so.406");
  elf.rpath = "$ORIGIN";
  elf.dynamic_symbols.push_back({"_PyObject_GC_New", "", false, true, true});
  elf.dynamic_symbols.push_back({"__libc_single_threaded", "GLIBC_2.32", false, false, true});
  std::string found = messages(check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", {}));
  EXPECT_NE(found.find("does not export PyInit__k_cuda_abc"), std::string::npos) << found;
  EXPECT_NE(found.find("links libopencv_core.so.406"), std::string::npos) << found;
  EXPECT_NE(found.find("has an RPATH"), std::string::npos) << found;
  EXPECT_NE(found.find("_PyObject_GC_New"), std::string::npos) << found;
  EXPECT_NE(found.find("__libc_single_threaded@GLIBC_2.32, newer than manylinux_2_28"), std::string::npos) << found;
  EXPECT_EQ(messages(check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", {"none"})).find("GLIBC_2.32"),
            std::string::npos);
}

TEST(Check, WrongMachine) {
  std::string found = messages(check_library(good_library(), "v/x.so", "_k_cuda_abc", "aarch64", {}));
  EXPECT_NE(found.find("built for x86_64"), std::string::npos);
}

TEST(Elf, RejectsNonElf) { EXPECT_FALSE(read_elf("#!/bin/sh\n")); }

TEST(Check, StaticCppRuntimeIsAnError) {
  ElfInfo elf = good_library();
  elf.dynamic_symbols.push_back({"_Unwind_RaiseException", "GCC_3.0", false, true, true});
  std::string found = messages(check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", {}));
  EXPECT_NE(found.find("statically linked C++ runtime"), std::string::npos) << found;
}
