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
  EXPECT_EQ(messages(check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", {"none", std::nullopt})).find("GLIBC_2.32"),
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

TEST(Check, StableAbiVariantsMayUseOnlyTorchsStableApi) {
  ElfInfo elf = good_library();
  elf.dynamic_symbols.push_back({"aoti_torch_empty_strided", "", false, true, true});
  elf.dynamic_symbols.push_back({"_ZN5torch6stable6detail9to_ivalueEv", "", false, true, true});
  elf.dynamic_symbols.push_back({"_ZN3c105ErrorD2Ev", "", false, true, true});  // c10::Error::~Error()
  elf.dynamic_symbols.push_back({"_ZN2at4_ops4relu4callERKNS_6TensorE", "", false, true, true});
  elf.dynamic_symbols.push_back({"_ZN3c104HalfC2Ef", "", true, true, true});    // defined here: fine
  elf.dynamic_symbols.push_back({"_ZTIN3c105ErrorE", "", false, false, true});  // typeinfo for c10::Error
  elf.dynamic_symbols.push_back({"_ZN3c103fooIiEEiv", "", false, true, true});  // int c10::foo<int>()
  elf.dynamic_symbols.push_back({"_ZNK6caffe28TypeMeta4nameEv", "", false, true, true});
  elf.dynamic_symbols.push_back({"_ZNSt6vectorIiSaIiEE9push_backEOi", "", false, true, true});  // std: fine
  CheckOptions stable;
  stable.torch_stable_abi = kbuild::util::Version({2, 11});
  auto issues = check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", stable);
  ASSERT_EQ(issues.size(), 5u) << messages(issues);
  EXPECT_NE(issues[0].message.find("uses c10::Error::~Error(), which is not in Torch's stable ABI"), std::string::npos)
      << issues[0].message;
  EXPECT_NE(issues[0].message.find("torch-stable-abi211 variants must load with any Torch >= 2.11"), std::string::npos);
  EXPECT_EQ(issues[0].rule, CheckIssue::Rule::stable_abi);
  EXPECT_EQ(issues[0].symbol, "_ZN3c105ErrorD2Ev");
  EXPECT_NE(issues[1].message.find("at::_ops::relu::call"), std::string::npos) << issues[1].message;
  EXPECT_NE(issues[2].message.find("typeinfo for c10::Error"), std::string::npos) << issues[2].message;
  EXPECT_NE(issues[3].message.find("int c10::foo<int>()"), std::string::npos) << issues[3].message;
  EXPECT_NE(issues[4].message.find("caffe2::TypeMeta::name() const"), std::string::npos) << issues[4].message;
  // The same library is fine as a Torch-version variant.
  EXPECT_EQ(messages(check_library(elf, "v/x.so", "_k_cuda_abc", "x86_64", {})), "");
}

TEST(Elf, DemanglesCppSymbolsAndLeavesOthers) {
  EXPECT_EQ(demangle("_ZN3c105ErrorD2Ev"), "c10::Error::~Error()");
  EXPECT_EQ(demangle("aoti_torch_empty_strided"), "aoti_torch_empty_strided");
}
