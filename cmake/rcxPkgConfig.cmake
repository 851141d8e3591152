# SPDX-License-Identifier: BSD-2-Clause
#
# Run by cmake --install (install(CODE) in rcxPackage.cmake): writes
# rcx.pc for the prefix of this installation, which may differ from the
# configured one (cmake --install --prefix). Input: RCX_PC_IN, RCX_PC_OUT,
# RCX_PC_VERSION, RCX_PC_REQUIRES, and the install directories
# RCX_PC_LIBDIR and RCX_PC_INCLUDEDIR, relative to the prefix or absolute.
set(RCX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(dir RCX_PC_LIBDIR RCX_PC_INCLUDEDIR)
	if(NOT IS_ABSOLUTE "${${dir}}")
		set(${dir} "\${prefix}/${${dir}}")
	endif()
endforeach()
configure_file("${RCX_PC_IN}" "${RCX_PC_OUT}" @ONLY)
