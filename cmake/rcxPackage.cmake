# SPDX-License-Identifier: BSD-2-Clause
#
# Install rules for users of an installed rcx, beside the library, headers
# and tools that lib/, tools/ and perftest/ install:
# - lib/pkgconfig/rcx.pc (pkg-config --cflags --libs rcx);
# - lib/cmake/rcx: find_package(rcx) with the imported target rcx::rcx
#   (export set rcxTargets of lib/CMakeLists.txt) and a version file.
include(CMakePackageConfigHelpers)

set(RCX_PC_REQUIRES hwloc)
if(RCX_WITH_VERBS)
	set(RCX_PC_REQUIRES "libibverbs librdmacm hwloc")
endif()
# rcx.pc names the prefix given at install time, so it is written then.
install(CODE "
	set(RCX_PC_IN \"${CMAKE_CURRENT_LIST_DIR}/rcx.pc.in\")
	set(RCX_PC_OUT \"${PROJECT_BINARY_DIR}/rcx.pc\")
	set(RCX_PC_VERSION \"${PROJECT_VERSION}\")
	set(RCX_PC_REQUIRES \"${RCX_PC_REQUIRES}\")
	set(RCX_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
	set(RCX_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
	include(\"${CMAKE_CURRENT_LIST_DIR}/rcxPkgConfig.cmake\")")
install(FILES ${PROJECT_BINARY_DIR}/rcx.pc
	DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(RCX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rcx)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/rcxConfig.cmake.in
	${PROJECT_BINARY_DIR}/rcxConfig.cmake
	INSTALL_DESTINATION ${RCX_CMAKE_DIR})
# compatible within a major version, as the SOVERSION is the major version
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rcxConfigVersion.cmake
	COMPATIBILITY SameMajorVersion)
install(EXPORT rcxTargets NAMESPACE rcx:: DESTINATION ${RCX_CMAKE_DIR})
install(FILES ${PROJECT_BINARY_DIR}/rcxConfig.cmake
	${PROJECT_BINARY_DIR}/rcxConfigVersion.cmake
	DESTINATION ${RCX_CMAKE_DIR})
