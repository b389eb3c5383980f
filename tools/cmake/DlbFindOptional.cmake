# Backend detection that cannot kill configure.
#
# CMake cannot catch an error raised inside a package's CMake config: Debian's oneDNN 2.6 config
# calls find_package(OpenCL REQUIRED), and without the OpenCL headers configure dies there even
# though oneDNN is optional. So every optional package is first loaded in a child CMake process
# (the probe project in tools/cmake/probe/); only when that succeeds does the real find_package run
# here. A backend set to AUTO whose probe fails is OFF, with the probe's first error line as the
# reason in the configure summary; set to ON it stops configure with that reason; OFF skips it.
#
#   dlb_find_optional(<option> <package>
#                     [NAME <shown name>] [VERSION <min>] [CONFIG | MODULE]
#                     [COMPONENTS <c>...] [TARGETS <imported target>...]
#                     [LANGUAGES <lang>...]   # enabled in the probe first (default: C CXX)
#                     [VARS <var>...]         # more variables the package's config reads
#                     [HINT <text>]           # how to get it, shown when it is off
#                     [RESULT <var>])         # ON/OFF; default: <option> with _WITH_ -> _HAVE_
#
#   dlb_find_optional(DLBENCH_WITH_ONEDNN dnnl NAME oneDNN CONFIG TARGETS DNNL::dnnl
#                     HINT "apt: libdnnl-dev ocl-icd-opencl-dev")
#   dlb_find_optional(DLBENCH_WITH_TORCH Torch NAME LibTorch CONFIG LANGUAGES C CXX
#                     VARS CMAKE_CUDA_ARCHITECTURES TORCH_CUDA_ARCH_LIST
#                     HINT "apt: libtorch-dev, or CMAKE_PREFIX_PATH=<pip torch>/share/cmake")
#   dlb_find_optional(DLBENCH_WITH_NCCL NCCL MODULE VARS NCCL_ROOT HINT "...")  # with a FindNCCL
#                                                                               # on CMAKE_MODULE_PATH
# On success the package is loaded in the caller's scope (its variables and imported targets as
# after find_package), <RESULT> is ON and the summary says "<name>: ON (<version>)".
#
# The probe gets the parent's CMAKE_PREFIX_PATH, CMAKE_MODULE_PATH, toolchain file, sysroot and
# find-root path, <package>_DIR and <package>_ROOT, each probed language's compiler, flags, host
# compiler, architectures and standard, the generator, and the VARS; the environment is inherited.
# A success is cached, keyed by all of those (and the package's config file and the compilers'
# time stamps), so a reconfigure does not probe again until one of them changes. A failure is not
# cached: install what was missing, configure again, and the backend turns on.
#
# dlb_probe_package(<prefix> <package> ...) is the probe alone, for backends that are more than one
# CMake package (CUDA): it sets <prefix>_OK, <prefix>_REASON, <prefix>_VERSION, <prefix>_DIR,
# <prefix>_LOG (the probe's full output) and <prefix>_<LANG>_COMPILER.

include_guard(GLOBAL)

set(DLB_PROBE_SOURCE_DIR "${CMAKE_CURRENT_LIST_DIR}/probe" CACHE INTERNAL "")

# Configure summary: one line per dependency, printed at the end of configure.
set(DLBENCH_SUMMARY "")
function(dlb_report what status)
  set(DLBENCH_SUMMARY "${DLBENCH_SUMMARY}\n  ${what}: ${status}" PARENT_SCOPE)
endfunction()

# <out> = AUTO, ON or OFF for the value of the cache option <option>.
function(dlb_backend_mode option out)
  string(TOUPPER "${${option}}" v)
  if(v STREQUAL "AUTO")
  elseif(v MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(v ON)
  elseif(v MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(v OFF)
  else()
    message(FATAL_ERROR "${option}=${${option}}: want AUTO, ON or OFF")
  endif()
  set(${out} ${v} PARENT_SCOPE)
endfunction()

# A backend that cannot be used: fatal when asked ON, else "OFF (<why>)" in the summary.
function(dlb_backend_off option name why)
  dlb_backend_mode(${option} mode)
  set(hint "${ARGN}")
  if(mode STREQUAL "ON")
    if(hint)
      set(hint " (${hint})")
    endif()
    message(FATAL_ERROR "${option}=ON but ${name} cannot be used: ${why}${hint}")
  endif()
  if(hint)
    set(hint "; ${hint}")
  endif()
  set(DLBENCH_SUMMARY "${DLBENCH_SUMMARY}\n  ${name}: OFF (${why}${hint})" PARENT_SCOPE)
endfunction()

# The first error of a failed CMake run, on one line: its message up to the end of the first
# sentence, then the first "error:"/"fatal:" line of any compiler output it quotes, then where it
# was raised when that is a file outside CMake's own modules (a package's config):
#   Could NOT find OpenCL (missing: OpenCL_LIBRARY OpenCL_INCLUDE_DIR)
#   (raised at /usr/lib/x86_64-linux-gnu/cmake/dnnl/dnnl-config.cmake:70)
function(_dlb_first_error text out)
  set(${out} "" PARENT_SCOPE)
  # A compiler that is no compiler at all makes CMake fail later on an internal variable.
  set(unknown "")
  if(text MATCHES "-- The ([A-Za-z]+) compiler identification is unknown")
    set(lang ${CMAKE_MATCH_1})
    set(unknown "the ${lang} compiler could not be identified")
    if(CMAKE_${lang}_COMPILER)
      string(APPEND unknown " (CMAKE_${lang}_COMPILER=${CMAKE_${lang}_COMPILER})")
    endif()
  endif()
  set(${out} "${unknown}" PARENT_SCOPE)
  string(FIND "${text}" "CMake Error" pos)
  if(pos EQUAL -1)
    return()
  endif()
  string(SUBSTRING "${text}" ${pos} -1 text)
  # Walk the lines as a list: keep ; [ ] out of the way of list splitting.
  string(REPLACE ";" "<dlb:semi>" text "${text}")
  string(REPLACE "[" "<dlb:lb>" text "${text}")
  string(REPLACE "]" "<dlb:rb>" text "${text}")
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(msg "")
  set(places "")
  set(state none)  # none | head (the message's first sentence) | rest | stack
  set(detail "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^CMake Error")
      if(msg)
        break()  # the first error that says something is the one
      endif()
      set(places "")
      set(state head)
      if(line MATCHES "^CMake Error at (.+):([0-9]+) \\(")
        list(APPEND places "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}")
      elseif(line MATCHES "^CMake Error[^:]*: *(.+)$")
        set(msg "${CMAKE_MATCH_1}")
      endif()
    elseif(state STREQUAL "head" OR state STREQUAL "rest")
      if(line MATCHES "^Call Stack")
        set(state stack)
      elseif(NOT (line STREQUAL "" OR line MATCHES "^  "))
        set(state none)
      elseif(state STREQUAL "head")
        string(STRIP "${line}" line)
        string(APPEND msg " ${line}")
        if(msg MATCHES "[.!]$")
          set(state rest)
        endif()
      elseif(NOT detail AND line MATCHES "([Ff]atal|[Ee]rror) *:")
        string(STRIP "${line}" detail)
      endif()
    elseif(state STREQUAL "stack")
      if(line MATCHES "^  (.+):([0-9]+) \\(")
        list(APPEND places "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}")
      else()
        set(state none)
      endif()
    endif()
  endforeach()
  string(REGEX REPLACE "[ \t]+" " " msg "${msg}")
  string(STRIP "${msg}" msg)
  string(REGEX REPLACE "[.:]$" "" msg "${msg}")
  if(unknown AND (NOT msg OR msg MATCHES "internal CMake variable"))
    return()
  endif()
  if(detail)
    string(REGEX REPLACE "[ \t]+" " " detail "${detail}")
    string(APPEND msg ": ${detail}")
  endif()
  string(LENGTH "${msg}" n)
  if(n GREATER 300)
    string(SUBSTRING "${msg}" 0 297 msg)
    string(APPEND msg "...")
  endif()
  # Where: the package's own config file when it is on the stack, else the innermost file that
  # is neither CMake's nor the probe's.
  set(where "")
  foreach(p IN LISTS places)
    string(FIND "${p}" "${CMAKE_ROOT}/" in_cmake)
    string(FIND "${p}" "${DLB_PROBE_SOURCE_DIR}/" in_probe)
    if(IS_ABSOLUTE "${p}" AND NOT in_cmake EQUAL 0 AND NOT in_probe EQUAL 0)
      if(p MATCHES "(-config|Config)\\.cmake:[0-9]+$")
        set(where "${p}")
        break()
      elseif(NOT where)
        set(where "${p}")
      endif()
    endif()
  endforeach()
  if(where)
    string(APPEND msg " (raised at ${where})")
  endif()
  string(REPLACE "<dlb:semi>" ";" msg "${msg}")
  string(REPLACE "<dlb:lb>" "[" msg "${msg}")
  string(REPLACE "<dlb:rb>" "]" msg "${msg}")
  set(${out} "${msg}" PARENT_SCOPE)
endfunction()

function(_dlb_stamps_current stamps out)
  set(ok TRUE)
  string(REPLACE "|" ";" entries "${stamps}")
  foreach(e IN LISTS entries)
    if(e MATCHES "^(.*)@([0-9]*)$")
      file(TIMESTAMP "${CMAKE_MATCH_1}" t "%s" UTC)
      if(NOT t STREQUAL CMAKE_MATCH_2)
        set(ok FALSE)
      endif()
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

function(dlb_probe_package prefix package)
  cmake_parse_arguments(P "CONFIG;MODULE" "VERSION" "COMPONENTS;TARGETS;LANGUAGES;VARS" ${ARGN})
  set(mode "")
  if(P_CONFIG)
    set(mode CONFIG)
  elseif(P_MODULE)
    set(mode MODULE)
  endif()
  if(NOT P_LANGUAGES)
    set(P_LANGUAGES C CXX)
  endif()
  set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/dlb-probe/${package}")
  set(cached "DLB_PROBE_${package}")

  set(vars CMAKE_PREFIX_PATH CMAKE_MODULE_PATH CMAKE_TOOLCHAIN_FILE CMAKE_SYSROOT
           CMAKE_FIND_ROOT_PATH CMAKE_FIND_PACKAGE_PREFER_CONFIG CMAKE_IGNORE_PATH
           CMAKE_IGNORE_PREFIX_PATH CMAKE_MAKE_PROGRAM ${package}_DIR ${package}_ROOT)
  foreach(lang IN LISTS P_LANGUAGES)
    list(APPEND vars CMAKE_${lang}_COMPILER CMAKE_${lang}_FLAGS CMAKE_${lang}_HOST_COMPILER
                     CMAKE_${lang}_ARCHITECTURES CMAKE_${lang}_STANDARD)
  endforeach()
  list(APPEND vars ${P_VARS})
  list(REMOVE_DUPLICATES vars)

  set(init "")
  set(key "${package}|${mode}|${P_VERSION}|${P_COMPONENTS}|${P_TARGETS}|${P_LANGUAGES}|")
  string(APPEND key "${CMAKE_VERSION}|${CMAKE_GENERATOR}|${CMAKE_GENERATOR_PLATFORM}|")
  foreach(v IN LISTS vars)
    if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "" OR "${${v}}" MATCHES "-NOTFOUND$")
      continue()
    endif()
    string(APPEND init "set(${v} [==[${${v}}]==] CACHE STRING \"\")\n")
    # <package>_DIR pointing where the last successful probe found the package is what the real
    # find_package left in the cache: the same input as none.
    if(NOT (v STREQUAL "${package}_DIR" AND "${${v}}" STREQUAL "${${cached}_DIR}"))
      string(APPEND key "${v}=${${v}}|")
    endif()
  endforeach()
  foreach(e CMAKE_PREFIX_PATH ${package}_DIR ${package}_ROOT CC CXX CFLAGS CXXFLAGS CUDACXX
            CUDAHOSTCXX CUDAARCHS CUDAFLAGS PATH)
    string(APPEND key "ENV{${e}}=$ENV{${e}}|")
  endforeach()
  file(SHA1 "${DLB_PROBE_SOURCE_DIR}/CMakeLists.txt" probe_sha)
  string(APPEND key "${probe_sha}")
  string(SHA1 key "${key}")

  set(${prefix}_LOG "${dir}/output.log" PARENT_SCOPE)
  if(key STREQUAL "${${cached}_KEY}")
    _dlb_stamps_current("${${cached}_STAMPS}" fresh)
    if(fresh)
      set(${prefix}_OK TRUE PARENT_SCOPE)
      set(${prefix}_REASON "" PARENT_SCOPE)
      set(${prefix}_VERSION "${${cached}_VERSION}" PARENT_SCOPE)
      set(${prefix}_DIR "${${cached}_DIR}" PARENT_SCOPE)
      foreach(lang IN LISTS P_LANGUAGES)
        set(${prefix}_${lang}_COMPILER "${${cached}_${lang}_COMPILER}" PARENT_SCOPE)
      endforeach()
      return()
    endif()
  endif()
  unset(${cached}_KEY CACHE)

  message(CHECK_START "Probing ${package} in a child CMake")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  string(APPEND init
    "set(DLB_PROBE_PACKAGE [==[${package}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_MODE [==[${mode}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_VERSION [==[${P_VERSION}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_COMPONENTS [==[${P_COMPONENTS}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_TARGETS [==[${P_TARGETS}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_LANGUAGES [==[${P_LANGUAGES}]==] CACHE STRING \"\")\n"
    "set(DLB_PROBE_RESULT [==[${dir}/result.cmake]==] CACHE STRING \"\")\n")
  file(WRITE "${dir}/init.cmake" "${init}")
  set(gen -G "${CMAKE_GENERATOR}")
  if(CMAKE_GENERATOR_PLATFORM)
    list(APPEND gen -A "${CMAKE_GENERATOR_PLATFORM}")
  endif()
  if(CMAKE_GENERATOR_TOOLSET)
    list(APPEND gen -T "${CMAKE_GENERATOR_TOOLSET}")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" ${gen} -C "${dir}/init.cmake" -S "${DLB_PROBE_SOURCE_DIR}"
            -B "${dir}/build" -Wno-dev --no-warn-unused-cli
    OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc TIMEOUT 600)
  file(WRITE "${dir}/output.log" "${out}")

  set(ok FALSE)
  set(reason "")
  set(DLB_PROBE_FOUND FALSE)
  if(rc STREQUAL "0" AND EXISTS "${dir}/result.cmake")
    include("${dir}/result.cmake")
    set(ok ${DLB_PROBE_FOUND})
    set(reason "${DLB_PROBE_REASON}")
  else()
    _dlb_first_error("${out}" reason)
    if(NOT reason)
      set(reason "the probe failed (${rc}); see ${dir}/output.log")
    endif()
  endif()

  set(${prefix}_OK ${ok} PARENT_SCOPE)
  set(${prefix}_REASON "${reason}" PARENT_SCOPE)
  if(ok)
    message(CHECK_PASS "found ${DLB_PROBE_VERSION_FOUND}")
    set(${prefix}_VERSION "${DLB_PROBE_VERSION_FOUND}" PARENT_SCOPE)
    set(${prefix}_DIR "${DLB_PROBE_DIR}" PARENT_SCOPE)
    set(${cached}_KEY "${key}" CACHE INTERNAL "")
    set(${cached}_VERSION "${DLB_PROBE_VERSION_FOUND}" CACHE INTERNAL "")
    set(${cached}_DIR "${DLB_PROBE_DIR}" CACHE INTERNAL "")
    set(${cached}_STAMPS "${DLB_PROBE_STAMPS}" CACHE INTERNAL "")
    foreach(lang IN LISTS P_LANGUAGES)
      set(${prefix}_${lang}_COMPILER "${DLB_PROBE_${lang}_COMPILER}" PARENT_SCOPE)
      set(${cached}_${lang}_COMPILER "${DLB_PROBE_${lang}_COMPILER}" CACHE INTERNAL "")
    endforeach()
  else()
    message(CHECK_FAIL "not usable: ${reason}")
  endif()
endfunction()

macro(dlb_find_optional _dlbfo_option _dlbfo_package)
  cmake_parse_arguments(_dlbfo "CONFIG;MODULE" "NAME;VERSION;HINT;RESULT"
                        "COMPONENTS;TARGETS;LANGUAGES;VARS" ${ARGN})
  if(NOT _dlbfo_NAME)
    set(_dlbfo_NAME "${_dlbfo_package}")
  endif()
  if(NOT _dlbfo_RESULT)
    string(REPLACE "_WITH_" "_HAVE_" _dlbfo_RESULT "${_dlbfo_option}")
    if(_dlbfo_RESULT STREQUAL _dlbfo_option)
      message(FATAL_ERROR "dlb_find_optional(${_dlbfo_option}): give RESULT <var>")
    endif()
  endif()
  set(_dlbfo_find_args "")
  if(_dlbfo_VERSION)
    list(APPEND _dlbfo_find_args "${_dlbfo_VERSION}")
  endif()
  set(_dlbfo_probe_args "")
  if(_dlbfo_CONFIG)
    list(APPEND _dlbfo_find_args CONFIG)
    list(APPEND _dlbfo_probe_args CONFIG)
  elseif(_dlbfo_MODULE)
    list(APPEND _dlbfo_find_args MODULE)
    list(APPEND _dlbfo_probe_args MODULE)
  endif()
  list(APPEND _dlbfo_find_args QUIET)
  if(_dlbfo_COMPONENTS)
    list(APPEND _dlbfo_find_args COMPONENTS ${_dlbfo_COMPONENTS})
  endif()
  foreach(_dlbfo_kw VERSION COMPONENTS TARGETS LANGUAGES VARS)
    if(_dlbfo_${_dlbfo_kw})
      list(APPEND _dlbfo_probe_args ${_dlbfo_kw} ${_dlbfo_${_dlbfo_kw}})
    endif()
  endforeach()

  set(${_dlbfo_RESULT} OFF)
  dlb_backend_mode(${_dlbfo_option} _dlbfo_mode)
  if(_dlbfo_mode STREQUAL "OFF")
    dlb_report("${_dlbfo_NAME}" "OFF (${_dlbfo_option}=OFF)")
  else()
    dlb_probe_package(_dlbfo_probe ${_dlbfo_package} ${_dlbfo_probe_args})
    if(_dlbfo_probe_OK)
      # Load the very config the probe loaded.
      if(_dlbfo_probe_DIR AND NOT ${_dlbfo_package}_DIR)
        set(${_dlbfo_package}_DIR "${_dlbfo_probe_DIR}" CACHE PATH
            "The directory containing a CMake configuration file for ${_dlbfo_package}." FORCE)
      endif()
      find_package(${_dlbfo_package} ${_dlbfo_find_args})
      if(NOT ${_dlbfo_package}_FOUND)
        set(_dlbfo_probe_OK FALSE)
        set(_dlbfo_probe_REASON "find_package(${_dlbfo_package}) failed where its probe passed")
      endif()
    endif()
    if(_dlbfo_probe_OK)
      set(${_dlbfo_RESULT} ON)
      set(_dlbfo_v "${${_dlbfo_package}_VERSION}")
      if(NOT _dlbfo_v)
        set(_dlbfo_v "${${_dlbfo_package}_VERSION_STRING}")  # FindPostgreSQL's spelling
      endif()
      if(NOT _dlbfo_v)
        set(_dlbfo_v "${_dlbfo_probe_VERSION}")
      endif()
      foreach(_dlbfo_c IN LISTS _dlbfo_COMPONENTS)  # FindMPI's spelling: MPI_CXX_VERSION
        if(NOT _dlbfo_v)
          set(_dlbfo_v "${${_dlbfo_package}_${_dlbfo_c}_VERSION}")
        endif()
      endforeach()
      dlb_report("${_dlbfo_NAME}" "ON (${_dlbfo_v})")
    else()
      dlb_backend_off(${_dlbfo_option} "${_dlbfo_NAME}" "${_dlbfo_probe_REASON}" "${_dlbfo_HINT}")
    endif()
  endif()
endmacro()
