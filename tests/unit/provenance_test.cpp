// What a pin proves (toolchain/provenance.hpp): a .deb pin is used only when a signed index of the
// recipe's archive lists its file with its sha256, a wheel pin only when PyPI lists it. Real files in
// a temporary directory; gpgv is a fake that "verifies" InRelease files this test signed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "kbuild/toolchain/provenance.hpp"
#include "kbuild/util/hash.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using namespace kbuild::toolchain;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_archive = "https://deb.example/debian";
constexpr const char* k_signature = "-----TEST SIGNATURE-----\n";

std::string packages_index(const std::map<std::string, std::string>& sha_by_file) {
  std::string text;
  for (const auto& [file, sha] : sha_by_file) {
    const std::string name = fs::path(file).stem().string();
    text += "Package: " + name.substr(0, name.find('_')) + "\nVersion: 1.0\nArchitecture: amd64\nFilename: " + file +
            "\nSize: 10\nSHA256: " + sha + "\n\n";
  }
  return text;
}

std::string inrelease(const std::string& packages) {
  return std::string(k_signature) + "Origin: Debian\nSuite: bookworm\nSHA256:\n " + std::string(64, 'a') +
         " 12 main/Contents-amd64\n " + util::sha256_hex(packages) + " " + std::to_string(packages.size()) +
         " main/binary-amd64/Packages.xz\n";
}

// A Debian archive served from memory, a gpgv that accepts what this test signed, and a cache.
struct Archive {
  fs::path root = fs::temp_directory_path() / ("kbuild-provenance-" + std::to_string(::getpid()));
  std::map<std::string, std::string> served;  // URL -> content
  int downloads = 0;
  util::RealFileSystem fs;
  fakes::FakeLauncher gpgv;
  HostToolchainRecipe recipe;
  ProvenanceContext context{.launcher = gpgv,
                            .fs = fs,
                            .index_cache = root / "indices",
                            .scratch = root / "scratch",
                            .keyring = root / "keyring.gpg"};

  Archive() {
    fs::create_directories(root / "scratch");
    recipe.name = "gcc-test";
    recipe.suites = {{k_archive, "bookworm"}};
    context.download_simple = context.download = [this](const std::string& url, const fs::path& file) -> Result<void> {
      ++downloads;
      auto it = served.find(url);
      if (it == served.end()) return fail("cannot download " + url);
      std::ofstream(file, std::ios::binary) << it->second;
      return {};
    };
    gpgv.handler = [](const std::vector<std::string>& argv,
                      const util::ProcessOptions&) -> std::optional<util::ProcessResult> {
      std::ifstream in(argv.back(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (!text.starts_with(k_signature)) return util::ProcessResult{2, "", "gpgv: BAD signature"};
      std::ofstream(argv[4], std::ios::binary) << text.substr(std::string(k_signature).size());
      return util::ProcessResult{0, "", ""};
    };
  }
  ~Archive() { fs::remove_all(root); }

  void publish(const std::string& packages, const std::string& signed_text) {
    served[std::string(k_archive) + "/dists/bookworm/InRelease"] = signed_text;
    served[std::string(k_archive) + "/dists/bookworm/main/binary-amd64/Packages.xz"] = packages;
  }
};

LockedArtifact deb(const std::string& file, const std::string& sha) {
  return {fs::path(file).stem().string(), "1.0", fs::path(file).filename().string(), sha,
          std::string(k_archive) + "/" + file};
}

const std::string k_gcc = "pool/main/g/gcc/gcc_1.0_amd64.deb";
const std::string k_libc = "pool/main/g/glibc/libc6_1.0_amd64.deb";
const std::string k_sha_gcc(64, '1');
const std::string k_sha_libc(64, '2');

}  // namespace

TEST(Provenance, InReleaseNamesTheDigestOfAnIndexInItsSha256SectionOnly) {
  const std::string text = "MD5Sum:\n " + std::string(32, 'f') + " 9 main/binary-amd64/Packages.xz\nSHA256:\n " +
                           std::string(64, 'b') + " 1234 main/binary-amd64/Packages.xz\n " + std::string(64, 'c') +
                           " 99 main/binary-arm64/Packages.xz\nAcquire-By-Hash: yes\n";
  auto digest = inrelease_digest(text, "main/binary-amd64/Packages.xz");
  ASSERT_TRUE(digest);
  EXPECT_EQ(digest->sha256, std::string(64, 'b'));
  EXPECT_EQ(digest->size, 1234u);
  EXPECT_FALSE(inrelease_digest(text, "main/binary-i386/Packages.xz"));
  EXPECT_FALSE(inrelease_digest("SHA256:\n abc 12 main/binary-amd64/Packages.xz\n", "main/binary-amd64/Packages.xz"));
}

TEST(Provenance, TheSimpleApiListsAFileOnlyWithItsSha256) {
  const std::string json = R"({"meta": {"api-version": "1.1"}, "name": "torch", "files": [
      {"filename": "torch-2.11.0-cp312-none-manylinux_2_28_x86_64.whl", "hashes": {"sha256": "abc"}},
      {"filename": "torch-2.11.0-cp313-none-manylinux_2_28_x86_64.whl", "hashes": {"md5": "abc"}}]})";
  EXPECT_TRUE(*simple_index_lists(json, "torch-2.11.0-cp312-none-manylinux_2_28_x86_64.whl", "abc"));
  EXPECT_FALSE(*simple_index_lists(json, "torch-2.11.0-cp312-none-manylinux_2_28_x86_64.whl", "abd"));
  EXPECT_FALSE(*simple_index_lists(json, "torch-2.11.0-cp313-none-manylinux_2_28_x86_64.whl", "abc"));
  EXPECT_FALSE(*simple_index_lists(json, "torch-2.11.0-cp311-none-manylinux_2_28_x86_64.whl", "abc"));
  EXPECT_FALSE(simple_index_lists("<html><a href='torch.whl#sha256=abc'>torch.whl</a></html>", "torch.whl", "abc"));
  EXPECT_FALSE(simple_index_lists(R"({"info": {}})", "x.whl", "abc"));
  EXPECT_EQ(simple_project_name("Apache_TVM..FFI"), "apache-tvm-ffi");
  EXPECT_EQ(simple_project_name("nvidia-cuda-nvcc"), "nvidia-cuda-nvcc");
}

TEST(Provenance, AnOriginIsAUrlPrefixEndingInASlash) {
  EXPECT_TRUE(origin_allowed("https://deb.debian.org/debian/pool/x.deb", {"https://deb.debian.org/debian"}));
  EXPECT_FALSE(origin_allowed("https://deb.debian.org/debian-evil/pool/x.deb", {"https://deb.debian.org/debian"}));
  EXPECT_FALSE(origin_allowed("https://deb.debian.org.evil/debian/x.deb", {"https://deb.debian.org"}));
  EXPECT_FALSE(origin_allowed("https://x/y.deb", {""}));
}

TEST(Provenance, PinsTheSignedIndexListsAreAcceptedAndTheIndexIsKeptForLaterChecks) {
  Archive archive;
  const std::string packages = packages_index({{k_gcc, k_sha_gcc}, {k_libc, k_sha_libc}});
  archive.publish(packages, inrelease(packages));
  ASSERT_TRUE(verify_debian_pins({deb(k_gcc, k_sha_gcc), deb(k_libc, k_sha_libc)}, archive.recipe, archive.context));
  EXPECT_EQ(archive.downloads, 2);
  // Offline, and after the suite moved on: the kept index still proves the pins.
  archive.served.clear();
  auto again = verify_debian_pins({deb(k_gcc, k_sha_gcc)}, archive.recipe, archive.context);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(archive.downloads, 2);
}

TEST(Provenance, APinWithAnotherSha256ThanTheIndexIsRefusedNamingIt) {
  Archive archive;
  const std::string packages = packages_index({{k_gcc, k_sha_gcc}, {k_libc, k_sha_libc}});
  archive.publish(packages, inrelease(packages));
  const std::string forged(64, '9');
  auto result = verify_debian_pins({deb(k_gcc, k_sha_gcc), deb(k_libc, forged)}, archive.recipe, archive.context);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ExitCode::toolchain);
  EXPECT_NE(result.error().message.find("1 Debian package that the signed indices of bookworm do not list with that "
                                        "sha256: libc6_1.0_amd64.deb (sha256 999999999999…)"),
            std::string::npos)
      << result.error().message;
  EXPECT_EQ(result.error().message.find("gcc_1.0"), std::string::npos);
}

TEST(Provenance, AnIndexItsInReleaseDoesNotSignOrAnUnsignedInReleaseIsRefused) {
  {
    Archive archive;
    const std::string packages = packages_index({{k_gcc, k_sha_gcc}});
    const std::string forged = packages_index({{k_gcc, std::string(64, '9')}});
    archive.publish(forged, inrelease(packages));
    auto result = verify_debian_pins({deb(k_gcc, std::string(64, '9'))}, archive.recipe, archive.context);
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().message.find("is not the index its InRelease signs"), std::string::npos);
  }
  Archive archive;
  const std::string packages = packages_index({{k_gcc, k_sha_gcc}});
  archive.publish(packages, inrelease(packages).substr(std::string(k_signature).size()));
  auto result = verify_debian_pins({deb(k_gcc, k_sha_gcc)}, archive.recipe, archive.context);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("is not signed by a key of " + (archive.root / "keyring.gpg").string()),
            std::string::npos)
      << result.error().message;
  EXPECT_NE(result.error().message.find("BAD signature"), std::string::npos);
}

TEST(Provenance, APinFromAnotherOriginIsRefusedUnlessTheUserAllowsIt) {
  Archive archive;
  LockedArtifact pin = deb(k_gcc, k_sha_gcc);
  pin.url = "https://mirror.evil/debian/" + k_gcc;
  auto result = verify_debian_pins({pin}, archive.recipe, archive.context);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("from https://mirror.evil/debian/pool/main/g/gcc/gcc_1.0_amd64.deb, which "
                                        "is not Debian's archive"),
            std::string::npos);
  EXPECT_NE(result.error().hint.find("--allow-toolchain-origin https://mirror.evil/"), std::string::npos);
  EXPECT_EQ(archive.downloads, 0);
  archive.context.allowed_origins = {"https://mirror.evil/debian"};
  EXPECT_TRUE(verify_debian_pins({pin}, archive.recipe, archive.context));
  EXPECT_EQ(archive.downloads, 0);
}

TEST(Provenance, AWheelPinTheIndexDoesNotListIsRefused) {
  Archive archive;
  archive.context.pypi_simple = "https://pypi.example/simple";
  archive.served["https://pypi.example/simple/torch/"] =
      R"({"files": [{"filename": "torch-2.11.0-x.whl", "hashes": {"sha256": "good"}}]})";
  EXPECT_TRUE(verify_wheel_pins({{"torch", "2.11.0", "torch-2.11.0-x.whl", "good"}}, archive.context));
  auto result = verify_wheel_pins({{"torch", "2.11.0", "torch-2.11.0-x.whl", "forged"}}, archive.context);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("which https://pypi.example/simple does not list for torch"),
            std::string::npos);
  EXPECT_FALSE(verify_wheel_pins({{"torch", "2.12.0", "torch-2.12.0-x.whl", "good"}}, archive.context));
  EXPECT_FALSE(verify_wheel_pins({{"Torch", "2.11.0", "torch-2.11.0-x.whl", "forged"}}, archive.context));
}

TEST(Provenance, TheKeyringComesFromTheEnvironmentOrTheSystem) {
  fakes::MemFileSystem fs;
  util::MapEnvironment env{{{"KBUILD_DEBIAN_KEYRING", "/keys/debian.gpg"}}};
  auto missing = debian_keyring(fs, env);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("KBUILD_DEBIAN_KEYRING names /keys/debian.gpg, which is no file"),
            std::string::npos);
  fs.put("/keys/debian.gpg", "keys");
  EXPECT_EQ(*debian_keyring(fs, env), fs::path("/keys/debian.gpg"));
  util::MapEnvironment bare{{}};
  auto none = debian_keyring(fs, bare);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().hint.find("apt install debian-archive-keyring gpgv"), std::string::npos);
  fs.put("/usr/share/keyrings/debian-archive-keyring.gpg", "keys");
  EXPECT_EQ(*debian_keyring(fs, bare), fs::path("/usr/share/keyrings/debian-archive-keyring.gpg"));
}
