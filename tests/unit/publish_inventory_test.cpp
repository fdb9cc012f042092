// What `kbuild publish` uploads (hub/inventory.hpp) and a variant's signature (layout/signature.hpp):
// variants from build/ or from --from directories, checked against their digests, one version and
// one ops id; metadata.json.sigstore judged against metadata.json and carried along.

#include <gtest/gtest.h>

#include <algorithm>

#include "kbuild/hub/inventory.hpp"
#include "kbuild/layout/check.hpp"
#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/signature.hpp"
#include "kbuild/util/hash.hpp"
#include "support/mem_fs.hpp"
#include "support/variants.hpp"

using namespace kbuild;

namespace {

using fakes::put_variant;

// A Sigstore bundle (v0.3 shape) whose message digest is the SHA-256 of `signed_bytes`.
std::string bundle_over(const std::string& signed_bytes) {
  std::string digest = util::base64_encode(util::Hasher().update(signed_bytes).finish_raw());
  return R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
             "verificationMaterial": {"certificate": {"rawBytes": "MIIB"}, "tlogEntries": []},
             "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": ")" +
         digest + R"("}, "signature": "MEUCIQ"}})";
}

const std::string k_cpu = "torch211-cxx11-cpu-x86_64-linux";
const std::string k_cuda = "torch211-cxx11-cu130-x86_64-linux";

}  // namespace

TEST(PublishInventory, BuildDirectoryByDefault) {
  fakes::MemFileSystem fs;
  put_variant(fs, "/k/build/" + k_cpu);
  put_variant(fs, "/k/build/" + k_cuda);
  fs.put("/k/benchmarks/benchmark_relu.py", "# bench");
  auto inventory = hub::inventory_build(fs, "/k");
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_EQ(inventory->variants, (std::vector<std::string>{k_cpu, k_cuda}));
  EXPECT_EQ(inventory->version, 1);
  EXPECT_EQ(inventory->unique_id, "abc1234");
  EXPECT_TRUE(inventory->signed_variants.empty());
  std::vector<std::string> paths;
  for (const auto& file : inventory->files) paths.push_back(file.path);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "build/" + k_cpu + "/metadata.json"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "benchmarks/benchmark_relu.py"), paths.end());
}

TEST(PublishInventory, GathersVariantsFromOtherMachines) {
  fakes::MemFileSystem fs;
  fs.put("/k/build.toml", "");
  put_variant(fs, "/artifacts/runner-1/" + k_cpu);  // a directory of variants
  put_variant(fs, "/artifacts/" + k_cuda);          // a variant directory itself
  put_variant(fs, "/artifacts/runner-2/" + k_cpu);  // the same build again: taken once
  auto inventory =
      hub::inventory_build(fs, "/k", {"/artifacts/runner-1", "/artifacts/" + k_cuda, "/artifacts/runner-2"});
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_EQ(inventory->variants, (std::vector<std::string>{k_cpu, k_cuda}));
  size_t metadata_files = 0;
  for (const auto& file : inventory->files) metadata_files += file.path.ends_with("/metadata.json");
  EXPECT_EQ(metadata_files, 2u);
  EXPECT_EQ(hub::missing_variants({k_cpu, k_cuda, "torch210-cxx11-cpu-x86_64-linux"}, inventory->variants),
            std::vector<std::string>{"torch210-cxx11-cpu-x86_64-linux"});
}

TEST(PublishInventory, RefusesWhatDoesNotMakeOneRelease) {
  auto refused = [](const std::function<void(fakes::MemFileSystem&)>& setup,
                    const std::vector<std::filesystem::path>& from) {
    fakes::MemFileSystem fs;
    setup(fs);
    auto inventory = hub::inventory_build(fs, "/k", from);
    EXPECT_FALSE(inventory);
    if (inventory) return std::string();
    EXPECT_EQ(inventory.error().code, ExitCode::usage);
    return inventory.error().message;
  };
  // One variant gathered twice from different builds.
  auto twice = refused(
      [](auto& fs) {
        put_variant(fs, "/a/" + k_cpu);
        put_variant(fs, "/b/" + k_cpu, "abc1234", 1, "other ELF");
      },
      {"/a", "/b"});
  EXPECT_NE(twice.find("variant " + k_cpu + " is in /a/" + k_cpu + " and /b/" + k_cpu), std::string::npos) << twice;
  // Built from different sources (ops ids differ), or for different kernel versions.
  auto sources = refused(
      [](auto& fs) {
        put_variant(fs, "/a/" + k_cpu, "abc1234");
        put_variant(fs, "/a/" + k_cuda, "def5678");
      },
      {"/a"});
  EXPECT_NE(sources.find("built from different sources: their ops ids differ (abc1234: " + k_cpu +
                         "; def5678: " + k_cuda + ")"),
            std::string::npos)
      << sources;
  auto versions = refused(
      [](auto& fs) {
        put_variant(fs, "/a/" + k_cpu, "abc1234", 1);
        put_variant(fs, "/a/" + k_cuda, "abc1234", 2);
      },
      {"/a"});
  EXPECT_NE(versions.find("different kernel versions"), std::string::npos) << versions;
  // A file changed after the build; a directory name that is no variant name; nothing at all.
  auto modified = refused(
      [](auto& fs) {
        put_variant(fs, "/a/" + k_cpu);
        fs.put("/a/" + k_cpu + "/_ops.py", "changed");
      },
      {"/a"});
  EXPECT_NE(modified.find("does not match the digest"), std::string::npos) << modified;
  auto renamed = refused(
      [](auto& fs) {
        put_variant(fs, "/a/" + k_cpu);
        (void)fs.rename("/a/" + k_cpu, "/a/" + k_cuda);
      },
      {"/a/"});  // (a trailing separator names the same directory)
  EXPECT_NE(renamed.find("/a/" + k_cuda + ": the directory name does not match its metadata.json (backend cpu)"),
            std::string::npos)
      << renamed;
  auto odd_name = refused([](auto& fs) { put_variant(fs, "/a/bad name"); }, {"/a"});
  EXPECT_NE(odd_name.find("\"bad name\" (in /a) is not a variant name"), std::string::npos) << odd_name;
  auto empty = refused([](auto& fs) { fs.put("/a/readme.txt", ""); }, {"/a"});
  EXPECT_NE(empty.find("/a holds no variants"), std::string::npos) << empty;
}

TEST(PublishInventory, ASignatureTravelsWithItsVariantAndMustSignItsMetadata) {
  fakes::MemFileSystem fs;
  put_variant(fs, "/k/build/" + k_cpu);
  put_variant(fs, "/k/build/" + k_cuda);
  fs.put("/k/build/" + k_cpu + "/metadata.json.sigstore",
         bundle_over(fs.content("/k/build/" + k_cpu + "/metadata.json")));
  auto inventory = hub::inventory_build(fs, "/k");
  ASSERT_TRUE(inventory) << inventory.error().message;  // the bundle is outside the digest
  EXPECT_EQ(inventory->signed_variants, std::vector<std::string>{k_cpu});
  bool carried = false;
  for (const auto& file : inventory->files)
    carried = carried || file.path == "build/" + k_cpu + "/metadata.json.sigstore";
  EXPECT_TRUE(carried);
  for (const auto& issue :
       layout::check_variant(fs, "/k/build/" + k_cpu, {"none", std::nullopt}))  // (the fake library is no ELF)
    EXPECT_TRUE(issue.where.ends_with(".abi3.so")) << issue.where << ": " << issue.message;
  EXPECT_EQ(layout::signature_status(fs, "/k/build/" + k_cpu).state, layout::SignatureStatus::State::signed_variant);

  // Signed, then the metadata changed: refused by publish, an error for check.
  fs.put("/k/build/" + k_cuda + "/metadata.json.sigstore", bundle_over("{\"other\": \"metadata\"}"));
  auto refused = hub::inventory_build(fs, "/k");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(k_cuda + "/metadata.json.sigstore: metadata.json.sigstore signs other bytes"),
            std::string::npos)
      << refused.error().message;
  bool reported = false;
  for (const auto& issue : layout::check_variant(fs, "/k/build/" + k_cuda, {"none", std::nullopt}))
    reported = reported || (issue.error && issue.where == k_cuda + "/metadata.json.sigstore");
  EXPECT_TRUE(reported);
}

TEST(Signature, JudgesTheBundleAgainstTheMetadataBytes) {
  using State = layout::SignatureStatus::State;
  const std::string metadata = R"({"name": "relu"})";
  EXPECT_EQ(layout::judge_signature(bundle_over(metadata), metadata).state, State::signed_variant);
  EXPECT_EQ(layout::judge_signature(bundle_over(metadata + " "), metadata).state, State::invalid);
  EXPECT_EQ(layout::judge_signature("not json", metadata).state, State::invalid);
  EXPECT_EQ(layout::judge_signature(R"({"mediaType": "application/json"})", metadata).detail,
            "metadata.json.sigstore is not a Sigstore bundle (mediaType \"application/json\")");
  EXPECT_EQ(layout::judge_signature(R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                                        "verificationMaterial": {}, "dsseEnvelope": {}})",
                                    metadata)
                .state,
            State::unchecked);
  std::string sha512 = bundle_over(metadata);
  sha512.replace(sha512.find("SHA2_256"), 8, "SHA2_512");
  EXPECT_EQ(layout::judge_signature(sha512, metadata).state, State::invalid);
  fakes::MemFileSystem fs;
  fs.put("/v/metadata.json", metadata);
  EXPECT_EQ(layout::signature_status(fs, "/v").state, State::unsigned_variant);
  EXPECT_EQ(layout::to_string(State::unsigned_variant), "unsigned");
}
