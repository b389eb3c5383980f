#include "tools/dataset/cli.h"

int main(int argc, char** argv) { return dlb::dataset::RunCli(argc, argv); }
