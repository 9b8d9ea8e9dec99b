/* The shared library has no sources of its own: it is the whole static archive behind a version
 * script (CMakeLists.txt). CMake needs one source file per library target. */
typedef int metaspace_shared_library_has_no_sources_of_its_own;
