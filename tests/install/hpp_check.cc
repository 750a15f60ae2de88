// Built by the CMake consumer when the installed tree has <kiln/kiln.hpp>:
// the C++ header must compile from its installed place (it includes kiln.h
// next to it) and link against Kiln::runtime. Uses only what kiln.h declares,
// so it does not depend on the wrapper's API.
#include <kiln/kiln.hpp>

#include <cstdio>

int main() {
  unsigned major = kiln_api_version() >> 16;
  std::printf("hpp_check: ok (kiln.hpp with C API %u)\n", major);
  return major == KILN_API_VERSION_MAJOR ? 0 : 1;
}
