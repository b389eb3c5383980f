// Stands in for LibTorch's libtorch_cuda.so in torch_lib_dirs_test.cmake: only its run path counts.
int dlb_stand_in_torch_cuda() { return 0; }
