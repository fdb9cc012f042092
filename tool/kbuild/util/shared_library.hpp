#pragma once
// Libraries that only some commands need (libcurl, libarchive) are loaded when first used,
// not at process start: linked normally, their ~30 dependencies (GnuTLS, Kerberos, LDAP, libxml2,
// ICU...) were mapped, relocated and initialised by every run, about half of a no-op build's process
// start-up. Their sonames come from the build (kbuild/util/lazy_libraries.hpp, written by CMake from
// the libraries it found); the wheel and scripts/gpu-bundle carry them (tool/lazy_libraries.txt).

#include <string>

#include "kbuild/util/result.hpp"

namespace kbuild::util {

/// One shared library opened with dlopen and kept for the life of the process (never closed: its
/// functions may be referenced from anywhere, and some libraries register exit handlers).
class SharedLibrary {
 public:
  /// Opens `soname` (searched as the dynamic loader does: kbuild's RUNPATH, then the system). The
  /// error names the library, dlerror's reason and `hint` (which package provides it).
  static Result<SharedLibrary> open(const std::string& soname, const std::string& hint);

  /// Binds `function` to the library's symbol `name`.
  template <class Function>
  Result<void> bind(Function*& function, const char* name) const {
    KB_TRY_ASSIGN(void* address, symbol(name));
    function = reinterpret_cast<Function*>(address);
    return {};
  }

  const std::string& soname() const { return m_soname; }

 private:
  SharedLibrary(void* handle, std::string soname) : m_handle(handle), m_soname(std::move(soname)) {}
  Result<void*> symbol(const char* name) const;

  void* m_handle;
  std::string m_soname;
};

/// The function table `Api` of one library, opened on first use and kept for the process;
/// `bind_all` binds each member (and may initialise the library). Thread-safe: one function-local
/// static per Api type, so the first caller loads and every later one gets the same result.
template <class Api>
const Result<Api>& load_once(const char* soname, const char* hint,
                             Result<void> (*bind_all)(const SharedLibrary&, Api&)) {
  static const Result<Api> loaded = [&]() -> Result<Api> {
    KB_TRY_ASSIGN(auto library, SharedLibrary::open(soname, hint));
    Api api{};
    KB_TRY(bind_all(library, api));
    return api;
  }();
  return loaded;
}

/// Binds `member` (a function pointer of an Api table) to the library's function `symbol`: looked up
/// in the library opened with dlopen, or, in a static build (KBUILD_STATIC_LIBRARIES: the wheel,
/// docs/install.md), the linked function itself, so nothing is looked up by name at run time.
#if defined(KBUILD_STATIC_LIBRARIES)
#define KB_BIND(library, member, symbol) ((void)(library), (member) = &::symbol, ::kbuild::Result<void>{})
#else
#define KB_BIND(library, member, symbol) (library).bind((member), #symbol)
#endif

/// What `kbuild --version` shows for a library that could not be loaded.
inline std::string not_loaded(const Error& error) { return "not loaded (" + error.message + ")"; }

}  // namespace kbuild::util
