// The pinned host toolchain's pure parts (Debian indices, versions, the recipe's resolution) and the
// .deb unpacker on packages written here with libarchive.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "kbuild/layout/metadata.hpp"
#include "kbuild/plan/reproducibility.hpp"
#include "kbuild/toolchain/deb_archive.hpp"
#include "kbuild/toolchain/debian.hpp"
#include "kbuild/toolchain/host_toolchain.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/rebuild_check.hpp"
#include "kbuild/util/fs.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild::toolchain;
namespace fs = std::filesystem;

TEST(DebianVersion, FollowsDpkgOrder) {
  EXPECT_LT(compare_debian_versions("12.2.0-14", "12.2.0-14+deb12u1"), 0);
  EXPECT_LT(compare_debian_versions("2.36-9+deb12u9", "2.36-9+deb12u14"), 0);  // numeric, not text
  EXPECT_LT(compare_debian_versions("1.0~rc1-1", "1.0-1"), 0);                 // '~' before the end
  EXPECT_GT(compare_debian_versions("1:1.2.13-1", "1.3-1"), 0);                // the epoch first
  EXPECT_LT(compare_debian_versions("1.0-1", "1.0a-1"), 0);                    // letters after the end
  EXPECT_LT(compare_debian_versions("1.0a", "1.0+"), 0);                       // letters before symbols
  EXPECT_EQ(compare_debian_versions("1.02-1", "1.2-1"), 0);                    // leading zeros
  EXPECT_EQ(compare_debian_versions("2.40-2", "2.40-2"), 0);
}

namespace {
std::string stanza(const std::string& name, const std::string& version, char sha, const std::string& arch = "amd64") {
  return "Package: " + name + "\nSource: x\nVersion: " + version + "\nArchitecture: " + arch +
         "\nDescription: a\n long description\nFilename: pool/main/x/" + name + "_" + version +
         "_amd64.deb\nSize: 10\nSHA256: " + std::string(64, sha) + "\n\n";
}
}  // namespace

TEST(DebianIndex, ParsesCompleteStanzasOnly) {
  auto packages = parse_packages_index(stanza("g++-12", "12.2.0-14", 'a') + "Package: broken\nVersion: 1\n\n" +
                                       stanza("libc6", "2.36-9", 'b', "all"));
  ASSERT_EQ(packages.size(), 2u);
  EXPECT_EQ(packages[0].name, "g++-12");
  EXPECT_EQ(packages[0].filename, "pool/main/x/g++-12_12.2.0-14_amd64.deb");
  EXPECT_EQ(packages[1].architecture, "all");
  EXPECT_EQ(packages[1].size, 10u);
}

TEST(DebianIndex, TheNewestVersionAcrossSuitesWinsAndMissingPackagesAreListed) {
  HostToolchainRecipe recipe = bookworm_gcc12_recipe();
  recipe.packages = {"g++-12", "libc6"};
  std::vector<std::vector<DebianPackage>> indices = {
      parse_packages_index(stanza("g++-12", "12.2.0-14", 'a') + stanza("libc6", "2.36-9+deb12u9", 'b')),
      {},
      parse_packages_index(stanza("libc6", "2.36-9+deb12u14", 'c') + stanza("libc6", "2.36-9+deb12u3", 'd') +
                           stanza("g++-12", "13.0-1", 'e', "arm64"))};
  auto resolved = resolve_recipe(recipe, indices);
  ASSERT_TRUE(resolved) << resolved.error().message;
  ASSERT_EQ(resolved->size(), 2u);
  EXPECT_EQ((*resolved)[0].version, "12.2.0-14");  // the arm64 package is not a candidate
  EXPECT_EQ((*resolved)[0].url, "https://deb.debian.org/debian/pool/main/x/g++-12_12.2.0-14_amd64.deb");
  EXPECT_EQ((*resolved)[1].version, "2.36-9+deb12u14");
  EXPECT_EQ((*resolved)[1].sha256, std::string(64, 'c'));
  EXPECT_EQ((*resolved)[1].url.rfind("https://security.debian.org/debian-security/", 0), 0u);
  recipe.packages.push_back("cpp-12");
  recipe.packages.push_back("libgmp10");
  auto missing = resolve_recipe(recipe, indices);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("lack cpp-12, libgmp10"), std::string::npos) << missing.error().message;
}

TEST(HostToolchain, LinksStayInsideTheRoot) {
  EXPECT_EQ(contained_link_target("usr/lib/x86_64-linux-gnu/libm.so", "/lib/x86_64-linux-gnu/libm.so.6"),
            "../../../lib/x86_64-linux-gnu/libm.so.6");
  EXPECT_EQ(contained_link_target("usr/bin/g++-12", "x86_64-linux-gnu-g++-12"), "x86_64-linux-gnu-g++-12");
  EXPECT_EQ(contained_link_target("usr/lib/a.so", "../../lib/a.so.1"), "../../lib/a.so.1");
  EXPECT_FALSE(contained_link_target("usr/lib/a.so", "../../../etc/passwd"));
  EXPECT_FALSE(contained_link_target("a", "/"));
  EXPECT_FALSE(contained_link_target("a", ""));
  EXPECT_EQ(host_toolchain_entry("usr/share/doc/gcc-12/copyright"), std::nullopt);
  EXPECT_EQ(host_toolchain_entry("usr/include/stdio.h"), "usr/include/stdio.h");
  EXPECT_EQ(expand_file_url("http://m/debs/{file}", "a_1_amd64.deb"), "http://m/debs/a_1_amd64.deb");
}

TEST(HostToolchain, TheLockAcceptsDebianPackagesOnlyForTheHostToolchain) {
  const std::string sha(64, 'a');
  auto lock = [&](const std::string& name, const std::string& file) {
    return "{\"version\": 1, \"toolchains\": {\"" + name +
           "\": [{\"package\": \"g++-12\", \"version\": " + "\"1:12.2.0-14+deb12u1\", \"file\": \"" + file +
           "\", \"sha256\": \"" + sha + "\", \"url\": \"https://deb.debian.org/debian/pool/" + file + "\"}]}}";
  };
  auto parsed = LockFile::parse(lock("gcc-12.2", "g++-12_12.2.0-14~1_amd64.deb"), "kbuild.lock");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(LockFile::parse(parsed->serialize(), "kbuild.lock").value(), *parsed);
  EXPECT_FALSE(LockFile::parse(lock("torch-2.11", "g++-12_12.2.0_amd64.deb"), "kbuild.lock"));
  EXPECT_FALSE(LockFile::parse(lock("gcc-12.2", "cutlass.zip"), "kbuild.lock"));
}

TEST(HostToolchain, MetadataRecordsTheToolchainAndReadsItBack) {
  kbuild::layout::Metadata metadata;
  metadata.name = "k";
  metadata.id = "_k_cpu_1";
  metadata.version = 1;
  metadata.license = "MIT";
  metadata.builder_version = "kbuild/0";
  metadata.toolchain = kbuild::layout::ToolchainRecord{
      "gcc 12.2.0", "pinned:gcc-12.2", {"g++-12=12.2.0-14"}, "2.11.0+cu130", "wheel:torch.whl", "", ""};
  const std::string text = metadata.to_json();
  EXPECT_NE(text.find("\"toolchain\": {\n    \"compiler\": \"gcc 12.2.0\""), std::string::npos) << text;
  EXPECT_EQ(text.find("cuda-origin"), std::string::npos);
  auto parsed = kbuild::layout::Metadata::parse(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->toolchain, metadata.toolchain);
}

namespace {

struct WrittenEntry {
  std::string name;
  mode_t type;
  std::string content_or_target;
  bool hardlink = false;
};

// A .deb as dpkg-deb lays it out: debian-binary, control.tar.gz, data.tar.xz.
void write_deb(const fs::path& path, const std::vector<WrittenEntry>& entries) {
  std::string data(1 << 20, '\0');
  size_t data_size = 0;
  {
    archive* tar = archive_write_new();
    archive_write_set_format_pax_restricted(tar);
    archive_write_add_filter_xz(tar);
    archive_write_open_memory(tar, data.data(), data.size(), &data_size);
    for (const auto& e : entries) {
      archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, e.name.c_str());
      archive_entry_set_filetype(entry, e.type);
      archive_entry_set_perm(entry, e.type == AE_IFDIR ? 0755 : e.name.find("bin/") != std::string::npos ? 0755 : 0644);
      if (e.hardlink) {
        archive_entry_set_hardlink(entry, e.content_or_target.c_str());
      } else if (e.type == AE_IFLNK) {
        archive_entry_set_symlink(entry, e.content_or_target.c_str());
      } else if (e.type == AE_IFREG) {
        archive_entry_set_size(entry, static_cast<la_int64_t>(e.content_or_target.size()));
      }
      archive_write_header(tar, entry);
      if (e.type == AE_IFREG && !e.hardlink)
        archive_write_data(tar, e.content_or_target.data(), e.content_or_target.size());
      archive_entry_free(entry);
    }
    archive_write_close(tar);
    archive_write_free(tar);
  }
  archive* ar = archive_write_new();
  archive_write_set_format_ar_bsd(ar);
  archive_write_open_filename(ar, path.c_str());
  for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
           {"debian-binary", "2.0\n"}, {"control.tar.gz", ""}, {"data.tar.xz", data.substr(0, data_size)}}) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, static_cast<la_int64_t>(content.size()));
    archive_write_header(ar, entry);
    archive_write_data(ar, content.data(), content.size());
    archive_entry_free(entry);
  }
  archive_write_close(ar);
  archive_write_free(ar);
}

struct DebDir {
  fs::path dir = fs::temp_directory_path() / ("kbuild-deb-test-" + std::to_string(::getpid()));
  DebDir() { fs::create_directories(dir); }
  ~DebDir() { fs::remove_all(dir); }
};

}  // namespace

TEST(DebArchive, UnpacksFilesLinksAndHardLinksBelowTheRoot) {
  DebDir tmp;
  write_deb(tmp.dir / "p.deb", {{"./", AE_IFDIR, ""},
                                {"./usr/bin/", AE_IFDIR, ""},
                                {"./usr/bin/x86_64-linux-gnu-g++-12", AE_IFREG, "#!driver"},
                                {"./usr/bin/g++-12", AE_IFLNK, "x86_64-linux-gnu-g++-12"},
                                {"./usr/lib/libm.so", AE_IFLNK, "/lib/x86_64-linux-gnu/libm.so.6"},
                                {"./usr/bin/c++-12", AE_IFREG, "./usr/bin/x86_64-linux-gnu-g++-12", true},
                                {"./usr/share/doc/g++-12/copyright", AE_IFREG, "text"}});
  kbuild::util::RealFileSystem real;
  auto unpacked = extract_deb(tmp.dir / "p.deb", tmp.dir / "root", host_toolchain_entry);
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  const fs::path root = tmp.dir / "root";
  EXPECT_EQ(real.read_file(root / "usr/bin/x86_64-linux-gnu-g++-12").value(), "#!driver");
  EXPECT_TRUE(real.stat(root / "usr/bin/x86_64-linux-gnu-g++-12").executable);
  EXPECT_EQ(fs::read_symlink(root / "usr/bin/g++-12"), "x86_64-linux-gnu-g++-12");
  EXPECT_EQ(fs::read_symlink(root / "usr/lib/libm.so"), "../../lib/x86_64-linux-gnu/libm.so.6");
  EXPECT_EQ(real.read_file(root / "usr/bin/c++-12").value(), "#!driver");
  EXPECT_FALSE(fs::exists(root / "usr/share/doc"));
  EXPECT_EQ(unpacked->symlinks, (std::vector<std::string>{"usr/bin/g++-12", "usr/lib/libm.so"}));
}

TEST(DebArchive, RefusesEntriesThatLeaveTheRoot) {
  DebDir tmp;
  kbuild::util::RealFileSystem real;
  for (const auto& bad : std::vector<WrittenEntry>{{"./usr/../../etc/passwd", AE_IFREG, "x"},
                                                   {"./usr/lib/evil", AE_IFLNK, "../../../etc"},
                                                   {"./usr/lib/copy", AE_IFREG, "../outside", true}}) {
    write_deb(tmp.dir / "bad.deb", {bad});
    auto unpacked = extract_deb(tmp.dir / "bad.deb", tmp.dir / "root", host_toolchain_entry);
    ASSERT_FALSE(unpacked) << bad.name;
    EXPECT_NE(unpacked.error().message.find("refusing bad.deb"), std::string::npos) << unpacked.error().message;
    EXPECT_FALSE(fs::exists(tmp.dir / "etc"));
  }
  std::ofstream(tmp.dir / "not.deb") << "hello";
  EXPECT_FALSE(extract_deb(tmp.dir / "not.deb", tmp.dir / "root", host_toolchain_entry));
}

namespace {

// A sandbox: root/ (where packages go, several levels down so that chains of ".." have room) and
// outside/ with a canary file and a directory; afterwards nothing outside root/ may have changed.
struct Sandbox {
  DebDir tmp;
  fs::path root = tmp.dir / "a" / "b" / "root";
  fs::path outside = tmp.dir / "outside";
  Sandbox() {
    fs::create_directories(root);
    fs::create_directories(outside / "dir");
    std::ofstream(outside / "canary") << "precious";
    std::ofstream(outside / "dir" / "kept") << "kept";
  }
  // Every file below tmp.dir outside root/, with its content.
  std::map<std::string, std::string> outside_files() const {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(tmp.dir)) {
      auto rel = entry.path().lexically_relative(tmp.dir).string();
      if (rel.starts_with("a/b/root") || entry.is_symlink() || !entry.is_regular_file()) continue;
      if (entry.path().extension() == ".deb") continue;
      std::ifstream in(entry.path());
      files[rel] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return files;
  }
};

std::optional<std::string> everything(const std::string& name) { return name; }

}  // namespace

TEST(DebArchive, LinkChainsNeitherWriteNorDeleteNorReadOutsideTheRoot) {
  // Each package climbs out of the root through links that each look "inside" when judged alone,
  // then writes, overwrites, deletes or reads through them.
  const std::vector<std::pair<std::string, std::vector<WrittenEntry>>> attacks = {
      {"chain then write",
       {{"./x/y", AE_IFLNK, ".."},
        {"./c", AE_IFLNK, "x/y/.."},
        {"./d", AE_IFLNK, "c/.."},
        {"./d/new-file", AE_IFREG, "planted"}}},
      {"chain made backwards then write",
       {{"./c", AE_IFLNK, "x/y/.."},
        {"./d", AE_IFLNK, "c/../.."},
        {"./x/y", AE_IFLNK, ".."},
        {"./d/outside/canary", AE_IFREG, "overwritten"},
        {"./d/new-file", AE_IFREG, "planted"}}},
      {"write through a link inside",
       {{"./real/", AE_IFDIR, ""}, {"./l", AE_IFLNK, "real"}, {"./l/file", AE_IFREG, "through the link"}}},
      {"replace a link that leads out",
       {{"./x/y", AE_IFLNK, ".."}, {"./o", AE_IFLNK, "x/y/../../../../outside/canary"}, {"./o", AE_IFREG, "replaced"}}},
      {"delete through a link",
       {{"./c", AE_IFLNK, "x/y/.."}, {"./x/y", AE_IFLNK, "../.."}, {"./c/outside/dir", AE_IFLNK, "anything"}}},
      {"hard link read through a link",
       {{"./c", AE_IFLNK, "x/y/../../../../outside"},
        {"./x/y", AE_IFLNK, ".."},
        {"./copy", AE_IFREG, "c/canary", true}}},
      {"a chain to /",
       {{"./u", AE_IFLNK, "../../../../../../../../../../../.."}, {"./u/tmp/kbuild-escaped", AE_IFREG, "x"}}},
  };
  for (const auto& [what, entries] : attacks) {
    Sandbox box;
    const auto before = box.outside_files();
    write_deb(box.tmp.dir / "evil.deb", entries);
    auto unpacked = extract_deb(box.tmp.dir / "evil.deb", box.root, everything);
    bool refused = !unpacked || !verify_contained(box.root);
    EXPECT_TRUE(refused) << what;
    EXPECT_EQ(box.outside_files(), before) << what;  // nothing written, overwritten or deleted
    EXPECT_TRUE(fs::exists(box.outside / "dir" / "kept")) << what;
    EXPECT_FALSE(fs::exists("/tmp/kbuild-escaped")) << what;
    std::error_code ec;
    EXPECT_FALSE(fs::exists(box.root / "copy", ec) && fs::is_regular_file(box.root / "copy")) << what;
    if (fs::exists(box.root / "l")) {
      EXPECT_FALSE(fs::exists(box.root / "real" / "file")) << what;
    }
  }
  // A package whose links stay inside, through other links too, is unpacked and passes.
  Sandbox box;
  write_deb(box.tmp.dir / "good.deb", {{"./usr/lib/x/libz.so.1.2", AE_IFREG, "z"},
                                       {"./usr/lib/x/libz.so.1", AE_IFLNK, "libz.so.1.2"},
                                       {"./lib", AE_IFLNK, "usr/lib"},
                                       {"./usr/lib/libz.so", AE_IFLNK, "../../lib/x/libz.so.1"}});
  ASSERT_TRUE(extract_deb(box.tmp.dir / "good.deb", box.root, everything));
  EXPECT_TRUE(verify_contained(box.root));
  EXPECT_EQ(kbuild::util::RealFileSystem().read_file(box.root / "usr/lib/libz.so").value(), "z");
}

TEST(Reproducibility, FindsTimeMacrosAndAnonymousNamespacesInCudaOnly) {
  const std::string source =
      "// __DATE__ in a comment\n"
      "const char* when = \"__TIME__\";\n"
      "const char* built = __DATE__ \" \" __TIME__;\n"
      "namespace {\n"
      "int MY__DATE__X = 0; /* __TIMESTAMP__ */ }\n"
      "namespace detail { }\n";
  auto hazards = kbuild::plan::reproducibility_hazards("k/a.cu", source);
  ASSERT_EQ(hazards.size(), 3u);
  EXPECT_EQ(hazards[0].line, 3u);
  EXPECT_EQ(hazards[0].column, 21u);
  EXPECT_NE(hazards[0].what.find("__DATE__"), std::string::npos);
  EXPECT_EQ(hazards[1].line, 3u);
  EXPECT_NE(hazards[1].what.find("__TIME__"), std::string::npos);
  EXPECT_EQ(hazards[2].line, 4u);
  EXPECT_EQ(hazards[2].column, 1u);
  EXPECT_NE(hazards[2].what.find("anonymous namespace"), std::string::npos);
  EXPECT_EQ(kbuild::plan::reproducibility_hazards("k/a.cpp", source).size(), 2u);  // fine in host code
  EXPECT_TRUE(kbuild::plan::scanned_for_reproducibility("csrc/a.cuh"));
  EXPECT_FALSE(kbuild::plan::scanned_for_reproducibility("torch-ext/k/__init__.py"));
}

TEST(RebuildCheck, NamesTheFirstDifferingFile) {
  kbuild::fakes::MemFileSystem fs;
  fs.put("/a/v/_ops.py", "abc");
  fs.put("/a/v/lib/x.so", "same");
  fs.put("/b/v/_ops.py", "abc");
  fs.put("/b/v/lib/x.so", "same");
  EXPECT_EQ(kbuild::usecase::first_difference(fs, "/a/v", "/b/v"), "");
  fs.put("/b/v/_ops.py", "abd");
  EXPECT_EQ(kbuild::usecase::first_difference(fs, "/a/v", "/b/v"),
            "_ops.py differs from the rebuild's at byte 2 (3 vs 3 bytes)");
  fs.put("/b/v/_ops.py", "abc");
  fs.put("/b/v/extra.py", "");
  EXPECT_EQ(kbuild::usecase::first_difference(fs, "/a/v", "/b/v"), "the rebuild has extra.py, which the variant lacks");
  fs.put("/a/v/extra.py", "");
  fs.put("/a/v/lib/y.so", "");
  EXPECT_EQ(kbuild::usecase::first_difference(fs, "/a/v", "/b/v"), "lib/y.so is not in the rebuild");
}
