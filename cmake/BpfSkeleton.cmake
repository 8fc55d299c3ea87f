# The in-kernel capture's BPF program (external/src/kernel/kcapture.bpf.c): compiled with clang for the
# BPF target, embedded as a libbpf skeleton (bpftool gen skeleton), loaded through libbpf.
# Sets XP_BPF_SKELETON (the generated header), XP_BPF_SKELETON_DIR and LIBBPF_* for xpcore.
# x86-64 only: the program reads x86-64 user registers (kcapture.c refuses elsewhere).
if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  message(STATUS "in-kernel capture: x86-64 only, not built for ${CMAKE_SYSTEM_PROCESSOR}")
  return()
endif()

find_program(XP_BPF_CLANG NAMES clang clang-16 clang-15 clang-14)
find_program(XP_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin)
find_program(XP_LLVM_STRIP NAMES llvm-strip llvm-strip-16 llvm-strip-15 llvm-strip-14)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBBPF QUIET libbpf>=1.0)
endif()
if(NOT XP_BPF_CLANG OR NOT XP_BPFTOOL OR NOT LIBBPF_FOUND)
  message(FATAL_ERROR "the in-kernel capture needs clang, bpftool and libbpf >= 1.0 "
                      "(clang: ${XP_BPF_CLANG}, bpftool: ${XP_BPFTOOL}, libbpf: ${LIBBPF_VERSION}): "
                      "apt-get install clang bpftool libbpf-dev (or run tools/install-deps.sh)")
endif()

set(XP_BPF_SRC ${CMAKE_CURRENT_SOURCE_DIR}/external/src/kernel/kcapture.bpf.c)
set(XP_BPF_SKELETON_DIR ${CMAKE_CURRENT_BINARY_DIR}/bpf)
set(XP_BPF_OBJ ${XP_BPF_SKELETON_DIR}/kcapture.bpf.o)
set(XP_BPF_SKELETON ${XP_BPF_SKELETON_DIR}/kcapture.skel.h)
# The uapi asm/ headers (struct pt_regs) live in the host's multiarch directory.
set(XP_BPF_ASM_INCLUDE /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
# DWARF is dropped from the embedded object (BTF stays): the skeleton carries only what loads.
if(XP_LLVM_STRIP)
  set(XP_BPF_STRIP COMMAND ${XP_LLVM_STRIP} -g ${XP_BPF_OBJ})
endif()
add_custom_command(
  OUTPUT ${XP_BPF_SKELETON}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${XP_BPF_SKELETON_DIR}
  COMMAND ${XP_BPF_CLANG} -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Wextra -Werror
          -I${CMAKE_CURRENT_SOURCE_DIR}/external/src/kernel ${LIBBPF_INCLUDE_DIRS}
          -idirafter ${XP_BPF_ASM_INCLUDE} -c ${XP_BPF_SRC} -o ${XP_BPF_OBJ}
  ${XP_BPF_STRIP}
  COMMAND ${XP_BPFTOOL} gen skeleton ${XP_BPF_OBJ} name kcapture_bpf > ${XP_BPF_SKELETON}
  DEPENDS ${XP_BPF_SRC} ${CMAKE_CURRENT_SOURCE_DIR}/external/src/kernel/kcapture_layout.h
  COMMENT "BPF skeleton: kcapture.bpf.c -> kcapture.skel.h"
  VERBATIM)
