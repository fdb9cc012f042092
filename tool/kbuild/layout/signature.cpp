#include "kbuild/layout/signature.hpp"

#include <nlohmann/json.hpp>

#include "kbuild/util/hash.hpp"

namespace kbuild::layout {

std::string to_string(SignatureStatus::State state) {
  switch (state) {
    case SignatureStatus::State::unsigned_variant:
      return "unsigned";
    case SignatureStatus::State::signed_variant:
      return "signed";
    case SignatureStatus::State::unchecked:
      return "unchecked";
    case SignatureStatus::State::invalid:
      return "invalid";
  }
  return "invalid";
}

SignatureStatus judge_signature(const std::string& bundle_text, const std::string& metadata_bytes) {
  using State = SignatureStatus::State;
  auto bundle = nlohmann::json::parse(bundle_text, nullptr, false);
  if (bundle.is_discarded() || !bundle.is_object()) return {State::invalid, "metadata.json.sigstore is not JSON"};
  // (Values are checked for their type first: a hostile bundle must not make the parser throw.)
  auto string_at = [](const nlohmann::json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto media_type = string_at(bundle, "mediaType");
  if (!media_type.starts_with("application/vnd.dev.sigstore.bundle"))
    return {State::invalid, "metadata.json.sigstore is not a Sigstore bundle (mediaType \"" + media_type + "\")"};
  if (!bundle.contains("verificationMaterial") || !bundle["verificationMaterial"].is_object())
    return {State::invalid, "the Sigstore bundle has no verificationMaterial"};
  if (bundle.contains("dsseEnvelope"))
    return {State::unchecked, "the bundle holds a DSSE envelope; the kernels loader verifies it"};
  const auto* signature = bundle.contains("messageSignature") ? &bundle["messageSignature"] : nullptr;
  if (!signature || !signature->is_object() || !signature->contains("messageDigest") ||
      !(*signature)["messageDigest"].is_object() || !signature->contains("signature") ||
      !(*signature)["signature"].is_string())
    return {State::invalid, "the Sigstore bundle has no messageSignature with a digest and a signature"};
  const auto& digest = (*signature)["messageDigest"];
  if (string_at(digest, "algorithm") != "SHA2_256" || !digest.contains("digest") || !digest["digest"].is_string())
    return {State::invalid, "the Sigstore bundle's message digest is not SHA2_256"};
  std::string expected = util::base64_encode(util::Hasher().update(metadata_bytes).finish_raw());
  if (digest["digest"].get<std::string>() != expected)
    return {State::invalid,
            "metadata.json.sigstore signs other bytes than this metadata.json (changed after signing?); the kernels "
            "loader would reject the variant"};
  return {State::signed_variant, ""};
}

SignatureStatus signature_status(const util::FileSystem& fs, const std::filesystem::path& variant_dir) {
  auto path = variant_dir / "metadata.json.sigstore";
  if (!fs.stat(path).exists) return {};
  auto bundle = util::read_input_file(fs, path, 1u << 20);
  if (!bundle) return {SignatureStatus::State::invalid, bundle.error().message};
  auto metadata = fs.read_file(variant_dir / "metadata.json");
  if (!metadata) return {SignatureStatus::State::invalid, "metadata.json is missing"};
  return judge_signature(*bundle, *metadata);
}

}  // namespace kbuild::layout
