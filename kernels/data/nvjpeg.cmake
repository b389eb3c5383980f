# dlb_data_nvjpeg: the GPU JPEG pipeline (nvjpeg_loader.h): nvJPEG batched decode, with the crop,
# resize, flip and normalisation in the suite's own kernel. Built where the CUDA toolkit has nvJPEG
# (DLBENCH_HAVE_NVJPEG, set in the top-level CMakeLists.txt); its users test DLBENCH_HAVE_NVJPEG.
add_library(dlb_data_nvjpeg STATIC ${CMAKE_CURRENT_LIST_DIR}/nvjpeg_loader.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/augment_kernel.cu)
target_include_directories(dlb_data_nvjpeg PRIVATE ${DLB_NVJPEG_INCLUDE})
target_link_libraries(dlb_data_nvjpeg PUBLIC dlb_data dlb_cuda PRIVATE CUDA::nvjpeg)
target_compile_definitions(dlb_data_nvjpeg PUBLIC DLBENCH_HAVE_NVJPEG=1)
target_compile_options(dlb_data_nvjpeg PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
