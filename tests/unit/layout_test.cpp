#include <gtest/gtest.h>

#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/install.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/templates.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild;
using namespace kbuild::layout;

TEST(Digest, KnownAnswer) { EXPECT_EQ(digest_value("hello world"), "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="); }

TEST(Digest, ExclusionsFollowTheSpec) {
  EXPECT_FALSE(is_digested("metadata.json"));
  EXPECT_FALSE(is_digested("metadata.json.sigstore"));
  EXPECT_TRUE(is_digested("sub/metadata.json"));  // only the top-level one is excluded
  EXPECT_FALSE(is_digested("__pycache__/x.cpython-311.pyc"));
  EXPECT_FALSE(is_digested("a/__pycache__/notes.txt"));
  EXPECT_FALSE(is_digested("stale.pyc"));
  EXPECT_TRUE(is_digested("_ops.py"));
}

TEST(Digest, HashesAVariantDirectorySortedByPath) {
  fakes::MemFileSystem fs;
  fs.put("/v/b.py", "hello world");
  fs.put("/v/a/x.json", "");
  fs.put("/v/metadata.json", "{}");
  fs.put("/v/__pycache__/b.cpython-311.pyc", "junk");
  auto digest = hash_variant_dir(fs, "/v");
  ASSERT_TRUE(digest);
  ASSERT_EQ(digest->size(), 2u);
  EXPECT_EQ(digest->begin()->first, "a/x.json");
  EXPECT_EQ(digest->at("a/x.json"), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");  // empty file
  EXPECT_EQ(digest->at("b.py"), "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
}

TEST(Metadata, SerialisesInKernelBuilderOrder) {
  Metadata m;
  m.name = "img2gray";
  m.id = "_img2gray_cuda_abc1234";
  m.version = 1;
  m.license = "Apache-2.0";
  m.backend = config::Backend::cuda;
  m.archs = {"10.0", "9.0"};
  m.digest = Digest{{"_ops.py", "AAAA"}};
  m.builder_version = "kbuild/0.1.0";
  m.kernel = GitProvenance{std::string(40, 'a'), false};
  EXPECT_EQ(m.to_json(), R"({
  "name": "img2gray",
  "id": "_img2gray_cuda_abc1234",
  "version": 1,
  "license": "Apache-2.0",
  "python-depends": [],
  "kernel-depends": [],
  "backend": {
    "type": "cuda",
    "archs": [
      "10.0",
      "9.0"
    ]
  },
  "digest": {
    "algorithm": "sha256",
    "files": {
      "_ops.py": "AAAA"
    }
  },
  "provenance": {
    "kernel-builder": {
      "version": "kbuild/0.1.0"
    },
    "kernel": {
      "commit": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "dirty": false
    }
  }
}
)");
  auto parsed = Metadata::parse(m.to_json());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->to_json(), m.to_json());
}

TEST(Metadata, RejectsIncompleteFiles) {
  EXPECT_FALSE(Metadata::parse("{\"name\": \"x\"}"));
  EXPECT_FALSE(Metadata::parse("not json"));
}

TEST(Metadata, RefusesWhatTheKernelsPackageRefuses) {
  auto with = [](const std::string& version, const std::string& depends, bool license = true) {
    return R"({"name":"k","id":"_k_cpu_x","version":)" + version + (license ? R"(,"license":"MIT")" : "") +
           R"(,"python-depends":[],"kernel-depends":)" + depends + R"(,"backend":{"type":"cpu"}})";
  };
  EXPECT_TRUE(Metadata::parse(with("1", R"([{"repo-id":"org/a","version":2},{"repo-id":"org/b","revision":"r"}])")));
  auto float_version = Metadata::parse(with("1.0", "[]"));
  ASSERT_FALSE(float_version);
  EXPECT_NE(float_version.error().message.find("non-negative integer (at most 10^9), not 1.0"), std::string::npos);
  EXPECT_FALSE(Metadata::parse(with("18446744073709551615", "[]")));
  EXPECT_FALSE(Metadata::parse(with("-1", "[]")));
  auto no_license = Metadata::parse(with("1", "[]", false));  // license is required
  ASSERT_FALSE(no_license);
  // In words, not the JSON library's ("[json.exception.out_of_range.403] key 'license' not found").
  EXPECT_EQ(no_license.error().message, "invalid metadata.json: the key \"license\" is missing");
  auto wrong_type = Metadata::parse(with("1", "[]").replace(with("1", "[]").find("\"MIT\""), 5, "7"));
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().message, "invalid metadata.json: a value is number where string is expected");
  auto not_json = Metadata::parse("{\"name\": ");
  ASSERT_FALSE(not_json);
  EXPECT_TRUE(not_json.error().message.starts_with("invalid metadata.json: it is not valid JSON ("))
      << not_json.error().message;
  auto unknown = Metadata::parse(with("1", R"([{"repo-id":"org/a","version":2,"branch":"x"}])"));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown key \"branch\""), std::string::npos);
  EXPECT_FALSE(Metadata::parse(with("1", R"([{"repo-id":"org/a","version":2.0}])")));
}

TEST(Templates, RenderSubstitutesAndRejectsUnknownVariables) {
  auto text = render("from . import @OPS_NAME@\nx = \"@OPS_NAME@::op\" # a@b.c", {{"OPS_NAME", "_k_cpu_1"}});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "from . import _k_cpu_1\nx = \"_k_cpu_1::op\" # a@b.c");
  EXPECT_FALSE(render("@MISSING@", {}));
}

TEST(Templates, EmbeddedTemplatesExist) {
  for (const char* path : {"torch/_ops.py.in", "torch/noarch/_ops.py.in", "torch/registration.h"})
    EXPECT_TRUE(find_template(path)) << path;
  auto ops = render_template("torch/_ops.py.in", {{"OPS_NAME", "_img2gray_cuda_abc"}});
  ASSERT_TRUE(ops);
  EXPECT_NE(ops->find("from . import _img2gray_cuda_abc"), std::string::npos);
  EXPECT_NE(ops->find("ops = torch.ops._img2gray_cuda_abc"), std::string::npos);
  EXPECT_NE(ops->find("return f\"_img2gray_cuda_abc::{op_name}\""), std::string::npos);
}

TEST(Install, WritesTheVariantWithDigestAndReplacesOldContent) {
  fakes::MemFileSystem fs;
  fs.put("/k/torch-ext/img2gray/__init__.py", "from ._ops import ops\n");
  fs.put("/k/.kbuild/lib.so", "ELF");
  fs.put("/k/build/v/stale.py", "old");
  InstallSpec spec;
  spec.variant_dir = "/k/build/v";
  spec.package_dir = "/k/torch-ext/img2gray";
  spec.python_files = {"__init__.py"};
  spec.library = "/k/.kbuild/lib.so";
  spec.library_name = "_img2gray_cpu_x.abi3.so";
  spec.ops_py = "ops\n";
  spec.metadata.name = "img2gray";
  spec.metadata.id = "_img2gray_cpu_x";
  ASSERT_TRUE(install_variant(fs, spec));
  EXPECT_FALSE(fs.has("/k/build/v/stale.py"));
  EXPECT_EQ(fs.content("/k/build/v/_img2gray_cpu_x.abi3.so"), "ELF");
  EXPECT_EQ(fs.content("/k/build/v/_ops.py"), "ops\n");
  auto metadata = Metadata::parse(fs.content("/k/build/v/metadata.json"));
  ASSERT_TRUE(metadata && metadata->digest);
  EXPECT_EQ(metadata->digest->size(), 3u);
  EXPECT_EQ(metadata->digest->at("_ops.py"), digest_value("ops\n"));
  // The recorded digest is what hashing the directory gives.
  EXPECT_EQ(*hash_variant_dir(fs, "/k/build/v"), *metadata->digest);
}

TEST(Install, SelectsPythonFiles) {
  std::vector<std::string> files = {"__init__.py", "x.pyi", "conf/a.json", "README", "__pycache__/m.pyc"};
  EXPECT_EQ(select_python_files(files, {"py", "pyi", "json"}, false),
            (std::vector<std::string>{"__init__.py", "conf/a.json"}));
  EXPECT_EQ(select_python_files(files, {"py", "pyi"}, true),
            (std::vector<std::string>{"__init__.py", "x.pyi", "conf/a.json", "README"}));
}
