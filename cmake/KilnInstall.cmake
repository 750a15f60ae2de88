# What `cmake --install <build> --prefix P` puts under P (included by the
# top-level CMakeLists.txt once every target exists):
#   include/kiln/     kiln.h and every other capi/kiln*.h / kiln*.hpp
#   lib/              libkiln.so.<version>, libkiln.so.<api major>, libkiln.so;
#                     the static runtime (libkiln_c_api.a, libkiln_vm.a, ...)
#   lib/cmake/Kiln/   KilnConfig.cmake, KilnConfigVersion.cmake: find_package(Kiln)
#                     gives Kiln::runtime (libkiln.so) and Kiln::runtime_static
#   lib/pkgconfig/    kiln.pc (pkg-config --cflags --libs kiln)
#   bin/              kiln-compile, kiln-run, kiln-bench, kiln-dump (those built)
# ("lib" is CMAKE_INSTALL_LIBDIR.) The package and kiln.pc find the prefix
# from their own location, so the tree can be installed anywhere and moved.
# tests/install/ installs a build and builds two consumers against it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
# capi/shared/CMakeLists.txt records these on the target.
get_target_property(KILN_API_VERSION_MAJOR kiln_shared SOVERSION)
get_target_property(KILN_PUBLIC_HEADERS kiln_shared KILN_PUBLIC_HEADERS)

install(FILES ${KILN_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
install(TARGETS kiln_shared
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The static runtime, for programs that cannot ship a shared library: the C
# API and everything below it, no compiler. Kiln::runtime_static links them
# in dependency order, the kernel archives whole (their packed functions
# register themselves from static constructors).
set(KILN_STATIC_LIBS kiln_c_api kiln_vm kiln_graph_executor kiln_kernels_ref kiln_kernels_common kiln_runtime)
set(KILN_STATIC_WHOLE kiln_kernels_ref)
set(KILN_STATIC_DNNL "")
if(TARGET kiln_kernels_dnnl_impl)
  list(INSERT KILN_STATIC_LIBS 3 kiln_kernels_dnnl_impl)
  list(APPEND KILN_STATIC_WHOLE kiln_kernels_dnnl_impl)
  set(KILN_STATIC_DNNL dnnl)
endif()
if(TARGET kiln_runtime_cuda)
  # The C API's CUDA device (kiln_instance_options_set_device): libcuda is
  # dlopen'ed, so this archive links nothing of CUDA's.
  list(INSERT KILN_STATIC_LIBS 1 kiln_runtime_cuda)
endif()
install(TARGETS ${KILN_STATIC_LIBS} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The tools. They link the runtime statically; libraries outside the system
# directories (LLVM's, under /usr/lib/llvm-19/lib) stay found through RUNPATH.
foreach(tool kiln-compile kiln-run kiln-bench kiln-dump)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# CMake package.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/KilnConfig.cmake
  INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
# 0.x: the C ABI only grows within a major version (kiln.h), so any 0.y
# satisfies a request for 0.x with x <= y.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/KilnConfig.cmake ${PROJECT_BINARY_DIR}/cmake/KilnConfigVersion.cmake
  DESTINATION ${KILN_INSTALL_CMAKEDIR})

# pkg-config: the prefix is computed from the .pc file's own directory.
string(REGEX REPLACE "[^/]+" ".." KILN_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/cmake/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
