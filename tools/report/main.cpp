#include "tools/report/cli.h"

int main(int argc, char** argv) { return dlb::report::RunCli(argc, argv); }
