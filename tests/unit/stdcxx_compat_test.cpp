// Which libstdc++.a members kbuild links privately (toolchain/stdcxx_compat.hpp): pure parts.

#include <gtest/gtest.h>

#include "kbuild/toolchain/provision.hpp"
#include "kbuild/toolchain/stdcxx_compat.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using namespace kbuild::toolchain;

namespace {

// Abridged `nm -D --defined-only --with-symbol-versions --format=posix libstdc++.so.6` (GCC 12).
const char* k_shared =
    "GLIBCXX_3.4.29 A 0 \n"
    "_ZSt8to_charsPcS_d@@GLIBCXX_3.4.29 T 167650 b\n"
    "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev@@GLIBCXX_3.4.26 T 1 1\n"
    "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1ESt13_Ios_Openmode@@GLIBCXX_3.4.21 T 2 2\n"
    "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm@@GLIBCXX_3.4.21 T 3 3\n"
    "_ZNSt8numpunctIcE2idE@@GLIBCXX_3.4 V 4 4\n"
    "_ZSt10from_charsPKcS0_RdSt12chars_format@GLIBCXX_3.4.29 T 5 5\n"
    "_ZSt10from_charsPKcS0_RdSt12chars_format@@GLIBCXX_3.4.30 T 5 5\n"
    "_ZNSt3pmr20get_default_resourceEv@@GLIBCXX_3.4.26 T 6 6\n"
    "_ZNSt3pmr20get_default_resourceEv@GLIBCXX_3.4.22 T 6 6\n"
    "__cxa_thread_atexit@@CXXABI_1.3.7 T 7 7\n";

const char* k_archive =
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[floating_to_chars.o]: _ZSt8to_charsPcS_d T 0 b\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[floating_to_chars.o]: _ZZN3fooEvE8__digits V 0 64\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[floating_to_chars.o]: memcpy U         \n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[sstream-inst.o]: "
    "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev W 0 1\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[sstream-inst.o]: "
    "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1ESt13_Ios_Openmode W 0 1\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[sstream-inst.o]: "
    "_ZTVNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEE V 0 80\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[sstream-inst.o]: DW.ref.__gxx_personality_v0 V 0 8\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[locale-inst.o]: _ZNSt8numpunctIcE2idE u 0 8\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[locale-inst.o]: _ZSt10from_charsPKcS0_RdSt12chars_format T 0 8\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[memory_resource.o]: _ZNSt3pmr20get_default_resourceEv T 0 8\n"
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a[string-inst.o]: "
    "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm W 0 8\n";

}  // namespace

TEST(StdcxxCompat, NewerSymbolsAreThoseExportedOnlyAboveThePolicy) {
  auto newer = newer_glibcxx_symbols(k_shared, "3.4.24");
  EXPECT_EQ(newer, (std::set<std::string>{"_ZSt8to_charsPcS_d",
                                          "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev",
                                          "_ZSt10from_charsPKcS0_RdSt12chars_format"}));
  // Also exported in 3.4.22, so a binary using it loads on manylinux_2_28 already.
  EXPECT_FALSE(newer.count("_ZNSt3pmr20get_default_resourceEv"));
}

TEST(StdcxxCompat, MembersAreKeptWithTheirOtherGlobalsLocalUnlessACopyWouldBreakThem) {
  auto members = parse_archive_symbols(k_archive);
  ASSERT_EQ(members.size(), 5u);
  EXPECT_TRUE(members.at("floating_to_chars.o").undefined.count("memcpy"));
  EXPECT_EQ(members.at("sstream-inst.o").defined.at("DW.ref.__gxx_personality_v0"), 'V');
  std::map<std::string, std::string> refused;
  auto kept = select_compat_members(members, newer_glibcxx_symbols(k_shared, "3.4.24"), &refused);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].name, "floating_to_chars.o");
  EXPECT_EQ(kept[0].localize, std::vector<std::string>{"_ZZN3fooEvE8__digits"});  // a constant table
  EXPECT_EQ(kept[1].name, "sstream-inst.o");
  EXPECT_EQ(kept[1].localize.size(), 3u);  // the old constructor, the vtable, the unwinder reference
  // A second copy of a locale facet id would split the locale registry.
  ASSERT_TRUE(refused.count("locale-inst.o"));
  EXPECT_NE(refused.at("locale-inst.o").find("_ZNSt8numpunctIcE2idE has identity or shared state"), std::string::npos);
  // Members without newer symbols are not candidates at all.
  EXPECT_FALSE(refused.count("memory_resource.o") || refused.count("string-inst.o"));
}

TEST(InstallCompleteDir, NeverReplacesAnotherProcesssCompleteResult) {
  fakes::MemFileSystem fs;
  // Another process finished first: its directory is kept, ours dropped.
  fs.put("/c/t/dir/.complete", "theirs\n");
  fs.put("/c/t/dir/lib.a", "theirs");
  fs.put("/c/t/staging/.complete", "ours\n");
  ASSERT_TRUE(install_complete_dir(fs, "/c/t/staging", "/c/t/dir"));
  EXPECT_EQ(fs.content("/c/t/dir/lib.a"), "theirs");
  EXPECT_FALSE(fs.stat("/c/t/staging").exists);
  // A crashed run's incomplete directory is replaced.
  fs.put("/c/t/half/lib.a", "partial");
  fs.put("/c/t/staging2/.complete", "ours\n");
  fs.put("/c/t/staging2/lib.a", "ours");
  ASSERT_TRUE(install_complete_dir(fs, "/c/t/staging2", "/c/t/half"));
  EXPECT_EQ(fs.content("/c/t/half/lib.a"), "ours");
  EXPECT_TRUE(toolchain_complete(fs, "/c/t/half"));
}
