#pragma once
// A variant's signature: metadata.json.sigstore, a Sigstore bundle (https://docs.sigstore.dev, bundle
// format v0.1-v0.3) over the variant's metadata.json, made by CI with keyless signing. The `kernels`
// package (kernels.verify.verify_variant) verifies its certificate and transparency-log entry against
// Sigstore's trust root and a signer policy, then the digest in metadata.json. kbuild, offline, checks
// what can be checked without that trust root: the bundle is one, and it signs this metadata.json
// (messageSignature.messageDigest is SHA2_256 of the file's bytes), so metadata edited after signing
// is caught before a publish.

#include <filesystem>
#include <string>

#include "kbuild/util/fs.hpp"

namespace kbuild::layout {

struct SignatureStatus {
  enum class State {
    unsigned_variant,  ///< no metadata.json.sigstore
    signed_variant,    ///< a bundle whose message digest is this metadata.json's
    unchecked,         ///< a bundle of a kind kbuild does not read (a DSSE envelope)
    invalid,           ///< not a Sigstore bundle, or it signs other bytes
  };
  State state = State::unsigned_variant;
  std::string detail;  ///< why, for invalid and unchecked
};

/// "unsigned", "signed", "unchecked", "invalid" (for --json).
std::string to_string(SignatureStatus::State state);

/// The bundle `bundle_text` judged against the bytes of metadata.json (pure).
SignatureStatus judge_signature(const std::string& bundle_text, const std::string& metadata_bytes);

/// The signature status of a variant directory.
SignatureStatus signature_status(const util::FileSystem& fs, const std::filesystem::path& variant_dir);

}  // namespace kbuild::layout
