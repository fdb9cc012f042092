// Git LFS: the batch and verify endpoints, and the uploads they hand out (one PUT, or parts of a
// multipart upload and its completion). Parts live in Store::upload_dir(upload) as <part> and
// <part>.etag until the completion assembles them into a blob. router.hpp ("Content access") says
// which objects a repo may use without uploading them.

#include <algorithm>

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/handlers.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

/// The "actions" of an object to upload: one href, or one per part (in "header") for a multipart upload.
Json upload_actions(const RouterOptions& options, const PendingUpload& upload, const std::string& verify,
                    std::int64_t now_ms) {
  // `session` names the upload across resumptions (each batch answer mints a fresh token), so that a
  // client can tell the parts it saved for this upload from those of an expired one.
  std::string href =
      options.base_url + "/lfs/upload/" + upload.oid + "?session=" + upload.id.substr(0, 16) + "&token=" + upload.token;
  Json action = {{"href", href}, {"expires_in", std::max<std::int64_t>(0, upload.expires_ms - now_ms) / 1000}};
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

// One object of a batch: no actions when the repo may use it already, otherwise an upload (the same
// one again while an earlier, unfinished upload of this repo is pending: its parts are kept).
Outcome<Json> Handlers::batch_answer(const Repo& repo, const LfsObjectRequest& object, const std::string& verify) {
  const auto& limits = m_config.limits;
  Json answer = {{"oid", object.oid.value_or("")}, {"size", object.size.value_or(0)}};
  auto reject = [&](std::string message) {
    answer["error"] = {{"code", 422}, {"message", std::move(message)}};
    return answer;
  };
  if (!object.oid || !is_sha256_hex(*object.oid)) return reject("oid must be a sha256 (64 lowercase hex)");
  if (!object.size || *object.size < 0) return reject("size must be a non-negative integer");
  auto bytes = static_cast<std::uint64_t>(*object.size);
  if (bytes > limits.max_lfs_object)
    return reject("object is larger than the server's limit of " + std::to_string(limits.max_lfs_object) + " bytes");
  KB_TRY_ASSIGN(bool usable, lift(m_store.may_use_object(repo.key, *object.oid)));
  if (auto stored = usable ? m_store.blob_size(*object.oid) : std::nullopt) {
    if (*stored != bytes) return reject("an object with this oid is stored with another size");
    return answer;  // already there: no actions, the client skips it
  }
  std::uint64_t chunk = bytes >= limits.multipart_chunk ? limits.multipart_chunk : 0;
  std::int64_t expires = m_c.now + m_options.upload_ttl_ms;
  KB_TRY_ASSIGN(auto upload, lift(m_store.resume_upload(repo.key, *object.oid, bytes, chunk, m_c.now, expires)));
  if (!upload) {
    upload = PendingUpload{m_store.random_hex(16), "", repo.key, *object.oid, bytes, chunk, expires, false};
    KB_TRY(lift(m_store.add_upload(*upload)));
  }
  answer["authenticated"] = true;
  answer["actions"] = upload_actions(m_options, *upload, verify, m_c.now);
  return answer;
}

Outcome<Reply> Handlers::lfs_batch(const Match& m) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(auto objects, parsed(parse_lfs_batch(text)));
  KB_TRY(lift(m_store.tidy_up(m_c.now, m_options.upload_ttl_ms)));
  std::string verify = repo_url(m.id) + ".git/info/lfs/objects/verify";
  Json answers = Json::array();
  for (const auto& object : objects) {
    KB_TRY_ASSIGN(Json answer, batch_answer(m.repo, object, verify));
    answers.push_back(std::move(answer));
  }
  Json body = {{"transfer", "basic"}, {"objects", answers}, {"hash_algo", "sha256"}};
  return json_reply(body, m_c.head, 200, "application/vnd.git-lfs+json");
}

Outcome<Reply> Handlers::lfs_verify(const Match& m) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(LfsVerifyRequest request, parsed(parse_lfs_verify(text)));
  KB_TRY_ASSIGN(bool usable, lift(m_store.may_use_object(m.repo.key, request.oid)));
  auto stored = usable ? m_store.blob_size(request.oid) : std::nullopt;
  if (!stored || static_cast<std::int64_t>(*stored) != request.size)
    return not_found("LFS object " + request.oid + " is not stored");
  return json_reply({{"message", "ok"}}, m_c.head, 200, "application/vnd.git-lfs+json");
}

// The token is checked first and alone: a wrong, expired or foreign token gets the same 404 whether or
// not the object exists anywhere.
Outcome<PendingUpload> Handlers::pending_upload(const Match& m) {
  KB_TRY_ASSIGN(auto upload, lift(m_store.find_upload(m_c.param("token").value_or(""), m_c.now)));
  if (!upload || upload->oid != m.oid)
    return not_found("unknown or expired upload URL; ask the LFS batch endpoint again");
  return std::move(*upload);
}

// PUT /lfs/upload/{oid}: the whole object at once.
Outcome<Reply> Handlers::upload_object(const Match& m) {
  KB_TRY_ASSIGN(PendingUpload upload, pending_upload(m));
  if (upload.chunk_size != 0) return bad_request("this upload is multipart: PUT the parts, then POST to complete");
  if (upload.completed) return json_reply(Json::object(), m_c.head);  // a retry after a lost answer
  KB_TRY_ASSIGN(std::filesystem::path file, body_as_temp_file(m_config.limits.max_lfs_object));
  KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(file, m.oid, upload.size)));
  if (check == BlobCheck::wrong_size)
    return bad_request("expected " + std::to_string(upload.size) + " bytes for " + m.oid);
  if (check == BlobCheck::wrong_hash) return bad_request("the uploaded content does not have sha256 " + m.oid);
  KB_TRY(lift(m_store.finish_upload(upload)));
  return json_reply(Json::object(), m_c.head);
}

// PUT /lfs/upload/{oid}/{part}: one part of a multipart upload; answers its ETag.
Outcome<Reply> Handlers::upload_part(const Match& m) {
  if (m_c.method != "PUT") return failure(405, "MethodNotAllowed", "parts are uploaded with PUT");
  KB_TRY_ASSIGN(PendingUpload upload, pending_upload(m));
  if (upload.chunk_size == 0) return bad_request("this upload is a single PUT to its href");
  const std::string& part = *m.part;
  std::uint64_t parts = part_count(upload), number = 0;
  if (part.empty() || part.size() > 9 || !std::all_of(part.begin(), part.end(), ::isdigit) ||
      (number = std::stoull(part)) < 1 || number > parts)
    return bad_request("part number must be 1 to " + std::to_string(parts));
  std::uint64_t expected = std::min(upload.chunk_size, upload.size - (number - 1) * upload.chunk_size);
  if (m_c.body_size() != expected)
    return bad_request("part " + part + " must have " + std::to_string(expected) + " bytes");
  KB_TRY_ASSIGN(std::filesystem::path file, body_as_temp_file(m_config.limits.max_lfs_object));
  auto etag = util::sha256_file_hex(util::RealFileSystem(), file);
  std::filesystem::path dir = m_store.upload_dir(upload);
  // Parts of a completed upload (a retry after a lost answer) are not kept; their ETag still is the
  // hash of what arrived.
  auto moved = upload.completed ? Result<void>() : move_file(file, part_file(dir, number));
  if (upload.completed) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
  }
  if (!etag || !moved) return failure(500, "InternalError", "cannot store part " + part);
  if (!upload.completed && !replace_file(etag_file(dir, number), *etag))
    return failure(500, "InternalError", "cannot store part " + part);
  Reply reply = json_reply(Json::object(), m_c.head);
  reply.response.headers.set("ETag", "\"" + *etag + "\"");
  return reply;
}

// POST /lfs/upload/{oid}: completes a multipart upload with {"oid", "parts": [{"partNumber", "etag"}]}.
Outcome<Reply> Handlers::complete_upload(const Match& m) {
  KB_TRY_ASSIGN(PendingUpload upload, pending_upload(m));
  if (upload.chunk_size == 0) return bad_request("this upload is a single PUT to its href");
  if (upload.completed) return json_reply(Json::object(), m_c.head);  // a retry after a lost answer
  std::uint64_t parts = part_count(upload);
  std::filesystem::path dir = m_store.upload_dir(upload);
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
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
  KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(whole, m.oid, upload.size)));
  if (check != BlobCheck::ok)
    return bad_request("the assembled parts do not have sha256 " + m.oid + " and the announced size");
  KB_TRY(lift(m_store.finish_upload(upload)));
  return json_reply(Json::object(), m_c.head);
}

}  // namespace kbuild::server
