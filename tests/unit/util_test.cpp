#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/git.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_guard.hpp"
#include "kbuild/util/version.hpp"

using namespace kbuild::util;

TEST(Hash, Sha256KnownAnswers) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("hello world"), "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
}

// FIPS 180 / RFC 1321 vectors for every algorithm, including a message spanning several blocks fed in
// uneven pieces (the streaming path of file hashing).
TEST(Hash, EveryAlgorithmKnownAnswers) {
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hasher(Hasher::Algorithm::sha512).update("abc").finish_hex(),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  const std::string million(1000000, 'a');
  Hasher pieces;
  for (size_t at = 0; at < million.size(); at += 4099) pieces.update(std::string_view(million).substr(at, 4099));
  EXPECT_EQ(pieces.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(Hasher(Hasher::Algorithm::sha256).finish_raw().size(), 32u);
}

TEST(Hash, DigestValueIsBase64OfRawSha256) {
  // The example of the metadata.json digest spec: a file containing "hello world".
  EXPECT_EQ(base64_encode(Hasher().update("hello world").finish_raw()), "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
}

TEST(Hash, GitBlobIds) {
  EXPECT_EQ(git_blob_id(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(git_blob_id("Hello, World!"), "b45ef6fec89518d314f546fd6c3025367b721684");
}

TEST(Hash, Base64RoundTripAndPadding) {
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  std::string decoded;
  ASSERT_TRUE(base64_decode("Zm9vYmFy", decoded));
  EXPECT_EQ(decoded, "foobar");
  ASSERT_TRUE(base64_decode("Zg==", decoded));
  EXPECT_EQ(decoded, "f");
  EXPECT_FALSE(base64_decode("Z*==", decoded));
}

TEST(Hash, Base32LowerNoPad) {
  // RFC 4648 test vectors, lowercased, padding removed.
  EXPECT_EQ(base32_lower_nopad("foobar"), "mzxw6ytboi");
  EXPECT_EQ(base32_lower_nopad("f"), "my");
  EXPECT_EQ(base32_lower_nopad(std::string(8, '\0')).size(), 13u);
}

TEST(Hash, FieldsAreDelimited) {
  EXPECT_NE(Hasher().field("ab").field("c").finish_hex(), Hasher().field("a").field("bc").finish_hex());
}

TEST(Version, ParseAndCompareIgnoringTrailingZeros) {
  auto a = Version::parse("2.10.0"), b = Version::parse("2.10");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_LT(*Version::parse("2.9"), *Version::parse("2.10"));
  EXPECT_EQ(Version::parse("13.0.88")->major_minor(), "13.0");
  EXPECT_FALSE(Version::parse(""));
  EXPECT_FALSE(Version::parse("2."));
  EXPECT_FALSE(Version::parse("2.x"));
  EXPECT_FALSE(Version::parse("-1"));
}

TEST(Strings, ShellQuoting) {
  EXPECT_EQ(shell_join({"g++", "-O3", "a b.cpp", "it's"}), "g++ -O3 'a b.cpp' 'it'\\''s'");
}

TEST(Strings, ClosestMatch) {
  EXPECT_EQ(closest_match("bakends", {"backends", "name", "version"}), "backends");
  EXPECT_EQ(closest_match("zzzzzz", {"backends", "name"}), "");
  EXPECT_EQ(closest_match("cdua", {"cpu", "cuda"}), "cuda");  // a transposition is one edit
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Errors, FileErrorsCarryTheirCause) {
  using kbuild::ErrorKind;
  RealFileSystem fs;
  auto missing = fs.read_file("/nonexistent/kbuild/file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::io);
  EXPECT_EQ(missing.error().os_errno, ENOENT);
  auto rename = fs.rename("/nonexistent/a", "/nonexistent/b");
  ASSERT_FALSE(rename);
  EXPECT_EQ(rename.error().os_errno, ENOENT);
}

// kbuild clean deletes .kbuild (lock file included) while holding the lock: a waiter must end up holding the
// file that is at the path now, or two builds would each believe they own the directory.
TEST(FileLock, WaiterThatGetsAnUnlinkedLockTakesTheNewFile) {
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "kbuild-lock-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern, path = dir / "work" / "lock";
  RealFileSystem real;
  auto first = real.lock_file(path, true);
  ASSERT_TRUE(first && *first);
  std::unique_ptr<FileLock> second;
  std::thread waiter([&] { second = std::move(*real.lock_file(path, true)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the waiter is blocked on the first inode
  ASSERT_TRUE(real.remove_all(dir / "work"));
  first->reset();
  waiter.join();
  ASSERT_TRUE(second);
  struct ::stat now;
  ASSERT_EQ(::stat(path.c_str(), &now), 0) << "the waiter holds a lock on a file that is no longer there";
  auto third = real.lock_file(path, false);
  ASSERT_TRUE(third);
  EXPECT_FALSE(*third) << "the new file is locked by the waiter";
  fs::remove_all(dir);
}

TEST(Log, LevelsAndRedactionOfSecrets) {
  namespace log = kbuild::util::log;
  std::vector<std::string> lines;
  log::capture_for_testing([&](log::Level, const std::string& line) { lines.push_back(line); });
  log::set_level(log::Level::info);
  log::debug("hidden at info");
  log::add_secret("s3cr3t-value");
  log::info("Authorization: Bearer s3cr3t-value");
  log::warn("url ?token=hf_abcdefghijklmnopqrstuvwxyz012345 and hf_short");
  EXPECT_EQ(lines, (std::vector<std::string>{"Authorization: Bearer hf_***", "url ?token=hf_*** and hf_short"}));
  log::set_level(log::Level::off);
  log::error("nothing");
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_EQ(log::level_for(true, false, std::nullopt), log::Level::debug);
  EXPECT_EQ(log::level_for(false, true, std::nullopt), log::Level::warn);
  EXPECT_EQ(log::level_for(true, false, std::string("error")), log::Level::error);
  EXPECT_EQ(log::level_for(false, false, std::string("bogus")), log::Level::info);
  log::capture_for_testing({});
  log::set_level(log::Level::info);
}

TEST(Git, OneStatusGivesTheCommitAndWhetherTheTreeIsDirty) {
  const std::string oid = "0123456789abcdef0123456789abcdef01234567";
  auto clean = kbuild::util::parse_git_status("# branch.oid " + oid + "\n# branch.head main\n");
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->commit, oid);
  EXPECT_FALSE(clean->dirty);
  auto dirty = kbuild::util::parse_git_status("# branch.oid " + oid + "\n1 .M N... 100644 100644 100644 a b f.cu\n");
  ASSERT_TRUE(dirty && dirty->dirty);
  EXPECT_FALSE(kbuild::util::parse_git_status("# branch.oid (initial)\n# branch.head main\n"));  // no commit yet
  EXPECT_FALSE(kbuild::util::parse_git_status("fatal: not a git repository\n"));
}

TEST(TomlGuard, RefusesDeepKeysAndNestingOnlyWhereTheyAre) {
  using kbuild::util::toml_shape_problem;
  std::string deep_key = "[general]\na";
  for (int i = 0; i < 70; ++i) deep_key += ".a";
  deep_key += " = 1\n";
  auto key = toml_shape_problem(deep_key);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->line, 2u);
  EXPECT_NE(key->message.find("dotted key"), std::string::npos);
  std::string deep_array = "x = " + std::string(70, '[') + std::string(70, ']') + "\n";
  auto nesting = toml_shape_problem(deep_array);
  ASSERT_TRUE(nesting);
  EXPECT_NE(nesting->message.find("nested"), std::string::npos);
  std::string deep_header = "[" + std::string("t");
  for (int i = 0; i < 70; ++i) deep_header += ".t";
  EXPECT_TRUE(toml_shape_problem(deep_header + "]\n"));
  // Dots and brackets in values, strings and comments are not key parts or nesting.
  std::string floats = "v = [";
  for (int i = 0; i < 200; ++i) floats += "1.5, ";
  floats += "2.5]\n";
  EXPECT_FALSE(toml_shape_problem(floats));
  EXPECT_FALSE(toml_shape_problem("s = \"" + std::string(200, '.') + std::string(100, '[') + "\"\n"));
  EXPECT_FALSE(toml_shape_problem("m = '''\n" + std::string(200, '.') + "\n[[[[\n'''\nk.a = 1\n"));
  EXPECT_FALSE(toml_shape_problem("# " + std::string(200, '.') + "\n[a.b]\nc = {d.e = 1, f = [1, 2]}\n"));
  EXPECT_FALSE(toml_shape_problem("[[arr.of.tables]]\nx = \"a\\\"b.c\"\n"));
  // Quotes closing a multi-line string with the string's own last quotes; an empty inline table in
  // an array: neither hides what follows, nor turns floats into key parts.
  std::string after_quotes = "a = [\"\"\"x\"\"\"\"]\nb";
  for (int i = 0; i < 70; ++i) after_quotes += ".b";
  EXPECT_TRUE(toml_shape_problem(after_quotes + " = 1\n"));
  std::string empty_table = "a = [{}, [1], ";
  for (int i = 0; i < 100; ++i) empty_table += "1.5, ";
  EXPECT_FALSE(toml_shape_problem(empty_table + "2.5]\n"));
  std::string inline_deep = "x = {a = 1, ";
  for (int i = 0; i < 70; ++i) inline_deep += "b.";
  EXPECT_TRUE(toml_shape_problem(inline_deep + "c = 2}\n"));
}

TEST(Process, ASignalToKbuildStopsTheChildAndWhatItStartedWithinASecond) {
  // A helper that has started a helper of its own, both sleeping: the signal reaches kbuild alone
  // (as `kill PID` does, not the terminal's Ctrl-C to the whole group).
  kbuild::util::install_interrupt_handlers();
  kbuild::util::reset_interrupt_for_testing();
  kbuild::util::RealProcessLauncher launcher;
  const auto marker = std::filesystem::temp_directory_path() / ("kbuild-grandchild-" + std::to_string(::getpid()));
  std::thread signal([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kbuild::util::raise_interrupt_for_testing();
  });
  const auto started = std::chrono::steady_clock::now();
  auto result = launcher.run({"sh", "-c", "sleep 30 & echo $! > " + marker.string() + "; sleep 30; wait"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  signal.join();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, kbuild::ExitCode::interrupted);
  EXPECT_LT(seconds, 1.5);
  std::ifstream in(marker);
  int grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  // A zombie is dead (PID 1 of a container may reap it late).
  auto alive = [](int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string fields;
    std::getline(stat, fields);
    return !fields.empty() && fields.find(") Z ") == std::string::npos;
  };
  for (int i = 0; i < 100 && alive(grandchild); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive(grandchild));  // the helper's own helper went too
  std::filesystem::remove(marker);
  // Nothing more starts once interrupted.
  auto refused = launcher.run({"true"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, kbuild::ExitCode::interrupted);
  kbuild::util::reset_interrupt_for_testing();
}

TEST(Process, TheChdirTrampolineRunsTheProgramInTheDirectoryWithItsArgumentsIntact) {
  // glibc before 2.29 has no posix_spawn_file_actions_addchdir_np: /bin/sh changes directory instead.
  kbuild::util::reset_interrupt_for_testing();
  const auto dir = std::filesystem::temp_directory_path() / ("kbuild chdir $HOME " + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  kbuild::util::RealProcessLauncher launcher;
  auto command =
      kbuild::util::chdir_trampoline("/bin/sh", {"sh", "-c", "pwd; printf '<%s>' \"$@\"", "x", "a b", "$c"}, dir);
  auto result = launcher.run(command);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->out, dir.string() + "\n<a b><$c>");
  // A directory that does not exist is the child's failure, not a run elsewhere.
  auto missing = launcher.run(kbuild::util::chdir_trampoline("/bin/pwd", {"pwd"}, dir / "missing"));
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->exit_code, 0);
  EXPECT_EQ(missing->out, "");
  std::filesystem::remove_all(dir);
}
