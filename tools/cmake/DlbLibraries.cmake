# Which CUDA libraries each binary loads (docs/libraries.md). The cuDNN and cuBLAS families load
# the system's (or CUDNN_ROOT's), found at configure time. A binary on LibTorch loads the libraries
# LibTorch ships with (a pip or conda LibTorch brings its own cuDNN, cuBLAS, NCCL) unless
# DLBENCH_TORCH_CUDA_LIBS=SYSTEM: their folders, read from libtorch_cuda's own RPATH, come first
# in its run path, so that the libraries the binary links itself (cuBLAS, NCCL) are those copies
# too. Sets DLBENCH_TORCH_CUDA_LIB_DIRS (empty where LibTorch names none, or SYSTEM) and reports
# the choice. Any binary can still be pointed at another build at run time (--dlb_cudnn=DIR).
set(DLBENCH_TORCH_CUDA_LIBS TORCH CACHE STRING
    "CUDA libraries of the binaries on LibTorch: TORCH (those LibTorch ships with) or SYSTEM")
set_property(CACHE DLBENCH_TORCH_CUDA_LIBS PROPERTY STRINGS TORCH SYSTEM)

# The existing folders of libtorch_cuda's RPATH/RUNPATH ($ORIGIN resolved) other than its own.
function(dlb_torch_cuda_lib_dirs out)
  set(dirs "")
  find_library(_dlb_torch_cuda torch_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH
               NO_CACHE)
  if(_dlb_torch_cuda)
    get_filename_component(origin "${_dlb_torch_cuda}" REALPATH)
    get_filename_component(origin "${origin}" DIRECTORY)
    file(READ_ELF "${_dlb_torch_cuda}" RPATH rpath RUNPATH runpath CAPTURE_ERROR err)
    string(REPLACE ":" ";" entries "${rpath}:${runpath}")
    foreach(entry IN LISTS entries)
      string(REPLACE "$ORIGIN" "${origin}" entry "${entry}")
      if(entry STREQUAL "" OR NOT IS_DIRECTORY "${entry}")
        continue()
      endif()
      get_filename_component(entry "${entry}" REALPATH)
      if(NOT entry STREQUAL origin)
        list(APPEND dirs "${entry}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES dirs)
  endif()
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()

set(DLBENCH_TORCH_CUDA_LIB_DIRS "")
if(DLBENCH_HAVE_CUDA)
  set(_dlb_libs "cuDNN families (bench_conv, bench_attn, bench_infer): ${CUDNN_LIBRARY} (${CUDNN_VERSION})")
  if(DLBENCH_HAVE_TORCH_CUDA)
    string(TOUPPER "${DLBENCH_TORCH_CUDA_LIBS}" _dlb_choice)
    if(_dlb_choice STREQUAL "SYSTEM")
      string(APPEND _dlb_libs "; bench_train: the same cuDNN and the system's cuBLAS, NCCL "
             "(DLBENCH_TORCH_CUDA_LIBS=SYSTEM)")
    elseif(_dlb_choice STREQUAL "TORCH")
      dlb_torch_cuda_lib_dirs(DLBENCH_TORCH_CUDA_LIB_DIRS)
      if(DLBENCH_TORCH_CUDA_LIB_DIRS)
        list(JOIN DLBENCH_TORCH_CUDA_LIB_DIRS ", " _dlb_dirs)
        string(APPEND _dlb_libs "; bench_train: LibTorch's own, from ${_dlb_dirs} first "
               "(DLBENCH_TORCH_CUDA_LIBS=TORCH)")
      else()
        string(APPEND _dlb_libs "; bench_train: LibTorch's cuDNN (its RPATH names no library "
               "folder: the loader's search path)")
      endif()
    else()
      message(FATAL_ERROR "DLBENCH_TORCH_CUDA_LIBS=${DLBENCH_TORCH_CUDA_LIBS}: expects TORCH or SYSTEM")
    endif()
  endif()
  dlb_report("CUDA libraries" "${_dlb_libs}; any binary: --dlb_cudnn/--dlb_cublas/--dlb_nccl=DIR at run time")
endif()
