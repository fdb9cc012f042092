#include "kbuild/server/store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <random>

#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Repo types and names

namespace {
struct RepoTypeNames {
  RepoType type;
  std::string_view name, plural, prefix;
};
constexpr RepoTypeNames k_repo_types[] = {
    {RepoType::model, "model", "models", ""},
    {RepoType::dataset, "dataset", "datasets", "datasets/"},
    {RepoType::space, "space", "spaces", "spaces/"},
    {RepoType::kernel, "kernel", "kernels", "kernels/"},
};
const RepoTypeNames& names_of(RepoType type) { return k_repo_types[static_cast<int>(type)]; }

bool is_lower_hex(std::string_view text, size_t length) {
  return text.size() == length &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
}  // namespace

std::string_view repo_type_name(RepoType type) { return names_of(type).name; }
std::string_view repo_type_plural(RepoType type) { return names_of(type).plural; }
std::string_view repo_type_url_prefix(RepoType type) { return names_of(type).prefix; }

std::optional<RepoType> parse_repo_type(std::string_view name) {
  for (const auto& entry : k_repo_types)
    if (entry.name == name) return entry.type;
  return std::nullopt;
}

std::optional<RepoType> parse_repo_type_plural(std::string_view plural) {
  for (const auto& entry : k_repo_types)
    if (entry.plural == plural) return entry.type;
  return std::nullopt;
}

bool is_commit_oid(std::string_view text) { return is_lower_hex(text, 40); }
bool is_sha256_hex(std::string_view text) { return is_lower_hex(text, 64); }

// ---------------------------------------------------------------------------------------------
// Git objects

std::string lfs_pointer(std::string_view sha256, std::uint64_t size) {
  return "version https://git-lfs.github.com/spec/v1\noid sha256:" + std::string(sha256) + "\nsize " +
         std::to_string(size) + "\n";
}

FileEntry regular_entry(std::string path, std::string_view content) {
  return {std::move(path), content.size(), util::sha256_hex(content), util::git_blob_id(content), false};
}

FileEntry lfs_entry(std::string path, std::string sha256, std::uint64_t size) {
  std::string blob = util::git_blob_id(lfs_pointer(sha256, size));
  return {std::move(path), size, std::move(sha256), std::move(blob), true};
}

namespace {
struct TreeNode {
  std::map<std::string, TreeNode> dirs;
  std::map<std::string, const FileEntry*> files;
};

// Computes the tree object id of `node` (and, recursively, of its subdirectories, stored in `out`).
std::string hash_tree(const TreeNode& node, const std::string& path, std::map<std::string, std::string>& out) {
  struct Item {
    std::string sort_key;  // git compares a directory's name as if it ended in '/'
    std::string mode, name, raw_id;
  };
  std::vector<Item> items;
  for (const auto& [name, child] : node.dirs) {
    std::string id = hash_tree(child, path.empty() ? name : path + "/" + name, out);
    std::string raw;
    util::from_hex(id, raw);
    items.push_back({name + "/", "40000", name, std::move(raw)});
  }
  for (const auto& [name, entry] : node.files) {
    std::string raw;
    util::from_hex(entry->blob_id, raw);
    items.push_back({name, "100644", name, std::move(raw)});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.sort_key < b.sort_key; });
  std::string body;
  for (const auto& item : items) {
    body += item.mode;
    body += ' ';
    body += item.name;
    body += '\0';
    body += item.raw_id;
  }
  util::Hasher hasher(util::Hasher::Algorithm::sha1);
  hasher.update("tree " + std::to_string(body.size()));
  hasher.update(std::string_view("\0", 1));
  hasher.update(body);
  std::string id = hasher.finish_hex();
  out[path] = id;
  return id;
}
}  // namespace

std::map<std::string, std::string> tree_ids(const FileMap& files) {
  TreeNode root;
  for (const auto& [path, entry] : files) {
    auto parts = util::split(path, '/');
    TreeNode* node = &root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) node = &node->dirs[parts[i]];
    node->files[parts.back()] = &entry;
  }
  std::map<std::string, std::string> out;
  hash_tree(root, "", out);
  return out;
}

std::string commit_oid(const Commit& commit) {
  std::string signature = commit.author + " <" + commit.author + "@users.noreply.kbuild> " +
                          std::to_string(commit.time_ms / 1000) + " +0000";
  std::string text = "tree " + commit.tree + "\n";
  if (!commit.parent.empty()) text += "parent " + commit.parent + "\n";
  text += "author " + signature + "\ncommitter " + signature + "\n\n" + commit.title + "\n";
  if (!commit.message.empty()) text += "\n" + commit.message + "\n";
  util::Hasher hasher(util::Hasher::Algorithm::sha1);
  hasher.update("commit " + std::to_string(text.size()));
  hasher.update(std::string_view("\0", 1));
  hasher.update(text);
  return hasher.finish_hex();
}

std::string iso8601(std::int64_t time_ms) {
  std::time_t seconds = static_cast<std::time_t>(time_ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(time_ms % 1000));
  return std::string(buffer) + millis;
}

// ---------------------------------------------------------------------------------------------
// Pattern matching

namespace {

// Matches a "[...]" class starting at p[pi] == '['; sets `next` to the index after ']'. A malformed
// class (no closing bracket) matches nothing.
bool match_class(std::string_view p, size_t pi, char c, size_t& next) {
  size_t i = pi + 1;
  bool negate = i < p.size() && (p[i] == '!' || p[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  while (i < p.size() && (p[i] != ']' || first)) {
    first = false;
    char lo = p[i];
    if (lo == '\\' && i + 1 < p.size()) lo = p[++i];
    char hi = lo;
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      hi = p[i + 2];
      if (hi == '\\' && i + 3 < p.size()) hi = p[++i + 2];
      i += 2;
    }
    if (c >= lo && c <= hi) matched = true;
    ++i;
  }
  if (i >= p.size()) return false;
  next = i + 1;
  return matched != negate;
}

bool wildmatch_at(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0;
  while (pi < p.size()) {
    char c = p[pi];
    if (c == '*') {
      bool is_double = pi + 1 < p.size() && p[pi + 1] == '*';
      bool starts_component = pi == 0 || p[pi - 1] == '/';
      size_t after = pi + 2;
      if (is_double && starts_component && (after == p.size() || p[after] == '/')) {
        if (after == p.size()) return true;  // "a/**" or "**": everything below
        std::string_view rest = p.substr(after + 1);
        if (wildmatch_at(rest, t.substr(ti))) return true;  // "**/" as zero directories
        for (size_t k = ti; k < t.size(); ++k)
          if (t[k] == '/' && wildmatch_at(rest, t.substr(k + 1))) return true;
        return false;
      }
      while (pi < p.size() && p[pi] == '*') ++pi;
      std::string_view rest = p.substr(pi);
      for (size_t k = ti;; ++k) {
        if (wildmatch_at(rest, t.substr(k))) return true;
        if (k >= t.size() || t[k] == '/') return false;
      }
    }
    if (ti >= t.size()) return false;
    if (c == '?') {
      if (t[ti] == '/') return false;
      ++pi, ++ti;
      continue;
    }
    if (c == '[') {
      size_t next = 0;
      if (t[ti] == '/' || !match_class(p, pi, t[ti], next)) return false;
      pi = next, ++ti;
      continue;
    }
    if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
    if (c != t[ti]) return false;
    ++pi, ++ti;
  }
  return ti == t.size();
}

std::string_view basename_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Splits a .gitattributes/.gitignore text into trimmed, non-comment lines.
std::vector<std::string> pattern_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (auto& line : util::split(text, '\n')) {
    std::string_view trimmed = util::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    lines.emplace_back(trimmed);
  }
  return lines;
}

}  // namespace

bool wildmatch(std::string_view pattern, std::string_view path) { return wildmatch_at(pattern, path); }

GitAttributes::GitAttributes(std::string_view text) {
  for (const auto& line : pattern_lines(text)) {
    std::vector<std::string> words;
    for (auto& word : util::split(line, ' '))
      for (auto& piece : util::split(word, '\t'))
        if (!piece.empty()) words.push_back(piece);
    if (words.size() < 2) continue;
    std::optional<bool> lfs;
    for (size_t i = 1; i < words.size(); ++i) {
      const auto& attribute = words[i];
      if (attribute == "filter=lfs")
        lfs = true;
      else if (attribute == "-filter" || attribute == "!filter" || attribute.starts_with("filter="))
        lfs = false;
    }
    if (!lfs) continue;
    std::string pattern = words[0];
    if (pattern.starts_with("/")) pattern.erase(0, 1);
    m_rules.push_back({std::move(pattern), *lfs});
  }
}

bool GitAttributes::is_lfs(std::string_view path) const {
  bool lfs = false;
  for (const auto& rule : m_rules) {
    bool has_slash = rule.pattern.find('/') != std::string::npos;
    if (wildmatch(rule.pattern, has_slash ? path : basename_of(path))) lfs = rule.lfs;
  }
  return lfs;
}

GitIgnore::GitIgnore(std::string_view text) {
  for (auto line : pattern_lines(text)) {
    Rule rule;
    if (line.starts_with("!")) {
      rule.negated = true;
      line.erase(0, 1);
    }
    if (line.ends_with("/")) {
      rule.directory_only = true;
      line.pop_back();
    }
    if (line.starts_with("/")) {
      rule.anchored = true;
      line.erase(0, 1);
    }
    if (line.find('/') != std::string::npos) rule.anchored = true;
    if (line.empty()) continue;
    rule.pattern = std::move(line);
    m_rules.push_back(std::move(rule));
  }
}

std::optional<bool> GitIgnore::match(std::string_view path, bool is_directory) const {
  std::optional<bool> ignored;
  for (const auto& rule : m_rules) {
    if (rule.directory_only && !is_directory) continue;
    if (wildmatch(rule.pattern, rule.anchored ? path : basename_of(path))) ignored = !rule.negated;
  }
  return ignored;
}

bool GitIgnore::is_ignored(std::string_view path) const {
  if (m_rules.empty()) return false;
  for (size_t slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1))
    if (match(path.substr(0, slash), true).value_or(false)) return true;
  return match(path, false).value_or(false);
}

bool use_lfs(const GitAttributes& attributes, std::string_view path, std::uint64_t size, std::string_view sample) {
  if (size == 0) return false;
  if (attributes.is_lfs(path)) return true;
  if (sample.substr(0, 512).find('\0') != std::string_view::npos) return true;
  return size >= k_lfs_size_threshold;
}

std::string_view default_gitattributes() {
  return "*.7z filter=lfs diff=lfs merge=lfs -text\n"
         "*.arrow filter=lfs diff=lfs merge=lfs -text\n"
         "*.bin filter=lfs diff=lfs merge=lfs -text\n"
         "*.bz2 filter=lfs diff=lfs merge=lfs -text\n"
         "*.ckpt filter=lfs diff=lfs merge=lfs -text\n"
         "*.ftz filter=lfs diff=lfs merge=lfs -text\n"
         "*.gz filter=lfs diff=lfs merge=lfs -text\n"
         "*.h5 filter=lfs diff=lfs merge=lfs -text\n"
         "*.joblib filter=lfs diff=lfs merge=lfs -text\n"
         "*.lfs.* filter=lfs diff=lfs merge=lfs -text\n"
         "*.mlmodel filter=lfs diff=lfs merge=lfs -text\n"
         "*.model filter=lfs diff=lfs merge=lfs -text\n"
         "*.msgpack filter=lfs diff=lfs merge=lfs -text\n"
         "*.npy filter=lfs diff=lfs merge=lfs -text\n"
         "*.npz filter=lfs diff=lfs merge=lfs -text\n"
         "*.onnx filter=lfs diff=lfs merge=lfs -text\n"
         "*.ot filter=lfs diff=lfs merge=lfs -text\n"
         "*.parquet filter=lfs diff=lfs merge=lfs -text\n"
         "*.pb filter=lfs diff=lfs merge=lfs -text\n"
         "*.pickle filter=lfs diff=lfs merge=lfs -text\n"
         "*.pkl filter=lfs diff=lfs merge=lfs -text\n"
         "*.pt filter=lfs diff=lfs merge=lfs -text\n"
         "*.pth filter=lfs diff=lfs merge=lfs -text\n"
         "*.rar filter=lfs diff=lfs merge=lfs -text\n"
         "*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
         "saved_model/**/* filter=lfs diff=lfs merge=lfs -text\n"
         "*.tar.* filter=lfs diff=lfs merge=lfs -text\n"
         "*.tar filter=lfs diff=lfs merge=lfs -text\n"
         "*.tflite filter=lfs diff=lfs merge=lfs -text\n"
         "*.tgz filter=lfs diff=lfs merge=lfs -text\n"
         "*.wasm filter=lfs diff=lfs merge=lfs -text\n"
         "*.xz filter=lfs diff=lfs merge=lfs -text\n"
         "*.zip filter=lfs diff=lfs merge=lfs -text\n"
         "*.zst filter=lfs diff=lfs merge=lfs -text\n"
         "*tfevents* filter=lfs diff=lfs merge=lfs -text\n";
}

std::string Ref::full_name() const {
  switch (kind) {
    case RefKind::branch:
      return "refs/heads/" + name;
    case RefKind::tag:
      return "refs/tags/" + name;
    case RefKind::pr:
      return "refs/pr/" + name;
  }
  return name;
}

// ---------------------------------------------------------------------------------------------
// SQLite helpers

namespace {

std::string_view kind_name(RefKind kind) {
  switch (kind) {
    case RefKind::branch:
      return "branch";
    case RefKind::tag:
      return "tag";
    case RefKind::pr:
      return "pr";
  }
  return "branch";
}

std::optional<RefKind> parse_kind(std::string_view name) {
  if (name == "branch") return RefKind::branch;
  if (name == "tag") return RefKind::tag;
  if (name == "pr") return RefKind::pr;
  return std::nullopt;
}

Error db_error(sqlite3* db, std::string_view what) {
  return {ExitCode::failure, "registry database: " + std::string(what) + ": " + sqlite3_errmsg(db),
          "check that the registry root is writable and not corrupted"};
}

// One prepared statement; columns and parameters are 0- and 1-based like SQLite's own API.
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, std::string_view sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK)
      return std::unexpected(db_error(db, "prepare"));
    return Statement(db, stmt);
  }
  Statement(Statement&& other) noexcept : m_db(other.m_db), m_stmt(std::exchange(other.m_stmt, nullptr)) {}
  Statement& operator=(Statement&&) = delete;
  ~Statement() {
    if (m_stmt) sqlite3_finalize(m_stmt);
  }

  Statement& bind(int index, std::string_view text) {
    sqlite3_bind_text(m_stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, std::int64_t value) {
    sqlite3_bind_int64(m_stmt, index, value);
    return *this;
  }
  /// True when a row is available, false when done.
  Result<bool> step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return std::unexpected(db_error(m_db, "step"));
  }
  Result<void> run() {
    KB_TRY_ASSIGN(bool row, step());
    (void)row;
    return {};
  }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  std::string text(int column) const {
    const unsigned char* value = sqlite3_column_text(m_stmt, column);
    int bytes = sqlite3_column_bytes(m_stmt, column);
    return value ? std::string(reinterpret_cast<const char*>(value), static_cast<size_t>(bytes)) : std::string();
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(m_stmt, column); }

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : m_db(db), m_stmt(stmt) {}
  sqlite3* m_db;
  sqlite3_stmt* m_stmt;
};

Result<void> exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return fail("registry database: " + text);
  }
  return {};
}

// BEGIN IMMEDIATE ... COMMIT; rolls back unless commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> begin(sqlite3* db) {
    KB_TRY(exec(db, "BEGIN IMMEDIATE"));
    return Transaction(db);
  }
  Transaction(Transaction&& other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction() {
    if (m_db) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Result<void> commit() {
    KB_TRY(exec(m_db, "COMMIT"));
    m_db = nullptr;
    return {};
  }

 private:
  explicit Transaction(sqlite3* db) : m_db(db) {}
  sqlite3* m_db;
};

constexpr const char* k_schema = R"sql(
CREATE TABLE IF NOT EXISTS repos (
  key INTEGER PRIMARY KEY, type TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  private INTEGER NOT NULL, object_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
  UNIQUE (type, namespace, name));
CREATE TABLE IF NOT EXISTS commits (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
  parent TEXT NOT NULL, tree TEXT NOT NULL, title TEXT NOT NULL, message TEXT NOT NULL,
  author TEXT NOT NULL, time_ms INTEGER NOT NULL, PRIMARY KEY (repo, oid));
CREATE TABLE IF NOT EXISTS files (
  repo INTEGER NOT NULL, commit_oid TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
  sha256 TEXT NOT NULL, blob_id TEXT NOT NULL, lfs INTEGER NOT NULL,
  PRIMARY KEY (repo, commit_oid, path),
  FOREIGN KEY (repo, commit_oid) REFERENCES commits(repo, oid) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS refs (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, kind TEXT NOT NULL,
  name TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (repo, kind, name));
CREATE TABLE IF NOT EXISTS uploads (
  token TEXT PRIMARY KEY, oid TEXT NOT NULL, size INTEGER NOT NULL, chunk_size INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL);
PRAGMA user_version = 1;
)sql";

std::string random_hex(size_t bytes) {
  thread_local std::random_device device;
  std::string raw;
  while (raw.size() < bytes) {
    auto value = device();
    for (int i = 0; i < 4 && raw.size() < bytes; ++i) raw.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  return util::to_hex(raw);
}

// Writes `content` to a new file and flushes it to disk.
Result<void> write_durably(const fs::path& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create " + path.string());
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return fail("cannot write " + path.string());
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return fail("cannot flush " + path.string());
  return {};
}

Result<void> sync_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + path.string());
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return fail("cannot flush " + path.string());
  return {};
}

// Renames a finished temp file onto its blob path (replacing an identical blob) and syncs the directory.
Result<void> install_blob(const fs::path& temp, const fs::path& destination) {
  std::error_code ec;
  fs::create_directories(destination.parent_path(), ec);
  fs::rename(temp, destination, ec);
  if (ec) {
    fs::remove(temp, ec);
    return fail("cannot store blob " + destination.string() + ": " + ec.message());
  }
  (void)sync_file(destination.parent_path());
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Store

Result<std::unique_ptr<Store>> Store::open(const fs::path& root) {
  std::error_code ec;
  for (const char* dir : {"blobs", "tmp", "uploads"}) {
    fs::create_directories(root / dir, ec);
    if (ec) return fail("cannot create " + (root / dir).string() + ": " + ec.message());
  }
  sqlite3* db = nullptr;
  fs::path database = root / "hub.sqlite";
  if (sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return fail("cannot open " + database.string() + ": " + message);
  }
  std::unique_ptr<Store> store(new Store(root, db));
  KB_TRY(store->init_schema());
  return store;
}

Store::~Store() {
  if (m_db) sqlite3_close(m_db);
}

Result<void> Store::init_schema() {
  sqlite3_busy_timeout(m_db, 10000);
  KB_TRY(exec(m_db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"));
  KB_TRY_ASSIGN(auto version, Statement::prepare(m_db, "PRAGMA user_version"));
  KB_TRY_ASSIGN(bool row, version.step());
  std::int64_t current = row ? version.integer(0) : 0;
  if (current > 1)
    return fail("registry database " + (m_root / "hub.sqlite").string() + " has schema version " +
                    std::to_string(current) + ", newer than this kbuild understands",
                "use a newer kbuild, or another --root");
  return exec(m_db, k_schema);
}

fs::path Store::temp_path() {
  static std::atomic<unsigned> counter{0};
  return temp_dir() / ("t" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + random_hex(4));
}

Result<std::optional<Repo>> Store::find_repo(const RepoId& id) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "SELECT key, private, object_id, created_ms FROM repos "
                                              "WHERE type = ?1 AND namespace = ?2 AND name = ?3"));
  stmt.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<Repo>();
  return std::optional<Repo>(Repo{stmt.integer(0), id, stmt.integer(1) != 0, stmt.text(2), stmt.integer(3)});
}

Result<std::optional<Repo>> Store::create_repo(const RepoId& id, bool is_private, const CommitRequest& initial) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto existing,
                Statement::prepare(m_db, "SELECT 1 FROM repos WHERE type = ?1 AND namespace = ?2 AND name = ?3"));
  existing.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name);
  KB_TRY_ASSIGN(bool exists, existing.step());
  if (exists) return std::optional<Repo>();
  Repo repo{0, id, is_private, random_hex(12), initial.time_ms};
  KB_TRY_ASSIGN(auto insert,
                Statement::prepare(m_db,
                                   "INSERT INTO repos (type, namespace, name, private, object_id, created_ms) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name).bind(4, std::int64_t{is_private});
  insert.bind(5, repo.object_id).bind(6, repo.created_ms);
  KB_TRY(insert.run());
  repo.key = sqlite3_last_insert_rowid(m_db);
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo.key, "", initial));
  KB_TRY_ASSIGN(auto ref, Statement::prepare(
                              m_db, "INSERT INTO refs (repo, kind, name, target) VALUES (?1, 'branch', 'main', ?2)"));
  ref.bind(1, repo.key).bind(2, commit.oid);
  KB_TRY(ref.run());
  KB_TRY(tx.commit());
  return std::optional<Repo>(std::move(repo));
}

Result<bool> Store::delete_repo(const RepoId& id) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db, "DELETE FROM repos WHERE type = ?1 AND namespace = ?2 AND name = ?3"));
  stmt.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name);
  KB_TRY(stmt.run());
  return sqlite3_changes(m_db) > 0;
}

Result<std::map<RepoType, std::int64_t>> Store::count_repos(std::string_view ns) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db, "SELECT type, COUNT(*) FROM repos WHERE namespace = ?1 GROUP BY type"));
  stmt.bind(1, ns);
  std::map<RepoType, std::int64_t> counts;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    if (auto type = parse_repo_type(stmt.text(0))) counts[*type] = stmt.integer(1);
  }
  return counts;
}

Result<std::vector<Ref>> Store::list_refs(std::int64_t repo) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "SELECT kind, name, target FROM refs WHERE repo = ?1"));
  stmt.bind(1, repo);
  std::vector<Ref> refs;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    if (auto kind = parse_kind(stmt.text(0))) refs.push_back({*kind, stmt.text(1), stmt.text(2)});
  }
  std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.kind == RefKind::pr && a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  return refs;
}

Result<std::optional<std::string>> Store::find_ref(std::int64_t repo, RefKind kind, std::string_view name) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db, "SELECT target FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.text(0));
}

Result<bool> Store::create_ref(std::int64_t repo, RefKind kind, std::string_view name, std::string_view target) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(
                               m_db, "INSERT OR IGNORE INTO refs (repo, kind, name, target) VALUES (?1, ?2, ?3, ?4)"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name).bind(4, target);
  KB_TRY(stmt.run());
  return sqlite3_changes(m_db) > 0;
}

Result<bool> Store::delete_ref(std::int64_t repo, RefKind kind, std::string_view name) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "DELETE FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY(stmt.run());
  return sqlite3_changes(m_db) > 0;
}

Result<std::optional<Commit>> Store::find_commit(std::int64_t repo, std::string_view oid) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "SELECT parent, tree, title, message, author, time_ms FROM commits "
                                              "WHERE repo = ?1 AND oid = ?2"));
  stmt.bind(1, repo).bind(2, oid);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<Commit>();
  return std::optional<Commit>(
      Commit{std::string(oid), stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(3), stmt.text(4), stmt.integer(5)});
}

Result<FileMap> Store::files(std::int64_t repo, std::string_view commit_oid) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "SELECT path, size, sha256, blob_id, lfs FROM files "
                                              "WHERE repo = ?1 AND commit_oid = ?2"));
  stmt.bind(1, repo).bind(2, commit_oid);
  FileMap files;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    FileEntry entry{stmt.text(0), static_cast<std::uint64_t>(stmt.integer(1)), stmt.text(2), stmt.text(3),
                    stmt.integer(4) != 0};
    std::string path = entry.path;
    files.emplace(std::move(path), std::move(entry));
  }
  return files;
}

// Caller holds m_mutex and an open transaction.
Result<Commit> Store::insert_commit(std::int64_t repo, std::string_view parent, const CommitRequest& request) {
  Commit commit;
  commit.parent = std::string(parent);
  commit.tree = tree_ids(request.files)[""];
  commit.title = request.title;
  commit.message = request.message;
  commit.author = request.author;
  commit.time_ms = request.time_ms;
  commit.oid = commit_oid(commit);
  // An identical commit object (same tree, parent, author, second and text) may already exist, for
  // example two pull requests with the same content: git would share it too.
  KB_TRY_ASSIGN(
      auto insert,
      Statement::prepare(m_db,
                         "INSERT OR IGNORE INTO commits (repo, oid, parent, tree, title, message, author, time_ms) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  insert.bind(1, repo).bind(2, commit.oid).bind(3, commit.parent).bind(4, commit.tree).bind(5, commit.title);
  insert.bind(6, commit.message).bind(7, commit.author).bind(8, commit.time_ms);
  KB_TRY(insert.run());
  KB_TRY_ASSIGN(auto file,
                Statement::prepare(m_db,
                                   "INSERT OR IGNORE INTO files (repo, commit_oid, path, size, sha256, blob_id, lfs) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  for (const auto& [path, entry] : request.files) {
    file.reset();
    file.bind(1, repo).bind(2, commit.oid).bind(3, path).bind(4, static_cast<std::int64_t>(entry.size));
    file.bind(5, entry.sha256).bind(6, entry.blob_id).bind(7, std::int64_t{entry.lfs});
    KB_TRY(file.run());
  }
  if (std::exchange(m_fail_next_commit, false)) return fail("simulated crash before the ref update");
  return commit;
}

Result<CommitOutcome> Store::commit(std::int64_t repo, RefKind kind, std::string_view name,
                                    std::string_view expected_parent, const CommitRequest& request) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto current,
                Statement::prepare(m_db, "SELECT target FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  current.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY_ASSIGN(bool row, current.step());
  if (!row) return CommitOutcome{CasStatus::missing, {}};
  if (current.text(0) != expected_parent) return CommitOutcome{CasStatus::stale, {}};
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo, expected_parent, request));
  KB_TRY_ASSIGN(auto update,
                Statement::prepare(m_db,
                                   "UPDATE refs SET target = ?1 WHERE repo = ?2 AND kind = ?3 AND name = ?4 "
                                   "AND target = ?5"));
  update.bind(1, commit.oid).bind(2, repo).bind(3, kind_name(kind)).bind(4, name).bind(5, expected_parent);
  KB_TRY(update.run());
  if (sqlite3_changes(m_db) != 1) return CommitOutcome{CasStatus::stale, {}};
  KB_TRY(tx.commit());
  return CommitOutcome{CasStatus::done, std::move(commit)};
}

Result<std::pair<int, Commit>> Store::commit_pull_request(std::int64_t repo, std::string_view parent,
                                                          const CommitRequest& request) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto highest, Statement::prepare(m_db,
                                                 "SELECT COALESCE(MAX(CAST(name AS INTEGER)), 0) FROM refs "
                                                 "WHERE repo = ?1 AND kind = 'pr'"));
  highest.bind(1, repo);
  KB_TRY_ASSIGN(bool row, highest.step());
  int number = static_cast<int>(row ? highest.integer(0) : 0) + 1;
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo, parent, request));
  KB_TRY_ASSIGN(auto ref,
                Statement::prepare(m_db, "INSERT INTO refs (repo, kind, name, target) VALUES (?1, 'pr', ?2, ?3)"));
  ref.bind(1, repo).bind(2, std::to_string(number)).bind(3, commit.oid);
  KB_TRY(ref.run());
  KB_TRY(tx.commit());
  return std::pair<int, Commit>(number, std::move(commit));
}

fs::path Store::blob_path(std::string_view sha256) const {
  std::string name(sha256);
  return m_root / "blobs" / name.substr(0, 2) / name;
}

std::optional<std::uint64_t> Store::blob_size(std::string_view sha256) const {
  if (!is_sha256_hex(sha256)) return std::nullopt;
  std::error_code ec;
  auto size = fs::file_size(blob_path(sha256), ec);
  if (ec) return std::nullopt;
  return size;
}

Result<std::string> Store::put_blob(std::string_view content) {
  std::string sha = util::sha256_hex(content);
  if (blob_size(sha) == content.size()) return sha;
  fs::path temp = temp_path();
  auto written = write_durably(temp, content);
  if (!written) {
    std::error_code ec;
    fs::remove(temp, ec);
    return std::unexpected(written.error());
  }
  KB_TRY(install_blob(temp, blob_path(sha)));
  return sha;
}

Result<BlobCheck> Store::adopt_blob(const fs::path& file, std::string_view sha256, std::uint64_t size) {
  std::error_code ec;
  auto actual_size = fs::file_size(file, ec);
  if (ec || actual_size != size) {
    fs::remove(file, ec);
    return BlobCheck::wrong_size;
  }
  auto hashed = util::sha256_file_hex(file);
  if (!hashed || *hashed != sha256) {
    fs::remove(file, ec);
    return BlobCheck::wrong_hash;
  }
  if (blob_size(sha256) == size) {
    fs::remove(file, ec);
    return BlobCheck::ok;
  }
  KB_TRY(sync_file(file));
  KB_TRY(install_blob(file, blob_path(sha256)));
  return BlobCheck::ok;
}

Result<std::string> Store::read_blob(std::string_view sha256) const {
  fs::path path = blob_path(sha256);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return fail("missing blob " + std::string(sha256) + " in " + m_root.string());
  std::string content;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) content.append(buffer, n);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return fail("cannot read blob " + path.string());
  return content;
}

Result<void> Store::add_upload(const PendingUpload& upload) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "INSERT INTO uploads (token, oid, size, chunk_size, expires_ms) "
                                              "VALUES (?1, ?2, ?3, ?4, ?5)"));
  stmt.bind(1, upload.token).bind(2, upload.oid).bind(3, static_cast<std::int64_t>(upload.size));
  stmt.bind(4, static_cast<std::int64_t>(upload.chunk_size)).bind(5, upload.expires_ms);
  return stmt.run();
}

Result<std::optional<PendingUpload>> Store::find_upload(std::string_view token, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db, "SELECT oid, size, chunk_size, expires_ms FROM uploads WHERE token = ?1"));
  stmt.bind(1, token);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row || stmt.integer(3) < now_ms) return std::optional<PendingUpload>();
  return std::optional<PendingUpload>(PendingUpload{std::string(token), stmt.text(0),
                                                    static_cast<std::uint64_t>(stmt.integer(1)),
                                                    static_cast<std::uint64_t>(stmt.integer(2)), stmt.integer(3)});
}

Result<void> Store::remove_upload(std::string_view token) {
  {
    std::lock_guard lock(m_mutex);
    KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "DELETE FROM uploads WHERE token = ?1"));
    stmt.bind(1, token);
    KB_TRY(stmt.run());
  }
  std::error_code ec;
  fs::remove_all(upload_dir(token), ec);
  return {};
}

Result<void> Store::expire_uploads(std::int64_t now_ms) {
  std::vector<std::string> expired;
  {
    std::lock_guard lock(m_mutex);
    KB_TRY_ASSIGN(auto select, Statement::prepare(m_db, "SELECT token FROM uploads WHERE expires_ms < ?1"));
    select.bind(1, now_ms);
    while (true) {
      KB_TRY_ASSIGN(bool row, select.step());
      if (!row) break;
      expired.push_back(select.text(0));
    }
    KB_TRY_ASSIGN(auto remove, Statement::prepare(m_db, "DELETE FROM uploads WHERE expires_ms < ?1"));
    remove.bind(1, now_ms);
    KB_TRY(remove.run());
  }
  for (const auto& token : expired) {
    std::error_code ec;
    fs::remove_all(upload_dir(token), ec);
  }
  return {};
}

}  // namespace kbuild::server
