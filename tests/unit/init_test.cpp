// `kbuild init` (usecase/init_project.hpp) through an in-memory filesystem, a scripted git and Hub.

#include <gtest/gtest.h>

#include <algorithm>

#include "kbuild/usecase/init_project.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "support/services_fixture.hpp"

using namespace kbuild;

namespace {

struct InitFixture : fakes::ServicesFixture {
  void SetUp() override {
    launcher.answers["git init -q /p/my-relu"] = {0, "", ""};
    launcher.answers["git -C /p/my-relu symbolic-ref HEAD refs/heads/main"] = {0, "", ""};
    launcher.answers["git -C /p/my-relu add -A"] = {0, "", ""};
  }
  usecase::InitRequest request(std::vector<std::string> backends = {"cpu", "cuda"}) const {
    usecase::InitRequest r;
    r.name = "my-relu";
    r.target = "/p/my-relu";
    r.backends = std::move(backends);
    r.lock = false;  // locking resolves through pip and Debian's indices: LockIsStagedOrItsFailureSaid
    return r;
  }
  bool wrote(const usecase::InitOutcome& outcome, const std::string& rel) const {
    return std::find(outcome.files.begin(), outcome.files.end(), rel) != outcome.files.end() &&
           fs.has("/p/my-relu/" + rel);
  }
};

}  // namespace

TEST_F(InitFixture, AProjectWithBothBackendsTheWorkflowAndGit) {
  auto outcome = usecase::init_project(request(), services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(wrote(*outcome, "build.toml"));
  EXPECT_TRUE(wrote(*outcome, "my_relu_cuda/my_relu.cu"));
  EXPECT_TRUE(wrote(*outcome, ".gitignore"));
  EXPECT_TRUE(wrote(*outcome, ".github/workflows/kbuild-my-relu.yml"));
  EXPECT_NE(fs.content("/p/my-relu/.github/workflows/kbuild-my-relu.yml").find("kbuild build . --variant"),
            std::string::npos);
  EXPECT_TRUE(outcome->git_created);
  EXPECT_EQ(launcher.ran.back(), "git -C /p/my-relu add -A");  // the workflow is staged with the rest
  // On `main`, the branch the workflow builds, whatever init.defaultBranch says.
  EXPECT_NE(std::find(launcher.ran.begin(), launcher.ran.end(), "git -C /p/my-relu symbolic-ref HEAD refs/heads/main"),
            launcher.ran.end());
  auto config = usecase::load_kernel(fs, "/p/my-relu", {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->general.backends.size(), 2u);
  EXPECT_EQ(config->kernels.size(), 2u);
}

TEST_F(InitFixture, OneBackendOnly) {
  auto cpu = usecase::init_project(request({"cpu"}), services);
  ASSERT_TRUE(cpu) << cpu.error().message;
  EXPECT_FALSE(fs.has("/p/my-relu/my_relu_cuda/my_relu.cu"));
  auto config = usecase::load_kernel(fs, "/p/my-relu", {});
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->kernels.size(), 1u);
  EXPECT_EQ(config->kernels.front().backend, config::Backend::cpu);
  EXPECT_NE(fs.content("/p/my-relu/tests/test_my_relu.py").find("for b in [\"cpu\"] if"), std::string::npos);

  fs.remove_all("/p/my-relu");
  auto cuda = usecase::init_project(request({"cuda"}), services);
  ASSERT_TRUE(cuda) << cuda.error().message;
  config = usecase::load_kernel(fs, "/p/my-relu", {});
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->kernels.size(), 1u);
  EXPECT_EQ(config->kernels.front().backend, config::Backend::cuda);
  EXPECT_TRUE(fs.has("/p/my-relu/my_relu_cpu/my_relu_cpu.cpp"));  // the CUDA variant's CPU path
}

TEST_F(InitFixture, AnExistingEmptyDirectoryIsFilledNotReplaced) {
  ASSERT_TRUE(fs.make_dirs("/p/my-relu"));  // e.g. `kbuild init . --name my-relu` in a new directory
  auto outcome = usecase::init_project(request(), services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(fs.has("/p/my-relu/build.toml"));
  auto siblings = fs.list_dir("/p");
  ASSERT_TRUE(siblings);
  EXPECT_EQ(siblings->size(), 1u);  // no staging left beside it
}

TEST_F(InitFixture, RefusalsWriteNothing) {
  for (auto bad : {request({"rocm"}), request({})}) {
    auto refused = usecase::init_project(bad, services);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ExitCode::usage);
  }
  auto name = request();
  name.name = "My_Relu";
  EXPECT_EQ(usecase::init_project(name, services).error().code, ExitCode::usage);
  auto repo = request();
  repo.repo_id = "org/name\"\nx = 1";  // would be pasted into build.toml
  EXPECT_EQ(usecase::init_project(repo, services).error().code, ExitCode::usage);
  fs.put("/p/my-relu/keep.txt", "mine");
  auto occupied = usecase::init_project(request(), services);
  ASSERT_FALSE(occupied);
  EXPECT_NE(occupied.error().message.find("not empty; nothing was written"), std::string::npos);
  EXPECT_EQ(fs.content("/p/my-relu/keep.txt"), "mine");
  EXPECT_FALSE(fs.has("/p/my-relu/build.toml"));
  EXPECT_TRUE(launcher.ran.empty());

  // Without git and CI: no repository, no workflow.
  fs.remove_all("/p/my-relu");
  auto plain = request();
  plain.git = false;
  plain.ci = false;
  auto outcome = usecase::init_project(plain, services);
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(fs.has("/p/my-relu/.github/workflows/kbuild-my-relu.yml"));
  EXPECT_TRUE(launcher.ran.empty());
}

TEST_F(InitFixture, TheOwnerComesFromTheHubTokenWhenNoneIsGiven) {
  http.answer("GET https://huggingface.co/api/whoami-v2", R"({"name": "alice", "type": "user"})");
  auto without_token = usecase::init_project(request(), services);
  ASSERT_TRUE(without_token) << without_token.error().message;
  EXPECT_EQ(without_token->repo_id, "your-org/my-relu");  // no token: nobody is asked
  EXPECT_TRUE(http.requests.empty());

  fs.remove_all("/p/my-relu");
  env.values["HF_TOKEN"] = "hf_0123456789abcdefghij";
  auto owned = usecase::init_project(request(), services);
  ASSERT_TRUE(owned) << owned.error().message;
  EXPECT_EQ(owned->repo_id, "alice/my-relu");
  EXPECT_TRUE(owned->owner_from_token);
  EXPECT_NE(fs.content("/p/my-relu/build.toml").find("repo-id = \"alice/my-relu\""), std::string::npos);
  ASSERT_EQ(http.requests.size(), 1u);
  EXPECT_EQ(http.requests[0].headers.get("Authorization").value_or(""), "Bearer hf_0123456789abcdefghij");

  fs.remove_all("/p/my-relu");
  env.values["HF_HUB_OFFLINE"] = "1";
  auto offline = usecase::init_project(request(), services);
  ASSERT_TRUE(offline);
  EXPECT_EQ(offline->repo_id, "your-org/my-relu");
  EXPECT_EQ(http.requests.size(), 1u);  // offline: not asked

  fs.remove_all("/p/my-relu");
  env.values.erase("HF_HUB_OFFLINE");
  http.answer("GET https://huggingface.co/api/whoami-v2", R"({"name": "../etc"})");  // no namespace
  auto odd = usecase::init_project(request(), services);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->repo_id, "your-org/my-relu");
}

TEST_F(InitFixture, TheLockIsMadeWithTheWorkflowAndItsFailureSaid) {
  auto with_lock = request({"cpu"});
  with_lock.lock = true;
  // Nothing answers pip or Debian's indices here (as offline): the project is made, and the outcome says why
  // there is no lock; git still stages the rest.
  auto outcome = usecase::init_project(with_lock, services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->locked);
  EXPECT_FALSE(outcome->lock_error.empty());
  EXPECT_FALSE(fs.has("/p/my-relu/kbuild.lock"));
  EXPECT_TRUE(fs.has("/p/my-relu/build.toml"));
  EXPECT_EQ(launcher.ran.back(), "git -C /p/my-relu add -A");
  // Without the workflow there is no lock to make (nor is one tried).
  fs.remove_all("/p/my-relu");
  launcher.ran.clear();
  with_lock.ci = false;
  auto no_ci = usecase::init_project(with_lock, services);
  ASSERT_TRUE(no_ci);
  EXPECT_TRUE(no_ci->lock_error.empty());
  for (const auto& command : launcher.ran) EXPECT_EQ(command.find("pip"), std::string::npos) << command;
}
