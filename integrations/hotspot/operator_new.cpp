// libmetaspace inside libjvm.so: HotSpot's build refuses any object that calls the global
// operator new or delete. prelink.sh renames the library's calls to these functions, which
// allocate with malloc as the default operators do (and throw std::bad_alloc, which the library's
// exception barrier turns into MS_ERR_OUT_OF_MEMORY).
#include <cstddef>
#include <cstdlib>
#include <new>

extern "C" {

void* libms_hs__Znwm(std::size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* libms_hs__Znam(std::size_t bytes) { return libms_hs__Znwm(bytes); }

void libms_hs__ZdlPv(void* p) noexcept { std::free(p); }
void libms_hs__ZdaPv(void* p) noexcept { std::free(p); }
void libms_hs__ZdlPvm(void* p, std::size_t) noexcept { std::free(p); }
void libms_hs__ZdaPvm(void* p, std::size_t) noexcept { std::free(p); }

}
