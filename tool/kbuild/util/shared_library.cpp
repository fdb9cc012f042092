#include "kbuild/util/shared_library.hpp"

#include <dlfcn.h>

namespace kbuild::util {

Result<SharedLibrary> SharedLibrary::open(const std::string& soname, const std::string& hint) {
#if defined(KBUILD_STATIC_LIBRARIES)
  (void)hint;
  return SharedLibrary(nullptr, soname);  // linked in: KB_BIND takes each function's address
#endif
  // RTLD_NOW: a missing symbol is an error here, not a crash at the first call.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    return fail(
        Error{ExitCode::toolchain, "cannot load " + soname + ": " + (reason ? reason : "unknown reason"), hint});
  }
  return SharedLibrary(handle, soname);
}

Result<void*> SharedLibrary::symbol(const char* name) const {
  dlerror();
  void* address = dlsym(m_handle, name);
  if (!address)
    return fail(Error{ExitCode::toolchain, m_soname + " has no symbol " + name,
                      "the library is older than the one kbuild was built with: install a newer one"});
  return address;
}

}  // namespace kbuild::util
