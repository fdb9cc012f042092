#include "kbuild/server/object_ids.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {
bool is_lower_hex(std::string_view text, size_t length) {
  return text.size() == length &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
}  // namespace

bool is_commit_oid(std::string_view text) { return is_lower_hex(text, 40); }
bool is_sha256_hex(std::string_view text) { return is_lower_hex(text, 64); }

std::string random_hex(util::Random& random, std::size_t bytes) { return util::to_hex(random.bytes(bytes)); }

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return difference == 0;
}

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

// The SHA-1 of a git object: "<type> <size>\0<body>".
std::string git_object_id(std::string_view type, std::string_view body) {
  util::Hasher hasher(util::Hasher::Algorithm::sha1);
  hasher.update(std::string(type) + " " + std::to_string(body.size()));
  hasher.update(std::string_view("\0", 1));
  hasher.update(body);
  return hasher.finish_hex();
}

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
  std::string id = git_object_id("tree", body);
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
  return git_object_id("commit", text);
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

}  // namespace kbuild::server
