# The folders a binary on LibTorch takes its CUDA libraries from (tools/cmake/DlbLibraries.cmake):
# read from a stand-in libtorch_cuda.so's run path, $ORIGIN resolved, folders that do not exist
# and LibTorch's own folder left out, in the order it names them.
#   cmake -DSRC=<source dir> -DTORCH=<folder holding lib/libtorch_cuda.so> -P torch_lib_dirs_test.cmake
function(dlb_report what status)
endfunction()
set(TORCH_INSTALL_PREFIX "${TORCH}")
include("${SRC}/tools/cmake/DlbLibraries.cmake")
get_filename_component(site "${TORCH}/.." REALPATH)
file(MAKE_DIRECTORY "${site}/nvidia/cublas/lib" "${site}/nvidia/cudnn/lib")
dlb_torch_cuda_lib_dirs(dirs)
set(want "${site}/nvidia/cublas/lib;${site}/nvidia/cudnn/lib")
if(NOT dirs STREQUAL want)
  message(FATAL_ERROR "LibTorch's library folders: got '${dirs}', want '${want}'")
endif()
