// The registry's Store on SQLite: repos, refs, commits, blobs, uploads, durability and migrations.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <limits>

#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/schema.hpp"
#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::net;
using namespace kbuild::server::test_support;

// ---------------------------------------------------------------------------------------------
// Store with SQLite

TEST_F(StoreTest, CreateRepoTwiceReturnsNothing) {
  auto again = store->create_repo({RepoType::model, "alice", "m"}, false, {"x", "", "system", 1, {}});
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
  EXPECT_FALSE(*store->find_repo({RepoType::kernel, "alice", "m"}));
  EXPECT_EQ(repo.object_id.size(), 24u);
  EXPECT_TRUE(is_commit_oid(main_head));
}

TEST_F(StoreTest, CommitMovesTheRefAndKeepsTheFullFileList) {
  auto outcome = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("a.txt", "A"));
  ASSERT_TRUE(outcome);
  ASSERT_EQ(outcome->status, CasStatus::done);
  EXPECT_EQ(outcome->commit.parent, main_head);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), outcome->commit.oid);
  auto files = *store->files(repo.key, outcome->commit.oid);
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(store->files(repo.key, main_head)->size(), 1u);  // the parent's list is untouched
}

TEST_F(StoreTest, FailedCompareAndSwapLeavesTheRefUnchanged) {
  auto first = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("a.txt", "A"));
  ASSERT_TRUE(first && first->status == CasStatus::done);
  // A second writer that still believes main is at the initial commit.
  auto stale = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("b.txt", "B"));
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, CasStatus::stale);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), first->commit.oid);
  auto missing = store->commit(repo.key, RefKind::branch, "nope", main_head, request_with("b.txt", "B"));
  EXPECT_EQ(missing->status, CasStatus::missing);
}

TEST_F(StoreTest, CrashBeforeTheRefUpdateLeavesNoTrace) {
  store->fail_next_commit_for_testing();
  auto request = request_with("a.txt", "A");
  auto crashed = store->commit(repo.key, RefKind::branch, "main", main_head, request);
  EXPECT_FALSE(crashed);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), main_head);
  // Neither the commit nor its files were kept: the transaction rolled back as a whole.
  Commit would_be{"", main_head, tree_ids(request.files)[""], request.title, "", "alice", 2000};
  EXPECT_FALSE(*store->find_commit(repo.key, commit_oid(would_be)));
  EXPECT_TRUE(store->files(repo.key, commit_oid(would_be))->empty());
  // The store still works afterwards.
  auto retried = store->commit(repo.key, RefKind::branch, "main", main_head, request);
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, CasStatus::done);
  EXPECT_EQ(retried->commit.oid, commit_oid(would_be));
}

TEST_F(StoreTest, RefsAndPullRequests) {
  EXPECT_TRUE(*store->create_ref(repo.key, RefKind::tag, "v1", main_head));
  EXPECT_FALSE(*store->create_ref(repo.key, RefKind::tag, "v1", main_head));
  auto pr1 = store->commit_pull_request(repo.key, main_head, request_with("a", "1"));
  auto pr2 = store->commit_pull_request(repo.key, main_head, request_with("b", "2"));
  ASSERT_TRUE(pr1 && pr2);
  EXPECT_EQ(pr1->first, 1);
  EXPECT_EQ(pr2->first, 2);
  auto refs = *store->list_refs(repo.key);
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].full_name(), "refs/heads/main");
  EXPECT_EQ(refs[1].full_name(), "refs/tags/v1");
  EXPECT_EQ(refs[2].full_name(), "refs/pr/1");
  EXPECT_TRUE(*store->delete_ref(repo.key, RefKind::tag, "v1"));
  EXPECT_FALSE(*store->delete_ref(repo.key, RefKind::tag, "v1"));
}

TEST_F(StoreTest, BlobsAreContentAddressedAndChecked) {
  auto sha = store->put_blob("content");
  ASSERT_TRUE(sha);
  EXPECT_EQ(*sha, util::sha256_hex("content"));
  EXPECT_EQ(store->blob_size(*sha), 7u);
  EXPECT_TRUE(fs::exists(m_root / "blobs" / sha->substr(0, 2) / *sha));
  EXPECT_EQ(*store->read_blob(*sha), "content");
  auto temp = store->temp_path();
  { std::ofstream(temp) << "other"; }
  EXPECT_EQ(*store->adopt_blob(temp, *sha, 5), BlobCheck::wrong_hash);
  EXPECT_FALSE(fs::exists(temp));
  { std::ofstream(temp) << "other"; }
  EXPECT_EQ(*store->adopt_blob(temp, util::sha256_hex("other"), 5), BlobCheck::ok);
  EXPECT_EQ(store->blob_size(util::sha256_hex("other")), 5u);
}

TEST_F(StoreTest, ReopeningKeepsEverything) {
  store.reset();
  auto reopened = Store::open(m_root, g_random);
  ASSERT_TRUE(reopened);
  store = std::move(*reopened);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), main_head);
}

TEST_F(StoreTest, UploadTokensAreFoundByHashAndComparedWhole) {
  std::string token = "0123456789abcdef0123456789abcdef";
  PendingUpload upload{token, "", repo.key, util::sha256_hex("uploaded"), 8, 0, 5000, false};
  ASSERT_TRUE(store->add_upload(upload));
  EXPECT_TRUE(*store->find_upload(token, 1000));
  EXPECT_FALSE(*store->find_upload(token.substr(0, 31) + "0", 1000));
  EXPECT_FALSE(*store->find_upload(token.substr(0, 16), 1000));
  EXPECT_FALSE(*store->find_upload(token, 6000));  // expired
  EXPECT_FALSE(*store->may_use_object(repo.key, upload.oid));
  ASSERT_TRUE(store->finish_upload(upload));
  EXPECT_TRUE(*store->may_use_object(repo.key, upload.oid));
  EXPECT_TRUE((*store->find_upload(token, 1000))->completed);
  auto other = store->create_repo({RepoType::model, "bob", "m"}, false, {"i", "", "system", 1, {}});
  EXPECT_FALSE(*store->may_use_object((*other)->key, upload.oid));
  // Referenced by any commit of the repo is as good.
  ASSERT_TRUE(store->commit(repo.key, RefKind::branch, "main", main_head, request_with("c.txt", "content")));
  EXPECT_TRUE(*store->may_use_object(repo.key, util::sha256_hex("content")));
  EXPECT_TRUE(equal_in_constant_time("abc", "abc"));
  EXPECT_FALSE(equal_in_constant_time("abc", "abd"));
  EXPECT_FALSE(equal_in_constant_time("abc", "abcd"));
}

// ---------------------------------------------------------------------------------------------
// One server per root and port; temporary files swept; durable commits

TEST_F(StoreTest, SweepRemovesStaleTemporaryFilesAndOrphanedParts) {
  using namespace std::chrono_literals;
  auto old_file = store->temp_dir() / "old-spool", new_file = store->temp_dir() / "new-spool";
  { std::ofstream(old_file) << "12345"; }
  { std::ofstream(new_file) << "123"; }
  fs::last_write_time(old_file, fs::file_time_type::clock::now() - 2h);
  PendingUpload live{"feedfacefeedfacefeedfacefeedface",           "",   repo.key, util::sha256_hex("x"), 2048, 1024,
                     std::numeric_limits<std::int64_t>::max() / 2, false};
  ASSERT_TRUE(store->add_upload(live));
  fs::create_directories(store->upload_dir(live));
  { std::ofstream(store->upload_dir(live) / "1") << "part"; }
  auto orphan = m_root / "uploads" / std::string(64, 'e');
  fs::create_directories(orphan);
  { std::ofstream(orphan / "1") << "orphan"; }

  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto report = store->sweep_temporary(now - 3600 * 1000);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->files, 2u);
  EXPECT_EQ(report->bytes, 5u + 6u);
  EXPECT_FALSE(fs::exists(old_file));
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(new_file));
  EXPECT_TRUE(fs::exists(store->upload_dir(live) / "1"));  // a pending upload's parts stay
  EXPECT_EQ(store->sweep_temporary(std::numeric_limits<std::int64_t>::max())->files, 1u);  // at start: all
  EXPECT_FALSE(fs::exists(new_file));
  ASSERT_TRUE(store->expire_uploads(std::numeric_limits<std::int64_t>::max()));
  EXPECT_FALSE(fs::exists(store->upload_dir(live)));  // expired: parts deleted
}

TEST_F(StoreTest, OneServerPerRootAndDurableCommits) {
  ASSERT_TRUE(store->lock_exclusively());
  auto second = Store::open(m_root, g_random);
  ASSERT_TRUE(second);
  auto refused = (*second)->lock_exclusively();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("another kbuild hub serve"), std::string::npos);
  EXPECT_EQ(*store->pragma_for_testing("synchronous"), 2);  // FULL
  EXPECT_EQ(*store->pragma_for_testing("foreign_keys"), 1);
  EXPECT_EQ(*store->pragma_for_testing("user_version"), db::k_schema_version);
  EXPECT_TRUE(fs::exists(m_root / "hub.sqlite-wal"));  // WAL kept
  store.reset();
  EXPECT_TRUE((*second)->lock_exclusively());
}

TEST(StoreMigration, VersionOneDatabasesKeepTheirDataAndGainPullRequests) {
  auto root = fresh_root();
  fs::create_directories(root);
  auto db = db::open(root / "hub.sqlite");
  ASSERT_TRUE(db);
  const std::string first(40, '1'), second(40, '2');
  std::string sql = R"sql(
    CREATE TABLE repos (key INTEGER PRIMARY KEY, type TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
      private INTEGER NOT NULL, object_id TEXT NOT NULL, created_ms INTEGER NOT NULL, UNIQUE (type, namespace, name));
    CREATE TABLE commits (repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
      parent TEXT NOT NULL, tree TEXT NOT NULL, title TEXT NOT NULL, message TEXT NOT NULL, author TEXT NOT NULL,
      time_ms INTEGER NOT NULL, PRIMARY KEY (repo, oid));
    CREATE TABLE files (repo INTEGER NOT NULL, commit_oid TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
      sha256 TEXT NOT NULL, blob_id TEXT NOT NULL, lfs INTEGER NOT NULL, PRIMARY KEY (repo, commit_oid, path),
      FOREIGN KEY (repo, commit_oid) REFERENCES commits(repo, oid) ON DELETE CASCADE);
    CREATE TABLE refs (repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, kind TEXT NOT NULL,
      name TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (repo, kind, name));
    CREATE TABLE uploads (token TEXT PRIMARY KEY, oid TEXT NOT NULL, size INTEGER NOT NULL,
      chunk_size INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
    INSERT INTO repos VALUES (1, 'model', 'alice', 'm', 0, 'aaaaaaaaaaaaaaaaaaaaaaaa', 1000);
    INSERT INTO commits VALUES (1, ')sql" +
                    first + R"sql(', '', 't', 'first', '', 'alice', 1000);
    INSERT INTO commits VALUES (1, ')sql" +
                    second + R"sql(', ')sql" + first + R"sql(', 't', 'a change', '', 'bob', 2000);
    INSERT INTO refs VALUES (1, 'branch', 'main', ')sql" +
                    first + R"sql(');
    INSERT INTO refs VALUES (1, 'pr', '1', ')sql" +
                    second + R"sql(');
    INSERT INTO uploads VALUES ('tok', 'oid', 1, 0, 99);
    PRAGMA user_version = 1;)sql";
  ASSERT_TRUE(db::exec(*db, sql.c_str()));
  db::close(*db);
  {
    auto store = Store::open(root, g_random);
    ASSERT_TRUE(store) << store.error().message;
    auto repo = *(*store)->find_repo({RepoType::model, "alice", "m"});
    ASSERT_TRUE(repo);
    EXPECT_EQ(*(*store)->find_ref(repo->key, RefKind::branch, "main"), first);
    auto discussions = *(*store)->list_discussions(repo->key);
    ASSERT_EQ(discussions.size(), 1u);
    EXPECT_EQ(discussions[0].num, 1);
    EXPECT_TRUE(discussions[0].is_pr);
    EXPECT_EQ(discussions[0].title, "a change");
    EXPECT_EQ(discussions[0].base, first);
    EXPECT_EQ(discussions[0].status, DiscussionStatus::open);
    EXPECT_EQ(*(*store)->pragma_for_testing("user_version"), db::k_schema_version);
    EXPECT_TRUE((*store)->files(repo->key, second)->empty());  // no file rows: an empty tree
  }
  fs::remove_all(root);
}

namespace {
std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST(StoreMigration, VersionTwoFileListsBecomeTreesAndUploadTokensAreKeptHashedOnly) {
  auto root = fresh_root();
  fs::create_directories(root);
  const std::string token = "5ec7e75ec7e75ec7e75ec7e75ec7e75e";  // as v2 stored it: in plain text
  FileMap files;
  for (auto entry : {regular_entry("README.md", "hello"), regular_entry("build/a/x.py", "x"),
                     lfs_entry("build/a/lib.so", util::sha256_hex("lib"), 3), regular_entry("build/b/y.py", "y")})
    files.emplace(entry.path, entry);
  const std::string commit(40, 'c');
  {
    auto db = db::open(root / "hub.sqlite");
    ASSERT_TRUE(db);
    ASSERT_TRUE(db::init_schema(*db, root / "hub.sqlite", 2));
    std::string sql =
        "INSERT INTO repos VALUES (1, 'model', 'alice', 'm', 1, 'aaaaaaaaaaaaaaaaaaaaaaaa', 1000);"
        "INSERT INTO commits VALUES (1, '" +
        commit + "', '', '" + tree_ids(files)[""] +
        "', 'first', '', 'alice', 1000);"
        "INSERT INTO refs VALUES (1, 'branch', 'main', '" +
        commit +
        "');"
        "INSERT INTO uploads VALUES ('" +
        token + "', '" + util::sha256_hex(token) + "', 1, '" + util::sha256_hex("part") +
        "', 2048, 1024, 9000000000000, 0);";
    for (const auto& [path, e] : files)
      sql += "INSERT INTO files VALUES (1, '" + commit + "', '" + path + "', " + std::to_string(e.size) + ", '" +
             e.sha256 + "', '" + e.blob_id + "', " + (e.lfs ? "1" : "0") + ");";
    ASSERT_TRUE(db::exec(*db, sql.c_str()));
    db::close(*db);
  }
  ASSERT_NE(file_bytes(root / "hub.sqlite").find(token), std::string::npos);  // the fixture holds it
  {
    auto store = Store::open(root, g_random);
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ(*(*store)->pragma_for_testing("user_version"), 3);
    auto migrated = *(*store)->files(1, commit);
    ASSERT_EQ(migrated.size(), files.size());
    for (const auto& [path, e] : files) {
      EXPECT_EQ(migrated[path].blob_id, e.blob_id) << path;
      EXPECT_EQ(migrated[path].sha256, e.sha256) << path;
      EXPECT_EQ(migrated[path].lfs, e.lfs) << path;
    }
    EXPECT_TRUE(*(*store)->may_use_object(1, util::sha256_hex("lib")));  // referenced by a commit
    auto upload = *(*store)->find_upload(token, 1000);
    ASSERT_TRUE(upload);  // the URL handed out before the upgrade still works
    EXPECT_EQ(upload->id, util::sha256_hex(token));
    EXPECT_EQ((*store)->upload_dir(*upload), root / "uploads" / util::sha256_hex(token));  // its parts stay
    // A resumption hands out another token for the same upload.
    auto resumed = *(*store)->resume_upload(1, upload->oid, 2048, 1024, 1000, 9000000000000);
    ASSERT_TRUE(resumed);
    EXPECT_EQ(resumed->id, upload->id);
    EXPECT_NE(resumed->token, token);
    EXPECT_EQ((*(*store)->find_upload(resumed->token, 1000))->id, upload->id);
    EXPECT_EQ((*(*store)->find_upload(token, 1000))->id, upload->id);
    // Tokens issued now are as absent from the files as the migrated one.
    EXPECT_EQ(file_bytes(root / "hub.sqlite").find(resumed->token), std::string::npos);
    EXPECT_EQ(file_bytes(root / "hub.sqlite-wal").find(resumed->token), std::string::npos);
  }
  EXPECT_EQ(file_bytes(root / "hub.sqlite").find(token), std::string::npos);
  EXPECT_EQ(file_bytes(root / "hub.sqlite-wal").find(token), std::string::npos);
  fs::remove_all(root);
}

TEST_F(StoreTest, CommitsShareTheTreesOfUnchangedDirectories) {
  CommitRequest wide = request_with("keep/0.txt", "0");
  for (int i = 1; i < 50; ++i) {
    auto entry = regular_entry("keep/" + std::to_string(i) + ".txt", std::to_string(i));
    wide.files.emplace(entry.path, entry);
  }
  auto first = store->commit(repo.key, RefKind::branch, "main", main_head, wide);
  ASSERT_TRUE(first && first->status == CasStatus::done);
  CommitRequest changed = wide;
  auto edit = regular_entry("edit/one.txt", "new");
  changed.files.emplace(edit.path, edit);
  changed.files.erase("keep/7.txt");
  auto second = store->commit(repo.key, RefKind::branch, "main", first->commit.oid, changed);
  ASSERT_TRUE(second && second->status == CasStatus::done);
  auto before = *store->files(repo.key, first->commit.oid);
  auto after = *store->files(repo.key, second->commit.oid);
  EXPECT_EQ(before.size(), 51u);  // with the fixture's first file
  EXPECT_EQ(after.size(), 51u);
  EXPECT_TRUE(before.contains("keep/7.txt"));
  EXPECT_FALSE(after.contains("keep/7.txt"));
  EXPECT_EQ(after.at("edit/one.txt").blob_id, edit.blob_id);
  EXPECT_EQ(second->commit.tree, tree_ids(changed.files)[""]);
}

TEST(StoreOpen, AnEmptyOrDamagedDatabaseIsRefusedAndKept) {
  for (const std::string& content : {std::string(), std::string("not a database, 42 bytes of something else")}) {
    auto root = fresh_root();
    std::filesystem::create_directories(root);
    std::ofstream(root / "hub.sqlite", std::ios::binary) << content;
    auto refused = Store::open(root, g_random);
    ASSERT_FALSE(refused) << content;
    EXPECT_EQ(refused.error().code, ExitCode::usage);
    EXPECT_NE(refused.error().message.find(content.empty() ? "is empty (0 bytes)" : "file is not a database"),
              std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().hint.find("backup"), std::string::npos);
    EXPECT_EQ(std::filesystem::file_size(root / "hub.sqlite"), content.size());  // left as it was
    std::filesystem::remove_all(root);
  }
}
