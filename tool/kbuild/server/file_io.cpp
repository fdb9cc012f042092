#include "kbuild/server/file_io.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace kbuild::server {

namespace fs = std::filesystem;

namespace {
// `result`, after removing `path` when it is an error.
Result<void> removing_on_error(Result<void> result, const fs::path& path) {
  if (!result) {
    std::error_code ec;
    fs::remove(path, ec);
  }
  return result;
}

Result<void> copy_slice_to(const fs::path& source, std::uint64_t offset, std::uint64_t length,
                           const fs::path& destination) {
  std::ifstream in(source, std::ios::binary);
  if (!in) return fail("cannot read " + source.string());
  in.seekg(static_cast<std::streamoff>(offset));
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  if (!out) return fail("cannot write " + destination.string());
  std::vector<char> buffer(1 << 20);
  while (length > 0) {
    auto chunk = static_cast<std::streamsize>(std::min<std::uint64_t>(length, buffer.size()));
    in.read(buffer.data(), chunk);
    if (in.gcount() != chunk) return fail("short read from " + source.string());
    out.write(buffer.data(), chunk);
    length -= static_cast<std::uint64_t>(chunk);
  }
  out.close();
  if (!out) return fail("cannot write " + destination.string());
  return {};
}

Result<void> concatenate_to(const std::vector<fs::path>& parts, const fs::path& destination) {
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  for (const auto& part : parts) {
    if (!out) break;
    std::ifstream in(part, std::ios::binary);
    out << in.rdbuf();
  }
  out.close();
  if (!out) return fail("cannot write " + destination.string());
  return {};
}
}  // namespace

std::expected<std::string, ReadFailure> read_slice(const fs::path& path, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(ReadFailure::cannot_open);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string content(length, '\0');
  in.read(content.data(), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in.gcount()) != length) return std::unexpected(ReadFailure::short_read);
  return content;
}

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return content;
}

Result<void> write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  return removing_on_error(out ? Result<void>() : fail("cannot write " + path.string()), path);
}

Result<void> copy_slice(const fs::path& source, std::uint64_t offset, std::uint64_t length,
                        const fs::path& destination) {
  return removing_on_error(copy_slice_to(source, offset, length, destination), destination);
}

Result<void> concatenate(const std::vector<fs::path>& parts, const fs::path& destination) {
  return removing_on_error(concatenate_to(parts, destination), destination);
}

Result<void> move_file(const fs::path& file, const fs::path& destination) {
  std::error_code ec;
  fs::create_directories(destination.parent_path(), ec);
  fs::rename(file, destination, ec);
  if (ec) return fail("cannot move " + file.string() + " to " + destination.string() + ": " + ec.message());
  return {};
}

}  // namespace kbuild::server
