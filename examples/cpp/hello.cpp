#include <metaspace/metaspace.hpp>
#include <cstdio>

int main() {
  ms::Metaspace space(ms::Settings().options("granule=16k"));  // throws ms::Error if refused
  ms::Loader loader = space.create_loader(MS_LOADER_STANDARD);
  void* klass = loader.allocate_class(600);
  if (klass == nullptr) return 1;
  std::printf("narrow class pointer %u, %zu bytes used\n", space.encode(klass),
              space.stats().total.used_bytes);
  return 0;  // the loader, then the metaspace, are destroyed here
}
