// Git LFS: the batch and verify endpoints, and the uploads they hand out (one PUT, or parts of a
// multipart upload and its completion). Parts live in Store::upload_dir(token) as <part> and
// <part>.etag until the completion assembles them into a blob.

#include <algorithm>

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/handlers.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

/// The "actions" of an object to upload: one href, or one per part (in "header") for a multipart upload.
Json upload_actions(const RouterOptions& options, const PendingUpload& upload, const std::string& verify) {
  std::string href = options.base_url + "/lfs/upload/" + upload.oid + "?token=" + upload.token;
  Json action = {{"href", href}, {"expires_in", options.upload_ttl_ms / 1000}};
  if (upload.chunk_size > 0) {
    Json header = {{"chunk_size", std::to_string(upload.chunk_size)}};
    std::uint64_t parts = (upload.size + upload.chunk_size - 1) / upload.chunk_size;
    for (std::uint64_t part = 1; part <= parts; ++part)
      header[std::to_string(part)] =
          options.base_url + "/lfs/upload/" + upload.oid + "/" + std::to_string(part) + "?token=" + upload.token;
    action["header"] = header;
  }
  return {{"upload", action}, {"verify", {{"href", verify}}}};
}

std::uint64_t part_count(const PendingUpload& upload) {
  return (upload.size + upload.chunk_size - 1) / upload.chunk_size;
}

std::filesystem::path part_file(const std::filesystem::path& dir, std::uint64_t number) {
  return dir / std::to_string(number);
}

std::filesystem::path etag_file(const std::filesystem::path& dir, std::uint64_t number) {
  return dir / (std::to_string(number) + ".etag");
}

}  // namespace

Outcome<Reply> Handlers::lfs_batch(const Match& m) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(auto objects, parsed(parse_lfs_batch(text)));
  KB_TRY(lift(m_store.expire_uploads(m_c.now)));

  const auto& limits = m_config.limits;
  std::string verify = repo_url(m.id) + ".git/info/lfs/objects/verify";
  Json answers = Json::array();
  for (const auto& object : objects) {
    Json answer = {{"oid", object.oid.value_or("")}, {"size", object.size.value_or(0)}};
    auto reject = [&](std::string message) {
      answer["error"] = {{"code", 422}, {"message", std::move(message)}};
      answers.push_back(answer);
    };
    if (!object.oid || !is_sha256_hex(*object.oid)) {
      reject("oid must be a sha256 (64 lowercase hex)");
      continue;
    }
    if (!object.size || *object.size < 0) {
      reject("size must be a non-negative integer");
      continue;
    }
    auto bytes = static_cast<std::uint64_t>(*object.size);
    if (bytes > limits.max_lfs_object) {
      reject("object is larger than the server's limit of " + std::to_string(limits.max_lfs_object) + " bytes");
      continue;
    }
    if (auto stored = m_store.blob_size(*object.oid)) {
      if (*stored != bytes)
        reject("an object with this oid is stored with another size");
      else
        answers.push_back(answer);  // already stored: no actions, the client skips it
      continue;
    }
    PendingUpload upload{random_hex(16), *object.oid, bytes,
                         bytes >= limits.multipart_chunk ? limits.multipart_chunk : 0,
                         m_c.now + m_options.upload_ttl_ms};
    KB_TRY(lift(m_store.add_upload(upload)));
    answer["authenticated"] = true;
    answer["actions"] = upload_actions(m_options, upload, verify);
    answers.push_back(answer);
  }
  Json body = {{"transfer", "basic"}, {"objects", answers}, {"hash_algo", "sha256"}};
  return json_reply(body, m_c.head, 200, "application/vnd.git-lfs+json");
}

Outcome<Reply> Handlers::lfs_verify(const Match&) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(LfsVerifyRequest request, parsed(parse_lfs_verify(text)));
  auto stored = m_store.blob_size(request.oid);
  if (!stored || static_cast<std::int64_t>(*stored) != request.size)
    return not_found("LFS object " + request.oid + " is not stored");
  return json_reply({{"message", "ok"}}, m_c.head, 200, "application/vnd.git-lfs+json");
}

Outcome<std::optional<PendingUpload>> Handlers::pending_upload(const Match& m) {
  KB_TRY_ASSIGN(auto upload, lift(m_store.find_upload(m_c.param("token").value_or(""), m_c.now)));
  if (upload && upload->oid == m.oid) return upload;
  // A retried request after a success whose answer got lost: the object is there, nothing to do.
  if (!m.part && m_store.blob_size(m.oid)) return std::nullopt;
  return not_found("unknown or expired upload URL; ask the LFS batch endpoint again");
}

// PUT /lfs/upload/{oid}: the whole object at once.
Outcome<Reply> Handlers::upload_object(const Match& m) {
  KB_TRY_ASSIGN(auto upload, pending_upload(m));
  if (!upload) return json_reply(Json::object(), m_c.head);
  if (upload->chunk_size != 0) return bad_request("this upload is multipart: PUT the parts, then POST to complete");
  KB_TRY_ASSIGN(std::filesystem::path file, body_as_temp_file(m_config.limits.max_lfs_object));
  KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(file, m.oid, upload->size)));
  if (check == BlobCheck::wrong_size)
    return bad_request("expected " + std::to_string(upload->size) + " bytes for " + m.oid);
  if (check == BlobCheck::wrong_hash) return bad_request("the uploaded content does not have sha256 " + m.oid);
  KB_TRY(lift(m_store.remove_upload(upload->token)));
  return json_reply(Json::object(), m_c.head);
}

// PUT /lfs/upload/{oid}/{part}: one part of a multipart upload; answers its ETag.
Outcome<Reply> Handlers::upload_part(const Match& m) {
  if (m_c.method != "PUT") return failure(405, "MethodNotAllowed", "parts are uploaded with PUT");
  KB_TRY_ASSIGN(auto upload, pending_upload(m));
  if (!upload) return json_reply(Json::object(), m_c.head);  // (not for parts: pending_upload answers 404)
  if (upload->chunk_size == 0) return bad_request("this upload is a single PUT to its href");
  const std::string& part = *m.part;
  std::uint64_t parts = part_count(*upload), number = 0;
  if (part.empty() || part.size() > 9 || !std::all_of(part.begin(), part.end(), ::isdigit) ||
      (number = std::stoull(part)) < 1 || number > parts)
    return bad_request("part number must be 1 to " + std::to_string(parts));
  std::uint64_t expected = std::min(upload->chunk_size, upload->size - (number - 1) * upload->chunk_size);
  if (m_c.body_size() != expected)
    return bad_request("part " + part + " must have " + std::to_string(expected) + " bytes");
  KB_TRY_ASSIGN(std::filesystem::path file, body_as_temp_file(m_config.limits.max_lfs_object));
  auto etag = util::sha256_file_hex(file);
  std::filesystem::path dir = m_store.upload_dir(upload->token);
  auto moved = move_file(file, part_file(dir, number));
  if (!etag || !moved) return failure(500, "InternalError", "cannot store part " + part);
  (void)write_file(etag_file(dir, number), *etag);  // a missing etag fails the completion
  Reply reply = json_reply(Json::object(), m_c.head);
  reply.response.headers.set("ETag", "\"" + *etag + "\"");
  return reply;
}

// POST /lfs/upload/{oid}: completes a multipart upload with {"oid", "parts": [{"partNumber", "etag"}]}.
Outcome<Reply> Handlers::complete_upload(const Match& m) {
  KB_TRY_ASSIGN(auto upload, pending_upload(m));
  if (!upload) return json_reply(Json::object(), m_c.head);
  if (upload->chunk_size == 0) return bad_request("this upload is a single PUT to its href");
  std::uint64_t parts = part_count(*upload);
  std::filesystem::path dir = m_store.upload_dir(upload->token);
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(MultipartCompletion request, parsed(parse_multipart_completion(text)));
  if (request.oid != m.oid || !request.parts || request.parts->size() != parts)
    return bad_request("completion needs \"oid\" " + m.oid + " and " + std::to_string(parts) + " parts");
  std::vector<std::filesystem::path> files;
  for (std::uint64_t number = 1; number <= parts; ++number) {
    const CompletedPart& entry = (*request.parts)[number - 1];
    std::string etag = entry.etag;
    std::erase(etag, '"');
    std::string expected(util::trim(read_small_file(etag_file(dir, number)).value_or("")));
    if (entry.number != static_cast<std::int64_t>(number) || expected.empty() || etag != expected)
      return bad_request("part " + std::to_string(number) + " is missing or its etag does not match");
    files.push_back(part_file(dir, number));
  }
  std::filesystem::path whole = m_store.temp_path();
  if (!concatenate(files, whole)) return failure(500, "InternalError", "cannot assemble the uploaded parts");
  KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(whole, m.oid, upload->size)));
  if (check != BlobCheck::ok)
    return bad_request("the assembled parts do not have sha256 " + m.oid + " and the announced size");
  KB_TRY(lift(m_store.remove_upload(upload->token)));
  return json_reply(Json::object(), m_c.head);
}

}  // namespace kbuild::server
